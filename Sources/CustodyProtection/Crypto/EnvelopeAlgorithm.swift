/// How an envelope's payload is sealed. The raw value is the algorithm byte of the envelope
/// header (docs/format.md).
public enum EnvelopeAlgorithm: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Not encrypted: the envelope only tags the owner; chunks carry a checksum against damage
    /// (not against tampering: there is no key).
    case none = 0
    /// AES-256-GCM, 96-bit nonces. Chosen when the CPU has AES-NI and PCLMUL.
    case aes256GCM = 1
    /// XChaCha20-Poly1305 (IETF), 192-bit nonces. Chosen otherwise.
    case xChaCha20Poly1305 = 2

    public var description: String {
        switch self {
        case .none: "none"
        case .aes256GCM: "AES-256-GCM"
        case .xChaCha20Poly1305: "XChaCha20-Poly1305"
        }
    }

    /// The algorithm new encrypted envelopes use on this machine: AES-256-GCM when the CPU
    /// accelerates it, XChaCha20-Poly1305 otherwise. Both are read everywhere.
    public static var preferred: EnvelopeAlgorithm {
        Sodium.hasHardwareAESGCM ? .aes256GCM : .xChaCha20Poly1305
    }

    /// Nonce length in bytes.
    var nonceCount: Int {
        switch self {
        case .none: 0
        case .aes256GCM: 12
        case .xChaCha20Poly1305: 24
        }
    }

    /// Authentication tag (or checksum) length in bytes.
    static let tagCount = 16
    /// Key length in bytes.
    static let keyCount = 32
}
