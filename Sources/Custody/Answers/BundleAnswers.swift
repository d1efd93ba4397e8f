import CustodyPolicy
public import CustodyStore
package import Foundation

// The JSON both front ends write for bundles, trust and replicas (`custody bundle history
// --json` and `GET /v1/bundle/history`, and so on): one type each, encoded with `JSONLine`.

/// RFC 3339 in UTC, to the millisecond.
package func answerTime(_ date: Date) -> String {
    date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt))
}

/// RFC 3339 in UTC, to the second (rounded down), written without Foundation's formatter, as
/// `custody audit` prints times and a replay's report names them.
package func secondsTime(_ date: Date) -> String {
    RFC3339.format(.seconds(Int64(date.timeIntervalSince1970.rounded(.down))))
}

/// `text` with the files of the bundle directory `source` named relative to it
/// (`all-staff.json:1:2` rather than `/etc/custody/bundle/all-staff.json:1:2`), as files of a
/// bundle sent over HTTP are: what a service shows to read tokens, or without a token at all
/// (`/readyz`), does not lay out the server's file system. A source that is no path (a PUT, a
/// Graph sync) leaves `text` as it is.
package func namingFiles(in text: String, relativeTo source: String) -> String {
    guard source.hasPrefix("/") else { return text }
    let directory = source.hasSuffix("/") ? source : source + "/"
    return text.replacingOccurrences(of: directory, with: "")
}

/// One bundle history entry.
public struct BundleRecordAnswer: Encodable, Sendable {
    var id: Int64
    var revision: String
    var result: String
    var appliedAt: String
    var source: String
    @Nullable var message: String?
    @Nullable var sequence: Int64?
    var signers: [String]
    @Nullable var appliedBy: String?
    @Nullable var reason: String?
    var rollback: Bool

    public init(_ record: BundleRecord) {
        id = record.id
        revision = record.contentHash
        result = record.result.rawValue
        appliedAt = answerTime(record.appliedAt)
        source = record.source
        message = record.message.map { namingFiles(in: $0, relativeTo: record.source) }
        sequence = record.provenance.sequence
        signers = record.provenance.signers
        appliedBy = record.provenance.appliedBy
        reason = record.provenance.reason
        rollback = record.provenance.isRollback
    }
}

/// A kept revision: its newest history entry and its files (names, sizes, SHA-256).
public struct KeptBundleAnswer: Encodable, Sendable {
    struct File: Encodable, Sendable {
        var name: String
        var bytes: Int
        var sha256: String
    }

    var record: BundleRecordAnswer
    var files: [File]
    var signed: Bool

    public init(_ stored: StoredBundle) {
        record = BundleRecordAnswer(stored.record)
        files = stored.files.map { file in
            File(name: file.name, bytes: file.bytes.count, sha256: BundleManifest.sha256(file.bytes))
        }
        signed = stored.record.provenance.signature != nil
    }
}

/// A key the state knows.
public struct TrustedKeyAnswer: Encodable, Sendable {
    var keyId: String
    var publicKey: String
    @Nullable var name: String?
    var addedAt: String
    @Nullable var revokedAt: String?
    @Nullable var audience: String?

    public init(_ key: TrustedKeyRecord) {
        keyId = key.keyID
        publicKey = key.publicKey
        name = key.name
        addedAt = answerTime(key.addedAt)
        revokedAt = key.revokedAt.map(answerTime)
        audience = key.audience
    }
}

/// The freeze in force (or none).
public struct FreezeAnswer: Encodable, Sendable {
    var frozen: Bool
    @Nullable var reason: String?
    @Nullable var by: String?
    @Nullable var at: String?

    public init(_ freeze: BundleFreeze?) {
        frozen = freeze != nil
        reason = freeze?.reason
        by = freeze?.by
        at = freeze.map { answerTime($0.at) }
    }
}

/// One replica of the fleet.
public struct ReplicaAnswer: Encodable, Sendable {
    var id: String
    var host: String
    var pid: Int
    var startedAt: String
    var version: String
    @Nullable var revision: String?
    var change: Int64
    var lastContact: String
    @Nullable var lastError: String?
    var stale: Bool
    var behind: Bool
    /// Stopped or replaced: not heard from for a status period past stale.
    var gone: Bool

    public init(_ replica: FleetReplica) {
        let record = replica.record
        id = record.id
        host = record.host
        pid = record.processID
        startedAt = answerTime(record.startedAt)
        version = record.version
        revision = record.revision
        change = record.change
        lastContact = answerTime(record.lastContact)
        lastError = record.lastError
        stale = replica.isStale
        behind = replica.isBehind
        gone = replica.isGone
    }
}

/// The shadow bundle, or `null` (`custody bundle shadow status --json`, `GET /v1/bundle/shadow`).
public struct ShadowAnswer: Sendable, Encodable {
    public var shadow: ShadowStatus?

    public init(shadow: ShadowStatus?) {
        self.shadow = shadow
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        // `null` when there is none, not a missing member.
        try container.encode(shadow, forKey: .shadow)
    }

    enum CodingKeys: String, CodingKey { case shadow }
}
