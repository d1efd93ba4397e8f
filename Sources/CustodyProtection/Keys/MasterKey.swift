internal import CSodium
public import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Where the master key comes from.
public enum MasterKeySource: Sendable {
    /// A file holding the 32-byte key (raw, or as 64 hex digits, or as base64), created with
    /// mode 0600 on first use and refused when its group or others may read it.
    case keyFile(path: String)
    /// A passphrase, stretched with Argon2id; the salt and parameters are kept in the store.
    case passphrase(String)

    /// The source configured for this process: `keyFile` (a `--master-key-file` option), else
    /// `CUSTODY_MASTER_KEY_FILE`, else `CUSTODY_PASSPHRASE`.
    /// - Throws: `ProtectionError` `.masterKey` when none is configured.
    public static func configured(keyFile: String?, environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(ProtectionError) -> MasterKeySource
    {
        if let keyFile, !keyFile.isEmpty { return .keyFile(path: keyFile) }
        if let keyFile = environment["CUSTODY_MASTER_KEY_FILE"], !keyFile.isEmpty { return .keyFile(path: keyFile) }
        if let passphrase = environment["CUSTODY_PASSPHRASE"], !passphrase.isEmpty { return .passphrase(passphrase) }
        throw ProtectionError(
            .masterKey,
            "no master key: pass --master-key-file FILE, or set CUSTODY_MASTER_KEY_FILE (the file is created on first use) or CUSTODY_PASSPHRASE"
        )
    }
}

/// The key that wraps every account key of a store.
final class MasterKey: Sendable {
    private let cipher: AEADCipher

    private static let checkAssociatedData = Array("custody master key check v1".utf8)
    private static let wrapAssociatedPrefix = Array("custody account key v1".utf8) + [0]

    private init(key: SecretBytes) {
        cipher = key.withUnsafeBytes { AEADCipher(algorithm: .xChaCha20Poly1305, key: $0, lockingKey: true) }
    }

    /// Opens the master key from `source` and checks it against `store`'s record, creating the
    /// record (and a key file) on first use.
    static func open(_ source: MasterKeySource, store: any AccountKeyStore) async throws(ProtectionError) -> MasterKey {
        let record = try await store.masterKeyRecord()
        if record == nil, store.isReadOnly {
            // A store opened read-only without a record holds no keys: nothing will be
            // unwrapped, so no key file is created or read and nothing is recorded.
            return MasterKey(key: SecretBytes(randomCount: 32, locked: true))
        }
        let key: SecretBytes
        var newRecord: MasterKeyRecord?
        switch source {
        case .keyFile(let path):
            if let record, record.kind != .keyFile {
                throw ProtectionError(
                    .masterKey,
                    "this state's keys are wrapped by a passphrase: set CUSTODY_PASSPHRASE instead of a key file")
            }
            // A state whose keys are already wrapped never gets a new key file: a mistyped
            // path must fail, not leave behind a key that wraps nothing.
            key = try readOrCreateKeyFile(path, creating: record == nil)
            if record == nil {
                newRecord = MasterKeyRecord(
                    kind: .keyFile, salt: nil, opsLimit: nil, memLimit: nil, checkNonce: [], checkCiphertext: [])
            }
        case .passphrase(let passphrase):
            if let record, record.kind != .passphrase {
                throw ProtectionError(
                    .masterKey,
                    "this state's keys are wrapped by a key file: pass --master-key-file or set CUSTODY_MASTER_KEY_FILE"
                )
            }
            let salt = record?.salt ?? Sodium.randomBytes(count: Int(crypto_pwhash_SALTBYTES))
            let opsLimit = record?.opsLimit ?? UInt64(crypto_pwhash_OPSLIMIT_INTERACTIVE)
            let memLimit = record?.memLimit ?? UInt64(crypto_pwhash_MEMLIMIT_INTERACTIVE)
            key = try derive(passphrase: passphrase, salt: salt, opsLimit: opsLimit, memLimit: memLimit)
            if record == nil {
                newRecord = MasterKeyRecord(
                    kind: .passphrase, salt: salt, opsLimit: opsLimit, memLimit: memLimit, checkNonce: [],
                    checkCiphertext: [])
            }
        }
        let master = MasterKey(key: key)
        if let record {
            guard master.verifies(record) else {
                throw ProtectionError(.masterKey, "the master key is not the one this state's keys were wrapped with")
            }
        } else if let newRecord {
            do {
                try await store.saveMasterKeyRecord(master.sealingCheck(into: newRecord))
            } catch {
                // Another process (a replica starting at the same moment) recorded its master
                // key first: check ours against that record instead.
                guard (try? await store.masterKeyRecord()) != nil else { throw error }
                return try await open(source, store: store)
            }
        }
        return master
    }

    /// Wraps an account key for storage.
    func wrap(_ accountKey: SecretBytes, owner: OwnerIdentifier, version: UInt32, created: Date) -> WrappedAccountKey {
        let nonce = Sodium.randomBytes(count: 24)
        var sealed = [UInt8](repeating: 0, count: accountKey.count + EnvelopeAlgorithm.tagCount)
        let aad = Self.wrapAssociatedData(owner: owner, version: version)
        accountKey.withUnsafeBytes { key in
            nonce.withUnsafeBytes { nonce in
                aad.withUnsafeBytes { aad in
                    sealed.withUnsafeMutableBytes { cipher.seal(key, nonce: nonce, aad: aad, into: $0) }
                }
            }
        }
        return WrappedAccountKey(owner: owner, version: version, created: created, nonce: nonce, ciphertext: sealed)
    }

    /// Unwraps a stored account key.
    /// - Throws: `.decryptFailed` when it does not authenticate (damaged, or moved to another
    ///   owner or version).
    func unwrap(_ wrapped: WrappedAccountKey) throws(ProtectionError) -> SecretBytes {
        guard wrapped.nonce.count == 24,
            wrapped.ciphertext.count == EnvelopeAlgorithm.keyCount + EnvelopeAlgorithm.tagCount
        else {
            throw ProtectionError(
                .decryptFailed, "stored key version \(wrapped.version) of \(wrapped.owner) is damaged")
        }
        let aad = Self.wrapAssociatedData(owner: wrapped.owner, version: wrapped.version)
        var failed = false
        let key = SecretBytes(count: EnvelopeAlgorithm.keyCount, locked: true) { out in
            failed = !wrapped.ciphertext.withUnsafeBytes { sealed in
                wrapped.nonce.withUnsafeBytes { nonce in
                    aad.withUnsafeBytes { aad in cipher.open(sealed, nonce: nonce, aad: aad, into: out) }
                }
            }
        }
        guard !failed else {
            throw ProtectionError(
                .decryptFailed,
                "stored key version \(wrapped.version) of \(wrapped.owner) does not authenticate: damaged or moved")
        }
        return key
    }

    private static func wrapAssociatedData(owner: OwnerIdentifier, version: UInt32) -> [UInt8] {
        wrapAssociatedPrefix + Array(owner.rawValue.utf8) + bigEndianBytes(version)
    }

    private func sealingCheck(into record: MasterKeyRecord) -> MasterKeyRecord {
        let nonce = Sodium.randomBytes(count: 24)
        var sealed = [UInt8](repeating: 0, count: 32 + EnvelopeAlgorithm.tagCount)
        let zeros = [UInt8](repeating: 0, count: 32)
        zeros.withUnsafeBytes { plain in
            nonce.withUnsafeBytes { nonce in
                Self.checkAssociatedData.withUnsafeBytes { aad in
                    sealed.withUnsafeMutableBytes { cipher.seal(plain, nonce: nonce, aad: aad, into: $0) }
                }
            }
        }
        return MasterKeyRecord(
            kind: record.kind, salt: record.salt, opsLimit: record.opsLimit, memLimit: record.memLimit,
            checkNonce: nonce, checkCiphertext: sealed)
    }

    private func verifies(_ record: MasterKeyRecord) -> Bool {
        guard record.checkNonce.count == 24, record.checkCiphertext.count == 48 else { return false }
        var opened = [UInt8](repeating: 0, count: 32)
        return record.checkCiphertext.withUnsafeBytes { sealed in
            record.checkNonce.withUnsafeBytes { nonce in
                Self.checkAssociatedData.withUnsafeBytes { aad in
                    opened.withUnsafeMutableBytes { cipher.open(sealed, nonce: nonce, aad: aad, into: $0) }
                }
            }
        }
    }

    // MARK: Sources

    private static func derive(passphrase: String, salt: [UInt8], opsLimit: UInt64, memLimit: UInt64)
        throws(ProtectionError) -> SecretBytes
    {
        guard salt.count == Int(crypto_pwhash_SALTBYTES) else {
            throw ProtectionError(.masterKey, "the stored passphrase salt is damaged")
        }
        var failed = false
        var passphrase = passphrase
        let key = SecretBytes(count: EnvelopeAlgorithm.keyCount, locked: true) { out in
            passphrase.withUTF8 { bytes in
                salt.withUnsafeBytes { salt in
                    failed =
                        bytes.withMemoryRebound(to: CChar.self) { chars in
                            crypto_pwhash(
                                out.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(out.count),
                                chars.baseAddress!, UInt64(chars.count),
                                salt.baseAddress!.assumingMemoryBound(to: UInt8.self), opsLimit, Int(memLimit),
                                crypto_pwhash_ALG_ARGON2ID13)
                        } != 0
                }
            }
        }
        guard !failed else {
            throw ProtectionError(.masterKey, "deriving the master key from the passphrase failed (out of memory?)")
        }
        return key
    }

    private static func readOrCreateKeyFile(_ path: String, creating: Bool) throws(ProtectionError) -> SecretBytes {
        var descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        if descriptor < 0, errno == ENOENT {
            guard creating else {
                throw ProtectionError(
                    .masterKey,
                    "there is no master key file here, and this state's keys are wrapped by an existing one: give the path of that file",
                    path: path)
            }
            try createKeyFile(path)
            descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        }
        guard descriptor >= 0 else {
            throw ProtectionError(.masterKey, "cannot open the master key file: \(FileSystem.describe())", path: path)
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else {
            throw ProtectionError(.masterKey, "the master key file is not a regular file", path: path)
        }
        guard status.st_mode & 0o077 == 0 else {
            throw ProtectionError(
                .masterKey,
                "the master key file may be read by its group or others (mode \(String(status.st_mode & 0o777, radix: 8))); run chmod 600",
                path: path)
        }
        guard status.st_size <= 256 else {
            throw ProtectionError(.masterKey, "the master key file is too long to be a key", path: path)
        }
        let contents = SecretBytes(count: Int(status.st_size)) { buffer in
            var offset = 0
            while offset < buffer.count {
                let count = read(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if count <= 0 { break }
                offset += count
            }
        }
        let decoded = contents.withUnsafeBytes { bytes in
            Result { () throws(ProtectionError) in try decodeKey(bytes, path: path) }
        }
        return try decoded.get()
    }

    /// 32 raw bytes, 64 hex digits, or base64 of 32 bytes; surrounding whitespace ignored.
    private static func decodeKey(_ bytes: UnsafeRawBufferPointer, path: String) throws(ProtectionError) -> SecretBytes
    {
        if bytes.count == 32 { return SecretBytes(copying: bytes, locked: true) }
        var text = bytes[...]
        while let last = text.last, last == 0x0A || last == 0x0D || last == 0x20 { text = text.dropLast() }
        while let first = text.first, first == 0x20 { text = text.dropFirst() }
        if text.count == 64 {
            var failed = false
            let key = SecretBytes(count: 32, locked: true) { out in
                for index in 0..<32 {
                    let high = text[text.startIndex + 2 * index], low = text[text.startIndex + 2 * index + 1]
                    guard let h = hexDigit(high), let l = hexDigit(low) else { failed = true; return }
                    out[index] = h << 4 | l
                }
            }
            if !failed { return key }
        }
        if text.count == 44 {
            var decodedCount = 0
            var failed = false
            let key = SecretBytes(count: 32, locked: true) { out in
                let status =
                    text.withContiguousStorageIfAvailable { chars in
                        chars.withMemoryRebound(to: CChar.self) { chars in
                            sodium_base642bin(
                                out.baseAddress!.assumingMemoryBound(to: UInt8.self), 32, chars.baseAddress,
                                chars.count, nil, &decodedCount, nil,
                                sodium_base64_VARIANT_ORIGINAL)
                        }
                    } ?? -1
                failed = status != 0 || decodedCount != 32
            }
            if !failed { return key }
        }
        throw ProtectionError(
            .masterKey, "the master key file must hold 32 bytes: raw, as 64 hex digits, or in base64", path: path)
    }

    private static func hexDigit(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// Creates the key file at `path` with a new random key, unless a file is there already.
    ///
    /// The key is written whole under a temporary name beside it, synced, then linked into
    /// place (`link` fails when `path` exists): a process starting at the same moment (replicas
    /// started together on one key file) finds no file, or the whole key, never an empty or
    /// partial one. When another process's key got there first, this one's is discarded and
    /// theirs is used.
    private static func createKeyFile(_ path: String) throws(ProtectionError) {
        let suffix = Sodium.randomBytes(count: 8).map { String($0, radix: 16) }.joined()
        let temporary = path + ".\(suffix).new"
        let descriptor = Glibc.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else {
            throw ProtectionError(.masterKey, "cannot create the master key file: \(FileSystem.describe())", path: path)
        }
        defer { unlink(temporary) }
        let written: Result<Void, ProtectionError> = {
            defer { close(descriptor) }
            _ = fchmod(descriptor, 0o600)
            let key = SecretBytes(randomCount: 32)
            let failure: Int32? = key.withUnsafeBytes { bytes in
                do {
                    try FileSystem.writeAll(descriptor, bytes, path: path)
                    return nil
                } catch {
                    return errno
                }
            }
            if let failure { return .failure(FileSystem.ioError("writing", path, failure)) }
            guard fsync(descriptor) == 0 else { return .failure(FileSystem.ioError("syncing", path)) }
            return .success(())
        }()
        try written.get()
        if link(temporary, path) != 0 {
            switch errno {
            case EEXIST: return  // another process's key is in place: that one is used
            case EPERM, ENOSYS, EOPNOTSUPP:
                // A file system without hard links: the key is renamed into place unless a file
                // is there by then (a start at the very same moment may still read it early).
                guard access(path, F_OK) != 0 else { return }
                guard rename(temporary, path) == 0 else {
                    throw ProtectionError(
                        .masterKey, "cannot create the master key file: \(FileSystem.describe())", path: path)
                }
            default:
                throw ProtectionError(
                    .masterKey, "cannot create the master key file: \(FileSystem.describe())", path: path)
            }
        }
        try FileSystem.syncDirectory(containing: path)
    }
}
