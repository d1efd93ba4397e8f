/// One check a decision made: which rule fired, with whose policy.
public struct Finding: Sendable, Hashable {
    /// The rule that fired, with the facts it used.
    public let code: Code
    /// The effective policy whose setting was read; nil when the account is unmanaged.
    public let policy: EffectivePolicy?

    init(_ code: Code, _ policy: EffectivePolicy?) {
        self.code = code
        self.policy = policy
    }

    public static func == (lhs: Finding, rhs: Finding) -> Bool {
        lhs.code == rhs.code && lhs.policy === rhs.policy
    }

    /// Hashes the rule and the policy, but of an app id or an allowed-account entry only its
    /// length: findings are looked up by the million in reason caches, and equal findings still
    /// hash equal (`==` compares the text).
    public func hash(into hasher: inout Hasher) {
        switch code {
        case .shareTargetManaged(let target), .shareTargetNotManaged(let target), .shareTargetNotExempted(let target):
            hasher.combine(1)
            hasher.combine(target.utf8.count)
        case .shareTargetExempted(let target, let level):
            hasher.combine(2)
            hasher.combine(target.utf8.count)
            hasher.combine(level)
        case .allowedAccountListed(let entry):
            hasher.combine(3)
            hasher.combine(entry.utf8.count)
        default:
            hasher.combine(code)
        }
        hasher.combine(policy.map(ObjectIdentifier.init))
    }

    /// The rules of DESIGN.md's decision contract.
    public enum Code: Sendable, Hashable {
        case unmanaged(AccountRole)
        /// The account in this role carries an OID and a UPN that the tenant does not link
        /// (see `PolicySnapshot.resolveAccount(_:)`): the action is refused.
        case contradictoryAccount(AccountRole)

        // Save to (the owner's policy).
        case saveAsAllowed
        case saveLocationListed(SaveLocation)
        case saveLocationNotListed(SaveLocation)
        case saveLocationOtherAccount(SaveLocation)
        case saveLocationNeverAllowed(SaveLocation)
        case saveAccountDocument(sameAccount: Bool)
        /// The location's account is another managed account: may data enter its documents?
        case locationAccountIngestion(blocked: Bool)

        // Open from (the receiver's policy).
        case ingestionAllowed
        case openLocationListed(OpenLocation)
        case openLocationNotListed(OpenLocation)
        case openLocationOtherAccount(OpenLocation)
        case openLocationNeverAllowed(OpenLocation)
        case openLocalSource(OpenLocation, sameAccount: Bool)

        /// Data leaves another managed account (`role`): its send rule.
        case send(DataTransferLevel, receiverManaged: Bool, role: AccountRole)

        // Share (the owner's send rule, per target).
        case shareAllApps
        case shareTargetManaged(String)
        case shareTargetExempted(String, DataTransferLevel)
        case shareTargetNotManaged(String)
        case shareTargetNotExempted(String)

        /// Receive (the receiver's inbound rule).
        case receive(DataTransferLevel, sourceManaged: Bool, sameAccount: Bool)

        // Clipboard.
        case clipboardCopy(ClipboardSharingLevel, destinationManaged: Bool)
        case clipboardException(ClipboardSharingLevel, length: Int, limit: Int)
        case clipboardExceptionExceeded(length: Int, limit: Int)
        case clipboardPaste(ClipboardSharingLevel, sourceManaged: Bool)

        // Per-account settings.
        case print(blocked: Bool)
        case backup(blocked: Bool)
        case screenCapture(PolicySetting, blocked: Bool)
        case notifications(NotificationRestriction)
        case encryption(PolicySetting, required: Bool)

        // Access.
        case allowedAccountsUnrestricted
        case allowedAccountListed(String)
        case allowedAccountNotListed
        case offline(OfflineState, offlineFor: Duration)
    }

    /// Whether this is the refusal of a contradictory account.
    var isContradiction: Bool {
        if case .contradictoryAccount = code { return true }
        return false
    }

    /// The policy setting the rule read, or nil for the tenant's allowed accounts and for
    /// unmanaged accounts.
    public var setting: PolicySetting? {
        switch code {
        case .unmanaged, .contradictoryAccount, .allowedAccountsUnrestricted, .allowedAccountListed, .allowedAccountNotListed: nil
        case .saveAsAllowed, .saveLocationNeverAllowed, .saveAccountDocument: .saveAsBlocked
        case .saveLocationListed, .saveLocationNotListed, .saveLocationOtherAccount: .allowedDataStorageLocations
        case .locationAccountIngestion, .ingestionAllowed, .openLocationNeverAllowed, .openLocalSource:
            .blockDataIngestionIntoOrganizationDocuments
        case .openLocationListed, .openLocationNotListed, .openLocationOtherAccount: .allowedDataIngestionLocations
        case .send, .shareAllApps, .shareTargetManaged, .shareTargetNotManaged, .shareTargetNotExempted:
            .allowedOutboundDataTransferDestinations
        case .shareTargetExempted:
            policy?.platform == .android ? .exemptedAppPackages : .exemptedAppProtocols
        case .receive: .allowedInboundDataTransferSources
        case .clipboardCopy, .clipboardPaste: .allowedOutboundClipboardSharingLevel
        case .clipboardException, .clipboardExceptionExceeded: .allowedOutboundClipboardSharingExceptionLength
        case .print: .printBlocked
        case .backup: .dataBackupBlocked
        case .screenCapture(let setting, _), .encryption(let setting, _): setting
        case .notifications: .notificationRestriction
        case .offline(let state, _):
            state == .wipeRequired ? .periodOfflineBeforeWipeIsEnforced : .periodOfflineBeforeAccessCheck
        }
    }

    /// The setting's name, or `allowedAccounts` for the tenant's list.
    public var settingName: String? {
        switch code {
        case .allowedAccountsUnrestricted, .allowedAccountListed, .allowedAccountNotListed: "allowedAccounts"
        default: setting?.rawValue
        }
    }

    /// The policies the setting's value came from (empty when it is Intune's default).
    public var sources: [PolicyReference] {
        guard let setting, let policy else { return [] }
        return policy.setting(setting).sources
    }
}
