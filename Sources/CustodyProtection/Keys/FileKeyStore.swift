import CustodyPolicy
import Foundation

/// Account keys in a state directory: one JSON file per owner under `keys/`, the master key
/// record in `master.json`. Every write replaces a whole file atomically, under an exclusive
/// lock, so concurrent processes see either the old file or the new one.
///
/// ```
/// <state>/master.json
/// <state>/keys/<BLAKE2b of the owner, hex>.json   {"owner": "oid:...", "keys": [{"version": 1, ...}]}
/// <state>/keys/.lock
/// ```
public final class FileKeyStore: AccountKeyStore {
    /// The state directory.
    public let directory: String
    private var keysDirectory: String { directory + "/keys" }
    private var lockPath: String { keysDirectory + "/.lock" }
    private var masterPath: String { directory + "/master.json" }

    /// Opens (creating, mode 0700) the state directory.
    public init(directory: String) throws(ProtectionError) {
        self.directory = directory
        try FileSystem.createDirectory(directory + "/keys")
    }

    private func path(for owner: OwnerIdentifier) -> String {
        let digest = Array(owner.rawValue.utf8).withUnsafeBytes(Checksum.digest)
        return keysDirectory + "/" + digest.map { hex($0) }.joined() + ".json"
    }

    public func keys(for owner: OwnerIdentifier) throws(ProtectionError) -> [WrappedAccountKey] {
        let path = path(for: owner)
        guard let bytes = try FileSystem.read(path) else { return [] }
        return try decodeKeys(bytes, path: path).filter { $0.owner == owner }
    }

    public func add(_ key: WrappedAccountKey) throws(ProtectionError) {
        let path = path(for: key.owner)
        try FileSystem.withExclusiveLock(lockPath) { () throws(ProtectionError) in
            var keys =
                try FileSystem.read(path).map { bytes throws(ProtectionError) in try decodeKeys(bytes, path: path) }
                ?? []
            guard !keys.contains(where: { $0.version == key.version }) else {
                throw ProtectionError(
                    .keyVersionExists, "key version \(key.version) of \(key.owner) already exists", path: path)
            }
            keys.append(key)
            try FileSystem.writeAtomically(
                encodeKeys(keys.sorted { $0.version < $1.version }, owner: key.owner), to: path)
            try bumpGeneration()
        }
    }

    @discardableResult
    public func removeKeys(for owner: OwnerIdentifier) throws(ProtectionError) -> Int {
        let path = path(for: owner)
        return try FileSystem.withExclusiveLock(lockPath) { () throws(ProtectionError) -> Int in
            guard let bytes = try FileSystem.read(path) else { return 0 }
            let count = (try? decodeKeys(bytes, path: path).count) ?? 0
            try FileSystem.shred(path)
            try bumpGeneration()
            return count
        }
    }

    public func owners() throws(ProtectionError) -> [OwnerIdentifier] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: keysDirectory)
        } catch {
            throw ProtectionError(.io, "listing keys failed: \(error.localizedDescription)", path: keysDirectory)
        }
        var owners: [OwnerIdentifier] = []
        for name in names.sorted() where name.hasSuffix(".json") && !name.hasPrefix(".") {
            let path = keysDirectory + "/" + name
            guard let bytes = try FileSystem.read(path), let first = try decodeKeys(bytes, path: path).first else {
                continue
            }
            owners.append(first.owner)
        }
        return owners
    }

    /// A counter in `keys/.generation`, bumped under the lock by every add and removal.
    public func changeToken() throws(ProtectionError) -> UInt64? {
        try readGeneration()
    }

    private var generationPath: String { keysDirectory + "/.generation" }

    private func readGeneration() throws(ProtectionError) -> UInt64 {
        guard let bytes = try FileSystem.read(generationPath) else { return 0 }
        return UInt64(String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    }

    /// Call with the lock held.
    private func bumpGeneration() throws(ProtectionError) {
        try FileSystem.writeAtomically(Array("\(try readGeneration() &+ 1)\n".utf8), to: generationPath)
    }

    public func masterKeyRecord() throws(ProtectionError) -> MasterKeyRecord? {
        guard let bytes = try FileSystem.read(masterPath) else { return nil }
        return try decodeMaster(bytes)
    }

    public func saveMasterKeyRecord(_ record: MasterKeyRecord) throws(ProtectionError) {
        try FileSystem.withExclusiveLock(lockPath) { () throws(ProtectionError) in
            guard try FileSystem.read(masterPath) == nil else {
                throw ProtectionError(.masterKey, "a master key record already exists", path: masterPath)
            }
            try FileSystem.writeAtomically(encodeMaster(record), to: masterPath)
        }
    }

    // MARK: JSON

    private func encodeKeys(_ keys: [WrappedAccountKey], owner: OwnerIdentifier) -> [UInt8] {
        var writer = JSONWriter(pretty: true)
        writer.beginObject()
        writer.key("owner")
        writer.value(owner.rawValue)
        writer.key("keys")
        writer.beginArray()
        for key in keys {
            writer.beginObject()
            writer.key("version")
            writer.value(Int(key.version))
            writer.key("created")
            writer.value(key.created.formatted(.iso8601))
            writer.key("nonce")
            writer.value(Data(key.nonce).base64EncodedString())
            writer.key("wrappedKey")
            writer.value(Data(key.ciphertext).base64EncodedString())
            writer.endObject()
        }
        writer.endArray()
        writer.endObject()
        writer.newline()
        return writer.bytes
    }

    private func decodeKeys(_ bytes: [UInt8], path: String) throws(ProtectionError) -> [WrappedAccountKey] {
        let damaged = ProtectionError(.io, "the key file is damaged", path: path)
        guard let root = try? JSONDocument(parsing: bytes).root,
            let owner = root["owner"]?.string.flatMap(OwnerIdentifier.init(rawValue:)),
            let entries = root["keys"], entries.kind == .array
        else { throw damaged }
        var keys: [WrappedAccountKey] = []
        for entry in entries.elements {
            guard let version = entry["version"]?.int, version > 0, version <= Int(UInt32.max),
                let created = entry["created"]?.string.flatMap({ try? Date($0, strategy: .iso8601) }),
                let nonce = entry["nonce"]?.string.flatMap({ Data(base64Encoded: $0) }),
                let wrapped = entry["wrappedKey"]?.string.flatMap({ Data(base64Encoded: $0) })
            else { throw damaged }
            keys.append(
                WrappedAccountKey(
                    owner: owner, version: UInt32(version), created: created, nonce: [UInt8](nonce),
                    ciphertext: [UInt8](wrapped)))
        }
        return keys
    }

    private func encodeMaster(_ record: MasterKeyRecord) -> [UInt8] {
        var writer = JSONWriter(pretty: true)
        writer.beginObject()
        writer.key("kind")
        writer.value(record.kind.rawValue)
        if let salt = record.salt, let opsLimit = record.opsLimit, let memLimit = record.memLimit {
            writer.key("argon2id")
            writer.beginObject()
            writer.key("salt")
            writer.value(Data(salt).base64EncodedString())
            writer.key("opsLimit")
            writer.value(Int(opsLimit))
            writer.key("memLimit")
            writer.value(Int(memLimit))
            writer.endObject()
        }
        writer.key("checkNonce")
        writer.value(Data(record.checkNonce).base64EncodedString())
        writer.key("check")
        writer.value(Data(record.checkCiphertext).base64EncodedString())
        writer.endObject()
        writer.newline()
        return writer.bytes
    }

    private func decodeMaster(_ bytes: [UInt8]) throws(ProtectionError) -> MasterKeyRecord {
        let damaged = ProtectionError(.masterKey, "the master key record is damaged", path: masterPath)
        guard let root = try? JSONDocument(parsing: bytes).root,
            let kind = root["kind"]?.string.flatMap(MasterKeyRecord.Kind.init(rawValue:)),
            let checkNonce = root["checkNonce"]?.string.flatMap({ Data(base64Encoded: $0) }),
            let check = root["check"]?.string.flatMap({ Data(base64Encoded: $0) })
        else { throw damaged }
        var salt: [UInt8]?
        var opsLimit: UInt64?
        var memLimit: UInt64?
        if let argon = root["argon2id"] {
            guard let saltText = argon["salt"]?.string, let saltData = Data(base64Encoded: saltText),
                let ops = argon["opsLimit"]?.int, let mem = argon["memLimit"]?.int, ops > 0, mem > 0
            else { throw damaged }
            salt = [UInt8](saltData)
            opsLimit = UInt64(ops)
            memLimit = UInt64(mem)
        }
        return MasterKeyRecord(
            kind: kind, salt: salt, opsLimit: opsLimit, memLimit: memLimit, checkNonce: [UInt8](checkNonce),
            checkCiphertext: [UInt8](check))
    }
}

func hex(_ byte: UInt8) -> String {
    let digits = Array("0123456789abcdef")
    return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
}
