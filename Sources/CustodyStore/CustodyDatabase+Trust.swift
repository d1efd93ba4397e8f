public import Foundation
import GRDB

extension CustodyDatabase {
    // MARK: Trusted keys

    /// Every key the state was told to trust, revoked ones included, oldest first.
    public func trustedKeys() throws(StoreError) -> [TrustedKeyRecord] {
        try read("reading the trusted keys") { db in
            try Row.fetchAll(
                db,
                sql: "SELECT key_id, public_key, name, added_at, revoked_at FROM trusted_keys ORDER BY added_at, key_id"
            ).map { row in
                TrustedKeyRecord(
                    keyID: row["key_id"], publicKey: row["public_key"], name: row["name"], addedAt: row["added_at"],
                    revokedAt: row["revoked_at"])
            }
        }
    }

    /// Trusts a key, audited; `.conflict` when the state knows it already (trusted or revoked:
    /// a revoked key is never trusted again).
    public func addTrustedKey(_ key: TrustedKeyRecord) throws(StoreError) {
        try write("trusting a key") { db in
            guard
                try Int.fetchOne(db, sql: "SELECT 1 FROM trusted_keys WHERE key_id = ?", arguments: [key.keyID]) == nil
            else {
                throw StoreError(.conflict, "the key \(key.keyID) is known already (trusted or revoked)")
            }
            try db.execute(
                sql: "INSERT INTO trusted_keys (key_id, public_key, name, added_at) VALUES (?, ?, ?, ?)",
                arguments: [key.keyID, key.publicKey, key.name, key.addedAt])
            try Self.recordChange(.setting, ["trust"], at: key.addedAt, in: db)
            try Self.audit(
                .trust, account: nil, action: "add",
                detail: "\(key.keyID) \(key.publicKey)\(key.name.map { " (\($0))" } ?? "")", at: key.addedAt, in: db)
        }
    }

    /// Revokes a trusted key, audited; false when no unrevoked key has that id.
    @discardableResult
    public func revokeTrustedKey(id: String, at date: Date) throws(StoreError) -> Bool {
        try write("revoking a key") { db in
            try db.execute(
                sql: "UPDATE trusted_keys SET revoked_at = ? WHERE key_id = ? AND revoked_at IS NULL",
                arguments: [date, id])
            guard db.changesCount > 0 else { return false }
            try Self.recordChange(.setting, ["trust"], at: date, in: db)
            try Self.audit(.trust, account: nil, action: "revoke", detail: id, at: date, in: db)
            return true
        }
    }

    // MARK: Freezing

    static let freezeSetting = "bundle-freeze"

    /// The freeze in force, if any.
    public func bundleFreeze() throws(StoreError) -> BundleFreeze? {
        try read("reading the bundle freeze") { db -> BundleFreeze? in
            guard let text = try Self.setting(Self.freezeSetting, in: db), !text.isEmpty else { return nil }
            return try BundleFreeze.decode(text)
        }
    }

    /// Freezes the policy in force (or lifts the freeze: nil), audited. Returns false when
    /// lifting a freeze there was none of.
    @discardableResult
    public func setBundleFreeze(_ freeze: BundleFreeze?, by: String?, at date: Date) throws(StoreError) -> Bool {
        try write("changing the bundle freeze") { db in
            let was = try Self.setting(Self.freezeSetting, in: db).map { !$0.isEmpty } ?? false
            guard freeze != nil || was else { return false }
            try Self.setSetting(Self.freezeSetting, try freeze?.encoded() ?? "", in: db)
            try Self.audit(
                .bundle, account: nil, action: freeze == nil ? "unfreeze" : "freeze",
                detail: (freeze?.reason ?? "") + (by.map { " (by \($0))" } ?? ""), at: date, in: db)
            return true
        }
    }

    // MARK: Replicas

    /// Records what a replica says about itself (replacing what it said before).
    public func recordReplica(_ status: ReplicaRecord) throws(StoreError) {
        try write("recording a replica's status") { db in
            try db.execute(
                sql: """
                    INSERT INTO replicas (id, host, pid, started_at, version, revision, change, last_contact, last_error)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET
                    revision = excluded.revision, change = excluded.change, last_contact = excluded.last_contact,
                    last_error = excluded.last_error, version = excluded.version
                    """,
                arguments: [
                    status.id, status.host, status.processID, status.startedAt, status.version, status.revision,
                    status.change, status.lastContact, status.lastError,
                ])
        }
    }

    /// Every replica recorded, by id.
    public func replicas() throws(StoreError) -> [ReplicaRecord] {
        try read("reading the replicas") { db in
            try Row.fetchAll(
                db,
                sql:
                    "SELECT id, host, pid, started_at, version, revision, change, last_contact, last_error FROM replicas ORDER BY id"
            ).map { row in
                ReplicaRecord(
                    id: row["id"], host: row["host"], processID: row["pid"], startedAt: row["started_at"],
                    version: row["version"], revision: row["revision"], change: row["change"],
                    lastContact: row["last_contact"], lastError: row["last_error"])
            }
        }
    }

    /// Forgets replicas last heard from before `date` (gone), or the one named `id`; returns
    /// how many.
    @discardableResult
    public func forgetReplicas(lastContactBefore date: Date, id: String?) throws(StoreError) -> Int {
        try write("forgetting replicas") { db in
            try db.execute(
                sql: "DELETE FROM replicas WHERE last_contact < ? OR id = ?", arguments: [date, id])
            return db.changesCount
        }
    }
}

extension BundleFreeze {
    /// The freeze as the settings table keeps it: one line of JSON.
    package func encoded() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .millisecondsSince1970
        return String(decoding: try encoder.encode(self), as: UTF8.self)
    }

    package static func decode(_ text: String) throws -> BundleFreeze {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        do {
            return try decoder.decode(BundleFreeze.self, from: Data(text.utf8))
        } catch {
            throw RecordError("the bundle freeze setting is not readable: \(error)")
        }
    }
}
