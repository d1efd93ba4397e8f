/// The kinds of Microsoft Graph documents a bundle holds.
public enum PolicyKind: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case iosManagedAppProtection
    case androidManagedAppProtection
    /// Windows MAM (beta): receive, send, clipboard, print and health checks.
    case windowsManagedAppProtection
    case defaultManagedAppProtection
    case targetedManagedAppConfiguration

    /// The `@odata.type` that names this kind in Graph JSON.
    public var odataType: String { "#microsoft.graph.\(rawValue)" }

    /// The platform a protection policy of this kind is for; nil for the platform-neutral kinds.
    public var platform: Platform? {
        switch self {
        case .iosManagedAppProtection: .ios
        case .androidManagedAppProtection: .android
        case .windowsManagedAppProtection: .windows
        case .defaultManagedAppProtection, .targetedManagedAppConfiguration: nil
        }
    }

    public var description: String { rawValue }
}

/// Identifies one policy of a bundle in decisions, reasons and diagnostics.
public struct PolicyReference: Sendable, Hashable, CustomStringConvertible {
    /// The policy's position among the bundle's policies of its family (protection or
    /// configuration), in load order.
    public let index: Int
    /// The Graph `id`, when the export has one (templates often do not).
    public let id: String?
    /// The Graph `displayName`, when the export has one.
    public let displayName: String?
    public let kind: PolicyKind
    /// Where the policy's JSON object starts.
    public let location: DocumentLocation

    /// Creates a reference.
    public init(index: Int, id: String?, displayName: String?, kind: PolicyKind, location: DocumentLocation) {
        self.index = index
        self.id = id
        self.displayName = displayName
        self.kind = kind
        self.location = location
    }

    /// The name a person knows the policy by: its display name, else its id, else its location.
    public var name: String { displayName ?? id ?? location.description }

    public var description: String { name }
}

/// A mobile app named in a policy's `apps` list.
public struct ManagedAppIdentifier: Sendable, Hashable {
    /// The Graph id of the `managedMobileApp`, such as `com.microsoft.office.word.ios`.
    public let id: String?
    /// The iOS bundle id or Android package id, such as `com.microsoft.office.word`.
    public let appID: String?

    /// Creates an identifier.
    public init(id: String?, appID: String?) {
        self.id = id
        self.appID = appID
    }

    /// Whether `candidate` names this app by its Graph id or its bundle/package id
    /// (case-insensitively, as bundle ids are).
    public func matches(_ candidate: String) -> Bool {
        let lowered = candidate.lowercased()
        return id?.lowercased() == lowered || appID?.lowercased() == lowered
    }
}

/// Who and what a policy is assigned to.
public struct PolicyTargeting: Sendable, Hashable {
    /// An assignment target of a policy.
    public enum Target: Sendable, Hashable {
        /// Users in a group (`groupAssignmentTarget`).
        case group(String)
        /// Every licensed user (`allLicensedUsersAssignmentTarget`).
        case allLicensedUsers
        /// A target type Custody does not evaluate; counted as every user, the conservative reading.
        case unsupported(String)
    }

    /// An assignment narrowed by an assignment filter (`deviceAndAppManagementAssignmentFilterId`).
    public struct FilteredTarget: Sendable, Hashable {
        /// Who the assignment names: a group, or every licensed user.
        public var target: Target
        /// The filter's Graph id.
        public var filterID: String
        /// `include`: the assignment holds where the filter matches; `exclude`: where it does not.
        public var mode: FilterMode

        /// Creates a filtered assignment.
        public init(target: Target, filterID: String, mode: FilterMode) {
            self.target = target
            self.filterID = filterID
            self.mode = mode
        }
    }

    /// How an assignment uses its filter (Graph's `deviceAndAppManagementAssignmentFilterType`).
    public enum FilterMode: String, Sendable, Hashable {
        case include, exclude
    }

    /// Included targets without a filter.
    public var included: [Target] = []
    /// Excluded groups without a filter (`exclusionGroupAssignmentTarget`); exclusion wins over
    /// inclusion.
    public var excludedGroups: Set<String> = []
    /// Included targets narrowed by a filter.
    public var filteredInclusions: [FilteredTarget] = []
    /// Excluded groups narrowed by a filter: the exclusion holds only where the filter says so.
    public var filteredExclusions: [FilteredTarget] = []
    /// Whether the document carried an `assignments` list, even an empty one.
    ///
    /// A document without one (exported without expanding its assignments) reaches every account
    /// of the tenant, with a warning; a listed empty one is Intune's unassigned policy ("draft",
    /// `isAssigned: false`) and reaches no one.
    public var assignmentsListed = false
    /// Whether the policy reaches every account of the tenant because its document says nothing
    /// of assignments (see `assignmentsListed`).
    public var reachesEveryAccount: Bool {
        !assignmentsListed && included.isEmpty && excludedGroups.isEmpty && filteredInclusions.isEmpty
            && filteredExclusions.isEmpty
    }
    /// Whether any assignment can include an account: with none, the policy reaches no one
    /// (unassigned, or exclusions only).
    public var hasInclusions: Bool { !included.isEmpty || !filteredInclusions.isEmpty }
    /// The filters the assignments name.
    public var filterIDs: Set<String> {
        Set(filteredInclusions.map(\.filterID)).union(filteredExclusions.map(\.filterID))
    }
    /// The apps the policy targets; nil when the document has no app list.
    public var apps: [ManagedAppIdentifier]?
    public var appGroupType: AppGroupType?
    /// Device management states targeted; empty means unspecified (all).
    public var managementLevels: Set<AppManagementLevel> = []

    /// Creates targeting that applies to everyone and every app.
    public init() {}
}

/// One app protection policy document of a bundle.
public struct ProtectionPolicy: Sendable, Hashable {
    public let reference: PolicyReference
    public var kind: PolicyKind { reference.kind }
    public var settings: ProtectionSettings
    public var targeting: PolicyTargeting

    /// Creates a policy.
    public init(reference: PolicyReference, settings: ProtectionSettings, targeting: PolicyTargeting) {
        self.reference = reference
        self.settings = settings
        self.targeting = targeting
    }
}

/// One `targetedManagedAppConfiguration` document: name/value settings delivered to apps.
public struct AppConfigurationPolicy: Sendable, Hashable {
    /// The most bytes (names plus values, UTF-8) one policy's settings may take: 64 KiB.
    public static let maximumSize = 64 * 1024

    public let reference: PolicyReference
    /// The `customSettings` pairs in document order (names may repeat).
    public var settings: [(name: String, value: String)] {
        get { pairs.map { ($0.name, $0.value) } }
        set { pairs = newValue.map { Pair(name: $0.name, value: $0.value) } }
    }
    public var targeting: PolicyTargeting

    struct Pair: Sendable, Hashable {
        var name: String
        var value: String
    }

    private var pairs: [Pair]

    /// Creates a configuration policy.
    public init(reference: PolicyReference, settings: [(name: String, value: String)], targeting: PolicyTargeting) {
        self.reference = reference
        self.pairs = settings.map { Pair(name: $0.name, value: $0.value) }
        self.targeting = targeting
    }
}
