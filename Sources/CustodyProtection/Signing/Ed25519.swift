internal import CSodium

/// Ed25519 signatures (RFC 8032) through libsodium's `crypto_sign`: what signs and verifies
/// bundle manifests. Signatures are deterministic, so the same key and message give the same
/// 64 bytes in any conforming implementation (OpenSSL, Python's `cryptography`, Go's
/// `crypto/ed25519`).
public enum Ed25519 {
    /// Bytes in a public key, a private key's seed, and a signature.
    public static let publicKeyCount = 32
    public static let seedCount = 32
    public static let signatureCount = 64

    /// Whether `publicKey` is a point of the curve, in its main subgroup and not of small order:
    /// a key no signature can be made for (all zeros, say) is not one.
    public static func isValidPublicKey(_ publicKey: [UInt8]) -> Bool {
        guard publicKey.count == publicKeyCount else { return false }
        Sodium.ensureInitialized()
        return crypto_core_ed25519_is_valid_point(publicKey) == 1
    }

    /// Whether `signature` is `publicKey`'s over `message`. False for a key or signature of the
    /// wrong length, a key that is not a point of the curve, or a non-canonical signature.
    public static func isValid(signature: [UInt8], of message: [UInt8], publicKey: [UInt8]) -> Bool {
        guard signature.count == signatureCount, publicKey.count == publicKeyCount else { return false }
        Sodium.ensureInitialized()
        return crypto_sign_verify_detached(signature, message, UInt64(message.count), publicKey) == 0
    }
}

/// An Ed25519 private key, held as its 32-byte seed (RFC 8032's private key) in memory that is
/// wiped when the key is freed.
public final class Ed25519SigningKey: Sendable {
    private let secret: SecretBytes
    /// The public key (32 bytes).
    public let publicKey: [UInt8]

    /// A new random key.
    public convenience init() {
        let seed = SecretBytes(randomCount: Ed25519.seedCount)
        self.init(secret: seed)
    }

    /// The key with this seed.
    /// - Throws: `ProtectionError` `.malformed` when `seed` is not 32 bytes.
    public convenience init(seed: [UInt8]) throws(ProtectionError) {
        guard seed.count == Ed25519.seedCount else {
            throw ProtectionError(
                .invalidArguments, "an Ed25519 private key is \(Ed25519.seedCount) bytes, not \(seed.count)")
        }
        self.init(secret: seed.withUnsafeBytes { SecretBytes(copying: $0) })
    }

    private init(secret: SecretBytes) {
        Sodium.ensureInitialized()
        self.secret = secret
        var publicKey = [UInt8](repeating: 0, count: Ed25519.publicKeyCount)
        var expanded = [UInt8](repeating: 0, count: Int(crypto_sign_SECRETKEYBYTES))
        secret.withUnsafeBytes { seed in
            _ = crypto_sign_seed_keypair(&publicKey, &expanded, seed.bindMemory(to: UInt8.self).baseAddress!)
        }
        expanded.withUnsafeMutableBytes { Sodium.zero($0) }
        self.publicKey = publicKey
    }

    /// The seed, for writing the key to its file.
    public var seed: [UInt8] { secret.withUnsafeBytes { Array($0) } }

    /// The signature of `message` (64 bytes).
    public func signature(of message: [UInt8]) -> [UInt8] {
        var expanded = [UInt8](repeating: 0, count: Int(crypto_sign_SECRETKEYBYTES))
        var publicKey = [UInt8](repeating: 0, count: Ed25519.publicKeyCount)
        defer { expanded.withUnsafeMutableBytes { Sodium.zero($0) } }
        secret.withUnsafeBytes { seed in
            _ = crypto_sign_seed_keypair(&publicKey, &expanded, seed.bindMemory(to: UInt8.self).baseAddress!)
        }
        var signature = [UInt8](repeating: 0, count: Ed25519.signatureCount)
        _ = crypto_sign_detached(&signature, nil, message, UInt64(message.count), expanded)
        return signature
    }
}
