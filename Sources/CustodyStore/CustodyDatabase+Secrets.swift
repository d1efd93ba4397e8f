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
    public func saveSecret(_ secret: SealedSecret) throws(StoreError) {
        try write("saving the secret \(secret.identifier)") { db in
            try db.execute(
                sql: """
                    INSERT INTO secrets (scope, identifier, kind, sealed, updated) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT(scope, identifier) DO UPDATE SET kind = excluded.kind, sealed = excluded.sealed, updated = excluded.updated
                    """,
                arguments: [secret.scope, secret.identifier, secret.kind, Data(secret.sealed), secret.updated])
            try Self.recordChange(.secret, [secret.scope], at: secret.updated, in: db)
        }
    }

    /// The sealed secret `identifier` of `scope`, if stored.
    public func secret(scope: String, identifier: String) throws(StoreError) -> SealedSecret? {
        try secrets(sql: "WHERE scope = ? AND identifier = ?", arguments: [scope, identifier]).first
    }

    /// The secrets of `scope`, by identifier.
    public func secrets(scope: String) throws(StoreError) -> [SealedSecret] {
        try secrets(sql: "WHERE scope = ? ORDER BY identifier", arguments: [scope])
    }

    /// Removes a secret; returns whether there was one.
    @discardableResult
    public func removeSecret(scope: String, identifier: String) throws(StoreError) -> Bool {
        try write("removing the secret \(identifier)") { db in
            try db.execute(
                sql: "DELETE FROM secrets WHERE scope = ? AND identifier = ?", arguments: [scope, identifier])
            guard db.changesCount > 0 else { return false }
            try Self.recordChange(.secret, [scope], at: Date(), in: db)
            return true
        }
    }

    /// Removes every secret of `scope` (a wiped account); returns how many there were.
    @discardableResult
    public func removeSecrets(scope: String) throws(StoreError) -> Int {
        try write("removing the secrets of \(scope)") { db in
            try db.execute(sql: "DELETE FROM secrets WHERE scope = ?", arguments: [scope])
            let count = db.changesCount
            if count > 0 { try Self.recordChange(.secret, [scope], at: Date(), in: db) }
            return count
        }
    }

    private func secrets(sql filter: String, arguments: StatementArguments) throws(StoreError) -> [SealedSecret] {
        try read("reading secrets") { db in
            try SecretRow.fetchAll(
                db, sql: "SELECT scope, identifier, kind, sealed, updated FROM secrets " + filter, arguments: arguments
            ).map(\.secret)
        }
    }
}
