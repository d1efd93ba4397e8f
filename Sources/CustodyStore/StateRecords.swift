public import Foundation
import CustodyPolicy

// What the `StateStore` protocol hands back, as named structs (both implementations, SQLite and
// PostgreSQL, return these).

/// The two ends of a log (the event log, the change log).
public struct LogBounds: Sendable, Hashable {
    /// The oldest id the log still holds; nil when it holds none.
    public var oldest: Int64?
    /// The newest id ever written (0 before any), pruned or not.
    public var newest: Int64

    public init(oldest: Int64?, newest: Int64) {
        self.oldest = oldest
        self.newest = newest
    }
}

/// When an identifier's keys were wiped, and as which account.
public struct WipeRecord: Sendable, Hashable {
    public var account: String
    public var at: Date

    public init(account: String, at: Date) {
        self.account = account
        self.at = at
    }
}

/// The installation's recorded evaluation context (`custody apply --platform ...`); each nil
/// when never recorded.
public struct InstallationContext: Sendable, Hashable {
    public var platform: String?
    public var appID: String?
    public var managementLevel: String?
    public var precedence: String?

    public init(
        platform: String? = nil, appID: String? = nil, managementLevel: String? = nil, precedence: String? = nil
    ) {
        self.platform = platform
        self.appID = appID
        self.managementLevel = managementLevel
        self.precedence = precedence
    }
}

/// The launch facts an account's app last reported (`custody checkin --facts`), as JSON, and
/// when.
public struct StoredLaunchFacts: Sendable, Hashable {
    /// The facts, a JSON object as `LaunchFacts` reads it.
    public var facts: String
    public var at: Date

    public init(facts: String, at: Date) {
        self.facts = facts
        self.at = at
    }
}

/// One file of a stored bundle.
public struct StoredFile: Sendable, Hashable {
    public var name: String
    public var bytes: [UInt8]

    public init(name: String, bytes: [UInt8]) {
        self.name = name
        self.bytes = bytes
    }
}

/// A bundle as the state keeps it: its history record and its files.
public struct StoredBundle: Sendable, Hashable {
    public var record: BundleRecord
    public var files: [StoredFile]

    public init(record: BundleRecord, files: [StoredFile]) {
        self.record = record
        self.files = files
    }
}

/// What recording a bundle wrote: its history record and the ids its events were given.
public struct RecordedBundle: Sendable, Hashable {
    public var record: BundleRecord
    public var eventIDs: [Int64]
    /// Whether the state had these files, under the same signature, in force already (another
    /// writer applied them first): nothing was written, `record` is that writer's, and no
    /// event was appended.
    public var alreadyApplied: Bool

    public init(record: BundleRecord, eventIDs: [Int64], alreadyApplied: Bool = false) {
        self.record = record
        self.eventIDs = eventIDs
        self.alreadyApplied = alreadyApplied
    }
}

/// An account the state records as seen (`accounts`), with the other identifiers it is known by.
public struct SeenAccount: Sendable, Hashable {
    /// Its canonical identifier (`oid:...` or `upn:...`).
    public var owner: String
    public var aliases: [String]

    public init(owner: String, aliases: [String]) {
        self.owner = owner
        self.aliases = aliases
    }
}

/// The policies that reach one account (by name), as a bundle assigns them.
public struct PolicyReach: Sendable, Hashable {
    public var account: String
    public var policies: [String]

    public init(account: String, policies: [String]) {
        self.account = account
        self.policies = policies
    }
}

/// Where a bundle came from and who put it in force, as its history row keeps it.
public struct BundleProvenance: Sendable, Hashable {
    /// The signed manifest's sequence number; nil for an unsigned bundle.
    public var sequence: Int64?
    /// The key ids whose signatures were verified, sorted; empty when none was.
    public var signers: [String]
    /// The signature file's bytes as they came with the bundle (`.custody-signature.json`).
    public var signature: [UInt8]?
    /// Who applied it: a token's name or id, `cli`, `graph-sync`; nil when not known.
    public var appliedBy: String?
    /// Why, when given (a rollback's `--reason`).
    public var reason: String?
    /// Put back in force from the history by an operator (not an incoming bundle).
    public var isRollback: Bool

    /// `appliedBy` and `reason` keep control characters escaped (`\u{0}`), as every text the
    /// state keeps from a caller: PostgreSQL refuses a NUL, SQLite would cut the text there.
    public init(
        sequence: Int64? = nil, signers: [String] = [], signature: [UInt8]? = nil, appliedBy: String? = nil,
        reason: String? = nil, isRollback: Bool = false
    ) {
        self.sequence = sequence
        self.signers = signers
        self.signature = signature
        self.appliedBy = appliedBy?.escapingControlCharacters
        self.reason = reason?.escapingControlCharacters
        self.isRollback = isRollback
    }

    /// Nothing known: an unsigned bundle applied by nobody named.
    public static let none = BundleProvenance()
}

/// A public key the state trusts to sign bundles (`custody trust add`).
public struct TrustedKeyRecord: Sendable, Hashable {
    /// The key's id: the first 16 hex digits of the SHA-256 of its 32 bytes.
    public var keyID: String
    /// The key as text: `ed25519:` and the base64 of its 32 bytes.
    public var publicKey: String
    public var name: String?
    public var addedAt: Date
    /// When it was revoked; a revoked key's signature never counts.
    public var revokedAt: Date?
    /// The installation's name its signatures must be made for (the manifest's `audience`);
    /// nil: any.
    public var audience: String?

    public init(
        keyID: String, publicKey: String, name: String?, addedAt: Date, revokedAt: Date? = nil, audience: String? = nil
    ) {
        self.keyID = keyID
        self.publicKey = publicKey
        self.name = name
        self.addedAt = addedAt
        self.revokedAt = revokedAt
        self.audience = audience
    }
}

/// A freeze of the policy in force (`custody bundle freeze`): every new bundle is refused with
/// its reason until it is lifted; a rollback still goes through.
public struct BundleFreeze: Sendable, Hashable, Codable {
    public var reason: String
    /// Who froze it: a token's name, `cli`.
    public var by: String?
    public var at: Date

    /// `reason` and `by` keep control characters escaped (see `BundleProvenance`).
    public init(reason: String, by: String?, at: Date) {
        self.reason = reason.escapingControlCharacters
        self.by = by?.escapingControlCharacters
        self.at = at
    }
}

/// A candidate bundle decided beside the one in force (shadow mode, `custody bundle shadow`):
/// every live decision of a service is decided under it too, and where the two disagree is
/// counted. The state keeps the one running, or the last one until another is set.
public struct ShadowRecord: Sendable, Hashable, Codable {
    /// Unique per shadow set (setting the same files again starts a new count): the tallies
    /// of its decisions name it.
    public var id: String
    /// The candidate's content hash.
    public var revision: String
    /// Where its files came from (a directory, `http`).
    public var source: String
    /// Who set it: a token's name, `cli`.
    public var by: String?
    public var since: Date
    /// When it ended; nil while it runs.
    public var ended: Date?
    /// How it ended: `promoted` (a bundle of its revision was applied) or `stopped`, and by whom.
    public var endedHow: String?

    /// `source` and `by` keep control characters escaped (see `BundleProvenance`).
    public init(id: String, revision: String, source: String, by: String?, since: Date) {
        self.id = id
        self.revision = revision
        self.source = source.escapingControlCharacters
        self.by = by?.escapingControlCharacters
        self.since = since
    }

    public var isRunning: Bool { ended == nil }

    /// The record as the settings table keeps it: one line of JSON.
    package func encoded() throws -> String {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .millisecondsSince1970
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(self), as: UTF8.self)
    }

    package static func decode(_ text: String) throws -> ShadowRecord {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        do {
            return try decoder.decode(ShadowRecord.self, from: Data(text.utf8))
        } catch {
            throw RecordError("the shadow setting is not readable: \(error)")
        }
    }
}

/// The shadow as the state keeps it: its record and, while it runs, its files.
public struct StoredShadow: Sendable, Hashable {
    public var record: ShadowRecord
    /// The candidate's files, in byte order of their names; empty once it ended.
    public var files: [StoredFile]

    public init(record: ShadowRecord, files: [StoredFile]) {
        self.record = record
        self.files = files
    }
}

/// What one replica counted of a shadow's decisions, as it last recorded it (cumulative: each
/// record replaces the replica's last).
public struct ShadowTallyRecord: Sendable, Hashable {
    public var replica: String
    /// The count, in the engine's own JSON form.
    public var tally: String
    public var updatedAt: Date

    public init(replica: String, tally: String, updatedAt: Date) {
        self.replica = replica
        self.tally = tally
        self.updatedAt = updatedAt
    }
}

/// What one replica (one `custody serve` process) last said about itself in the shared state.
public struct ReplicaRecord: Sendable, Hashable {
    /// Unique per process: host, process id and start time.
    public var id: String
    public var host: String
    public var processID: Int
    public var startedAt: Date
    /// The Custody version it runs.
    public var version: String
    /// The revision in force there; nil when none.
    public var revision: String?
    /// The last change of the state's log it applied.
    public var change: Int64
    public var lastContact: Date
    /// Its last error reaching the state or applying a change; nil when none.
    public var lastError: String?

    public init(
        id: String, host: String, processID: Int, startedAt: Date, version: String, revision: String?, change: Int64,
        lastContact: Date, lastError: String?
    ) {
        self.id = id
        self.host = host
        self.processID = processID
        self.startedAt = startedAt
        self.version = version
        self.revision = revision
        self.change = change
        self.lastContact = lastContact
        self.lastError = lastError
    }
}

/// The state's own rules for a bundle about to be put in force, which both engines check in
/// the transaction that records it.
package enum BundleAdmission {
    /// Why the state refuses a bundle with this provenance, or nil. A rollback passes a freeze
    /// and the sequence rule, never the trust rule.
    package static func refusal(
        of provenance: BundleProvenance, frozen: BundleFreeze?, highestSequence: Int64,
        trusted: [(id: String, revoked: Bool)]
    ) -> String? {
        if !trusted.isEmpty {
            let revoked = Set(trusted.filter(\.revoked).map(\.id))
            let valid = Set(trusted.filter { !$0.revoked }.map(\.id))
            if let key = provenance.signers.first(where: revoked.contains) {
                return "revoked key: \(key) was revoked"
            }
            guard !provenance.signers.isEmpty, provenance.signers.allSatisfy(valid.contains) else {
                return provenance.signers.isEmpty
                    ? "unsigned: the state trusts signing keys, and no trusted signature was verified"
                    : "unknown key: \(provenance.signers.joined(separator: ", ")) not trusted by the state"
            }
        }
        guard !provenance.isRollback else { return nil }
        if let frozen {
            return "frozen: the policy in force is frozen (\(frozen.reason)); unfreeze it first, or roll back"
        }
        if let sequence = provenance.sequence, sequence <= highestSequence {
            return "replayed: sequence \(sequence) is not greater than \(highestSequence), the highest applied"
        }
        return nil
    }
}
