public import Foundation

/// One sync of the policy from its source of truth (a Microsoft Graph tenant), as the event
/// stream, `/readyz` and the logs report it.
public struct PolicySync: Sendable, Hashable {
    /// What became of the sync.
    public enum Status: String, Sendable, Hashable, CaseIterable {
        /// The tenant's bundle differed from the policy in force and is in force now.
        case applied
        /// The tenant's bundle is the policy in force already: nothing changed.
        case unchanged
        /// The sync failed: the policy in force stayed as it was.
        case failed
    }

    /// Why the sync ran.
    public enum Trigger: String, Sendable, Hashable, CaseIterable {
        /// The service started.
        case start
        /// The interval passed.
        case schedule
        /// An administrator asked (`POST /v1/graph/sync`).
        case request
    }

    public var status: Status
    public var trigger: Trigger
    /// Where the bundle comes from: `graph:{tenant}@{host}`.
    public var source: String
    /// The tenant's bundle revision; nil when the sync failed before it had one.
    public var revision: String?
    /// Pages of collections read, requests sent (each try counts), answers that were 429.
    public var pages: Int
    public var requests: Int
    public var throttled: Int
    public var duration: Duration
    /// When it ended.
    public var finishedAt: Date
    /// Why it failed (naming the request), when it did.
    public var error: String?
    /// What the sync and the bundle's loader warned of (a group that does not exist, a policy
    /// type not read, a policy that reaches no one, a filter not evaluated …).
    public var warnings: [String]

    public init(
        status: Status, trigger: Trigger, source: String, revision: String?, pages: Int, requests: Int, throttled: Int,
        duration: Duration,
        finishedAt: Date, error: String?, warnings: [String] = []
    ) {
        self.status = status
        self.trigger = trigger
        self.source = source
        self.revision = revision
        self.pages = pages
        self.requests = requests
        self.throttled = throttled
        self.duration = duration
        self.finishedAt = finishedAt
        self.error = error
        self.warnings = warnings
    }

    /// The duration in whole milliseconds.
    public var milliseconds: Int {
        let (seconds, attoseconds) = duration.components
        return Int(seconds * 1_000 + attoseconds / 1_000_000_000_000_000)
    }
}

extension PolicyManager {
    /// Records `sync` in the state's event log (so every replica's event streams hear of it)
    /// and hands it to this process's subscribers as `policySynced`.
    public nonisolated func announce(_ sync: PolicySync) async {
        await journal.publish([.policySynced(sync)])
    }

    /// Records `event` in the state's event log and hands it to this process's subscribers.
    nonisolated func announce(_ event: PolicyEvent) async {
        await journal.publish([event])
    }
}
