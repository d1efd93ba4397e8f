/// How a setting's value in an effective policy was arrived at.
public enum SettingResolution: String, Sendable, Hashable {
    /// No applicable policy configures the setting; Intune's default applies.
    case notConfigured
    /// Merged from the configuring policies (the most restrictive value, or the intersection).
    case configured
    /// Numeric values that disagree: the recommended default applies (Microsoft's rule).
    case conflictDefault
}

/// One setting of an effective policy: the merged value and the policies it came from.
public struct ResolvedSetting<Value: Sendable & Hashable>: Sendable, Hashable {

    /// The value in force.
    public let value: Value
    /// The policies the value came from: those holding the winning value for a most-restrictive
    /// merge, every configuring policy for an intersection or a numeric conflict, none for a default.
    public let sources: [PolicyReference]
    public let resolution: SettingResolution
    /// For a numeric conflict, what each of `sources` set, in the same order; else empty.
    public let sourceValues: [Value]

    /// Creates a resolved setting.
    public init(
        value: Value, sources: [PolicyReference], resolution: SettingResolution, sourceValues: [Value] = []
    ) {
        self.value = value
        self.sources = sources
        self.resolution = resolution
        self.sourceValues = sourceValues
    }
}

/// The per-setting merge rules (Microsoft's "most restrictive wins").
enum SettingMerge {
    /// A configured value and the policy configuring it.
    typealias Entry<T> = (value: T, policy: PolicyReference)

    /// The greatest value in restriction order; sources are the policies holding it.
    static func mostRestrictive<T: RestrictionOrdered>(_ entries: [Entry<T>], default: T) -> ResolvedSetting<T> {
        guard let winner = entries.map(\.value).max() else {
            return ResolvedSetting(value: `default`, sources: [], resolution: .notConfigured)
        }
        return ResolvedSetting(
            value: winner, sources: entries.filter { $0.value == winner }.map(\.policy), resolution: .configured)
    }

    /// `true` when any policy says `true` (a `*Blocked` or `*Required` flag).
    static func anyTrue(_ entries: [Entry<Bool>], default: Bool) -> ResolvedSetting<Bool> {
        guard !entries.isEmpty else {
            return ResolvedSetting(value: `default`, sources: [], resolution: .notConfigured)
        }
        let value = entries.contains { $0.value }
        return ResolvedSetting(
            value: value, sources: entries.filter { $0.value == value }.map(\.policy), resolution: .configured)
    }

    /// `true` only when every configuring policy says `true` (a flag that turns a protection
    /// off: the most restrictive merge keeps the protection unless all agree).
    static func allTrue(_ entries: [Entry<Bool>], default: Bool) -> ResolvedSetting<Bool> {
        guard !entries.isEmpty else {
            return ResolvedSetting(value: `default`, sources: [], resolution: .notConfigured)
        }
        let value = entries.allSatisfy { $0.value }
        return ResolvedSetting(
            value: value, sources: entries.filter { $0.value == value }.map(\.policy), resolution: .configured)
    }

    /// The values every configuring policy allows (allow-lists intersect).
    static func intersection<T: Hashable & Sendable>(_ entries: [Entry<Set<T>>], default: Set<T>) -> ResolvedSetting<
        Set<T>
    > {
        guard let first = entries.first else {
            return ResolvedSetting(value: `default`, sources: [], resolution: .notConfigured)
        }
        let value = entries.dropFirst().reduce(first.value) { $0.intersection($1.value) }
        return ResolvedSetting(value: value, sources: entries.map(\.policy), resolution: .configured)
    }

    /// The agreed value, or the recommended default when configuring policies disagree.
    static func agreedOrDefault<T: Hashable & Sendable>(_ entries: [Entry<T>], default: T) -> ResolvedSetting<T> {
        guard let first = entries.first else {
            return ResolvedSetting(value: `default`, sources: [], resolution: .notConfigured)
        }
        if entries.allSatisfy({ $0.value == first.value }) {
            return ResolvedSetting(value: first.value, sources: entries.map(\.policy), resolution: .configured)
        }
        return ResolvedSetting(
            value: `default`, sources: entries.map(\.policy), resolution: .conflictDefault,
            sourceValues: entries.map(\.value))
    }
}
