import CustodyPolicy
public import CustodyProtection
package import Foundation
import GRDB

extension CustodyDatabase {
    public func accountKeys(owner: String) async throws(StoreError) -> [WrappedAccountKey] {
        try await read("reading the keys of \(owner)") { db in
            try AccountKeyRow.filter(Column("owner") == owner).order(Column("version")).fetchAll(db).map {
                try $0.key()
            }
        }
    }

    public func addAccountKey(_ key: WrappedAccountKey) async throws(StoreError) {
        try await write("adding key version \(key.version) of \(key.owner)") { db in
            try AccountKeyRow(key).insert(db)
            try Self.recordChange(.key, [key.owner.rawValue], at: key.created, in: db)
        }
    }

    @discardableResult
    public func removeAccountKeys(owner: String) async throws(StoreError) -> Int {
        let count = try await write("deleting the keys of \(owner)") { db in
            try db.execute(sql: "DELETE FROM account_keys WHERE owner = ?", arguments: [owner])
            let count = db.changesCount
            if count > 0 { try Self.recordChange(.key, [owner], at: Date(), in: db) }
            return count
        }
        try await truncateLog()
        return count
    }

    public func accountKeyOwners() async throws(StoreError) -> [String] {
        try await read("listing key owners") { db in
            try String.fetchAll(db, sql: "SELECT DISTINCT owner FROM account_keys ORDER BY owner")
        }
    }

    public func masterKeyRecord() async throws(StoreError) -> MasterKeyRecord? {
        try await read("reading the master key record") { db in try MasterKeyRow.fetchOne(db, key: 1)?.record() }
    }

    public func saveMasterKeyRecord(_ record: MasterKeyRecord) async throws(StoreError) {
        try await write("saving the master key record") { db in try MasterKeyRow(record).insert(db) }
    }

    public func keyGeneration() async throws(StoreError) -> Int64 {
        try await read("reading the key generation") { db in try KeyGenerationRow.fetchOne(db, key: 1)?.value ?? 0 }
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
