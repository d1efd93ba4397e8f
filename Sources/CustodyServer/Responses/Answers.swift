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
