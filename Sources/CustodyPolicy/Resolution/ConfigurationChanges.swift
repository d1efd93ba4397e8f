/// Which accounts' app configuration differs between two snapshots. Configurations are
/// shared by the accounts the same policies reach, so each pair is compared once, as
/// effective policies are. Unmanaged and unconfigured are alike: an app receives none either
/// way.
package struct ConfigurationChanges {
    private let old: PolicySnapshot?
    private let new: PolicySnapshot
    private var known: [Pair: Bool] = [:]

    private struct Pair: Hashable {
        let old: Int32
        let new: Int32
    }

    /// Changes from `old` (nil: no snapshot before) to `new`.
    package init(from old: PolicySnapshot?, to new: PolicySnapshot) {
        self.old = old
        self.new = new
    }

    /// Whether `account` now receives a different configuration.
    package mutating func changed(for account: AccountID) -> Bool {
        let pair = Pair(old: old?.configurationIndex(of: account) ?? -1, new: new.configurationIndex(of: account))
        if let result = known[pair] { return result }
        let result = Self.configured(old, pair.old) != Self.configured(new, pair.new)
        known[pair] = result
        return result
    }

    private static func configured(_ snapshot: PolicySnapshot?, _ index: Int32) -> AppConfiguration? {
        guard let snapshot, index >= 0, !snapshot.configurations[Int(index)].isEmpty else { return nil }
        return snapshot.configurations[Int(index)]
    }
}
