public import Foundation
import GRDB

extension CustodyDatabase {
    // MARK: Trusted keys

    /// Every key the state was told to trust, revoked ones included, oldest first.
    public func trustedKeys() async throws(StoreError) -> [TrustedKeyRecord] {
        try await read("reading the trusted keys") { db in
            try TrustedKeyRow.order(TrustedKeyRow.CodingKeys.addedAt, TrustedKeyRow.CodingKeys.keyID).fetchAll(db)
                .map(\.key)
        }
    }

    /// Trusts a key, audited; `.conflict` when the state knows it already (trusted or revoked:
    /// a revoked key is never trusted again).
    public func addTrustedKey(_ key: TrustedKeyRecord) async throws(StoreError) {
        try await write("trusting a key") { db in
            guard
                try !TrustedKeyRow.exists(db, key: key.keyID)
            else {
                throw StoreError(.conflict, "the key \(key.keyID) is known already (trusted or revoked)")
            }
            var added = key
            added.revokedAt = nil
            try TrustedKeyRow(added).insert(db)
            try Self.recordChange(.setting, ["trust"], at: key.addedAt, in: db)
            try Self.audit(
                .trust, account: nil, action: "add",
                detail:
                    "\(key.keyID) \(key.publicKey)\(key.name.map { " (\($0))" } ?? "")\(key.audience.map { " for \($0)" } ?? "")",
                at: key.addedAt, in: db)
        }
    }

    /// Revokes a trusted key, audited; false when no unrevoked key has that id.
    @discardableResult
    public func revokeTrustedKey(id: String, at date: Date) async throws(StoreError) -> Bool {
        try await write("revoking a key") { db in
            let revoked = try TrustedKeyRow.filter(
                TrustedKeyRow.CodingKeys.keyID == id && TrustedKeyRow.CodingKeys.revokedAt == nil
            ).updateAll(db, TrustedKeyRow.CodingKeys.revokedAt.set(to: date))
            guard revoked > 0 else { return false }
            try Self.recordChange(.setting, ["trust"], at: date, in: db)
            try Self.audit(.trust, account: nil, action: "revoke", detail: id, at: date, in: db)
            return true
        }
    }

    // MARK: Freezing

    static let freezeSetting = "bundle-freeze"

    /// The freeze in force, if any.
    public func bundleFreeze() async throws(StoreError) -> BundleFreeze? {
        try await read("reading the bundle freeze") { db -> BundleFreeze? in
            guard let text = try Self.setting(Self.freezeSetting, in: db), !text.isEmpty else { return nil }
            return try BundleFreeze.decode(text)
        }
    }

    /// Freezes the policy in force (or lifts the freeze: nil), audited. Returns false when
    /// lifting a freeze there was none of.
    @discardableResult
    public func setBundleFreeze(_ freeze: BundleFreeze?, by: String?, at date: Date) async throws(StoreError) -> Bool {
        try await write("changing the bundle freeze") { db in
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
    public func recordReplica(_ status: ReplicaRecord) async throws(StoreError) {
        try await write("recording a replica's status") { db in
            // One replica (one process) per id: its host, process and start never change.
            try ReplicaRow(status).upsert(db)
        }
    }

    /// Every replica recorded, by id.
    public func replicas() async throws(StoreError) -> [ReplicaRecord] {
        try await read("reading the replicas") { db in
            try ReplicaRow.order(ReplicaRow.CodingKeys.id).fetchAll(db).map(\.replica)
        }
    }

    /// Forgets replicas last heard from before `date` (gone), or the one named `id`; returns
    /// how many.
    @discardableResult
    public func forgetReplicas(lastContactBefore date: Date, id: String?) async throws(StoreError) -> Int {
        try await write("forgetting replicas") { db in
            try ReplicaRow.filter(ReplicaRow.CodingKeys.lastContact < date || ReplicaRow.CodingKeys.id == id)
                .deleteAll(db)
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
