public import CustodyPolicy
import Foundation

/// What an envelope says about itself, read without any key.
public struct ProtectionInfo: Sendable, Hashable {
    /// The owner's identifier as the envelope records it (`oid:...` or `upn:...`).
    public let owner: OwnerIdentifier
    public let isEncrypted: Bool
    public let algorithm: EnvelopeAlgorithm
    /// The owner's key version that wraps the data key; nil when not encrypted.
    public let keyVersion: UInt32?
    /// Plaintext bytes per chunk.
    public let chunkSize: Int
    /// Bytes of header before the first chunk.
    public let headerLength: Int

    init(header: EnvelopeHeader, length: Int) {
        owner = header.owner
        isEncrypted = header.isEncrypted
        algorithm = header.algorithm
        keyVersion = header.isEncrypted ? header.keyVersion : nil
        chunkSize = header.chunkSize
        headerLength = length
    }
}

/// Protects data per account, as IntuneMAMDataProtectionManager and
/// IntuneMAMFileProtectionManager do: an envelope that names the owner, and, when the owner's
/// policy requires it (or the caller asks), encryption under a fresh data key wrapped by the
/// owner's account key.
///
/// Thread-safe: share one protector between tasks.
public final class DataProtector: Sendable {
    public let keyRing: KeyRing
    /// The policy that says whose data must be encrypted; nil: only callers that force
    /// encryption get it.
    public let policy: PolicySnapshot?
    /// The algorithm new encrypted envelopes use.
    public let algorithm: EnvelopeAlgorithm
    let implementation: AEADCipher.Implementation

    /// Plaintext bytes per chunk of a buffer envelope (2^20).
    static let bufferChunkExponent: UInt8 = 20

    /// - Parameters:
    ///   - policy: decides whose data is encrypted (`PolicySnapshot.encryptionRequired`) and
    ///     names accounts by their tenant OID; nil protects by the caller's word alone.
    ///   - algorithm: for new encrypted envelopes; by default AES-256-GCM where the CPU
    ///     accelerates it, XChaCha20-Poly1305 otherwise.
    public init(keyRing: KeyRing, policy: PolicySnapshot? = nil, algorithm: EnvelopeAlgorithm = .preferred) {
        self.keyRing = keyRing
        self.policy = policy
        self.algorithm = algorithm == .none ? .preferred : algorithm
        self.implementation = .automatic
    }

    init(keyRing: KeyRing, policy: PolicySnapshot?, algorithm: EnvelopeAlgorithm, implementation: AEADCipher.Implementation) {
        self.keyRing = keyRing
        self.policy = policy
        self.algorithm = algorithm
        self.implementation = implementation
    }

    // MARK: Buffers

    /// Protects `data` for `owner`: encrypted when the owner's policy requires it or
    /// `forceEncryption`, otherwise only tagged with the owner.
    /// - Throws: `.emptyData` for an empty buffer; `.notManaged` when encryption is asked for an
    ///   account the policy's tenant does not know; `.invalidArguments`, key store errors.
    public func protect(_ data: [UInt8], owner: AccountID, forceEncryption: Bool = false) throws(ProtectionError) -> [UInt8] {
        guard !data.isEmpty else { throw ProtectionError(.emptyData, "there is no data to protect") }
        let cipher = try makeSealer(owner: owner, forceEncryption: forceEncryption, chunkExponent: Self.bufferChunkExponent)
        return data.withUnsafeBytes { Self.seal($0, with: cipher) }
    }

    /// The data inside an envelope. Bytes that are not an envelope come back unchanged
    /// (Intune's behaviour).
    /// - Throws: `.decryptFailed` when the envelope was changed, truncated or reordered or the
    ///   key is wrong (no plaintext is returned); `.keyUnavailable` when the owner's key was
    ///   wiped; `.unsupportedVersion`; `.malformedEnvelope`.
    public func unprotect(_ data: [UInt8]) throws(ProtectionError) -> [UInt8] {
        let result: Result<[UInt8]?, ProtectionError> = data.withUnsafeBytes { bytes in
            do throws(ProtectionError) {
                guard let (header, length) = try EnvelopeHeader.decode(bytes) else { return .success(nil) }
                let cipher = try makeOpener(header)
                return .success(try Self.open(UnsafeRawBufferPointer(rebasing: bytes[length...]), with: cipher))
            } catch {
                return .failure(error)
            }
        }
        return try result.get() ?? data
    }

    /// What the envelope says about itself, without any key; nil when `data` is not an envelope.
    /// - Throws: `.unsupportedVersion` or `.malformedEnvelope` for a damaged header.
    public func protectionInfo(_ data: [UInt8]) throws(ProtectionError) -> ProtectionInfo? {
        try Self.protectionInfo(data)
    }

    /// What an envelope says about itself (see `protectionInfo(_:)`), needing no protector.
    public static func protectionInfo(_ data: [UInt8]) throws(ProtectionError) -> ProtectionInfo? {
        let decoded = data.withUnsafeBytes { bytes in Result { () throws(ProtectionError) in try EnvelopeHeader.decode(bytes) } }
        return try decoded.get().map { ProtectionInfo(header: $0.header, length: $0.length) }
    }

    /// Protects a string; the envelope comes back as base64.
    public func protect(string: String, owner: AccountID, forceEncryption: Bool = false) throws(ProtectionError) -> String {
        Data(try protect(Array(string.utf8), owner: owner, forceEncryption: forceEncryption)).base64EncodedString()
    }

    /// The string inside a base64 envelope; a string that is not base64 of an envelope comes
    /// back unchanged.
    /// - Throws: as `unprotect(_:)`, and `.invalidArguments` when the plaintext is not UTF-8.
    public func unprotect(string: String) throws(ProtectionError) -> String {
        guard let data = Data(base64Encoded: string), try Self.protectionInfo([UInt8](data)) != nil else { return string }
        let plaintext = try unprotect([UInt8](data))
        guard let text = String(validating: plaintext, as: UTF8.self) else {
            throw ProtectionError(.invalidArguments, "the protected data is not UTF-8 text")
        }
        return text
    }

    // MARK: Envelopes

    /// The identifier envelopes record for `account`: the tenant's OID for it when the policy
    /// knows it (so every form of the account shares one key), else the account's own.
    public func ownerIdentifier(for account: AccountID) -> OwnerIdentifier {
        if let known = policy?.tenantAccount(for: account) { return OwnerIdentifier(known.id) }
        return OwnerIdentifier(account)
    }

    /// Whether `owner`'s data is encrypted: the caller forces it, or the policy requires it.
    func requiresEncryption(for owner: AccountID, forceEncryption: Bool) throws(ProtectionError) -> Bool {
        guard let policy else { return forceEncryption }
        if policy.tenantAccount(for: owner) == nil {
            if forceEncryption {
                throw ProtectionError(.notManaged, "\(owner) is not an account of the policy's tenant, so it has no keys")
            }
            return false
        }
        return forceEncryption || policy.encryptionRequired(account: owner).isAllowed
    }

    /// A sealer for a new envelope: a fresh data key wrapped by the owner's current key (created
    /// on first use), or a tag-only envelope.
    func makeSealer(owner account: AccountID, forceEncryption: Bool, chunkExponent: UInt8) throws(ProtectionError) -> ChunkCipher {
        let owner = ownerIdentifier(for: account)
        guard try requiresEncryption(for: account, forceEncryption: forceEncryption) else {
            return ChunkCipher(header: EnvelopeHeader(algorithm: .none, chunkSizeExponent: chunkExponent, owner: owner, keyVersion: 0), cipher: nil)
        }
        return try makeSealer(owner: owner, chunkExponent: chunkExponent)
    }

    /// An encrypting sealer for `owner` under its current key.
    func makeSealer(owner: OwnerIdentifier, chunkExponent: UInt8) throws(ProtectionError) -> ChunkCipher {
        let accountKey = try keyRing.currentKey(for: owner, creating: true)
        let prefixCount = EnvelopeHeader.noncePrefixCount(for: algorithm)
        let randomCount = EnvelopeAlgorithm.keyCount + EnvelopeHeader.wrapNonceCount + prefixCount
        return withUnsafeTemporaryAllocation(byteCount: randomCount, alignment: 16) { random in
            defer { Sodium.zero(random) }
            Sodium.randomBytes(random)
            return Self.sealer(
                algorithm: algorithm, chunkExponent: chunkExponent, accountKey: accountKey,
                dataKey: UnsafeRawBufferPointer(rebasing: random[0..<EnvelopeAlgorithm.keyCount]),
                wrapNonce: Array(random[EnvelopeAlgorithm.keyCount..<EnvelopeAlgorithm.keyCount + EnvelopeHeader.wrapNonceCount]),
                noncePrefix: Array(random[(randomCount - prefixCount)...]), implementation: implementation)
        }
    }

    /// The sealer of an envelope whose random parts are given: what `makeSealer` does with fresh
    /// randomness, and what known-answer vectors do with fixed values.
    static func sealer(
        algorithm: EnvelopeAlgorithm, chunkExponent: UInt8, accountKey: AccountKey, dataKey: UnsafeRawBufferPointer,
        wrapNonce: [UInt8], noncePrefix: [UInt8], implementation: AEADCipher.Implementation = .automatic
    ) -> ChunkCipher {
        var header = EnvelopeHeader(algorithm: algorithm, chunkSizeExponent: chunkExponent, owner: accountKey.owner, keyVersion: accountKey.version)
        header.wrapNonce = wrapNonce
        header.noncePrefix = noncePrefix
        var wrapped = [UInt8](repeating: 0, count: EnvelopeHeader.wrappedKeyCount)
        let prefix = header.encodedPrefix()
        wrapNonce.withUnsafeBytes { nonce in
            prefix.withUnsafeBytes { aad in wrapped.withUnsafeMutableBytes { accountKey.cipher.seal(dataKey, nonce: nonce, aad: aad, into: $0) } }
        }
        header.wrappedDataKey = wrapped
        return ChunkCipher(header: header, cipher: AEADCipher(algorithm: algorithm, key: dataKey, implementation: implementation))
    }

    /// An opener for an existing envelope: its data key unwrapped by the owner's key version.
    func makeOpener(_ header: EnvelopeHeader) throws(ProtectionError) -> ChunkCipher {
        guard header.isEncrypted else { return ChunkCipher(header: header, cipher: nil) }
        let accountKey = try keyRing.key(for: header.owner, version: header.keyVersion)
        let prefix = header.encodedPrefix()
        let result: Result<ChunkCipher, ProtectionError> = withUnsafeTemporaryAllocation(byteCount: EnvelopeAlgorithm.keyCount, alignment: 16) { dataKey in
            defer { Sodium.zero(dataKey) }
            let unwrapped = header.wrappedDataKey.withUnsafeBytes { wrapped in
                header.wrapNonce.withUnsafeBytes { nonce in
                    prefix.withUnsafeBytes { aad in accountKey.cipher.open(wrapped, nonce: nonce, aad: aad, into: dataKey) }
                }
            }
            guard unwrapped else {
                return .failure(ProtectionError(
                    .decryptFailed,
                    "the data key does not unwrap with key version \(header.keyVersion) of \(header.owner): the header was changed or the key is not the one it was sealed with"))
            }
            return .success(ChunkCipher(header: header, cipher: AEADCipher(algorithm: header.algorithm, key: UnsafeRawBufferPointer(dataKey), implementation: implementation)))
        }
        return try result.get()
    }

    /// Header and chunks of `data`, in memory.
    static func seal(_ data: UnsafeRawBufferPointer, with cipher: ChunkCipher) -> [UInt8] {
        let chunkSize = cipher.chunkSize
        let fullChunks = data.count / chunkSize
        var output = cipher.headerBytes
        let start = output.count
        output.append(contentsOf: repeatElement(0, count: data.count + (fullChunks + 1) * EnvelopeAlgorithm.tagCount))
        output.withUnsafeMutableBytes { out in
            var read = 0
            var written = start
            for index in 0...fullChunks {
                let count = index == fullChunks ? data.count - read : chunkSize
                cipher.seal(
                    index: UInt64(index), last: index == fullChunks, UnsafeRawBufferPointer(rebasing: data[read..<read + count]),
                    into: UnsafeMutableRawBufferPointer(rebasing: out[written..<written + count + EnvelopeAlgorithm.tagCount]))
                read += count
                written += count + EnvelopeAlgorithm.tagCount
            }
        }
        return output
    }

    /// The plaintext of the chunks in `body` (everything after the header).
    static func open(_ body: UnsafeRawBufferPointer, with cipher: ChunkCipher) throws(ProtectionError) -> [UInt8] {
        var plaintext: [UInt8] = []
        var position = 0
        var index: UInt64 = 0
        let sealedChunk = cipher.sealedChunkSize
        while true {
            let remaining = body.count - position
            let last = remaining < sealedChunk
            guard remaining >= EnvelopeAlgorithm.tagCount, index <= ChunkCipher.maximumChunkIndex else {
                throw ProtectionError(.decryptFailed, "the envelope is cut off after chunk \(index)")
            }
            let count = last ? remaining : sealedChunk
            let start = plaintext.count
            plaintext.append(contentsOf: repeatElement(0, count: count - EnvelopeAlgorithm.tagCount))
            let opened = plaintext.withUnsafeMutableBytes { out in
                cipher.open(
                    index: index, last: last, UnsafeRawBufferPointer(rebasing: body[position..<position + count]),
                    into: UnsafeMutableRawBufferPointer(rebasing: out[start...]))
            }
            guard opened else {
                plaintext.withUnsafeMutableBytes { Sodium.zero($0) }
                throw ProtectionError(
                    .decryptFailed,
                    "chunk \(index) does not authenticate: the data was changed, truncated or reordered, or the key is not the one it was sealed with")
            }
            position += count
            index += 1
            if last { return plaintext }
        }
    }
}
