/// What a decision is about. The raw values are the `action` names of `custody decide` queries.
public enum DecisionAction: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case saveTo
    case openFrom
    case share
    case receive
    case copyOut
    case pasteIn
    case print
    case backup
    case screenCapture
    case encryptionRequired
    case notifications
    case accountAllowed
    case offlineAccess
    case appSharing
    case appIntents
    case contactSync
    case writingTools
    case genmoji
    case thirdPartyKeyboard
    case widgetContentSync
    case openURL
    case launch

    public var description: String { rawValue }
}

/// The part an account plays in a decision.
public enum AccountRole: String, Sendable, Hashable {
    /// The account that owns the data (save-to, share, clipboard).
    case owner
    /// The account whose documents receive the data (open-from, receive).
    case receiver
    /// The account a save or open location belongs to.
    case locationAccount
    /// The owner of a shared item, read from its protection tag.
    case dataOwner
    /// The account a per-account setting is asked about.
    case account

    var phrase: String {
        switch self {
        case .owner: "the data's owner"
        case .receiver: "the receiving account"
        case .locationAccount: "the location's account"
        case .dataOwner: "the shared item's owner"
        case .account: "the account"
        }
    }
}

/// Allow or block, and why: the settings that decided, their values and the policies they
/// came from.
///
/// A decision is a small value; its `reason` text is rendered only when asked for.
public struct Decision: Sendable, Hashable, CustomStringConvertible {
    /// What was decided.
    public let action: DecisionAction
    /// Whether the action is allowed. For `encryptionRequired`: whether encryption is required.
    /// For `notifications`: whether org data may be shown in full (see `notificationRestriction`).
    public let isAllowed: Bool
    /// The first check made.
    public let primary: Finding
    /// A second check that also had a say: another managed account's policy when data enters
    /// or leaves it, or the clipboard exception a copy was too long for.
    public let secondary: Finding?
    private let secondaryDecides: Bool

    init(
        _ action: DecisionAction, allowed: Bool, _ primary: Finding, _ secondary: Finding? = nil,
        secondaryDecides: Bool = true
    ) {
        self.action = action
        self.isAllowed = allowed
        self.primary = primary
        self.secondary = secondary
        self.secondaryDecides = secondaryDecides
    }

    /// The finding that settled the decision: the second check when it had the last word.
    public var decidingFinding: Finding { secondaryDecides ? secondary ?? primary : primary }

    /// Why, in words: each check's setting, its value and the policies it came from.
    public var reason: String {
        guard let secondary else { return primary.explanation }
        return primary.explanation + "; " + secondary.explanation
    }

    /// The setting that settled the decision (`allowedAccounts` for the tenant's list), or nil
    /// when no setting did (an unmanaged account).
    public var settingName: String? { decidingFinding.settingName }

    /// The policies the deciding setting came from.
    public var sourcePolicies: [PolicyReference] { decidingFinding.sources }

    /// For `notifications`: the restriction in force.
    public var notificationRestriction: NotificationRestriction? {
        if case .notifications(let restriction) = primary.code { return restriction }
        guard action == .notifications else { return nil }
        return isAllowed ? .allow : .block
    }

    /// For `offlineAccess`: the account's offline state.
    public var offlineState: OfflineState? {
        if case .offline(let state, _) = primary.code { return state }
        guard action == .offlineAccess else { return nil }
        return isAllowed ? .online : .accessBlocked
    }

    /// The decision for an action that cannot be decided (an account whose forms contradict
    /// each other; no platform for a bundle of several): the most restrictive answer (blocked;
    /// for `encryptionRequired`, required).
    static func refused(_ action: DecisionAction, _ code: Finding.Code) -> Decision {
        Decision(action, allowed: action == .encryptionRequired, Finding(code, nil))
    }

    /// Whether the decision was refused rather than made (see `refused`).
    public var isRefusal: Bool { primary.isContradiction || primary.isPlatformRefusal }

    /// Whether the data, which had no owner, is to be protected as the receiving account's
    /// from now on ("All apps with incoming Org data"): for `receive` and `openFrom`.
    public var protectsAsReceiver: Bool {
        guard isAllowed, let secondary else { return false }
        if case .unknownSourceAdopted = secondary.code { return true }
        return false
    }

    /// `allow: reason` or `block: reason`.
    public var description: String {
        "\(isAllowed ? "allow" : "block"): \(reason)"
    }
}

/// The states of an account that has not checked in for a while.
public enum OfflineState: String, Sendable, Hashable {
    /// Within the grace period: access continues.
    case online
    /// Past `periodOfflineBeforeAccessCheck`: access is blocked until the account checks in.
    case accessBlocked
    /// Past `periodOfflineBeforeWipeIsEnforced`: the account's data is to be wiped.
    case wipeRequired
}

/// The decision for each target of a share (Open in / Copy to), in the order asked.
public struct ShareDecision: Sendable, Hashable {
    /// One target app and its decision.
    public struct Target: Sendable, Hashable {
        /// The app id, URL scheme or package id as asked.
        public let id: String
        public let decision: Decision
    }

    public let targets: [Target]
    /// "Open-In/Share filtering" (iOS `filterOpenInToOnlyManagedApps`): the share sheet should
    /// offer only the allowed targets rather than show the others and refuse them.
    public let filtersShareSheet: Bool

    init(targets: [Target], filtersShareSheet: Bool = false) {
        self.targets = targets
        self.filtersShareSheet = filtersShareSheet
    }

    /// Whether every target is allowed.
    public var isAllowed: Bool { targets.allSatisfy(\.decision.isAllowed) }

    /// The targets that may be offered.
    public var allowedTargets: [String] { targets.filter(\.decision.isAllowed).map(\.id) }

    /// A summary such as `2 of 3 targets allowed`.
    public var reason: String {
        let allowed = targets.filter(\.decision.isAllowed).count
        return "\(allowed) of \(targets.count) target\(targets.count == 1 ? "" : "s") allowed"
    }
}
