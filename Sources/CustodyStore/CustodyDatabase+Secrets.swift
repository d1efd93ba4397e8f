public import Foundation
import GRDB

/// A secret as stored: sealed by the protection layer, never in the clear.
public struct SealedSecret: Sendable, Hashable {
    /// The owner identifier (`oid:...`) for a per-account secret, or "" for an app-wide one.
    public let scope: String
    public let identifier: String
    /// What it holds: `password`, `certificate`, `identity`.
    public let kind: String
    /// The envelope.
    public let sealed: [UInt8]
    public let updated: Date

    public init(scope: String, identifier: String, kind: String, sealed: [UInt8], updated: Date) {
        self.scope = scope
        self.identifier = identifier
        self.kind = kind
        self.sealed = sealed
        self.updated = updated
    }
}

extension CustodyDatabase {
    /// Stores (or replaces) a sealed secret.
    public func saveSecret(_ secret: SealedSecret) async throws(StoreError) {
        try await write("saving the secret \(secret.identifier)") { db in
            try SecretRow(secret).upsert(db)
            try Self.recordChange(.secret, [secret.scope], at: secret.updated, in: db)
        }
    }

    /// The sealed secret `identifier` of `scope`, if stored.
    public func secret(scope: String, identifier: String) async throws(StoreError) -> SealedSecret? {
        try await read("reading the secret \(identifier)") { db in
            try SecretRow.fetchOne(db, key: ["scope": scope, "identifier": identifier])?.secret
        }
    }

    /// The secrets of `scope`, by identifier.
    public func secrets(scope: String) async throws(StoreError) -> [SealedSecret] {
        try await read("reading secrets") { db in
            try SecretRow.filter(Column("scope") == scope).order(Column("identifier")).fetchAll(db).map(\.secret)
        }
    }

    /// Removes a secret; returns whether there was one.
    @discardableResult
    public func removeSecret(scope: String, identifier: String) async throws(StoreError) -> Bool {
        try await write("removing the secret \(identifier)") { db in
            guard try SecretRow.deleteOne(db, key: ["scope": scope, "identifier": identifier]) else { return false }
            try Self.recordChange(.secret, [scope], at: Date(), in: db)
            return true
        }
    }

    /// Removes every secret of `scope` (a wiped account); returns how many there were.
    @discardableResult
    public func removeSecrets(scope: String) async throws(StoreError) -> Int {
        try await write("removing the secrets of \(scope)") { db in
            let count = try SecretRow.filter(Column("scope") == scope).deleteAll(db)
            if count > 0 { try Self.recordChange(.secret, [scope], at: Date(), in: db) }
            return count
        }
    }
}
