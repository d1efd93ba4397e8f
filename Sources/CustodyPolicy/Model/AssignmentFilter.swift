/// An Intune assignment filter (`#microsoft.graph.deviceAndAppManagementAssignmentFilter`): a
/// rule over app and device properties that narrows an assignment to the apps it matches.
///
/// Microsoft: "Include filtered devices in assignment: Devices that match the assignment filter
/// conditions receive the app or policy. Devices that don't match the assignment filter
/// conditions don't receive the app or policy." Exclude mode is the opposite. Filters of
/// managed apps apply to app protection and app configuration policies (Intune's assignment
/// filter overview, "Restrictions").
public struct AssignmentFilter: Sendable, Hashable {
    /// The Graph id assignments name in `deviceAndAppManagementAssignmentFilterId`.
    public let id: String
    public let displayName: String?
    /// Graph's `platform` (`iOSMobileApplicationManagement`, `androidMobileApplicationManagement`, ...).
    public let platform: String?
    /// Graph's `assignmentFilterManagementType`: `apps` or `devices`.
    public let managementType: String?
    /// The rule as written.
    public let ruleText: String
    /// The rule parsed.
    public let rule: FilterRule
    /// Where the filter's JSON object starts.
    public let location: DocumentLocation

    /// Creates a filter.
    public init(
        id: String, displayName: String? = nil, platform: String? = nil, managementType: String? = nil,
        ruleText: String, rule: FilterRule, location: DocumentLocation
    ) {
        self.id = id
        self.displayName = displayName
        self.platform = platform
        self.managementType = managementType
        self.ruleText = ruleText
        self.rule = rule
        self.location = location
    }

    /// The `@odata.type` of filters, without its namespace.
    public static let graphTypeName = "deviceAndAppManagementAssignmentFilter"

    /// The name a person knows the filter by.
    public var name: String { displayName ?? id }
}

/// A filter rule: comparisons joined by `and` and `or`.
public indirect enum FilterRule: Sendable, Hashable, CustomStringConvertible {
    case and([FilterRule])
    case or([FilterRule])
    case comparison(FilterComparison)

    /// Evaluates the rule against `facts`, in three-valued logic: `and` is false when any part is
    /// false, `or` true when any part is true, and otherwise unknown when a part is unknown.
    public func evaluate(_ facts: FilterFacts) -> FilterResult {
        switch self {
        case .comparison(let comparison): return comparison.evaluate(facts)
        case .and(let parts):
            var result = FilterResult.matches
            for part in parts {
                switch part.evaluate(facts) {
                case .doesNotMatch: return .doesNotMatch
                case .unknown: result = .unknown
                case .matches: break
                }
            }
            return result
        case .or(let parts):
            var result = FilterResult.doesNotMatch
            for part in parts {
                switch part.evaluate(facts) {
                case .matches: return .matches
                case .unknown: result = .unknown
                case .doesNotMatch: break
                }
            }
            return result
        }
    }

    /// The properties the rule reads.
    public var properties: [FilterComparison.Property] {
        switch self {
        case .comparison(let comparison): [comparison.property]
        case .and(let parts), .or(let parts): parts.flatMap(\.properties)
        }
    }

    public var description: String {
        switch self {
        case .comparison(let comparison): comparison.description
        case .and(let parts): parts.map { "(\($0))" }.joined(separator: " and ")
        case .or(let parts): parts.map { "(\($0))" }.joined(separator: " or ")
        }
    }
}

/// What a filter made of the facts at hand.
public enum FilterResult: String, Sendable, Hashable {
    case matches
    case doesNotMatch
    /// A fact the rule needs was not given, or the rule reads a property Custody does not know.
    case unknown
}

/// One comparison of a filter rule: `(app.deviceModel -startsWith "iPhone")`.
public struct FilterComparison: Sendable, Hashable, CustomStringConvertible {
    /// A property a rule reads, as `entity.name` (`app.appVersion`).
    public struct Property: Sendable, Hashable, CustomStringConvertible {
        /// `app` or `device`, lower-cased.
        public let entity: String
        /// The property's name as written.
        public let name: String
        /// The managed-app property this names, or nil when Custody does not evaluate it (a
        /// managed-device property, or one Microsoft added later): then the comparison is unknown.
        /// Resolved once, when the rule is read, not at each evaluation.
        public let known: FilterFacts.Key?

        /// Creates a property.
        public init(entity: String, name: String) {
            self.entity = entity.lowercased()
            self.name = name
            let lowered = name.lowercased()
            known =
                self.entity == "app" ? FilterFacts.Key.allCases.first { $0.rawValue.lowercased() == lowered } : nil
        }

        public var description: String { "\(entity).\(name)" }
    }

    /// The operators of Intune's rule syntax ("Supported operators"); all case-insensitive.
    public enum Operator: String, Sendable, Hashable, CaseIterable {
        case eq, ne, startsWith, contains, notContains, `in`, notIn, gt, ge, lt, le

        /// Whether the value is a list (`-in`, `-notIn`).
        var takesList: Bool { self == .in || self == .notIn }
        /// Whether the values compare as versions.
        var isOrdering: Bool { self == .gt || self == .ge || self == .lt || self == .le }
    }

    /// A value of a comparison: text, or `Null` / `$Null` (Microsoft: "You can use `Null` or
    /// `$Null` as a value with the `-Equals` and `-NotEquals` operators").
    public enum Value: Sendable, Hashable, CustomStringConvertible {
        case text(String)
        case null

        var isUnmanaged: Bool {
            if case .text(let text) = self { return text.lowercased() == "unmanaged" }
            return false
        }

        public var description: String {
            switch self {
            case .text(let text): "\"\(text)\""
            case .null: "$Null"
            }
        }
    }

    public let property: Property
    public let `operator`: Operator
    public let values: [Value]

    /// Creates a comparison.
    public init(property: Property, operator: Operator, values: [Value]) {
        self.property = property
        self.operator = `operator`
        self.values = values
    }

    public var description: String {
        let value =
            `operator`.takesList
            ? "[\(values.map(\.description).joined(separator: ", "))]" : values.map(\.description).joined()
        return "\(property) -\(`operator`.rawValue) \(value)"
    }

    /// The comparison's result for `facts`: unknown when the property is not one Custody
    /// evaluates or the facts do not give it (and the rule does not ask about its absence).
    func evaluate(_ facts: FilterFacts) -> FilterResult {
        guard let key = property.known else { return .unknown }
        let fact = facts[key]
        let enrolled = key == .deviceManagementType && fact == nil && facts.isEnrolled
        if values == [.null] {
            guard fact != nil || enrolled else { return .unknown }
            return `operator` == .ne ? .matches : .doesNotMatch
        }
        if enrolled {
            // Enrolled, in a way the context does not name: only "Unmanaged" is decided.
            guard values.count == 1, values[0].isUnmanaged else { return .unknown }
            switch `operator` {
            case .eq, .in: return .doesNotMatch
            case .ne, .notIn: return .matches
            default: return .unknown
            }
        }
        guard let fact else { return .unknown }
        let texts = values.compactMap { value -> String? in
            if case .text(let text) = value { return text }
            return nil
        }
        let matches: Bool
        switch `operator` {
        case .eq, .ne:
            let equal: Bool
            if key == .operatingSystemVersion, let left = SoftwareVersion(fact),
                let right = texts.first.flatMap(SoftwareVersion.init)
            {
                equal = left == right
            } else {
                equal = texts.first.map { $0.caseInsensitiveEquals(fact) } ?? false
            }
            matches = `operator` == .eq ? equal : !equal
        case .startsWith: matches = texts.first.map { fact.lowercased().hasPrefix($0.lowercased()) } ?? false
        case .contains: matches = texts.first.map { fact.lowercased().contains($0.lowercased()) } ?? false
        case .notContains: matches = !(texts.first.map { fact.lowercased().contains($0.lowercased()) } ?? false)
        case .in: matches = texts.contains { $0.caseInsensitiveEquals(fact) }
        case .notIn: matches = !texts.contains { $0.caseInsensitiveEquals(fact) }
        case .gt, .ge, .lt, .le:
            guard let left = SoftwareVersion(fact), let right = texts.first.flatMap(SoftwareVersion.init) else {
                return .unknown
            }
            switch `operator` {
            case .gt: matches = left > right
            case .ge: matches = left >= right
            case .lt: matches = left < right
            default: matches = left <= right
            }
        }
        return matches ? .matches : .doesNotMatch
    }
}

/// The app and device facts a managed-app filter reads, as the app reports them (Intune's
/// "Managed app properties").
public struct FilterFacts: Sendable, Hashable {
    /// The managed-app properties of Intune's filter reference.
    public enum Key: String, Sendable, Hashable, CaseIterable {
        case appVersion, operatingSystemVersion, osVersion, deviceManufacturer, deviceModel, deviceManagementType
    }

    private var values: [Key: String] = [:]
    /// The device is enrolled in some management the facts do not name: its
    /// `deviceManagementType` is not `Unmanaged`, and which value it is stays unknown.
    var isEnrolled = false

    /// Creates facts with none given.
    public init() {}

    /// The fact for `key`, nil when not given.
    public subscript(key: Key) -> String? {
        get { values[key] }
        set { values[key] = newValue }
    }

    /// Whether no fact is given.
    public var isEmpty: Bool { values.isEmpty && !isEnrolled }

    /// The facts a launch query (or an account's check-in) gives, with the device's management
    /// from the context: only `Unmanaged` is known exactly (Intune's values for managed devices
    /// name the enrollment kind, which a management level does not say).
    public init(launch facts: LaunchFacts, managementLevel: AppManagementLevel?) {
        if let version = facts.appVersion?.text { values[.appVersion] = version }
        if let version = facts.osVersion?.text {
            values[.operatingSystemVersion] = version
            values[.osVersion] = version
        }
        if let manufacturer = facts.deviceManufacturer { values[.deviceManufacturer] = manufacturer }
        if let model = facts.deviceModel { values[.deviceModel] = model }
        switch managementLevel {
        case .unmanaged: values[.deviceManagementType] = "Unmanaged"
        case .unspecified, nil: break
        case .some: isEnrolled = true
        }
    }
}

extension String {
    fileprivate func caseInsensitiveEquals(_ other: String) -> Bool {
        lowercased() == other.lowercased()
    }
}
