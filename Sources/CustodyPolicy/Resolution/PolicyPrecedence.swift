/// How the protection policies that reach one account combine.
///
/// Microsoft: "A policy is deployed to the app and takes effect. A second policy is deployed.
/// In this scenario, the first policy takes precedence, and stays applied. The second policy
/// shows a conflict. If both are applied at the same time … any conflicting settings are set to
/// the most restrictive values." (Intune troubleshooting: device profile conflicts.)
///
/// - `mostRestrictive` (the default) merges every applying policy setting by setting. It
///   depends on the bundle alone: the same answer on every replica, in every matrix run and
///   on a fresh installation, and it never allows what any applying policy blocks.
/// - `incumbent` keeps, for each account, only the policies that reached it first (those that
///   arrived together merge most restrictively); a policy that reached it later is set aside
///   and reported as a conflict. It needs the installation's history of when each policy first
///   reached each account (`firstReached`), which the engine records at every apply.
public struct PolicyPrecedence: Sendable {
    public enum Rule: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        case mostRestrictive
        case incumbent

        public var description: String { rawValue }
    }

    public let rule: Rule
    /// When each policy first reached each account, in seconds since 1970: account key
    /// (`accountKey(_:)`) → policy key (`policyKey(_:)`) → time. A pair not listed counts as
    /// reaching the account now (after every listed one).
    public let firstReached: [String: [String: Double]]

    public init(rule: Rule, firstReached: [String: [String: Double]] = [:]) {
        self.rule = rule
        self.firstReached = firstReached
    }

    /// Every applying policy merges, most restrictive first.
    public static let mostRestrictive = PolicyPrecedence(rule: .mostRestrictive)

    /// The key an account is known by in `firstReached`: its OID (lower-cased), else `upn:`
    /// and its UPN (lower-cased).
    public static func accountKey(_ account: TenantAccount) -> String {
        if let oid = account.id.oid { return oid.lowercased() }
        return "upn:" + (account.id.upn ?? "").lowercased()
    }

    /// The key a policy is known by in `firstReached`: its Graph id; without one, its kind and
    /// display name (a template exported without ids keeps its name across edits).
    public static func policyKey(_ reference: PolicyReference) -> String {
        if let id = reference.id { return id }
        return "\(reference.kind.rawValue):\(reference.displayName ?? reference.location.description)"
    }

    /// Of the policies `applying` (indices into `policies`), those that take precedence for
    /// `account`, and those set aside (empty unless the rule is `incumbent`).
    func split(_ applying: [Int], of policies: [ProtectionPolicy], for account: TenantAccount) -> (
        kept: [Int], setAside: [Int]
    ) {
        guard rule == .incumbent, applying.count > 1 else { return (applying, []) }
        let reached = firstReached[Self.accountKey(account)] ?? [:]
        let times = applying.map { reached[Self.policyKey(policies[$0].reference)] ?? .infinity }
        guard let first = times.min() else { return (applying, []) }
        var kept: [Int] = []
        var setAside: [Int] = []
        for (index, time) in zip(applying, times) {
            if time == first { kept.append(index) } else { setAside.append(index) }
        }
        return (kept, setAside)
    }
}

extension PolicyBundle {
    /// For each tenant account (by `PolicyPrecedence.accountKey`), the protection policies
    /// whose assignments reach it whatever the platform, app or device (the default policies
    /// when no targeted one does): what the engine records at apply, for `incumbent`.
    public func assignmentReach() -> [(account: String, policies: [String])] {
        let resolver = TargetingResolver(bundle: self, context: EvaluationContext())
        return tenant.accounts.map { account in
            let key = resolver.key(for: account)
            return (
                PolicyPrecedence.accountKey(account),
                key.applying.indices.map { PolicyPrecedence.policyKey(protectionPolicies[$0].reference) }
            )
        }
    }
}

/// Where the policies reaching one account disagree.
public struct PolicyConflicts: Sendable {
    /// A setting the applying policies configure differently.
    public struct Setting: Sendable {
        public let setting: PolicySetting
        /// Each configuring policy and its value.
        public let values: [(policy: PolicyReference, value: SettingValue)]
        /// The value in force, and how it was arrived at.
        public let resolved: SettingSummary
    }

    /// A policy that reached the account after others, set aside by `incumbent` precedence.
    public struct SetAside: Sendable {
        public let policy: PolicyReference
        /// The policies in force for the account, which reached it first.
        public let incumbents: [PolicyReference]
    }

    public let settings: [Setting]
    public let setAside: [SetAside]

    public var isEmpty: Bool { settings.isEmpty && setAside.isEmpty }
}

extension PolicySnapshot {
    /// Where the policies reaching `account` disagree: settings they configure differently
    /// (merged to the most restrictive value, or the recommended default for numbers), and,
    /// under `incumbent` precedence, the policies set aside because another reached the account
    /// first. Empty for an unmanaged account.
    public func conflicts(for account: AccountID) -> PolicyConflicts {
        guard let policy = effectivePolicy(for: account) else { return PolicyConflicts(settings: [], setAside: []) }
        var settings: [PolicyConflicts.Setting] = []
        if policy.policies.count > 1 {
            let documents = policy.policies.map { bundle.protectionPolicies[$0.index] }
            for setting in policy.applicableSettings {
                var values: [(policy: PolicyReference, value: SettingValue)] = []
                for document in documents {
                    if let value = document.settings.value(of: setting) { values.append((document.reference, value)) }
                }
                guard Set(values.map(\.value)).count > 1 else { continue }
                settings.append(
                    PolicyConflicts.Setting(setting: setting, values: values, resolved: policy.setting(setting)))
            }
        }
        let setAside = setAsidePolicies(for: account).map {
            PolicyConflicts.SetAside(policy: $0, incumbents: policy.policies)
        }
        return PolicyConflicts(settings: settings, setAside: setAside)
    }
}

extension ProtectionSettings {
    /// One setting's configured value, type-erased; nil when the policy leaves it alone.
    func value(of setting: PolicySetting) -> SettingValue? {
        func text<E: GraphEnum>(_ value: E?) -> SettingValue? { value.map { .string($0.rawValue) } }
        func list<E: GraphEnum>(_ values: Set<E>?) -> SettingValue? {
            values.map { .list($0.map(\.rawValue).sorted()) }
        }
        switch setting {
        case .allowedInboundDataTransferSources: return text(allowedInboundDataTransferSources)
        case .allowedOutboundDataTransferDestinations: return text(allowedOutboundDataTransferDestinations)
        case .allowedOutboundClipboardSharingLevel: return text(allowedOutboundClipboardSharingLevel)
        case .allowedOutboundClipboardSharingExceptionLength:
            return allowedOutboundClipboardSharingExceptionLength.map(SettingValue.int)
        case .saveAsBlocked: return saveAsBlocked.map(SettingValue.bool)
        case .allowedDataStorageLocations: return list(allowedDataStorageLocations)
        case .blockDataIngestionIntoOrganizationDocuments:
            return blockDataIngestionIntoOrganizationDocuments.map(SettingValue.bool)
        case .allowedDataIngestionLocations: return list(allowedDataIngestionLocations)
        case .printBlocked: return printBlocked.map(SettingValue.bool)
        case .dataBackupBlocked: return dataBackupBlocked.map(SettingValue.bool)
        case .screenCaptureBlocked: return screenCaptureBlocked.map(SettingValue.bool)
        case .screenCaptureConfigurationState: return text(screenCaptureConfigurationState)
        case .notificationRestriction: return text(notificationRestriction)
        case .appDataEncryptionType: return text(appDataEncryptionType)
        case .encryptAppData: return encryptAppData.map(SettingValue.bool)
        case .periodOfflineBeforeAccessCheck: return periodOfflineBeforeAccessCheck.map { .string($0.description) }
        case .periodOfflineBeforeWipeIsEnforced:
            return periodOfflineBeforeWipeIsEnforced.map { .string($0.description) }
        case .exemptedAppProtocols: return exemptedAppProtocols.map { .list($0.sorted()) }
        case .exemptedAppPackages: return exemptedAppPackages.map { .list($0.sorted()) }
        case .filterOpenInToOnlyManagedApps: return filterOpenInToOnlyManagedApps.map(SettingValue.bool)
        case .disableProtectionOfManagedOutboundOpenInData:
            return disableProtectionOfManagedOutboundOpenInData.map(SettingValue.bool)
        case .protectInboundDataFromUnknownSources: return protectInboundDataFromUnknownSources.map(SettingValue.bool)
        case .disableAppEncryptionIfDeviceEncryptionIsEnabled:
            return disableAppEncryptionIfDeviceEncryptionIsEnabled.map(SettingValue.bool)
        case .exemptedUniversalLinks: return exemptedUniversalLinks.map { .list($0.sorted()) }
        case .managedUniversalLinks: return managedUniversalLinks.map { .list($0.sorted()) }
        case .contactSyncBlocked: return contactSyncBlocked.map(SettingValue.bool)
        case .writingToolsConfigurationState: return text(writingToolsConfigurationState)
        case .genmojiConfigurationState: return text(genmojiConfigurationState)
        case .thirdPartyKeyboardsBlocked: return thirdPartyKeyboardsBlocked.map(SettingValue.bool)
        case .keyboardsRestricted: return keyboardsRestricted.map(SettingValue.bool)
        case .approvedKeyboards: return approvedKeyboards.map { .list($0.sorted()) }
        case .allowWidgetContentSync: return allowWidgetContentSync.map(SettingValue.bool)
        case .dialerRestrictionLevel: return text(dialerRestrictionLevel)
        case .customDialerAppProtocol: return customDialerAppProtocol.map(SettingValue.string)
        case .customDialerAppPackageId: return customDialerAppPackageId.map(SettingValue.string)
        case .protectedMessagingRedirectAppType: return text(protectedMessagingRedirectAppType)
        case .messagingRedirectAppUrlScheme: return messagingRedirectAppUrlScheme.map(SettingValue.string)
        case .messagingRedirectAppPackageId: return messagingRedirectAppPackageId.map(SettingValue.string)
        case .managedBrowserToOpenLinksRequired: return managedBrowserToOpenLinksRequired.map(SettingValue.bool)
        case .managedBrowser: return text(managedBrowser)
        case .customBrowserProtocol: return customBrowserProtocol.map(SettingValue.string)
        case .customBrowserPackageId: return customBrowserPackageId.map(SettingValue.string)
        }
    }
}
