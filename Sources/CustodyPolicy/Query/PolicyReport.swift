/// The effective policy of one account as JSON: what `custody policy show` prints and the
/// decision service returns.
///
/// ```json
/// {"account": {...}, "context": {...}, "managed": true, "accountAllowed": {...},
///  "policies": [{"name", "id", "type", "location"}],
///  "settings": {"saveAsBlocked": {"value": true, "resolution": "configured", "sources": ["..."]}, ...},
///  "managedApps": ["..."], "precedence": "mostRestrictive",
///  "conflicts": {"settings": [{"setting", "value", "resolution", "values": [{"policy", "value"}]}],
///                "setAside": [{"policy", "incumbents": ["..."]}]},
///  "reach": [{"policy", "reaches": false, "reason": "included by group g; excluded by group x"}]}
/// ```
package enum PolicyReport {
    /// One report, or, for policies resolved per platform (no platform named for a bundle of
    /// both), an array of one report per platform; `pretty` for people.
    package static func json(account: AccountID, snapshots: [PolicySnapshot], pretty: Bool = false) -> [UInt8] {
        let reports = snapshots.map { Report(account: account, snapshot: $0) }
        // Strings, numbers, booleans and arrays of them: encoding cannot fail.
        return
            (try? reports.count == 1
            ? JSONLine.encode(reports[0], pretty: pretty) : JSONLine.encode(reports, pretty: pretty)) ?? []
    }

    /// The effective policy of one account under one snapshot.
    package struct Report: Encodable {
        package struct Account: Encodable {
            @Nullable package var oid: String?
            @Nullable package var upn: String?
            package var inTenant: Bool
            package var groups: [String]
        }

        package struct Context: Encodable {
            @Nullable package var platform: String?
            @Nullable package var app: String?
            @Nullable package var managementLevel: String?
        }

        package struct Allowed: Encodable {
            package var allowed: Bool
            package var reason: String
        }

        package struct Policy: Encodable {
            @Nullable package var name: String?
            @Nullable package var id: String?
            package var type: String
            package var location: String
        }

        package struct Setting: Encodable {
            package var value: SettingValue
            package var resolution: String
            package var sources: [String]
            /// For a number the policies disagree on (the recommended value applies, which none
            /// of `sources` set): who set what, `'A' P30D, 'B' P90D`. Left out otherwise.
            package var disagreement: String?
        }

        package var account: Account
        package var context: Context
        package var managed: Bool
        package var accountAllowed: Allowed
        package var policies: [Policy]
        /// By the setting's name.
        package var settings: [String: Setting]
        package var managedApps: [String]
        package var precedence: String
        package var conflicts: Conflicts
        /// Every policy whose assignments name the account, whether it reaches it, and why.
        package var reach: [Reach]

        package struct Reach: Encodable {
            package var policy: String
            package var reaches: Bool
            package var reason: String
        }

        package init(account id: AccountID, snapshot: PolicySnapshot) {
            let policy = snapshot.effectivePolicy(for: id)
            let tenantAccount = snapshot.tenantAccount(for: id)
            account = Account(
                oid: tenantAccount?.id.oid ?? id.oid, upn: tenantAccount?.id.upn ?? id.upn,
                inTenant: tenantAccount != nil, groups: tenantAccount?.groups ?? [])
            context = Context(
                platform: snapshot.context.platform?.rawValue, app: snapshot.context.appID,
                managementLevel: snapshot.context.managementLevel?.rawValue)
            managed = policy != nil
            let allowed = snapshot.accountAllowed(id)
            accountAllowed = Allowed(allowed: allowed.isAllowed, reason: allowed.reason)
            policies = (policy?.policies ?? []).map {
                Policy(name: $0.name, id: $0.id, type: $0.kind.rawValue, location: $0.location.description)
            }
            var settings: [String: Setting] = [:]
            for setting in policy?.applicableSettings ?? [] {
                let summary = policy!.setting(setting)
                settings[setting.rawValue] = Setting(
                    value: summary.value, resolution: summary.resolution.rawValue, sources: summary.sources.map(\.name),
                    disagreement: summary.disagreement)
            }
            self.settings = settings
            managedApps = policy?.managedApps ?? []
            precedence = snapshot.precedence.rule.rawValue
            conflicts = Conflicts(snapshot.conflicts(for: id))
            reach = snapshot.reach(of: id).map { Reach(policy: $0.policy.name, reaches: $0.reaches, reason: $0.reason) }
        }
    }

    /// `{"settings": [...], "setAside": [...]}`: where policies reaching one account disagree.
    package struct Conflicts: Encodable {
        package struct SettingConflict: Encodable {
            package struct Value: Encodable {
                package var policy: String
                package var value: SettingValue
            }

            package var setting: String
            package var value: SettingValue
            package var resolution: String
            package var values: [Value]
        }

        package struct SetAside: Encodable {
            package var policy: String
            package var incumbents: [String]
        }

        package var settings: [SettingConflict]
        package var setAside: [SetAside]

        package init(_ conflicts: PolicyConflicts) {
            settings = conflicts.settings.map { conflict in
                SettingConflict(
                    setting: conflict.setting.rawValue, value: conflict.resolved.value,
                    resolution: conflict.resolved.resolution.rawValue,
                    values: conflict.values.map { SettingConflict.Value(policy: $0.policy.name, value: $0.value) })
            }
            setAside = conflicts.setAside.map {
                SetAside(policy: $0.policy.name, incumbents: $0.incumbents.map(\.name))
            }
        }
    }

    /// The conflicts in words, one line each, for tables people read.
    package static func conflictLines(_ conflicts: PolicyConflicts) -> [String] {
        conflicts.settings.map { conflict in
            let values = conflict.values.map { "\"\($0.policy.name)\" \($0.value)" }.joined(separator: ", ")
            let outcome =
                conflict.resolved.resolution == .conflictDefault ? "the recommended default" : "the most restrictive"
            return "\(conflict.setting): \(values); \(outcome), \(conflict.resolved.value), applies"
        }
            + conflicts.setAside.map { aside in
                "\"\(aside.policy.name)\" is set aside: \(quotedNames(aside.incumbents)) reached the account first and take\(aside.incumbents.count == 1 ? "s" : "") precedence"
            }
    }
}

extension SettingValue: Encodable {
    /// The value as JSON: a boolean, a number, a string, or an array of strings.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .bool(let bool): try container.encode(bool)
        case .int(let int): try container.encode(int)
        case .string(let string): try container.encode(string)
        case .list(let list): try container.encode(list)
        }
    }
}
