public import CustodyPolicy
public import Foundation

/// Which audited decisions a replay decides again.
public struct ReplayScope: Sendable, Hashable {
    /// The window: decisions audited at or after `from` and before `to`.
    public var from: Date
    public var to: Date
    /// Only decisions about this account: any of its forms (UPN, object id) that the tenant
    /// in force or the candidate knows, compared without regard to case.
    public var account: String?
    /// Only decisions about members of this group (an Entra group's object id), as the tenant
    /// in force or the candidate lists them.
    public var group: String?
    /// Only decisions of this action.
    public var action: DecisionAction?

    public init(
        from: Date, to: Date, account: String? = nil, group: String? = nil, action: DecisionAction? = nil
    ) {
        self.from = from
        self.to = to
        self.account = account
        self.group = group
        self.action = action
    }
}

/// How far a replay has come, reported after each page of the audit log.
public struct ReplayProgress: Sendable, Hashable, Codable {
    /// Audited decisions read so far (in scope or not).
    public var read: Int
    /// Decided again so far.
    public var decided: Int
    /// Flips found so far.
    public var flipped: Int
    /// The share of the window's time read, 0 to 1: the last entry's time within the window.
    public var fraction: Double
}

/// What a candidate bundle would have decided differently over the audited decisions of a
/// window (`CustodyEngine.replay`): how many were decided again, how many flip and which way,
/// grouped by setting, app, action and account, and the most frequent flips with a sample of
/// each. Loosening flips (block to allow; a launch outcome made milder; encryption no longer
/// required) come first everywhere.
public struct ImpactReport: Sendable, Hashable, Codable {
    /// How many groups, flips and refusals a report lists at most.
    public static let listed = 20

    /// The candidate's content hash.
    public var candidate: String
    /// The window (RFC 3339, to the second).
    public var from: String
    public var to: String
    /// Audited decisions in scope that kept their query, decided again.
    public var decided: Int
    /// Decided the same way.
    public var unchanged: Int
    /// Decided otherwise: `loosened` + `tightened`.
    public var flipped: Int
    /// Flips that let through what was stopped.
    public var loosened: Int
    /// Flips that stop what was let through.
    public var tightened: Int
    /// Decisions the candidate refuses to make (an account whose forms name different
    /// accounts in its tenant; a bundle of several platforms with none recorded): the decision
    /// service would answer these with an error.
    public var refused: Int
    /// Entries in scope that do not keep their query (audited before the log kept it, or made
    /// outside a query, such as a check-in's launch): not decided again.
    public var notReplayable: Int
    /// Entries whose query no longer reads (a later Custody that reads queries otherwise).
    public var unreadable: Int
    /// Decisions by the revision they were made under.
    public var revisions: [Count]
    public var bySetting: [Group]
    public var byApp: [Group]
    public var byAction: [Group]
    public var byAccount: [Group]
    /// The most frequent flips, loosening ones first.
    public var flips: [Flip]
    /// Samples of refused decisions.
    public var refusals: [Sample]
    /// More distinct groups or flips than the report counts one by one: the rest are counted
    /// in the totals only (memory stays bounded whatever the window).
    public var truncated: Bool

    public struct Count: Sendable, Hashable, Codable {
        public var revision: String
        public var decisions: Int
    }

    /// Flips that share a setting, an app, an action or an account.
    public struct Group: Sendable, Hashable, Codable {
        public var key: String
        public var flipped: Int
        public var loosened: Int
    }

    /// One kind of flip: the same action, app and setting, from one outcome to another.
    public struct Flip: Sendable, Hashable, Codable {
        public var action: String
        /// The app of the context it was decided in (`-` when none was named).
        public var app: String
        /// The setting that decides under the candidate (`-` when none does).
        public var setting: String
        /// Outcomes: `allow`, `block`; `required`, `optional` for encryption; a launch's
        /// `allow`, `warn`, `block`, `wipe`.
        public var before: String
        public var after: String
        public var loosens: Bool
        public var count: Int
        /// The first such flip in the window.
        public var sample: Sample
    }

    /// One audited decision decided again.
    public struct Sample: Sendable, Hashable, Codable {
        /// The audit entry's id.
        public var entry: Int64
        /// When it was decided (RFC 3339, to the second).
        public var at: String
        public var account: String?
        /// The query as it was asked.
        public var query: String
        /// The reason the entry holds.
        public var reasonBefore: String?
        /// The candidate's reason (for a refusal, why it refuses).
        public var reasonAfter: String
    }
}

extension ReplayScope {
    /// The window that the command line's `--since`, `--from`, `--to` (and the service's
    /// parameters of those names) give: the last `since` (an age: `30m`, `12h`, `7d`, `2w`), or
    /// `from` to `to` (RFC 3339; `to` defaults to now); the last 7 days when none is given.
    /// - Parameter prefix: what the parameters' names start with in messages (`--`).
    /// - Throws: `CustodyError` `.invalidArgument` naming the parameter.
    public static func window(since: String?, from: String?, to: String?, now: Date, prefix: String = "")
        throws(CustodyError) -> (from: Date, to: Date)
    {
        let (sinceName, fromName, toName) = (prefix + "since", prefix + "from", prefix + "to")
        func invalid(_ message: String) -> CustodyError { CustodyError(.invalidArgument, message) }
        func time(_ text: String, _ name: String) throws(CustodyError) -> Date {
            guard let time = RFC3339.durationSinceEpoch(text) else {
                throw invalid(
                    "\(name) must be an RFC 3339 time such as 2026-11-21T09:30:00Z, not '\(text.escapingControlCharacters)'"
                )
            }
            return Date(
                timeIntervalSince1970: Double(time.components.seconds) + Double(time.components.attoseconds) / 1e18)
        }
        if since != nil, from != nil || to != nil {
            throw invalid("\(sinceName) and \(fromName)/\(toName) both name a window: give one")
        }
        if let from {
            let start = try time(from, fromName)
            let end = try to.map { text throws(CustodyError) in try time(text, toName) } ?? now
            guard start < end else { throw invalid("\(fromName) must be before \(toName) (or before now)") }
            return (start, end)
        }
        if to != nil { throw invalid("\(toName) needs \(fromName)") }
        let text = since ?? "7d"
        guard let age = Age.parse(text) else {
            throw invalid(
                "\(sinceName) takes an age such as 30m, 12h, 7d or 2w (up to 36600d), not '\(text.escapingControlCharacters)'"
            )
        }
        return (now.addingTimeInterval(-age.inSeconds), now)
    }
}
