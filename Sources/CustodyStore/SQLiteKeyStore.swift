import CustodyPolicy
public import CustodyProtection
import Foundation
import GRDB

/// The protection layer's key storage in Custody's database: wrapped account keys and the
/// master key record.
///
/// Adding a key version is one insert under the table's primary key, so two processes that race
/// to create the same version get `.keyVersionExists` for the loser, as `KeyRing` expects.
/// Removing an owner's keys deletes the rows (overwritten in place, `secure_delete`) and
/// truncates the write-ahead log, so no copy of a wiped key stays in the files.
public struct SQLiteKeyStore: AccountKeyStore {
    public let database: CustodyDatabase

    public init(database: CustodyDatabase) {
        self.database = database
    }

    public var isReadOnly: Bool { database.isReadOnly }

    public func keys(for owner: OwnerIdentifier) throws(ProtectionError) -> [WrappedAccountKey] {
        let rows = try mapped { () throws(StoreError) in
            try database.read("reading the keys of \(owner)") { db in
                try Row.fetchAll(
                    db, sql: "SELECT owner, version, created, nonce, ciphertext FROM account_keys WHERE owner = ? ORDER BY version",
                    arguments: [owner.rawValue])
            }
        }
        var keys: [WrappedAccountKey] = []
        for row in rows {
            keys.append(try decodeKey(row))
        }
        return keys
    }

    public func add(_ key: WrappedAccountKey) throws(ProtectionError) {
        do {
            try database.write("adding key version \(key.version) of \(key.owner)") { db in
                try db.execute(
                    sql: "INSERT INTO account_keys (owner, version, created, nonce, ciphertext) VALUES (?, ?, ?, ?, ?)",
                    arguments: [key.owner.rawValue, Int64(key.version), key.created, Data(key.nonce), Data(key.ciphertext)])
            }
        } catch where error.code == .conflict {
            throw ProtectionError(.keyVersionExists, "key version \(key.version) of \(key.owner) already exists", path: database.path)
        } catch {
            throw Self.protectionError(error)
        }
    }

    @discardableResult
    public func removeKeys(for owner: OwnerIdentifier) throws(ProtectionError) -> Int {
        try mapped { () throws(StoreError) in
            let count = try database.write("deleting the keys of \(owner)") { db in
                try db.execute(sql: "DELETE FROM account_keys WHERE owner = ?", arguments: [owner.rawValue])
                return db.changesCount
            }
            try database.truncateLog()
            return count
        }
    }

    public func owners() throws(ProtectionError) -> [OwnerIdentifier] {
        let names = try mapped { () throws(StoreError) in
            try database.read("listing key owners") { db in
                try String.fetchAll(db, sql: "SELECT DISTINCT owner FROM account_keys ORDER BY owner")
            }
        }
        var owners: [OwnerIdentifier] = []
        for name in names {
            guard let owner = OwnerIdentifier(rawValue: name) else { throw corrupt("an account key names the owner \"\(name.escapingControlCharacters)\", which is not an owner identifier") }
            owners.append(owner)
        }
        return owners
    }

    public func masterKeyRecord() throws(ProtectionError) -> MasterKeyRecord? {
        let row = try mapped { () throws(StoreError) in
            try database.read("reading the master key record") { db in
                try Row.fetchOne(db, sql: "SELECT kind, salt, ops_limit, mem_limit, check_nonce, check_ciphertext FROM master_key WHERE id = 1")
            }
        }
        guard let row else { return nil }
        guard let kind = MasterKeyRecord.Kind(rawValue: row["kind"] ?? "") else {
            throw corrupt("the master key record has an unknown kind")
        }
        let salt: Data? = row["salt"]
        let opsLimit: Int64? = row["ops_limit"]
        let memLimit: Int64? = row["mem_limit"]
        guard let checkNonce: Data = row["check_nonce"], let checkCiphertext: Data = row["check_ciphertext"] else {
            throw corrupt("the master key record has no check value")
        }
        return MasterKeyRecord(
            kind: kind, salt: salt.map { [UInt8]($0) }, opsLimit: opsLimit.map { UInt64($0) }, memLimit: memLimit.map { UInt64($0) },
            checkNonce: [UInt8](checkNonce), checkCiphertext: [UInt8](checkCiphertext))
    }

    public func saveMasterKeyRecord(_ record: MasterKeyRecord) throws(ProtectionError) {
        do {
            try database.write("saving the master key record") { db in
                try db.execute(
                    sql: """
                        INSERT INTO master_key (id, kind, salt, ops_limit, mem_limit, check_nonce, check_ciphertext)
                        VALUES (1, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        record.kind.rawValue, record.salt.map { Data($0) }, record.opsLimit.map { Int64($0) }, record.memLimit.map { Int64($0) },
                        Data(record.checkNonce), Data(record.checkCiphertext),
                    ])
            }
        } catch where error.code == .conflict {
            throw ProtectionError(.masterKey, "a master key record already exists", path: database.path)
        } catch {
            throw Self.protectionError(error)
        }
    }

    public func changeToken() throws(ProtectionError) -> UInt64? {
        let value = try mapped { () throws(StoreError) in
            try database.read("reading the key generation") { db in
                try Int64.fetchOne(db, sql: "SELECT value FROM key_generation WHERE id = 1")
            }
        }
        return value.map { UInt64(bitPattern: $0) }
    }

    // MARK: Rows

    private func decodeKey(_ row: Row) throws(ProtectionError) -> WrappedAccountKey {
        guard let name: String = row["owner"], let owner = OwnerIdentifier(rawValue: name) else {
            throw corrupt("an account key has no valid owner")
        }
        guard let version: Int64 = row["version"], (1...Int64(UInt32.max)).contains(version),
            let created: Date = row["created"], let nonce: Data = row["nonce"], let ciphertext: Data = row["ciphertext"]
        else {
            throw corrupt("a key of \(owner) is damaged")
        }
        return WrappedAccountKey(owner: owner, version: UInt32(version), created: created, nonce: [UInt8](nonce), ciphertext: [UInt8](ciphertext))
    }

    private func corrupt(_ message: String) -> ProtectionError {
        ProtectionError(.io, "the key store is damaged: \(message)", path: database.path)
    }

    private func mapped<T>(_ body: () throws(StoreError) -> T) throws(ProtectionError) -> T {
        do {
            return try body()
        } catch {
            throw Self.protectionError(error)
        }
    }

    private static func protectionError(_ error: StoreError) -> ProtectionError {
        ProtectionError(.io, error.message, path: error.path)
    }
}
