/// The app configuration that reaches one account: Intune's `IntuneMAMAppConfig`, from the
/// `targetedManagedAppConfiguration` documents of a bundle.
///
/// Every contributing policy gives one dictionary (`fullData`). A policy whose settings hold
/// `__IsDefault` = `true` is the tenant default: its values count for a key only when no
/// targeted policy sets that key, and never make a conflict.
///
/// Order, and so `.any`: targeted policies sorted by their Graph `id` (byte order; policies
/// without an id after those, in bundle order), then default policies in the same order.
/// `.any` returns the value of the first of them that sets the key (and, for typed queries,
/// whose value has the type). Unlike Intune's, whose `.any` is whatever the service delivered
/// first, the answer is the same on every device and every run.
public struct AppConfiguration: Sendable, Hashable {
    /// One contributing policy's settings.
    public struct Source: Sendable, Hashable {
        /// The policy document.
        public let policy: PolicyReference
        /// Whether it is the tenant default (`__IsDefault` = `true`).
        public let isDefault: Bool
        /// Its settings; a name listed twice keeps its last value. Includes `__IsDefault`.
        public let values: [String: String]

        public init(policy: PolicyReference, isDefault: Bool, values: [String: String]) {
            self.policy = policy
            self.isDefault = isDefault
            self.values = values
        }

        public static func == (lhs: Source, rhs: Source) -> Bool {
            lhs.isDefault == rhs.isDefault && lhs.values == rhs.values && lhs.policy.id == rhs.policy.id
        }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(isDefault)
            hasher.combine(values)
            hasher.combine(policy.id)
        }
    }

    /// How to pick one value of a string or number key among several.
    public enum ValueQuery: String, Sendable, Hashable, CaseIterable {
        /// The first value by the documented order.
        case any
        /// The smallest (strings: in Unicode code point order).
        case min
        /// The largest.
        case max
    }

    /// How to pick one value of a boolean key among several.
    public enum BoolQuery: String, Sendable, Hashable, CaseIterable {
        /// The first value by the documented order.
        case any
        /// True only when every value is true.
        case and
        /// True when any value is true.
        case or
    }

    /// The setting that marks the tenant default policy.
    public static let defaultMarker = "__IsDefault"

    /// The contributing policies, in the documented order (targeted first, defaults last).
    public let sources: [Source]

    /// Orders `sources` as documented; equal sources in any order make equal configurations.
    public init(sources: [Source]) {
        self.sources = sources.enumerated().sorted { first, second in
            let (a, b) = (first.element, second.element)
            if a.isDefault != b.isDefault { return !a.isDefault }
            switch (a.policy.id, b.policy.id) {
            case (let x?, let y?) where x != y: return Array(x.utf8).lexicographicallyPrecedes(Array(y.utf8))
            case (.some, nil): return true
            case (nil, .some): return false
            default: return first.offset < second.offset
            }
        }.map(\.element)
    }

    /// Whether no policy configures the account.
    public var isEmpty: Bool { sources.isEmpty }

    /// One dictionary per contributing policy, in the documented order (the default's with its
    /// `__IsDefault` marker, as Intune delivers it).
    public var fullData: [[String: String]] { sources.map(\.values) }

    /// Every key set by some policy (the marker excluded), sorted.
    public var keys: [String] {
        Set(sources.flatMap(\.values.keys)).subtracting([Self.defaultMarker]).sorted()
    }

    /// The values of `key` that count, in the documented order: those of the targeted
    /// policies that set it, or, when none does, those of the defaults.
    public func allStrings(_ key: String) -> [String] {
        guard key != Self.defaultMarker else { return [] }
        let targeted = sources.lazy.filter { !$0.isDefault }.compactMap { $0.values[key] }
        if !targeted.isEmpty { return Array(targeted) }
        return sources.filter(\.isDefault).compactMap { $0.values[key] }
    }

    /// Whether targeted policies give `key` more than one different value. Identical values
    /// and the default's are never a conflict.
    public func hasConflict(_ key: String) -> Bool {
        guard key != Self.defaultMarker else { return false }
        let targeted = sources.filter { !$0.isDefault }.compactMap { $0.values[key] }
        return Set(targeted).count > 1
    }

    /// The values of `key` that are integers (`Int` syntax: optional sign, decimal digits).
    public func allIntegers(_ key: String) -> [Int] { allStrings(key).compactMap { Int($0) } }

    /// The values of `key` that are finite decimal numbers.
    public func allDoubles(_ key: String) -> [Double] {
        allStrings(key).compactMap { Self.double($0) }
    }

    /// The values of `key` that are `true` or `false`, in any letter case (nothing else: not
    /// "1", "yes" or " true").
    public func allBools(_ key: String) -> [Bool] { allStrings(key).compactMap { Self.bool($0) } }

    /// One string value of `key`; nil when no policy sets it.
    public func string(_ key: String, query: ValueQuery = .any) -> String? {
        pick(allStrings(key), query, by: { $0.unicodeScalars.lexicographicallyPrecedes($1.unicodeScalars) })
    }

    /// One integer value of `key`; nil when no value is an integer.
    public func integer(_ key: String, query: ValueQuery = .any) -> Int? {
        pick(allIntegers(key), query, by: <)
    }

    /// One number value of `key`; nil when no value is a number.
    public func double(_ key: String, query: ValueQuery = .any) -> Double? {
        pick(allDoubles(key), query, by: <)
    }

    /// One boolean value of `key`; nil when no value is a boolean.
    public func bool(_ key: String, query: BoolQuery = .any) -> Bool? {
        let values = allBools(key)
        guard let first = values.first else { return nil }
        switch query {
        case .any: return first
        case .and: return values.allSatisfy { $0 }
        case .or: return values.contains(true)
        }
    }

    /// Each key with the value `.any` picks: what typed configurations decode.
    public var resolvedValues: [String: String] {
        var result: [String: String] = [:]
        for key in keys {
            if let value = allStrings(key).first { result[key] = value }
        }
        return result
    }

    private func pick<Value>(_ values: [Value], _ query: ValueQuery, by precedes: (Value, Value) -> Bool) -> Value? {
        switch query {
        case .any: values.first
        case .min: values.min(by: precedes)
        case .max: values.max(by: precedes)
        }
    }

    static func double(_ text: String) -> Double? {
        guard let value = Double(text), value.isFinite,
            text.utf8.allSatisfy({
                ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2B || $0 == 0x2D || $0 == 0x2E || $0 == 0x65 || $0 == 0x45
            })
        else { return nil }
        return value
    }

    static func bool(_ text: String) -> Bool? {
        switch text.lowercased() {
        case "true": true
        case "false": false
        default: nil
        }
    }

    /// Whether a policy's settings mark it as the tenant default.
    static func isDefault(_ values: [String: String]) -> Bool {
        values[defaultMarker].flatMap(bool) == true
    }
}
