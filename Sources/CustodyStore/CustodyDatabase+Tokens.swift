public import Foundation
import CustodyPolicy
import GRDB

/// A bearer token of the decision service, as stored: never the token itself, only the SHA-256
/// of its secret part.
public struct TokenRecord: Sendable, Hashable {
    /// The public part of the token, which names it in lists and audits.
    public let id: String
    /// What the token is for, in words.
    public let name: String?
    /// What it may do (`decide`, `read`, `events`, `protect`, `admin`).
    public let scopes: [String]
    /// SHA-256 of the secret part.
    public let hash: [UInt8]
    public let created: Date
    /// When it was revoked; nil while it is valid.
    public let revoked: Date?
    /// When it stops being valid; nil: never.
    public let expires: Date?
    /// When it last authenticated a request, to within a minute (see `recordTokenUse`); nil:
    /// never.
    public let lastUsed: Date?

    /// `name` keeps control characters escaped (see `BundleProvenance`).
    public init(
        id: String, name: String?, scopes: [String], hash: [UInt8], created: Date, revoked: Date? = nil,
        expires: Date? = nil, lastUsed: Date? = nil
    ) {
        self.id = id
        self.name = name?.escapingControlCharacters
        self.scopes = scopes
        self.hash = hash
        self.created = created
        self.revoked = revoked
        self.expires = expires
        self.lastUsed = lastUsed
    }
}

extension CustodyDatabase {
    /// Stores a new token, audited.
    public func addToken(_ token: TokenRecord) async throws(StoreError) {
        try await write("storing a token") { db in
            try TokenRow(token).insert(db)
            try Self.bumpTokenGeneration(db)
            try Self.recordChange(.token, [token.id], at: token.created, in: db)
            try Self.audit(
                .token, account: nil, action: "create", detail: "\(token.id) (\(token.scopes.joined(separator: " ")))",
                at: token.created, in: db)
        }
    }

    /// Revokes a token; returns false when there is no valid token with that id.
    @discardableResult
    public func revokeToken(id: String, at date: Date) async throws(StoreError) -> Bool {
        try await write("revoking a token") { db in
            try db.execute(
                sql: "UPDATE tokens SET revoked = ? WHERE id = ? AND revoked IS NULL", arguments: [date, id])
            guard db.changesCount > 0 else { return false }
            try Self.bumpTokenGeneration(db)
            try Self.recordChange(.token, [id], at: date, in: db)
            try Self.audit(.token, account: nil, action: "revoke", detail: id, at: date, in: db)
            return true
        }
    }

    /// Issues `successor` and makes the valid token `id` expire at `expires` (unless it expires
    /// sooner already), in one transaction, audited; false (and nothing stored) when there is
    /// no valid token with that id at `successor.created`, or it was rotated already (its
    /// successor is the one to rotate).
    public func rotateToken(id: String, successor: TokenRecord, expires: Date) async throws(StoreError) -> Bool {
        try await write("rotating a token") { db in
            try db.execute(
                sql: """
                    UPDATE tokens SET expires = CASE WHEN expires IS NULL OR expires > ? THEN ? ELSE expires END,
                        rotated_to = ?
                    WHERE id = ? AND revoked IS NULL AND rotated_to IS NULL AND (expires IS NULL OR expires > ?)
                    """,
                arguments: [expires, expires, successor.id, id, successor.created])
            guard db.changesCount > 0 else { return false }
            try TokenRow(successor).insert(db)
            try Self.bumpTokenGeneration(db)
            try Self.recordChange(.token, [id, successor.id], at: successor.created, in: db)
            try Self.audit(
                .token, account: nil, action: "rotate",
                detail:
                    "\(id) -> \(successor.id) (\(successor.scopes.joined(separator: " "))); \(id) valid until \(expires.formatted(.iso8601))",
                at: successor.created, in: db)
            return true
        }
    }

    /// Records that token `id` authenticated a request at `date`: not audited, not a change
    /// (nothing about what the token may do moved).
    public func recordTokenUse(id: String, at date: Date) async throws(StoreError) {
        try await write("recording a token's use") { db in
            try db.execute(
                sql: "UPDATE tokens SET last_used = ? WHERE id = ? AND (last_used IS NULL OR last_used < ?)",
                arguments: [date, id, date])
        }
    }

    /// The token with that id, valid or revoked.
    public func token(id: String) async throws(StoreError) -> TokenRecord? {
        try await tokens(sql: "WHERE id = ?", arguments: [id]).first
    }

    /// Every token, oldest first.
    public func tokens() async throws(StoreError) -> [TokenRecord] {
        try await tokens(sql: "ORDER BY created, id", arguments: [])
    }

    /// A value that moves whenever any process creates or revokes a token: caches of verified
    /// tokens compare it.
    public func tokenGeneration() async throws(StoreError) -> Int64 {
        try await read("reading the token generation") { db in
            Int64(try SettingRow.value("token_generation", in: db) ?? "0")
                ?? 0
        }
    }

    private static func bumpTokenGeneration(_ db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO settings (name, value) VALUES ('token_generation', '1')
                ON CONFLICT(name) DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)
                """)
    }

    private func tokens(sql filter: String, arguments: StatementArguments) async throws(StoreError) -> [TokenRecord] {
        try await read("reading tokens") { db in
            try TokenRow.fetchAll(
                db, sql: "SELECT id, name, scopes, hash, created, revoked, expires, last_used FROM tokens " + filter,
                arguments: arguments
            ).map(\.token)
        }
    }
}
