internal import CSodium

/// libsodium, initialized once.
///
/// `sodium_init()` runs the first time any wrapper here is used, through a `static let`: never
/// inside an `assert` or `precondition`, which optimized builds compile out. It is safe to call
/// again and from several threads; a failure (no usable randomness source) stops the process,
/// since nothing in this layer can be trusted without it.
enum Sodium {
    private static let initialized: Bool = {
        let status = sodium_init()
        guard status >= 0 else {
            fatalError("libsodium failed to initialize (sodium_init returned \(status)): no secure random source")
        }
        return true
    }()

    /// Call before any other libsodium function.
    @inline(__always)
    static func ensureInitialized() {
        _ = initialized
    }

    /// Fills `buffer` with cryptographically secure random bytes: the kernel's, through
    /// `RandomPool` for small draws.
    static func randomBytes(_ buffer: UnsafeMutableRawBufferPointer) {
        RandomPool.shared.fill(buffer)
    }

    /// `count` random bytes.
    static func randomBytes(count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { randomBytes($0) }
        return bytes
    }

    /// Overwrites `buffer` with zeros in a way the compiler cannot remove.
    static func zero(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return }
        sodium_memzero(base, buffer.count)
    }

    /// Whether two buffers hold the same bytes, in time independent of where they differ.
    static func constantTimeEqual(_ lhs: UnsafeRawBufferPointer, _ rhs: UnsafeRawBufferPointer) -> Bool {
        guard lhs.count == rhs.count else { return false }
        guard let left = lhs.baseAddress, let right = rhs.baseAddress else { return lhs.isEmpty }
        return sodium_memcmp(left, right, lhs.count) == 0
    }

    /// Whether the CPU has the instructions libsodium's AES-256-GCM needs (AES-NI, PCLMUL).
    static var hasHardwareAESGCM: Bool {
        ensureInitialized()
        return crypto_aead_aes256gcm_is_available() == 1
    }
}
