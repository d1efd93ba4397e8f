public import CustodyStore
public import Foundation
import PostgresNIO

extension PostgresState {
    // MARK: Trusted keys

    public func trustedKeys() async throws(StoreError) -> [TrustedKeyRecord] {
        try await read("reading the trusted keys") { session in
            try await session.query(
                "SELECT key_id, public_key, name, added_at, revoked_at, audience FROM trusted_keys ORDER BY added_at, key_id"
            ).map { row throws in
                let (id, key, name, added, revoked, audience) = try row.decode(
                    (String, String, String?, Date, Date?, String?).self)
                return TrustedKeyRecord(
                    keyID: id, publicKey: key, name: name, addedAt: added, revokedAt: revoked, audience: audience)
            }
        }
    }

    public func addTrustedKey(_ key: TrustedKeyRecord) async throws(StoreError) {
        try await write("trusting a key") { session in
            guard
                try await session.execute(
                    """
                    INSERT INTO trusted_keys (key_id, public_key, name, added_at, audience)
                    VALUES (\(key.keyID), \(key.publicKey), \(key.name), \(key.addedAt), \(key.audience)) ON CONFLICT DO NOTHING
                    """) > 0
            else { throw StoreError(.conflict, "the key \(key.keyID) is known already (trusted or revoked)") }
            try await self.recordChange(.setting, ["trust"], at: key.addedAt, in: session)
            try await Self.audit(
                .trust, account: nil, action: "add",
                detail:
                    "\(key.keyID) \(key.publicKey)\(key.name.map { " (\($0))" } ?? "")\(key.audience.map { " for \($0)" } ?? "")",
                at: key.addedAt, in: session)
        }
    }

    @discardableResult
    public func revokeTrustedKey(id: String, at date: Date) async throws(StoreError) -> Bool {
        try await write("revoking a key") { session in
            // The change counter's lock: a bundle being recorded meanwhile sees the key
            // revoked or not, never half.
            try await session.execute("SELECT value FROM counters WHERE name = 'change' FOR UPDATE")
            guard
                try await session.execute(
                    "UPDATE trusted_keys SET revoked_at = \(date) WHERE key_id = \(id) AND revoked_at IS NULL") > 0
            else { return false }
            try await self.recordChange(.setting, ["trust"], at: date, in: session)
            try await Self.audit(.trust, account: nil, action: "revoke", detail: id, at: date, in: session)
            return true
        }
    }

    // MARK: Freezing

    public func bundleFreeze() async throws(StoreError) -> BundleFreeze? {
        try await read("reading the bundle freeze") { session -> BundleFreeze? in
            guard let text = try await Self.setting(Self.freezeSetting, in: session), !text.isEmpty else { return nil }
            do {
                return try BundleFreeze.decode(text)
            } catch {
                throw self.corrupt("the bundle freeze setting is not readable")
            }
        }
    }

    @discardableResult
    public func setBundleFreeze(_ freeze: BundleFreeze?, by: String?, at date: Date) async throws(StoreError) -> Bool {
        try await write("changing the bundle freeze") { session in
            try await session.execute("SELECT value FROM counters WHERE name = 'change' FOR UPDATE")
            let was = try await Self.setting(Self.freezeSetting, in: session).map { !$0.isEmpty } ?? false
            guard freeze != nil || was else { return false }
            try await self.setSetting(Self.freezeSetting, try freeze?.encoded() ?? "", in: session)
            try await Self.audit(
                .bundle, account: nil, action: freeze == nil ? "unfreeze" : "freeze",
                detail: (freeze?.reason ?? "") + (by.map { " (by \($0))" } ?? ""), at: date, in: session)
            return true
        }
    }

    // MARK: Replicas

    public func recordReplica(_ status: ReplicaRecord) async throws(StoreError) {
        try await write("recording a replica's status") { session in
            try await session.execute(
                """
                INSERT INTO replicas (id, host, pid, started_at, version, revision, change, last_contact, last_error)
                VALUES (\(status.id), \(status.host), \(Int64(status.processID)), \(status.startedAt), \(status.version),
                    \(status.revision), \(status.change), \(status.lastContact), \(status.lastError))
                ON CONFLICT (id) DO UPDATE SET revision = excluded.revision, change = excluded.change,
                    last_contact = excluded.last_contact, last_error = excluded.last_error, version = excluded.version
                """)
        }
    }

    public func replicas() async throws(StoreError) -> [ReplicaRecord] {
        try await read("reading the replicas") { session in
            try await session.query(
                "SELECT id, host, pid, started_at, version, revision, change, last_contact, last_error FROM replicas ORDER BY id COLLATE \"C\""
            ).map { row throws in
                let (id, host, pid, started, version, revision, change, contact, error) = try row.decode(
                    (String, String, Int64, Date, String, String?, Int64, Date, String?).self)
                return ReplicaRecord(
                    id: id, host: host, processID: Int(pid), startedAt: started, version: version, revision: revision,
                    change: change, lastContact: contact, lastError: error)
            }
        }
    }

    @discardableResult
    public func forgetReplicas(lastContactBefore date: Date, id: String?) async throws(StoreError) -> Int {
        try await write("forgetting replicas") { session in
            try await session.execute("DELETE FROM replicas WHERE last_contact < \(date) OR id = \(id)")
        }
    }
}
