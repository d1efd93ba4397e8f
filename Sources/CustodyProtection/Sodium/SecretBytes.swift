internal import CSodium

/// Secret bytes (a key, a plaintext key being wrapped): never printable, compared in constant
/// time, overwritten with zeros when the last reference goes away, and, for long-lived keys,
/// kept out of swap where the system allows (`locked`).
///
/// Not `Codable`, no `description` that shows the bytes: reach them only through
/// `withUnsafeBytes`. The bytes are written once, in `init`, and only read afterwards, which is
/// what makes sharing an instance between threads sound.
final class SecretBytes: @unchecked Sendable, CustomStringConvertible {
    private let pointer: UnsafeMutableRawBufferPointer
    private let locked: Bool
    let count: Int

    /// Secret bytes initialized by `initializer` (which must fill the whole buffer).
    /// - Parameter locked: also lock the memory against swapping (two system calls; worth it for
    ///   keys that live long, not for a data key that lives a microsecond).
    init(count: Int, locked: Bool = false, initializer: (UnsafeMutableRawBufferPointer) throws -> Void) rethrows {
        Sodium.ensureInitialized()
        pointer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(count, 1), alignment: 16)
        self.locked = locked
        self.count = count
        if locked { _ = sodium_mlock(pointer.baseAddress!, pointer.count) }
        // Every stored property is set: when the fill throws, Swift runs `deinit`, which alone
        // zeroes and frees the buffer (freeing it here too would free it twice).
        try initializer(UnsafeMutableRawBufferPointer(rebasing: pointer[0..<count]))
    }

    /// `count` fresh random bytes.
    convenience init(randomCount count: Int, locked: Bool = false) {
        self.init(count: count, locked: locked) { Sodium.randomBytes($0) }
    }

    /// A copy of `bytes`; the caller zeroes its own copy.
    convenience init(copying bytes: UnsafeRawBufferPointer, locked: Bool = false) {
        self.init(count: bytes.count, locked: locked) { $0.copyMemory(from: bytes) }
    }

    deinit {
        release()
    }

    private func release() {
        if locked {
            // sodium_munlock zeroes the memory before unlocking it.
            _ = sodium_munlock(pointer.baseAddress!, pointer.count)
        } else {
            Sodium.zero(pointer)
        }
        pointer.deallocate()
    }

    func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(UnsafeRawBufferPointer(rebasing: pointer[0..<count]))
    }

    /// Constant-time comparison.
    func isEqual(to other: SecretBytes) -> Bool {
        withUnsafeBytes { lhs in other.withUnsafeBytes { rhs in Sodium.constantTimeEqual(lhs, rhs) } }
    }

    var description: String { "SecretBytes(\(count) bytes, redacted)" }
}
