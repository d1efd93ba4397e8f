/// Zeroing, comparing and drawing secret bytes, in ways the compiler cannot undo (libsodium).
public enum SecureMemory {
    /// Overwrites every byte of `bytes` with zero.
    public static func zero(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { Sodium.zero($0) }
    }

    /// Whether two byte strings are equal, in time that depends on their length only (never on
    /// where they differ): for comparing secrets and their hashes.
    public static func constantTimeEqual(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        return lhs.withUnsafeBytes { left in rhs.withUnsafeBytes { right in Sodium.constantTimeEqual(left, right) } }
    }

    /// `count` bytes from the kernel's random source.
    public static func randomBytes(count: Int) -> [UInt8] {
        Sodium.randomBytes(count: count)
    }
}
