extension AppSpec {
    /// Checks an administrator's bundle against the spec before rollout: every value a
    /// configuration policy reaching the app sets (errors for values the spec does not allow,
    /// warnings for settings it does not declare), then what each managed account would
    /// receive (errors for required settings some accounts lack, warnings for conflicts).
    /// - Parameter platform: evaluate for one platform (nil: both).
    public func validate(_ bundle: PolicyBundle, platform: Platform? = nil) -> [Diagnostic] {
        let context = EvaluationContext(platform: platform, appID: app)
        var diagnostics: [Diagnostic] = []

        for policy in bundle.appConfigurations where policy.targeting.admits(context) {
            let name =
                policy.reference.displayName.map { "'\($0)'" } ?? policy.reference.id ?? "#\(policy.reference.index)"
            for (key, value) in policy.settings where key != AppConfiguration.defaultMarker {
                let path = "$.customSettings[?(@.name=='\(key)')]"
                guard let setting = setting(key) else {
                    diagnostics.append(
                        Diagnostic(
                            severity: .warning, code: .undeclaredSetting,
                            message:
                                "configuration \(name) sets '\(key)', which \(app) does not read (not in its spec; a typo?)",
                            location: policy.reference.location, path: path))
                    continue
                }
                if let problem = setting.problem(with: value) {
                    diagnostics.append(
                        Diagnostic(
                            severity: .error, code: .configurationValue,
                            message:
                                "configuration \(name) sets '\(key)': \(problem) (\(app) reads it as \(setting.type.rawValue))",
                            location: policy.reference.location, path: path))
                }
            }
        }

        // What each managed account receives; accounts that share a configuration are one check.
        let snapshot = PolicySnapshot(bundle: bundle, context: context)
        var accountsByConfiguration: [AppConfiguration: [AccountID]] = [:]
        var order: [AppConfiguration] = []
        for account in bundle.tenant.accounts {
            guard let configuration = snapshot.appConfiguration(for: account.id) else { continue }
            if accountsByConfiguration[configuration] == nil { order.append(configuration) }
            accountsByConfiguration[configuration, default: []].append(account.id)
        }
        for setting in settings {
            var missing: [AccountID] = []
            for configuration in order {
                let accounts = accountsByConfiguration[configuration] ?? []
                if setting.required, configuration.allStrings(setting.key).isEmpty { missing += accounts }
                if configuration.hasConflict(setting.key) {
                    let policies = configuration.sources.filter { !$0.isDefault && $0.values[setting.key] != nil }
                        .map { $0.policy.displayName ?? $0.policy.id ?? "?" }
                    diagnostics.append(
                        Diagnostic(
                            severity: .warning, code: .configurationConflict,
                            message:
                                "\(Self.count(accounts)) (\(Self.examples(accounts))) get different values for '\(setting.key)' from \(policies.joined(separator: ", ")); \(app) uses the first by policy id: '\(configuration.string(setting.key) ?? "")'",
                            location: setting.location, path: nil))
                }
            }
            if !missing.isEmpty {
                diagnostics.append(
                    Diagnostic(
                        severity: .error, code: .missingSetting,
                        message:
                            "the required setting '\(setting.key)' reaches no configuration of \(Self.count(missing)) (\(Self.examples(missing)))",
                        location: setting.location, path: nil))
            }
        }
        return diagnostics
    }

    private static func count(_ accounts: [AccountID]) -> String {
        accounts.count == 1 ? "1 managed account" : "\(accounts.count) managed accounts"
    }

    private static func examples(_ accounts: [AccountID]) -> String {
        let shown = accounts.prefix(3).map(\.description).joined(separator: ", ")
        return accounts.count > 3 ? shown + ", …" : shown
    }
}
