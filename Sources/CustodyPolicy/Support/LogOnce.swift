/// Which diagnostics a snapshot has logged already, so that one that recurs with every decision
/// (an account near-missing an allowed entry, asked about a million times in a batch) is logged
/// once per snapshot, not once per decision: a log an operator can read, and decisions that do
/// not wait for it.
///
/// Bounded: after `limit` distinct keys it logs nothing more for the snapshot (the caller says
/// so once, when `first(_:)` answers `.limitReached`), so a stream of ever-new accounts cannot
/// grow it without end. A new bundle makes a new snapshot, which logs afresh.
final class LogOnce: Sendable {
    enum Verdict: Equatable {
        /// Not logged before: log it.
        case first
        /// Logged before, or past the limit: stay silent.
        case repeated
        /// The key that reached the limit: say that what follows is no longer logged.
        case limitReached
    }

    let limit: Int
    private let seen = Locked<(keys: Set<String>, full: Bool)>(([], false))

    init(limit: Int = 1_000) {
        self.limit = limit
    }

    /// Whether the diagnostic named `key` is to be logged now.
    func first(_ key: String) -> Verdict {
        seen.withLock { seen in
            if seen.full || seen.keys.contains(key) { return .repeated }
            if seen.keys.count >= limit {
                seen.full = true
                return .limitReached
            }
            seen.keys.insert(key)
            return .first
        }
    }
}
