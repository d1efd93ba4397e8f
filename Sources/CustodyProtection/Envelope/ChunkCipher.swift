/// Seals and opens the chunks of one envelope.
///
/// Chunk i is sealed with nonce `prefix ‖ BE32(i) ‖ last` (last is 1 for the final chunk,
/// else 0) and the whole header as associated data, so a chunk cannot move, be dropped from the
/// end, or be spliced into another envelope unnoticed. Every chunk but the last holds exactly
/// `chunkSize` plaintext bytes; the last holds fewer (possibly none), so its size says it is
/// last. Unencrypted envelopes append a 16-byte BLAKE2b checksum keyed by a digest of the header
/// instead of a tag: it catches damage, not tampering.
///
/// Immutable: chunks may be sealed or opened on several threads at once. A class, so handing
/// it to each chunk costs one reference count rather than one per field.
final class ChunkCipher: Sendable {
    let header: EnvelopeHeader
    private let cipher: AEADCipher?
    private let checksumKey: [UInt8]

    /// The largest chunk index (the counter is 32 bits).
    static let maximumChunkIndex = UInt64(UInt32.max)

    /// - Parameter cipher: the data-key cipher; nil for unencrypted envelopes.
    init(header: EnvelopeHeader, cipher: AEADCipher?) {
        precondition((cipher == nil) == !header.isEncrypted)
        self.header = header
        self.cipher = cipher
        self.checksumKey = header.isEncrypted ? [] : header.bytes.withUnsafeBytes(Checksum.digest)
    }

    /// The encoded header: every chunk's associated data.
    var headerBytes: [UInt8] { header.bytes }

    var chunkSize: Int { header.chunkSize }
    /// Bytes a full chunk takes sealed.
    var sealedChunkSize: Int { header.chunkSize + EnvelopeAlgorithm.tagCount }

    /// Seals chunk `index` of `plaintext` (at most `chunkSize` bytes; fewer only for the last)
    /// into `output` (`plaintext.count + 16` bytes).
    func seal(
        index: UInt64, last: Bool, _ plaintext: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer
    ) {
        withNonce(index: index, last: last) { nonce in
            if let cipher {
                headerBytes.withUnsafeBytes { aad in cipher.seal(plaintext, nonce: nonce, aad: aad, into: output) }
            } else {
                UnsafeMutableRawBufferPointer(rebasing: output[..<plaintext.count]).copyMemory(from: plaintext)
                checksumKey.withUnsafeBytes { key in
                    Checksum.keyed(
                        key: key, nonce, plaintext,
                        into: UnsafeMutableRawBufferPointer(rebasing: output[plaintext.count...]))
                }
            }
        }
    }

    /// Opens sealed chunk `index` into `output` (`sealed.count - 16` bytes). Returns false,
    /// with `output` zeroed, when it does not verify.
    func open(index: UInt64, last: Bool, _ sealed: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer)
        -> Bool
    {
        withNonce(index: index, last: last) { nonce in
            if let cipher {
                return headerBytes.withUnsafeBytes { aad in cipher.open(sealed, nonce: nonce, aad: aad, into: output) }
            }
            guard sealed.count >= EnvelopeAlgorithm.tagCount else { return false }
            let split = sealed.count - EnvelopeAlgorithm.tagCount
            let payload = UnsafeRawBufferPointer(rebasing: sealed[..<split])
            return withUnsafeTemporaryAllocation(byteCount: EnvelopeAlgorithm.tagCount, alignment: 1) { expected in
                checksumKey.withUnsafeBytes { key in Checksum.keyed(key: key, nonce, payload, into: expected) }
                guard
                    Sodium.constantTimeEqual(
                        UnsafeRawBufferPointer(expected), UnsafeRawBufferPointer(rebasing: sealed[split...]))
                else {
                    Sodium.zero(output)
                    return false
                }
                output.copyMemory(from: payload)
                return true
            }
        }
    }

    /// Calls `body` with the nonce of chunk `index`: prefix, big-endian counter, last flag.
    /// Unencrypted envelopes use the same 5 bytes (counter and flag) as checksum input.
    private func withNonce<Result>(index: UInt64, last: Bool, _ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        Self.withNonce(prefix: header.noncePrefix, index: index, last: last, body)
    }

    /// Calls `body` with the nonce of chunk `index` of an envelope whose nonces start with `prefix`.
    static func withNonce<Result>(
        prefix: ArraySlice<UInt8>, index: UInt64, last: Bool, _ body: (UnsafeRawBufferPointer) -> Result
    ) -> Result {
        withUnsafeTemporaryAllocation(byteCount: prefix.count + 5, alignment: 1) { nonce in
            prefix.withUnsafeBytes {
                UnsafeMutableRawBufferPointer(rebasing: nonce[..<prefix.count]).copyMemory(from: $0)
            }
            let counter = UInt32(truncatingIfNeeded: index)
            nonce[prefix.count] = UInt8(counter >> 24)
            nonce[prefix.count + 1] = UInt8(counter >> 16 & 0xFF)
            nonce[prefix.count + 2] = UInt8(counter >> 8 & 0xFF)
            nonce[prefix.count + 3] = UInt8(counter & 0xFF)
            nonce[prefix.count + 4] = last ? 1 : 0
            return body(UnsafeRawBufferPointer(nonce))
        }
    }
}
