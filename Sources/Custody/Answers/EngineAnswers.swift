public import CustodyPolicy
public import CustodyProtection
public import CustodyStore
public import Foundation

// What `CustodyEngine`'s operations answer, each a named type: the service sends them, the
// command line prints them, the console renders from them (docs/architecture.md, "Answers").

/// One query line decided (`CustodyEngine.decide(line:context:options:stamped:report:readsState:)`),
/// its audit entry stored when decision auditing is on.
public struct DecidedLine: Sendable {
    /// The answer as `custody decide` writes it: one JSON line, ending in a line break (the
    /// query's error object when it was refused).
    public let output: [UInt8]
    /// The revision (bundle content hash) it was decided at.
    public let revision: String
    /// The newest event id the engine knew when it was decided.
    public let eventID: Int64
    /// The decision by action and outcome (for metrics).
    public let tallies: DecisionTallies
    /// Why the line was refused, when it was.
    public let error: QueryError?
    /// Audit entries stored (0 when auditing is off or the line was refused).
    public let audited: Int
}

/// A buffer protected by `CustodyEngine.protect(_:owner:mode:context:)`: the envelope, and the
/// plan it was protected under.
public struct ProtectedBuffer: Sendable, Hashable {
    public let envelope: [UInt8]
    public let plan: ProtectionPlan
}

/// What `CustodyEngine.verifyAndProtect(file:owner:mode:progress:)` did with a file: the plan,
/// and why the file was left as it was when it was (nil: it was protected now).
public struct FileVerification: Sendable, Hashable {
    public let plan: ProtectionPlan
    public let skipped: String?
}

/// What `CustodyEngine.protect(directory:owner:mode:progress:)` did: the plan every file was
/// protected under, and the report of the files.
public struct DirectoryProtection: Sendable {
    public let plan: ProtectionPlan
    public let report: DirectoryReport
}

/// A new version of an account's key (`CustodyEngine.rotateKey(account:by:)`); as the service
/// sends it, `{"owner": …, "version": …}`.
public struct KeyRotation: Codable, Sendable, Hashable {
    /// The identifier the account's keys are kept under (`oid:…` or `upn:…`).
    public let owner: OwnerIdentifier
    /// The new version: envelopes sealed from now on use it.
    public let version: UInt32
}

/// A selective wipe done (`CustodyEngine.wipe(account:reason:)`), as the service and
/// `custody wipe --json` give it.
public struct WipeAnswer: Codable, Sendable, Hashable {
    /// The account as asked for.
    public let account: String
    /// The identifier whose keys were deleted.
    public let owner: String
    /// Every identifier the account has or had: keys under each were deleted.
    public let identifiers: [String]
    /// Key versions deleted, in all.
    public let keyVersions: Int
    /// Secrets deleted.
    public let secrets: Int
    /// The change log's newest event once the wipe was done (its `accountWiped` event or later).
    public let eventId: Int64

    public init(_ report: WipeReport, eventID: Int64) {
        account = report.account.description
        owner = report.owner.rawValue
        identifiers = report.resolved.identifiers.map(\.rawValue)
        keyVersions = report.keyVersions
        secrets = report.secrets
        eventId = eventID
    }
}

/// A token just made (`CustodyEngine.createToken(scopes:name:)`): its record, and the bearer
/// text, which exists outside its holder only here (the state keeps the SHA-256 of its secret).
///
/// As `custody tokens create --json` prints it: `id`, `name`, `scopes` (sorted), `created`,
/// `expires` (null: never) and `bearer`.
public struct CreatedToken: Encodable, Sendable, Hashable {
    public let token: ServiceToken
    public let bearer: String

    private enum CodingKeys: String, CodingKey { case id, name, scopes, created, expires, bearer }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(token.id, forKey: .id)
        try container.encode(token.name, forKey: .name)
        try container.encode(token.scopes.sorted().map(\.rawValue), forKey: .scopes)
        try container.encode(answerTime(token.created), forKey: .created)
        try container.encode(token.expires.map(answerTime), forKey: .expires)
        try container.encode(bearer, forKey: .bearer)
    }
}

/// Events of the change log after a position (`CustodyEngine.eventPage(after:limit:)` and
/// `events(after:limit:)`), oldest first.
public struct EventPage: Sendable, Hashable {
    public let events: [StoredEvent]
    /// The log no longer holds every event after the position asked for (pruned past its
    /// retention): the caller missed some and must read the state afresh.
    public let reset: Bool
}

/// The policy in force (`CustodyEngine.policyInForce`): the bundle, the snapshot decisions are
/// made from, and the version the policy manager counts swaps by.
public struct PolicyInForce: Sendable {
    public let bundle: BundleInForce
    public let snapshot: PolicySnapshot
    public let version: Int
}

/// The last bundle this process refused since one was put in force
/// (`CustodyEngine.lastBundleRejection`).
public struct RefusedBundle: Sendable, Hashable {
    public let at: Date
    /// Where the bundle came from (a directory, `PUT /v1/bundle`, the Graph sync).
    public let source: String
    /// Why it was refused.
    public let message: String
}
