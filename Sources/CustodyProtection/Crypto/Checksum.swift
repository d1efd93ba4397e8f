internal import CSodium

/// BLAKE2b (libsodium's generic hash), for the checksums of unencrypted envelopes and the
/// data keys of derived-key envelopes.
enum Checksum {
    /// The alignment libsodium's BLAKE2b state needs.
    private static let stateAlignment = 64

    /// A 32-byte digest of `bytes`.
    static func digest(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        Sodium.ensureInitialized()
        var out = [UInt8](repeating: 0, count: 32)
        out.withUnsafeMutableBytes { out in
            _ = crypto_generichash(
                out.baseAddress!.assumingMemoryBound(to: UInt8.self), 32,
                bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(bytes.count), nil, 0)
        }
        return out
    }

    /// A keyed digest of `first` then `second`, as long as `output` (at most 64 bytes), with no
    /// allocation: the 16-byte chunk checksums of unencrypted envelopes (keyed by the header's
    /// digest) and the data-key derivation of derived-key envelopes (keyed by the account key).
    static func keyed(
        key: UnsafeRawBufferPointer, _ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer,
        into output: UnsafeMutableRawBufferPointer
    ) {
        Sodium.ensureInitialized()
        // libsodium wants the state 64-byte aligned. Asked for that alignment, the temporary
        // allocation goes to the heap (posix_memalign and free on every derivation); on the
        // stack with room to align it by hand, it costs nothing.
        let stateCount = crypto_generichash_blake2b_statebytes()
        withUnsafeTemporaryAllocation(byteCount: stateCount + stateAlignment, alignment: 16) { raw in
            let base = raw.baseAddress!
            let padding = (stateAlignment - Int(bitPattern: base) % stateAlignment) % stateAlignment
            let state = OpaquePointer(base + padding)
            _ = crypto_generichash_blake2b_init(
                state, key.baseAddress!.assumingMemoryBound(to: UInt8.self), key.count, output.count)
            func absorb(_ part: UnsafeRawBufferPointer) {
                guard let base = part.baseAddress, !part.isEmpty else { return }
                _ = crypto_generichash_blake2b_update(
                    state, base.assumingMemoryBound(to: UInt8.self), UInt64(part.count))
            }
            absorb(first)
            absorb(second)
            _ = crypto_generichash_blake2b_final(
                state, output.baseAddress!.assumingMemoryBound(to: UInt8.self), output.count)
            Sodium.zero(raw)
        }
    }
}
