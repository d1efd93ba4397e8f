internal import CSodium

/// BLAKE2b (libsodium's generic hash), for the checksums of unencrypted envelopes and the
/// data keys of derived-key envelopes.
enum Checksum {
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

    /// A 16-byte keyed digest of the concatenation of `parts`, written to `output`.
    static func keyed(_ key: [UInt8], parts: [UnsafeRawBufferPointer], into output: UnsafeMutableRawBufferPointer) {
        Sodium.ensureInitialized()
        withUnsafeTemporaryAllocation(byteCount: crypto_generichash_blake2b_statebytes(), alignment: 64) { raw in
            let state = OpaquePointer(raw.baseAddress!)
            key.withUnsafeBytes { key in
                _ = crypto_generichash_blake2b_init(state, key.baseAddress!.assumingMemoryBound(to: UInt8.self), key.count, output.count)
            }
            for part in parts where !part.isEmpty {
                _ = crypto_generichash_blake2b_update(state, part.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(part.count))
            }
            _ = crypto_generichash_blake2b_final(state, output.baseAddress!.assumingMemoryBound(to: UInt8.self), output.count)
            Sodium.zero(raw)
        }
    }

    /// A keyed digest of `first` then `second`, as long as `output` (at most 64 bytes), with no
    /// allocation: the data-key derivation of derived-key envelopes.
    static func keyed(
        key: UnsafeRawBufferPointer, _ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer
    ) {
        Sodium.ensureInitialized()
        withUnsafeTemporaryAllocation(byteCount: crypto_generichash_blake2b_statebytes(), alignment: 64) { raw in
            let state = OpaquePointer(raw.baseAddress!)
            _ = crypto_generichash_blake2b_init(state, key.baseAddress!.assumingMemoryBound(to: UInt8.self), key.count, output.count)
            for part in [first, second] where !part.isEmpty {
                _ = crypto_generichash_blake2b_update(state, part.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(part.count))
            }
            _ = crypto_generichash_blake2b_final(state, output.baseAddress!.assumingMemoryBound(to: UInt8.self), output.count)
            Sodium.zero(raw)
        }
    }
}
