import Custody
import CustodyPolicy
import CustodyProtection
import Foundation
import Hummingbird

// The answers of the admin and read routes, as `Codable` types: the keys in the order the
// OpenAPI document lists them; an optional written as `null`, never left out.

/// `POST /v1/accounts/{account}/wipe`.
struct WipeAnswer: ResponseEncodable {
    var account: String
    var owner: String
    var identifiers: [String]
    var keyVersions: Int
    var secrets: Int
    var eventId: Int64

    init(account: AccountID, report: WipeReport, eventID: Int64) {
        self.account = account.description
        owner = report.owner.rawValue
        identifiers = report.resolved.identifiers.map(\.rawValue)
        keyVersions = report.keyVersions
        secrets = report.secrets
        eventId = eventID
    }
}

/// `POST /v1/accounts/{account}/rotate-key`.
struct RotationAnswer: ResponseEncodable {
    var owner: String
    var version: UInt32
}

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
    var appliedAt: String?
    var version: Int
    var eventId: Int64
    var files: [File]
    var diagnostics: [String]

    private enum CodingKeys: String, CodingKey {
        case revision, source, appliedAt, version, eventId, files, diagnostics
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(revision, forKey: .revision)
        try container.encode(source, forKey: .source)
        try container.encode(appliedAt, forKey: .appliedAt)  // null for a one-off override
        try container.encode(version, forKey: .version)
        try container.encode(eventId, forKey: .eventId)
        try container.encode(files, forKey: .files)
        try container.encode(diagnostics, forKey: .diagnostics)
    }
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
        var lastContact: String?
        var divergence: String?

        private enum CodingKeys: String, CodingKey {
            case backend, changeRevision, newestKnown, listening, stale, lastContact, divergence
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(backend, forKey: .backend)
            try container.encode(changeRevision, forKey: .changeRevision)
            try container.encode(newestKnown, forKey: .newestKnown)
            try container.encode(listening, forKey: .listening)
            try container.encode(stale, forKey: .stale)
            try container.encode(lastContact, forKey: .lastContact)
            try container.encode(divergence, forKey: .divergence)
        }
    }

    /// The Graph connector's syncs (`serve --graph`).
    struct Graph: Encodable {
        var status: String
        var running: Bool
        var consecutiveFailures: Int
        var lastSuccessAt: String?
        var last: PolicySync?

        private enum CodingKeys: String, CodingKey { case status, running, consecutiveFailures, lastSuccessAt, last }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(status, forKey: .status)
            try container.encode(running, forKey: .running)
            try container.encode(consecutiveFailures, forKey: .consecutiveFailures)
            try container.encode(lastSuccessAt, forKey: .lastSuccessAt)
            try container.encode(last, forKey: .last)
        }
    }

    var status: String
    var revision: String?
    var eventId: Int64
    var state: State
    /// Present only on a service that syncs from Graph.
    var graph: Graph?
    var problems: [String]
    var warnings: [String]

    private enum CodingKeys: String, CodingKey { case status, revision, eventId, state, graph, problems, warnings }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(status, forKey: .status)
        try container.encode(revision, forKey: .revision)
        try container.encode(eventId, forKey: .eventId)
        try container.encode(state, forKey: .state)
        try container.encodeIfPresent(graph, forKey: .graph)
        try container.encode(problems, forKey: .problems)
        try container.encode(warnings, forKey: .warnings)
    }
}
