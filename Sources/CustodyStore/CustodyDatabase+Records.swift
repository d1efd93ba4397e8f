import CustodyPolicy
import CustodyProtection
import Foundation
import GRDB

/// Dates in rows are read by `StoredDate`, not through Foundation's calendar (see there).
extension FetchableRecord where Self: Decodable {
    static var storedDates: DatabaseDateDecodingStrategy { .custom(StoredDate.date) }
}

// The rows of the state's tables as GRDB records (GRDB's "Record recommended practices": a
// Codable struct per table, its columns named once). The store's public types (`TokenRecord`,
// `SealedSecret`, `AuditEntry`, `BundleRecord`, `StoredFile`) are made from them, and a row
// that does not decode is a `.corrupt` state (see `CustodyDatabase.code(of:)`).

/// A row of `tokens`.
struct TokenRow: Codable, FetchableRecord, PersistableRecord {
    static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy { storedDates }

    static let databaseTableName = "tokens"

    var id: String
    var name: String?
    /// The scopes, separated by spaces.
    var scopes: String
    var hash: Data
    var created: Date
    var revoked: Date?
    var expires: Date?
    var last_used: Date?

    init(_ token: TokenRecord) {
        id = token.id
        name = token.name
        scopes = token.scopes.joined(separator: " ")
        hash = Data(token.hash)
        created = token.created
        revoked = token.revoked
        expires = token.expires
        last_used = token.lastUsed
    }

    var token: TokenRecord {
        TokenRecord(
            id: id, name: name, scopes: scopes.split(separator: " ").map(String.init), hash: [UInt8](hash),
            created: created, revoked: revoked, expires: expires, lastUsed: last_used)
    }
}

/// A row of `launch_facts`: an account's last reported launch facts (one row per account).
struct LaunchFactsRow: Codable, FetchableRecord, PersistableRecord {
    static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy { storedDates }

    static let databaseTableName = "launch_facts"

    var account: String
    var facts: String
    var at: Date
}

/// A row of `trusted_keys`.
struct TrustedKeyRow: Codable, FetchableRecord, PersistableRecord {
    static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy { storedDates }

    static let databaseTableName = "trusted_keys"

    var keyID: String
    var publicKey: String
    var name: String?
    var addedAt: Date
    var revokedAt: Date?
    var audience: String?

    enum CodingKeys: String, CodingKey, ColumnExpression {
        case keyID = "key_id", publicKey = "public_key", name, addedAt = "added_at", revokedAt = "revoked_at", audience
    }

    init(_ key: TrustedKeyRecord) {
        keyID = key.keyID
        publicKey = key.publicKey
        name = key.name
        addedAt = key.addedAt
        revokedAt = key.revokedAt
        audience = key.audience
    }

    var key: TrustedKeyRecord {
        TrustedKeyRecord(
            keyID: keyID, publicKey: publicKey, name: name, addedAt: addedAt, revokedAt: revokedAt, audience: audience)
    }
}

/// A row of `replicas`: what a serving process last said about itself.
struct ReplicaRow: Codable, FetchableRecord, PersistableRecord {
    static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy { storedDates }

    static let databaseTableName = "replicas"

    var id: String
    var host: String
    var processID: Int
    var startedAt: Date
    var version: String
    var revision: String?
    var change: Int64
    var lastContact: Date
    var lastError: String?

    enum CodingKeys: String, CodingKey, ColumnExpression {
        case id, host, processID = "pid", startedAt = "started_at", version, revision, change
        case lastContact = "last_contact", lastError = "last_error"
    }

    init(_ replica: ReplicaRecord) {
        id = replica.id
        host = replica.host
        processID = replica.processID
        startedAt = replica.startedAt
        version = replica.version
        revision = replica.revision
        change = replica.change
        lastContact = replica.lastContact
        lastError = replica.lastError
    }

    var replica: ReplicaRecord {
        ReplicaRecord(
            id: id, host: host, processID: processID, startedAt: startedAt, version: version, revision: revision,
            change: change, lastContact: lastContact, lastError: lastError)
    }
}

/// A row of `wiped_identifiers`: when an identifier's keys were wiped, and as which account.
struct WipedIdentifierRow: Codable, FetchableRecord, PersistableRecord {
    static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy { storedDates }

    static let databaseTableName = "wiped_identifiers"

    var identifier: String
    var account: String
    var at: Date
}

/// A row of `secrets`.
struct SecretRow: Codable, FetchableRecord, PersistableRecord {
    static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy { storedDates }

    static let databaseTableName = "secrets"

    var scope: String
    var identifier: String
    var kind: String
    var sealed: Data
    var updated: Date

    init(_ secret: SealedSecret) {
        scope = secret.scope
        identifier = secret.identifier
        kind = secret.kind
        sealed = Data(secret.sealed)
        updated = secret.updated
    }

    var secret: SealedSecret {
        SealedSecret(scope: scope, identifier: identifier, kind: kind, sealed: [UInt8](sealed), updated: updated)
    }
}

/// A row of `check_ins`.
struct CheckInRow: Codable, FetchableRecord, PersistableRecord {
    static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy { storedDates }

    static let databaseTableName = "check_ins"

    var account: String
    var at: Date
}

/// A row of `bundle_history`.
struct BundleHistoryRow: Codable, FetchableRecord, MutablePersistableRecord {
    static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy { storedDates }

    static let databaseTableName = "bundle_history"

    /// Nil until inserted.
    var id: Int64?
    var contentHash: String
    var appliedAt: Date
    var source: String
    var result: String
    var message: String?
    var sequence: Int64?
    var signers: String
    var signature: Data?
    var appliedBy: String?
    var reason: String?
    var rollback: Bool

    /// The columns, for `SELECT`s.
    static let columns =
        "id, content_hash, applied_at, source, result, message, sequence, signers, signature, applied_by, reason, rollback"

    enum CodingKeys: String, CodingKey {
        case id, source, result, message, sequence, signers, signature, reason, rollback
        case contentHash = "content_hash"
        case appliedAt = "applied_at"
        case appliedBy = "applied_by"
    }

    init(
        contentHash: String, appliedAt: Date, source: String, result: String, message: String?,
        provenance: BundleProvenance
    ) {
        self.contentHash = contentHash
        self.appliedAt = appliedAt
        self.source = source
        self.result = result
        self.message = message
        sequence = provenance.sequence
        signers = StateChange.encode(provenance.signers)
        signature = provenance.signature.map { Data($0) }
        appliedBy = provenance.appliedBy
        reason = provenance.reason
        rollback = provenance.isRollback
    }

    mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }

    func record() throws -> BundleRecord {
        guard let id else { throw RecordError("a bundle history row has no id") }
        guard let result = BundleRecord.Result(rawValue: result) else {
            throw RecordError("a bundle history row names the unknown result '\(result)'")
        }
        return BundleRecord(
            id: id, contentHash: contentHash, appliedAt: appliedAt, source: source, result: result, message: message,
            provenance: BundleProvenance(
                sequence: sequence, signers: StateChange.decode(signers), signature: signature.map { Array($0) },
                appliedBy: appliedBy, reason: reason, isRollback: rollback))
    }
}

/// A row of `bundle_revision_files`.
struct BundleFileRow: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "bundle_revision_files"

    var contentHash: String
    var name: String
    var bytes: Data

    enum CodingKeys: String, CodingKey {
        case name, bytes
        case contentHash = "content_hash"
    }

    var file: StoredFile { StoredFile(name: name, bytes: [UInt8](bytes)) }
}

/// A row of `account_keys`: one version of an account's key, wrapped by the master key.
struct AccountKeyRow: Codable, FetchableRecord, PersistableRecord {
    static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy { storedDates }

    static let databaseTableName = "account_keys"

    var owner: String
    var version: Int64
    var created: Date
    var nonce: Data
    var ciphertext: Data

    init(_ key: WrappedAccountKey) {
        owner = key.owner.rawValue
        version = Int64(key.version)
        created = key.created
        nonce = Data(key.nonce)
        ciphertext = Data(key.ciphertext)
    }

    func key() throws -> WrappedAccountKey {
        guard let identifier = OwnerIdentifier(rawValue: owner) else {
            throw RecordError(
                "an account key names the owner \"\(owner.escapingControlCharacters)\", which is not an owner identifier"
            )
        }
        guard
            let key = WrappedAccountKey(
                stored: identifier, version: version, created: created, nonce: nonce, ciphertext: ciphertext)
        else { throw RecordError("key version \(version) of \(owner) is out of range") }
        return key
    }
}

/// The one row of `master_key`: how the master key is derived, and the check value that
/// proves it.
struct MasterKeyRow: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "master_key"

    var id: Int64 = 1
    var kind: String
    var salt: Data?
    var opsLimit: Int64?
    var memLimit: Int64?
    var checkNonce: Data
    var checkCiphertext: Data

    enum CodingKeys: String, CodingKey {
        case id, kind, salt
        case opsLimit = "ops_limit"
        case memLimit = "mem_limit"
        case checkNonce = "check_nonce"
        case checkCiphertext = "check_ciphertext"
    }

    init(_ record: MasterKeyRecord) {
        kind = record.kind.rawValue
        salt = record.salt.map { Data($0) }
        opsLimit = record.opsLimit.map { Int64($0) }
        memLimit = record.memLimit.map { Int64($0) }
        checkNonce = Data(record.checkNonce)
        checkCiphertext = Data(record.checkCiphertext)
    }

    func record() throws -> MasterKeyRecord {
        guard
            let record = MasterKeyRecord(
                stored: kind, salt: salt, opsLimit: opsLimit, memLimit: memLimit, checkNonce: checkNonce,
                checkCiphertext: checkCiphertext)
        else { throw RecordError("the master key record names the unknown kind '\(kind)'") }
        return record
    }
}

/// The one row of `key_generation`, moved by triggers on `account_keys` (never written here).
struct KeyGenerationRow: Codable, FetchableRecord, TableRecord {
    static let databaseTableName = "key_generation"

    var id: Int64
    var value: Int64
}

/// A row of `settings`: a small named value (auditing on or off, retentions, caches).
struct SettingRow: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "settings"

    var name: String
    var value: String

    /// The value kept under `name`, nil when none is.
    static func value(_ name: String, in db: Database) throws -> String? {
        try fetchOne(db, key: name)?.value
    }

    /// Keeps `value` under `name`, replacing what was there.
    static func save(_ name: String, _ value: String, in db: Database) throws {
        try SettingRow(name: name, value: value).upsert(db)
    }
}

/// A row of `accounts`: an account the installation has seen, by canonical identifier.
struct AccountRow: Codable, FetchableRecord, PersistableRecord {
    static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy { storedDates }

    static let databaseTableName = "accounts"

    var owner: String
    var firstSeen: Date

    enum CodingKeys: String, CodingKey {
        case owner
        case firstSeen = "first_seen"
    }
}

/// A row of `account_aliases`: an identifier that names (or named) an account.
struct AccountAliasRow: Codable, FetchableRecord, PersistableRecord {
    static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy { storedDates }

    static let databaseTableName = "account_aliases"

    var alias: String
    var owner: String
    var since: Date
}

/// A row of `events`: one event of the log, its body as the engine encoded it.
struct EventRow: Codable, FetchableRecord, MutablePersistableRecord {
    static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy { storedDates }

    static let databaseTableName = "events"

    /// Nil until inserted.
    var id: Int64?
    var at: Date
    var name: String
    var body: Data

    mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }

    func event() throws -> StoredEvent {
        guard let id else { throw RecordError("an event row has no id") }
        return StoredEvent(id: id, at: at, name: name, body: [UInt8](body))
    }
}

/// A row of `changes`: one entry of the change log replicas follow.
struct ChangeRow: Codable, FetchableRecord, MutablePersistableRecord {
    static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy { storedDates }

    static let databaseTableName = "changes"

    /// Nil until inserted.
    var revision: Int64?
    var at: Date
    var kind: String
    /// The subjects, as `StateChange.encode` writes them.
    var subjects: String

    mutating func didInsert(_ inserted: InsertionSuccess) { revision = inserted.rowID }

    func change() throws -> StateChange {
        guard let revision else { throw RecordError("a change log row has no revision") }
        return StateChange(
            revision: revision, at: at, kind: StateChange.Kind(rawValue: kind), subjects: StateChange.decode(subjects))
    }
}

/// A row of `policy_reach`: when a policy first reached an account.
struct PolicyReachRow: Codable, FetchableRecord, PersistableRecord {
    static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy { storedDates }

    static let databaseTableName = "policy_reach"

    var account: String
    var policy: String
    var firstReached: Date

    enum CodingKeys: String, CodingKey {
        case account, policy
        case firstReached = "first_reached"
    }
}

/// A row of `bundle_revisions`: a revision whose files the state keeps (in
/// `bundle_revision_files`).
struct BundleRevisionRow: Codable, FetchableRecord, PersistableRecord {
    static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy { storedDates }

    static let databaseTableName = "bundle_revisions"

    var contentHash: String
    var storedAt: Date

    enum CodingKeys: String, CodingKey {
        case contentHash = "content_hash"
        case storedAt = "stored_at"
    }
}

/// A row of `audit_details`: a detail text stored once and named by the audit entries that
/// share it. Written by `AuditInsert`'s prepared statements (the audited decision path), read
/// joined to `audit_log` (`AuditRow.storedDetail`).
struct AuditDetailRow: Codable, FetchableRecord, TableRecord {
    static let databaseTableName = "audit_details"

    var id: Int64
    var text: String
}

/// A row that decodes but says something the store does not know: a damaged state.
struct RecordError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}
