public import Custody
import CustodyPolicy
import CustodyProtection
import Foundation
public import Hummingbird

// The answers of the admin and read routes, as `Codable` types: the keys in the order the
// OpenAPI document lists them; an optional written as `null`, never left out.

/// `POST /v1/accounts/{account}/wipe`.
extension WipeAnswer: ResponseEncodable {}

/// `POST /v1/accounts/{account}/keys/rotate`: `{"owner": …, "version": …}`.
extension KeyRotation: ResponseEncodable {}

/// `GET`, `PUT` and `DELETE /v1/bundle/shadow`: `{"shadow": …}`, `null` when there is none.
extension ShadowAnswer: ResponseEncodable {}

/// `PUT /v1/bundle`.
struct BundleApplied: ResponseEncodable {
    var revision: String
    var unchanged: Bool
    var eventId: Int64
    /// The names of the events subscribers were told.
    var events: [String]
}

/// `GET /v1/bundle`: the bundle in force, its files and its warnings.
struct BundleInForceAnswer: ResponseEncodable {
    struct File: Encodable {
        var name: String
        var bytes: Int
    }

    var revision: String
    var source: String
    /// Null for a one-off override (`--bundle`), which was never applied.
    @Nullable var appliedAt: String?
    /// The signed manifest's sequence; null for an unsigned bundle.
    @Nullable var sequence: Int64?
    /// The trusted keys whose signatures were verified when it was applied.
    var signers: [String]
    /// Who applied it (a token, `cli`, `watch`, `graph-sync`); null when not recorded.
    @Nullable var appliedBy: String?
    var version: Int
    var eventId: Int64
    var files: [File]
    var diagnostics: [String]
}

/// `GET /readyz`: whether this replica should take traffic, and why not.
struct ReadyAnswer: Encodable {
    /// The replica's view of the shared state.
    struct State: Encodable {
        var backend: String
        var changeRevision: Int64
        var newestKnown: Int64
        var listening: Bool
        var stale: Bool
        @Nullable var lastContact: String?
        @Nullable var divergence: String?
    }

    /// The Graph connector's syncs (`serve --graph`).
    struct Graph: Encodable {
        var status: String
        var running: Bool
        var consecutiveFailures: Int
        @Nullable var lastSuccessAt: String?
        @Nullable var last: PolicySync?
    }

    var status: String
    @Nullable var revision: String?
    var eventId: Int64
    var state: State
    /// Present only on a service that syncs from Graph.
    var graph: Graph?
    var problems: [String]
    var warnings: [String]
}

/// `GET /v1/accounts`: the tenant's accounts that match, and how many it has.
struct AccountsAnswer: ResponseEncodable {
    struct Account: Encodable {
        @Nullable var oid: String?
        @Nullable var upn: String?
        @Nullable var displayName: String?
        var groups: [String]
    }

    var accounts: [Account]
    /// How many accounts match (`accounts` holds the first `limit` of them).
    var matched: Int
    /// How many accounts the tenant has.
    var total: Int
    /// `after` for the next page; null on the last.
    @Nullable var next: String?
}

/// `GET /v1/activity`: per interval (oldest first, the last one still running), how many
/// decisions were answered, how many of them blocked, and how many requests were refused.
struct ActivityAnswer: ResponseEncodable {
    struct Interval: Encodable {
        var from: String
        var to: String
        var decisions: Int
        var blocked: Int
        var refusedRequests: Int
    }

    var intervalSeconds: Int
    var intervals: [Interval]

    init(_ samples: [RecentActivity.Sample]) {
        intervalSeconds = Int(RecentActivity.interval.components.seconds)
        intervals = zip(samples, samples.dropFirst()).map { earlier, later in
            Interval(
                from: answerTime(earlier.at), to: answerTime(later.at), decisions: later.decisions - earlier.decisions,
                blocked: later.blocked - earlier.blocked, refusedRequests: later.refused - earlier.refused)
        }
    }
}

/// A library answer (`DecisionGrid`, `GroupGrid`, `AccountStatus`) sent as it encodes itself.
struct LibraryAnswer<Value: Encodable & Sendable>: ResponseEncodable {
    var value: Value

    init(_ value: Value) { self.value = value }

    func encode(to encoder: any Encoder) throws { try value.encode(to: encoder) }
}
