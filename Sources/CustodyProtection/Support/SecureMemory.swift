/// Zeroing of secret bytes, in a way the compiler cannot remove (libsodium's `sodium_memzero`).
public enum SecureMemory {
    /// Overwrites every byte of `bytes` with zero.
    public static func zero(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { Sodium.zero($0) }
    }
}
