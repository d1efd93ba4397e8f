public import CustodyPolicy
import Foundation

/// What an envelope says about itself, read without any key.
public struct ProtectionInfo: Sendable, Hashable {
    /// The owner's identifier as the envelope records it (`oid:...` or `upn:...`).
    public let owner: OwnerIdentifier
    public let isEncrypted: Bool
    public let algorithm: EnvelopeAlgorithm
    /// The owner's key version the data key comes from; nil when not encrypted.
    public let keyVersion: UInt32?
    /// Plaintext bytes per chunk.
    public let chunkSize: Int
    /// Bytes of header before the first chunk.
    public let headerLength: Int

    init(header: EnvelopeHeader) {
        owner = header.owner
        isEncrypted = header.isEncrypted
        algorithm = header.algorithm
        keyVersion = header.isEncrypted ? header.keyVersion : nil
        chunkSize = header.chunkSize
        headerLength = header.count
    }
}

/// Protects data per account, as IntuneMAMDataProtectionManager and
/// IntuneMAMFileProtectionManager do: an envelope that names the owner, and, when the caller
/// says so (`encrypt`), encryption under a data key of its own, derived from the owner's
/// account key and a fresh random salt (docs/format.md).
///
/// Whether an owner's data must be encrypted is the policy's verdict, not the protector's: the
/// engine decides it (`CustodyEngine.protect`, `ProtectionPlan`), or a caller working at this
/// level asks the policy (`PolicySnapshot.encryptionRequired(account:)`) and passes the answer.
/// No call has a default for `encrypt`: a caller who leaves it out gets a compile error, not an
/// envelope that is only tagged.
///
/// Thread-safe: share one protector between tasks.
public final class DataProtector: Sendable {
    public let keyRing: KeyRing
    /// The algorithm new encrypted envelopes use.
    public let algorithm: EnvelopeAlgorithm
    let implementation: AEADCipher.Implementation

    /// Plaintext bytes per chunk of a buffer envelope (2^20).
    static let bufferChunkExponent: UInt8 = 20

    /// - Parameter algorithm: for new encrypted envelopes; by default AES-256-GCM where the CPU
    ///   accelerates it, ChaCha20-Poly1305 otherwise, both with derived keys.
    public init(keyRing: KeyRing, algorithm: EnvelopeAlgorithm = .preferred) {
        self.keyRing = keyRing
        self.algorithm = algorithm == .none ? .preferred : algorithm
        self.implementation = .automatic
    }

    init(keyRing: KeyRing, algorithm: EnvelopeAlgorithm, implementation: AEADCipher.Implementation) {
        self.keyRing = keyRing
        self.algorithm = algorithm
        self.implementation = implementation
    }

    // MARK: Buffers

    /// Protects `data` for `owner`: encrypted under a key of the owner's with `encrypt`,
    /// otherwise only tagged with the owner.
    /// - Throws: `.emptyData` for an empty buffer; `.invalidArguments`, key store errors.
    public func protect(_ data: [UInt8], owner: AccountID, encrypt: Bool) async throws(ProtectionError)
        -> [UInt8]
    {
        guard !data.isEmpty else { throw ProtectionError(.emptyData, "there is no data to protect") }
        if let cipher = oneChunkSealing(data.count, encrypt: encrypt) {
            let accountKey = try await keyRing.currentKey(for: owner, creating: true)
            return data.withUnsafeBytes { sealOneChunk($0, cipher: cipher, accountKey: accountKey) }
        }
        let cipher = try await makeSealer(
            owner: owner, encrypt: encrypt, chunkExponent: Self.bufferChunkExponent)
        return data.withUnsafeBytes { Self.seal($0, with: cipher) }
    }

    /// The data inside an envelope. Bytes that are not an envelope come back unchanged
    /// (Intune's behaviour).
    /// - Throws: `.decryptFailed` when the envelope was changed, truncated or reordered or the
    ///   key is wrong (no plaintext is returned); `.keyUnavailable` when the owner's key was
    ///   wiped; `.unsupportedVersion`; `.malformedEnvelope`.
    public func unprotect(_ data: [UInt8]) async throws(ProtectionError) -> [UInt8] {
        guard let fields = try Self.headerFields(of: data, knownOwner: keyRing.lastOpeningOwner) else { return data }
        let accountKey = try await openingKey(fields)
        let result: Result<[UInt8], ProtectionError> = data.withUnsafeBytes { bytes in
            do throws(ProtectionError) {
                if let cipher = Self.oneChunkOpening(fields, envelopeCount: bytes.count) {
                    return .success(try openOneChunk(bytes, header: fields, cipher: cipher, accountKey: accountKey))
                }
                let header = EnvelopeHeader(fields, copying: bytes)
                let cipher = try makeOpener(header, accountKey: accountKey)
                return .success(try Self.open(UnsafeRawBufferPointer(rebasing: bytes[header.count...]), with: cipher))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// The header of the envelope `data` starts with; nil when it is not an envelope.
    private static func headerFields(of data: [UInt8], knownOwner: OwnerIdentifier?) throws(ProtectionError)
        -> EnvelopeHeader.Fields?
    {
        try data.withUnsafeBytes { bytes in
            Result { () throws(ProtectionError) in try EnvelopeHeader.read(bytes, knownOwner: knownOwner) }
        }.get()
    }

    /// The account key an envelope with these header fields opens with; nil for an envelope
    /// that is not encrypted.
    private func openingKey(_ fields: EnvelopeHeader.Fields) async throws(ProtectionError) -> AccountKey? {
        guard fields.algorithm != .none else { return nil }
        return try await keyRing.key(for: fields.owner, version: fields.keyVersion)
    }

    // MARK: Keys made ready

    /// Makes `owner`'s current key (created on first use) ready for `protect(_:owner:encrypt:into:)`,
    /// which does not wait for the key store: call it before, as often as the key ring's
    /// revalidation interval (a second by default) asks, since a key not confirmed against the
    /// store within it is not used. A key prepared stays ready for at least half that interval
    /// (the comparison with the store is made now when it would be due sooner).
    public func prepare(owner: AccountID) async throws(ProtectionError) {
        try await keyRing.confirmAhead()
        _ = try await keyRing.currentKey(for: owner, creating: true)
    }

    /// Makes the key `envelope` opens with ready for `unprotect(_:into:)` (see
    /// `prepare(owner:)`). The envelope's first bytes are enough: its header. Nothing to do for
    /// bytes that are not an envelope, or one that is not encrypted.
    /// - Throws: as `unprotect(_:)` for a damaged header or a key that is gone.
    public func prepare(envelope: [UInt8]) async throws(ProtectionError) {
        guard let fields = try Self.headerFields(of: envelope, knownOwner: nil) else { return }
        try await keyRing.confirmAhead()
        _ = try await openingKey(fields)
    }

    // MARK: Buffers the caller provides

    /// Bytes of the envelope `protect(_:owner:encrypt:into:)` writes for `count` bytes of data
    /// of `owner`: the header (which names the owner), and a 16-byte tag for each full chunk of
    /// 1 MiB and one for the last chunk (partial, or empty when `count` is a multiple of 1 MiB).
    /// (`protect` itself refuses empty data.)
    /// - Throws: `.invalidArguments` for a negative count, or one whose envelope's size is not a
    ///   number of bytes any memory holds (it would overflow `Int`).
    public func envelopeCount(of count: Int, owner: AccountID, encrypt: Bool) throws(ProtectionError) -> Int {
        guard count >= 0 else {
            throw ProtectionError(.invalidArguments, "a data count of \(count) bytes is negative")
        }
        let header = EnvelopeHeader.count(
            for: encrypt ? algorithm : .none, ownerCount: OwnerIdentifier.encodedCount(of: owner))
        let tags = (count >> Int(Self.bufferChunkExponent) + 1) * EnvelopeAlgorithm.tagCount
        let (withHeader, overflowed) = count.addingReportingOverflow(header)
        let (total, tooLarge) = withHeader.addingReportingOverflow(tags)
        guard !overflowed, !tooLarge else {
            throw ProtectionError(
                .invalidArguments, "the envelope of \(count) bytes of data would be larger than any buffer can be")
        }
        return total
    }

    /// `protect(_:owner:encrypt:)` into memory the caller owns, for callers that reuse buffers
    /// (no allocation here, as libsodium's and OpenSSL's own calls): the envelope fills the first
    /// `envelopeCount(of: data.count, owner: owner, encrypt: encrypt)` bytes of `output`, and
    /// the count is returned; the rest of `output` is left as it was.
    /// - Throws: as `protect(_:owner:encrypt:)`; `.invalidArguments`, with nothing written and
    ///   no key made, when `output` is too small or overlaps `data`.
    public func protect(
        _ data: UnsafeRawBufferPointer, owner: AccountID, encrypt: Bool,
        into output: UnsafeMutableRawBufferPointer
    ) throws(ProtectionError) -> Int {
        guard !data.isEmpty else { throw ProtectionError(.emptyData, "there is no data to protect") }
        try Self.requireApart(data, output)
        try Self.requireRoom(
            try envelopeCount(of: data.count, owner: owner, encrypt: encrypt), in: output, for: "envelope")
        if let cipher = oneChunkSealing(data.count, encrypt: encrypt) {
            let accountKey = try keyRing.readySealingKey(for: owner)
            let total = oneChunkCount(of: data.count, owner: accountKey.owner)
            try Self.requireRoom(total, in: output, for: "envelope")
            sealOneChunk(
                data, cipher: cipher, accountKey: accountKey,
                into: UnsafeMutableRawBufferPointer(rebasing: output[..<total]))
            return total
        }
        let cipher =
            encrypt
            ? sealer(try keyRing.readySealingKey(for: owner), chunkExponent: Self.bufferChunkExponent)
            : unencryptedSealer(owner: owner, chunkExponent: Self.bufferChunkExponent)
        let total = Self.sealedCount(of: data.count, with: cipher)
        try Self.requireRoom(total, in: output, for: "envelope")
        Self.seal(data, with: cipher, into: UnsafeMutableRawBufferPointer(rebasing: output[..<total]))
        return total
    }

    /// Bytes `unprotect(_:into:)` writes for `data`: the plaintext of an envelope, or `data`'s own
    /// count for bytes that are not one (they come back unchanged). Read from the header and the
    /// length, without any key.
    /// - Throws: `.unsupportedVersion` or `.malformedEnvelope` for a damaged header;
    ///   `.decryptFailed` for an envelope cut off inside a tag.
    public static func unprotectedCount(of data: UnsafeRawBufferPointer) throws(ProtectionError) -> Int {
        guard let fields = try EnvelopeHeader.read(data) else { return data.count }
        return try openedCount(of: data.count - fields.count, chunkSize: 1 << Int(fields.chunkSizeExponent))
    }

    /// `unprotect(_:)` into memory the caller owns: the plaintext fills the first
    /// `unprotectedCount(of: data)` bytes of `output`, and the count is returned. When the
    /// envelope does not open, nothing of it is left in `output` (what was written is zeroed).
    /// - Throws: as `unprotect(_:)`; `.invalidArguments`, with nothing written, when `output` is
    ///   too small or overlaps `data`.
    public func unprotect(_ data: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer)
        throws(ProtectionError) -> Int
    {
        try Self.requireApart(data, output)
        guard let fields = try EnvelopeHeader.read(data, knownOwner: keyRing.lastOpeningOwner) else {
            try Self.requireRoom(data.count, in: output, for: "data")
            UnsafeMutableRawBufferPointer(rebasing: output[..<data.count]).copyMemory(from: data)
            return data.count
        }
        let accountKey =
            fields.algorithm == .none ? nil : try keyRing.readyKey(for: fields.owner, version: fields.keyVersion)
        if let cipher = Self.oneChunkOpening(fields, envelopeCount: data.count) {
            let count = max(0, data.count - fields.count - EnvelopeAlgorithm.tagCount)
            try Self.requireRoom(count, in: output, for: "plaintext")
            try openOneChunk(
                data, header: fields, cipher: cipher, accountKey: accountKey,
                into: UnsafeMutableRawBufferPointer(rebasing: output[..<count]))
            return count
        }
        let header = EnvelopeHeader(fields, copying: data)
        let cipher = try makeOpener(header, accountKey: accountKey)
        let body = UnsafeRawBufferPointer(rebasing: data[header.count...])
        let count = try Self.openedCount(of: body.count, chunkSize: cipher.chunkSize)
        try Self.requireRoom(count, in: output, for: "plaintext")
        try Self.open(body, with: cipher, into: UnsafeMutableRawBufferPointer(rebasing: output[..<count]))
        return count
    }

    /// The algorithm that seals `count` bytes as one chunk on this thread's OpenSSL context
    /// (`sealOneChunk`); nil when the general path (`makeSealer`, `seal(_:with:)`) seals them.
    private func oneChunkSealing(_ count: Int, encrypt: Bool) -> OpenSSLCipher.Algorithm? {
        guard encrypt, count < 1 << Int(Self.bufferChunkExponent) else { return nil }
        return algorithm.openSSLAlgorithm
    }

    /// The algorithm that opens an envelope of `envelopeCount` bytes with header `fields` as one
    /// chunk (`openOneChunk`); nil when the general path (`makeOpener`, `open(_:with:)`) opens it.
    private static func oneChunkOpening(_ fields: EnvelopeHeader.Fields, envelopeCount: Int)
        -> OpenSSLCipher.Algorithm?
    {
        guard envelopeCount - fields.count < (1 << Int(fields.chunkSizeExponent)) + EnvelopeAlgorithm.tagCount
        else { return nil }
        return fields.algorithm.openSSLAlgorithm
    }

    /// - Throws: `.invalidArguments` when `output` has fewer than `count` bytes.
    private static func requireRoom(_ count: Int, in output: UnsafeMutableRawBufferPointer, for what: String)
        throws(ProtectionError)
    {
        guard output.count >= count else {
            throw ProtectionError(
                .invalidArguments, "the output buffer holds \(output.count) bytes; the \(what) takes \(count)")
        }
    }

    /// - Throws: `.invalidArguments` when `input` and `output` share a byte: the envelope's
    ///   header shifts every byte written, so writing would overwrite input not yet read.
    private static func requireApart(_ input: UnsafeRawBufferPointer, _ output: UnsafeMutableRawBufferPointer)
        throws(ProtectionError)
    {
        guard let inputStart = input.baseAddress, let outputStart = output.baseAddress, !input.isEmpty,
            !output.isEmpty
        else { return }
        let inputRange = UInt(bitPattern: inputStart)..<UInt(bitPattern: inputStart) + UInt(input.count)
        let outputRange = UInt(bitPattern: outputStart)..<UInt(bitPattern: outputStart) + UInt(output.count)
        guard !inputRange.overlaps(outputRange) else {
            throw ProtectionError(.invalidArguments, "the output buffer overlaps the input")
        }
    }

    /// What the envelope says about itself, without any key; nil when `data` is not an envelope.
    /// - Throws: `.unsupportedVersion` or `.malformedEnvelope` for a damaged header.
    public func protectionInfo(_ data: [UInt8]) throws(ProtectionError) -> ProtectionInfo? {
        try Self.protectionInfo(data)
    }

    /// What an envelope says about itself (see `protectionInfo(_:)`), needing no protector.
    public static func protectionInfo(_ data: [UInt8]) throws(ProtectionError) -> ProtectionInfo? {
        let decoded = data.withUnsafeBytes { bytes in
            Result { () throws(ProtectionError) in try EnvelopeHeader.decode(bytes) }
        }
        return try decoded.get().map(ProtectionInfo.init(header:))
    }

    /// What an envelope (or its first bytes: the header is enough) says about itself, with its
    /// owner verified when it is encrypted: the data key's wrap, which authenticates the header
    /// (owner included), must open under that owner's key. Nil for data that is not an envelope.
    /// An unencrypted envelope's owner cannot be verified (it carries no key): `isEncrypted`
    /// false says so.
    /// - Throws: `ProtectionError` for a damaged header, a key that is gone (wiped) or absent,
    ///   and a header whose owner or key version was changed.
    public func verifiedProtectionInfo(_ data: [UInt8]) async throws(ProtectionError) -> ProtectionInfo? {
        let decoded = data.withUnsafeBytes { bytes in
            Result { () throws(ProtectionError) in try EnvelopeHeader.decode(bytes) }
        }
        guard let header = try decoded.get() else { return nil }
        _ = try await makeOpener(header)
        return ProtectionInfo(header: header)
    }

    /// Protects a string; the envelope comes back as base64.
    public func protect(string: String, owner: AccountID, encrypt: Bool) async throws(ProtectionError)
        -> String
    {
        Data(try await protect(Array(string.utf8), owner: owner, encrypt: encrypt)).base64EncodedString()
    }

    /// The string inside a base64 envelope; a string that is not base64 of an envelope comes
    /// back unchanged.
    /// - Throws: as `unprotect(_:)`, and `.invalidArguments` when the plaintext is not UTF-8.
    public func unprotect(string: String) async throws(ProtectionError) -> String {
        guard let data = Data(base64Encoded: string), try Self.protectionInfo([UInt8](data)) != nil else {
            return string
        }
        let plaintext = try await unprotect([UInt8](data))
        guard let text = String(validating: plaintext, as: UTF8.self) else {
            throw ProtectionError(.invalidArguments, "the protected data is not UTF-8 text")
        }
        return text
    }

    // MARK: Envelopes

    /// The identifier envelopes record for `account`: its OID when it has one, else its UPN.
    /// (The engine passes the tenant's form of an account, so every form shares one key.)
    public func ownerIdentifier(for account: AccountID) -> OwnerIdentifier {
        OwnerIdentifier(account)
    }

    /// A sealer for a new envelope: a data key of its own from the owner's current key (created
    /// on first use), or a tag-only envelope.
    func makeSealer(owner account: AccountID, encrypt: Bool, chunkExponent: UInt8) async throws(ProtectionError)
        -> ChunkCipher
    {
        guard encrypt else { return unencryptedSealer(owner: account, chunkExponent: chunkExponent) }
        return sealer(try await keyRing.currentKey(for: account, creating: true), chunkExponent: chunkExponent)
    }

    /// A sealer for a tag-only envelope of `account`'s.
    func unencryptedSealer(owner account: AccountID, chunkExponent: UInt8) -> ChunkCipher {
        ChunkCipher(
            header: EnvelopeHeader(unencryptedFor: ownerIdentifier(for: account), chunkSizeExponent: chunkExponent),
            cipher: nil)
    }

    /// An encrypting sealer under `accountKey`, with a data key of its own.
    func sealer(_ accountKey: AccountKey, chunkExponent: UInt8) -> ChunkCipher {
        let randomCount = Self.randomCount(for: algorithm)
        return withUnsafeTemporaryAllocation(byteCount: randomCount, alignment: 16) { random in
            defer { Sodium.zero(random) }
            Sodium.randomBytes(random)
            return Self.sealer(
                algorithm: algorithm, chunkExponent: chunkExponent, accountKey: accountKey,
                random: UnsafeRawBufferPointer(random),
                implementation: implementation)
        }
    }

    /// Bytes of randomness a new encrypted envelope takes: the salt (derived-key algorithms);
    /// the data key, wrap nonce and nonce prefix (wrapped-key algorithms).
    static func randomCount(for algorithm: EnvelopeAlgorithm) -> Int {
        if algorithm.derivesKey { return EnvelopeHeader.saltCount }
        return EnvelopeAlgorithm.keyCount + EnvelopeHeader.wrapNonceCount
            + EnvelopeHeader.noncePrefixCount(for: algorithm)
    }

    /// The sealer of an envelope whose random parts are given: what `makeSealer` does with fresh
    /// randomness, and what known-answer vectors do with fixed values.
    /// - Parameter random: `randomCount(for: algorithm)` bytes: the salt (derived-key
    ///   algorithms); or the data key (32), the wrap nonce (24) and the chunk nonce prefix.
    static func sealer(
        algorithm: EnvelopeAlgorithm, chunkExponent: UInt8, accountKey: AccountKey, random: UnsafeRawBufferPointer,
        implementation: AEADCipher.Implementation = .automatic
    ) -> ChunkCipher {
        precondition(random.count == randomCount(for: algorithm))
        if algorithm.derivesKey {
            return withUnsafeTemporaryAllocation(byteCount: AccountKey.derivedCount, alignment: 16) { derived in
                defer { Sodium.zero(derived) }
                let header = EnvelopeHeader(
                    derivingAlgorithm: algorithm, chunkSizeExponent: chunkExponent, owner: accountKey.owner,
                    keyVersion: accountKey.version,
                    salt: random
                ) { input, keyCheck in
                    accountKey.derive(from: input, into: derived)
                    keyCheck.copyMemory(from: UnsafeRawBufferPointer(rebasing: derived[EnvelopeAlgorithm.keyCount...]))
                }
                let dataKey = UnsafeRawBufferPointer(rebasing: derived[..<EnvelopeAlgorithm.keyCount])
                return ChunkCipher(
                    header: header,
                    cipher: AEADCipher(algorithm: algorithm, key: dataKey, implementation: implementation))
            }
        }
        let keyEnd = EnvelopeAlgorithm.keyCount
        let nonceEnd = keyEnd + EnvelopeHeader.wrapNonceCount
        let dataKey = UnsafeRawBufferPointer(rebasing: random[..<keyEnd])
        let header = EnvelopeHeader(
            algorithm: algorithm, chunkSizeExponent: chunkExponent, owner: accountKey.owner,
            keyVersion: accountKey.version,
            wrapNonce: UnsafeRawBufferPointer(rebasing: random[keyEnd..<nonceEnd]),
            noncePrefix: UnsafeRawBufferPointer(rebasing: random[nonceEnd...])
        ) { prefix, nonce, wrapped in
            accountKey.cipher.seal(dataKey, nonce: nonce, aad: prefix, into: wrapped)
        }
        return ChunkCipher(
            header: header, cipher: AEADCipher(algorithm: algorithm, key: dataKey, implementation: implementation))
    }

    /// An opener for an existing envelope: its data key derived or unwrapped with the owner's
    /// key version.
    func makeOpener(_ header: EnvelopeHeader) async throws(ProtectionError) -> ChunkCipher {
        guard header.isEncrypted else { return ChunkCipher(header: header, cipher: nil) }
        return try makeOpener(header, accountKey: try await keyRing.key(for: header.owner, version: header.keyVersion))
    }

    /// `makeOpener(_:)` with the key already at hand (nil: the envelope is not encrypted).
    func makeOpener(_ header: EnvelopeHeader, accountKey: AccountKey?) throws(ProtectionError) -> ChunkCipher {
        guard header.isEncrypted, let accountKey else { return ChunkCipher(header: header, cipher: nil) }
        guard let cipher = Self.dataKeyCipher(of: header, with: accountKey, implementation: implementation) else {
            throw Self.keyMismatch(header.algorithm, version: header.keyVersion, owner: header.owner)
        }
        return ChunkCipher(header: header, cipher: cipher)
    }

    /// The error for a header that does not authenticate under its owner's key.
    private static func keyMismatch(_ algorithm: EnvelopeAlgorithm, version: UInt32, owner: OwnerIdentifier)
        -> ProtectionError
    {
        var error = ProtectionError(
            .decryptFailed,
            algorithm.derivesKey
                ? "the header's key check does not match key version \(version) of \(owner): the header was changed or the key is not the one it was sealed with"
                : "the data key does not unwrap with key version \(version) of \(owner): the header was changed or the key is not the one it was sealed with"
        )
        error.isKeyMismatch = true
        return error
    }

    /// Derives the data key and key check of the derived-key header in `header` (its bytes,
    /// `prefixCount` of them up to the key version) into `derived`; false when the check the
    /// header carries does not match (a changed header, or the wrong key).
    private static func deriveDataKey(
        header: UnsafeRawBufferPointer, prefixCount: Int, with accountKey: AccountKey,
        into derived: UnsafeMutableRawBufferPointer
    ) -> Bool {
        let inputEnd = prefixCount + EnvelopeHeader.saltCount
        accountKey.derive(from: UnsafeRawBufferPointer(rebasing: header[..<inputEnd]), into: derived)
        return Sodium.constantTimeEqual(
            UnsafeRawBufferPointer(rebasing: derived[EnvelopeAlgorithm.keyCount...]),
            UnsafeRawBufferPointer(rebasing: header[inputEnd..<inputEnd + EnvelopeHeader.keyCheckCount]))
    }

    /// The data-key cipher of an encrypted header; nil when the header does not authenticate
    /// under `accountKey` (a changed header, or the wrong key): the key check does not match,
    /// or the wrapped key does not open.
    static func dataKeyCipher(
        of header: EnvelopeHeader, with accountKey: AccountKey, implementation: AEADCipher.Implementation = .automatic
    ) -> AEADCipher? {
        header.bytes.withUnsafeBytes { bytes in
            if header.algorithm.derivesKey {
                return withUnsafeTemporaryAllocation(byteCount: AccountKey.derivedCount, alignment: 16) { derived in
                    defer { Sodium.zero(derived) }
                    guard
                        deriveDataKey(
                            header: bytes, prefixCount: header.prefixCount, with: accountKey, into: derived)
                    else { return nil }
                    return AEADCipher(
                        algorithm: header.algorithm,
                        key: UnsafeRawBufferPointer(rebasing: derived[..<EnvelopeAlgorithm.keyCount]),
                        implementation: implementation)
                }
            }
            let prefix = UnsafeRawBufferPointer(rebasing: bytes[..<header.prefixCount])
            let nonceEnd = header.prefixCount + EnvelopeHeader.wrapNonceCount
            let nonce = UnsafeRawBufferPointer(rebasing: bytes[header.prefixCount..<nonceEnd])
            let wrapped = UnsafeRawBufferPointer(rebasing: bytes[nonceEnd..<nonceEnd + EnvelopeHeader.wrappedKeyCount])
            return withUnsafeTemporaryAllocation(byteCount: EnvelopeAlgorithm.keyCount, alignment: 16) { dataKey in
                defer { Sodium.zero(dataKey) }
                guard accountKey.cipher.open(wrapped, nonce: nonce, aad: prefix, into: dataKey) else { return nil }
                return AEADCipher(
                    algorithm: header.algorithm, key: UnsafeRawBufferPointer(dataKey), implementation: implementation)
            }
        }
    }

    /// Header and chunks of `data`, in memory (one allocation).
    static func seal(_ data: UnsafeRawBufferPointer, with cipher: ChunkCipher) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: sealedCount(of: data.count, with: cipher)) { buffer, initialized in
            seal(data, with: cipher, into: UnsafeMutableRawBufferPointer(buffer))
            initialized = buffer.count
        }
    }

    /// Bytes `seal(_:with:)` writes for `count` bytes of data.
    static func sealedCount(of count: Int, with cipher: ChunkCipher) -> Int {
        cipher.header.count + count + (count / cipher.chunkSize + 1) * EnvelopeAlgorithm.tagCount
    }

    /// Writes header and chunks of `data` into `out` (exactly `sealedCount(of:with:)` bytes).
    static func seal(_ data: UnsafeRawBufferPointer, with cipher: ChunkCipher, into out: UnsafeMutableRawBufferPointer)
    {
        let chunkSize = cipher.chunkSize
        let fullChunks = data.count / chunkSize
        let header = cipher.headerBytes
        precondition(out.count == sealedCount(of: data.count, with: cipher))
        out.copyBytes(from: header)
        var read = 0
        var written = header.count
        for index in 0...fullChunks {
            let count = index == fullChunks ? data.count - read : chunkSize
            cipher.seal(
                index: UInt64(index), last: index == fullChunks,
                UnsafeRawBufferPointer(rebasing: data[read..<read + count]),
                into: UnsafeMutableRawBufferPointer(
                    rebasing: out[written..<written + count + EnvelopeAlgorithm.tagCount]))
            read += count
            written += count + EnvelopeAlgorithm.tagCount
        }
    }

    /// The plaintext of the chunks in `body` (everything after the header), in one allocation;
    /// nothing of it when any chunk fails to open.
    static func open(_ body: UnsafeRawBufferPointer, with cipher: ChunkCipher) throws(ProtectionError) -> [UInt8] {
        let count = try openedCount(of: body.count, chunkSize: cipher.chunkSize)
        return try [UInt8](unsafeUninitializedCapacity: count) { (buffer, initialized) throws(ProtectionError) in
            try open(body, with: cipher, into: UnsafeMutableRawBufferPointer(buffer))
            initialized = buffer.count
        }
    }

    /// Bytes of plaintext in the chunks of an envelope body of `count` bytes.
    /// - Throws: `.decryptFailed` for a body cut off inside a tag, or of more chunks than the
    ///   format allows.
    static func openedCount(of count: Int, chunkSize: Int) throws(ProtectionError) -> Int {
        let sealedChunk = chunkSize + EnvelopeAlgorithm.tagCount
        let fullChunks = count / sealedChunk
        guard count % sealedChunk >= EnvelopeAlgorithm.tagCount else { throw cutOff(after: fullChunks) }
        guard fullChunks <= ChunkCipher.maximumChunkIndex else {
            throw ProtectionError(.decryptFailed, "the envelope has more chunks than the format allows")
        }
        return count - (fullChunks + 1) * EnvelopeAlgorithm.tagCount
    }

    /// Opens the chunks in `body` into `out` (exactly `openedCount` bytes); when any chunk fails
    /// to open, what was written is zeroed and nothing of it may be used.
    static func open(_ body: UnsafeRawBufferPointer, with cipher: ChunkCipher, into out: UnsafeMutableRawBufferPointer)
        throws(ProtectionError)
    {
        let sealedChunk = cipher.sealedChunkSize
        let fullChunks = body.count / sealedChunk
        let lastCount = body.count % sealedChunk
        precondition(out.count == (try? openedCount(of: body.count, chunkSize: cipher.chunkSize)))
        var read = 0
        var written = 0
        for index in 0...fullChunks {
            let count = index == fullChunks ? lastCount : sealedChunk
            let plainCount = count - EnvelopeAlgorithm.tagCount
            let opened = cipher.open(
                index: UInt64(index), last: index == fullChunks,
                UnsafeRawBufferPointer(rebasing: body[read..<read + count]),
                into: UnsafeMutableRawBufferPointer(rebasing: out[written..<written + plainCount]))
            guard opened else {
                Sodium.zero(UnsafeMutableRawBufferPointer(rebasing: out[..<written]))
                throw notAuthentic(chunk: index)
            }
            read += count
            written += plainCount
        }
    }

    private static func cutOff(after chunk: Int) -> ProtectionError {
        ProtectionError(.decryptFailed, "the envelope is cut off after chunk \(chunk)")
    }

    private static func notAuthentic(chunk: Int) -> ProtectionError {
        ProtectionError(
            .decryptFailed,
            "chunk \(chunk) does not authenticate: the data was changed, truncated or reordered, or the key is not the one it was sealed with"
        )
    }

    // MARK: Buffers of one chunk

    /// Seals a buffer of one chunk (every buffer under 1 MiB) under a derived data key straight
    /// into the envelope: the header written in place, the data key on the stack, the chunk
    /// sealed on this thread's OpenSSL context. The bytes are those `seal(_:with:)` writes with
    /// the `ChunkCipher` of `makeSealer`: only the objects and copies in between are gone.
    private func sealOneChunk(
        _ data: UnsafeRawBufferPointer, cipher: OpenSSLCipher.Algorithm, accountKey: AccountKey
    ) -> [UInt8] {
        let total = oneChunkCount(of: data.count, owner: accountKey.owner)
        return [UInt8](unsafeUninitializedCapacity: total) { buffer, initialized in
            sealOneChunk(data, cipher: cipher, accountKey: accountKey, into: UnsafeMutableRawBufferPointer(buffer))
            initialized = total
        }
    }

    /// Bytes of the envelope `sealOneChunk` writes for `count` bytes of data.
    private func oneChunkCount(of count: Int, owner: OwnerIdentifier) -> Int {
        EnvelopeHeader.count(for: algorithm, owner: owner) + count + EnvelopeAlgorithm.tagCount
    }

    /// `sealOneChunk(_:cipher:accountKey:)` into `out` (exactly `oneChunkCount` bytes).
    private func sealOneChunk(
        _ data: UnsafeRawBufferPointer, cipher: OpenSSLCipher.Algorithm, accountKey: AccountKey,
        into out: UnsafeMutableRawBufferPointer
    ) {
        precondition(data.count < 1 << Int(Self.bufferChunkExponent))
        let algorithm = self.algorithm
        let headerCount = EnvelopeHeader.count(for: algorithm, owner: accountKey.owner)
        precondition(out.count == headerCount + data.count + EnvelopeAlgorithm.tagCount)
        let header = UnsafeMutableRawBufferPointer(rebasing: out[..<headerCount])
        withUnsafeTemporaryAllocation(byteCount: AccountKey.derivedCount, alignment: 16) { derived in
            defer { Sodium.zero(derived) }
            EnvelopeHeader.writeDerived(
                into: header, algorithm: algorithm, chunkSizeExponent: Self.bufferChunkExponent,
                owner: accountKey.owner, keyVersion: accountKey.version, salt: Sodium.randomBytes
            ) { input, keyCheck in
                accountKey.derive(from: input, into: derived)
                keyCheck.copyMemory(from: UnsafeRawBufferPointer(rebasing: derived[EnvelopeAlgorithm.keyCount...]))
            }
            ChunkCipher.withNonce(prefix: EnvelopeHeader.zeroNoncePrefix[...], index: 0, last: true) { nonce in
                OpenSSLCipher.seal(
                    cipher, key: UnsafeRawBufferPointer(rebasing: derived[..<EnvelopeAlgorithm.keyCount]), data,
                    nonce: nonce, aad: UnsafeRawBufferPointer(header),
                    into: UnsafeMutableRawBufferPointer(rebasing: out[headerCount...]))
            }
        }
    }

    /// Opens a derived-key envelope of one chunk (`header` read from the start of `envelope`)
    /// where it lies: the counterpart of `sealOneChunk`, with the checks, order and errors of
    /// `makeOpener` and `open(_:with:)`.
    private func openOneChunk(
        _ envelope: UnsafeRawBufferPointer, header: EnvelopeHeader.Fields, cipher: OpenSSLCipher.Algorithm,
        accountKey: AccountKey?
    ) throws(ProtectionError) -> [UInt8] {
        // A body shorter than a tag is refused after the key check, as `makeOpener` and
        // `open(_:with:)` order their errors: the buffer is empty then and never written.
        let count = max(0, envelope.count - header.count - EnvelopeAlgorithm.tagCount)
        return try [UInt8](unsafeUninitializedCapacity: count) { (buffer, initialized) throws(ProtectionError) in
            try openOneChunk(
                envelope, header: header, cipher: cipher, accountKey: accountKey,
                into: UnsafeMutableRawBufferPointer(buffer))
            initialized = count
        }
    }

    /// `openOneChunk(_:header:cipher:)` into `out` (exactly the plaintext's bytes); zeroed, and
    /// nothing of it to be used, when the chunk does not authenticate.
    private func openOneChunk(
        _ envelope: UnsafeRawBufferPointer, header: EnvelopeHeader.Fields, cipher: OpenSSLCipher.Algorithm,
        accountKey: AccountKey?, into out: UnsafeMutableRawBufferPointer
    ) throws(ProtectionError) {
        // One-chunk openings are of encrypted envelopes only (`oneChunkOpening`).
        guard let accountKey else {
            throw Self.keyMismatch(header.algorithm, version: header.keyVersion, owner: header.owner)
        }
        let headerBytes = UnsafeRawBufferPointer(rebasing: envelope[..<header.count])
        let sealed = UnsafeRawBufferPointer(rebasing: envelope[header.count...])
        let failure: ProtectionError? = withUnsafeTemporaryAllocation(
            byteCount: AccountKey.derivedCount, alignment: 16
        ) { derived in
            defer { Sodium.zero(derived) }
            guard
                Self.deriveDataKey(
                    header: headerBytes, prefixCount: header.prefixCount, with: accountKey, into: derived)
            else {
                return Self.keyMismatch(header.algorithm, version: header.keyVersion, owner: header.owner)
            }
            guard sealed.count >= EnvelopeAlgorithm.tagCount else { return Self.cutOff(after: 0) }
            precondition(out.count == sealed.count - EnvelopeAlgorithm.tagCount)
            let authentic = ChunkCipher.withNonce(prefix: EnvelopeHeader.zeroNoncePrefix[...], index: 0, last: true) {
                nonce in
                OpenSSLCipher.open(
                    cipher, key: UnsafeRawBufferPointer(rebasing: derived[..<EnvelopeAlgorithm.keyCount]), sealed,
                    nonce: nonce, aad: headerBytes, into: out)
            }
            return authentic ? nil : Self.notAuthentic(chunk: 0)
        }
        if let failure { throw failure }
    }
}
