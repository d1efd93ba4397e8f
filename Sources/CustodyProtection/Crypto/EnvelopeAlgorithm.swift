/// How an envelope's payload is sealed. The raw value is the algorithm byte of the envelope
/// header (docs/format.md).
///
/// Two constructions: envelopes of algorithms 1 and 2 carry a random data key wrapped by the
/// owner's account key; envelopes of algorithms 3 and 4 carry a random 32-byte salt from which
/// the data key is derived with one keyed BLAKE2b call (cheaper for small buffers, and the
/// header carries a check value that proves the owner's key, as the wrap did). New envelopes use
/// 3 or 4; all four are read.
public enum EnvelopeAlgorithm: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Not encrypted: the envelope only tags the owner; chunks carry a checksum against damage
    /// (not against tampering: there is no key).
    case none = 0
    /// AES-256-GCM under a wrapped random data key, 96-bit nonces (read; earlier writers).
    case aes256GCM = 1
    /// XChaCha20-Poly1305 (IETF) under a wrapped random data key, 192-bit nonces (read; earlier
    /// writers).
    case xChaCha20Poly1305 = 2
    /// AES-256-GCM under a data key derived from the account key and a per-envelope salt.
    /// Chosen when the CPU accelerates AES.
    case aes256GCMDerived = 3
    /// ChaCha20-Poly1305 (RFC 8439) under a data key derived from the account key and a
    /// per-envelope salt. Chosen otherwise.
    case chaCha20Poly1305Derived = 4

    public var description: String {
        switch self {
        case .none: "none"
        case .aes256GCM: "AES-256-GCM"
        case .xChaCha20Poly1305: "XChaCha20-Poly1305"
        case .aes256GCMDerived: "AES-256-GCM (derived key)"
        case .chaCha20Poly1305Derived: "ChaCha20-Poly1305 (derived key)"
        }
    }

    /// The algorithm new encrypted envelopes use on this machine: AES-256-GCM when the CPU
    /// accelerates it (AES-NI and carry-less multiply), ChaCha20-Poly1305 otherwise; both with
    /// derived keys. Every algorithm is read everywhere.
    public static var preferred: EnvelopeAlgorithm {
        Sodium.hasHardwareAESGCM ? .aes256GCMDerived : .chaCha20Poly1305Derived
    }

    /// Whether the data key is derived from the account key and a salt in the header (rather
    /// than wrapped by it).
    var derivesKey: Bool { self == .aes256GCMDerived || self == .chaCha20Poly1305Derived }

    /// Nonce length in bytes.
    var nonceCount: Int {
        switch self {
        case .none: 0
        case .aes256GCM, .aes256GCMDerived, .chaCha20Poly1305Derived: 12
        case .xChaCha20Poly1305: 24
        }
    }

    /// Authentication tag (or checksum) length in bytes.
    static let tagCount = 16
    /// Key length in bytes.
    static let keyCount = 32
}
