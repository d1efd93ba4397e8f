import CustodyPolicy
public import CustodyProtection
package import Foundation
import GRDB

extension CustodyDatabase {
    public func accountKeys(owner: String) throws(StoreError) -> [WrappedAccountKey] {
        let rows = try read("reading the keys of \(owner)") { db in
            try Row.fetchAll(
                db,
                sql:
                    "SELECT owner, version, created, nonce, ciphertext FROM account_keys WHERE owner = ? ORDER BY version",
                arguments: [owner])
        }
        var keys: [WrappedAccountKey] = []
        for row in rows {
            guard let name: String = row["owner"], let owner = OwnerIdentifier(rawValue: name) else {
                throw StoreError(.corrupt, "an account key has no valid owner", path: path)
            }
            guard let version: Int64 = row["version"], let created = row.storedDate("created"),
                let nonce: Data = row["nonce"],
                let ciphertext: Data = row["ciphertext"],
                let key = WrappedAccountKey(
                    stored: owner, version: version, created: created, nonce: nonce, ciphertext: ciphertext)
            else { throw StoreError(.corrupt, "a key of \(owner) is damaged", path: path) }
            keys.append(key)
        }
        return keys
    }

    public func addAccountKey(_ key: WrappedAccountKey) throws(StoreError) {
        try write("adding key version \(key.version) of \(key.owner)") { db in
            try db.execute(
                sql: "INSERT INTO account_keys (owner, version, created, nonce, ciphertext) VALUES (?, ?, ?, ?, ?)",
                arguments: [key.owner.rawValue, Int64(key.version), key.created, Data(key.nonce), Data(key.ciphertext)])
            try Self.recordChange(.key, [key.owner.rawValue], at: key.created, in: db)
        }
    }

    @discardableResult
    public func removeAccountKeys(owner: String) throws(StoreError) -> Int {
        let count = try write("deleting the keys of \(owner)") { db in
            try db.execute(sql: "DELETE FROM account_keys WHERE owner = ?", arguments: [owner])
            let count = db.changesCount
            if count > 0 { try Self.recordChange(.key, [owner], at: Date(), in: db) }
            return count
        }
        try truncateLog()
        return count
    }

    public func accountKeyOwners() throws(StoreError) -> [String] {
        try read("listing key owners") { db in
            try String.fetchAll(db, sql: "SELECT DISTINCT owner FROM account_keys ORDER BY owner")
        }
    }

    public func masterKeyRecord() throws(StoreError) -> MasterKeyRecord? {
        let row = try read("reading the master key record") { db in
            try Row.fetchOne(
                db,
                sql:
                    "SELECT kind, salt, ops_limit, mem_limit, check_nonce, check_ciphertext FROM master_key WHERE id = 1"
            )
        }
        guard let row else { return nil }
        let salt: Data? = row["salt"]
        let opsLimit: Int64? = row["ops_limit"]
        let memLimit: Int64? = row["mem_limit"]
        guard
            let record = MasterKeyRecord(
                stored: row["kind"] ?? "", salt: salt, opsLimit: opsLimit, memLimit: memLimit,
                checkNonce: row["check_nonce"], checkCiphertext: row["check_ciphertext"])
        else {
            throw StoreError(
                .corrupt, "the master key record is damaged (an unknown kind, or no check value)", path: path)
        }
        return record
    }

    public func saveMasterKeyRecord(_ record: MasterKeyRecord) throws(StoreError) {
        try write("saving the master key record") { db in
            try db.execute(
                sql: """
                    INSERT INTO master_key (id, kind, salt, ops_limit, mem_limit, check_nonce, check_ciphertext)
                    VALUES (1, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    record.kind.rawValue, record.salt.map { Data($0) }, record.opsLimit.map { Int64($0) },
                    record.memLimit.map { Int64($0) },
                    Data(record.checkNonce), Data(record.checkCiphertext),
                ])
        }
    }

    public func keyGeneration() throws(StoreError) -> Int64 {
        try read("reading the key generation") { db in
            try Int64.fetchOne(db, sql: "SELECT value FROM key_generation WHERE id = 1") ?? 0
        }
    }
}

extension WrappedAccountKey {
    /// A key as a store's row holds it; nil when a column is out of range.
    package init?(stored owner: OwnerIdentifier, version: Int64, created: Date, nonce: Data, ciphertext: Data) {
        guard (1...Int64(UInt32.max)).contains(version) else { return nil }
        self.init(
            owner: owner, version: UInt32(version), created: created, nonce: [UInt8](nonce),
            ciphertext: [UInt8](ciphertext))
    }
}

extension MasterKeyRecord {
    /// The record as a store's row holds it; nil when its kind is unknown or a check value is
    /// missing.
    package init?(
        stored kind: String, salt: Data?, opsLimit: Int64?, memLimit: Int64?, checkNonce: Data?, checkCiphertext: Data?
    ) {
        guard let kind = Kind(rawValue: kind), let checkNonce, let checkCiphertext else { return nil }
        self.init(
            kind: kind, salt: salt.map { [UInt8]($0) }, opsLimit: opsLimit.map { UInt64($0) },
            memLimit: memLimit.map { UInt64($0) },
            checkNonce: [UInt8](checkNonce), checkCiphertext: [UInt8](checkCiphertext))
    }
}
