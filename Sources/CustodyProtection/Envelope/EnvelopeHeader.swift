public import CustodyPolicy

/// The header of an envelope (docs/format.md): who owns the data, how it is sealed, and for
/// encrypted envelopes the per-envelope data key wrapped by the owner's account key.
///
/// ```
/// magic 89 43 53 54 · version · algorithm · chunk-size exponent · flags
/// owner length (BE16) · owner (UTF-8) · key version (BE32)
/// [encrypted:] wrap nonce (24) · wrapped data key (48) · nonce prefix (7 or 19)
/// ```
struct EnvelopeHeader: Sendable, Hashable {
    static let magic: [UInt8] = [0x89, 0x43, 0x53, 0x54]
    static let formatVersion: UInt8 = 1
    static let wrapNonceCount = 24
    static let wrappedKeyCount = EnvelopeAlgorithm.keyCount + EnvelopeAlgorithm.tagCount
    static let maximumOwnerCount = 1_024
    static let chunkExponents: ClosedRange<UInt8> = 10...24

    var algorithm: EnvelopeAlgorithm
    /// Plaintext bytes per chunk: 2^exponent.
    var chunkSizeExponent: UInt8
    var owner: OwnerIdentifier
    /// The account key version that wraps the data key; 0 when not encrypted.
    var keyVersion: UInt32
    var wrapNonce: [UInt8] = []
    var wrappedDataKey: [UInt8] = []
    var noncePrefix: [UInt8] = []

    var chunkSize: Int { 1 << Int(chunkSizeExponent) }
    var isEncrypted: Bool { algorithm != .none }

    /// Bytes of the nonce prefix for an algorithm: the nonce less the 4-byte counter and the
    /// 1-byte last-chunk flag.
    static func noncePrefixCount(for algorithm: EnvelopeAlgorithm) -> Int {
        algorithm == .none ? 0 : algorithm.nonceCount - 5
    }

    /// The bytes up to and including the key version: the associated data of the data-key wrap.
    func encodedPrefix() -> [UInt8] {
        let ownerBytes = Array(owner.rawValue.utf8)
        var bytes = Self.magic
        bytes.reserveCapacity(14 + ownerBytes.count + Self.wrapNonceCount + Self.wrappedKeyCount + 19)
        bytes += [Self.formatVersion, algorithm.rawValue, chunkSizeExponent, 0]
        bytes += [UInt8(ownerBytes.count >> 8), UInt8(ownerBytes.count & 0xFF)]
        bytes += ownerBytes
        bytes += bigEndianBytes(keyVersion)
        return bytes
    }

    /// The whole header.
    func encoded() -> [UInt8] {
        var bytes = encodedPrefix()
        if isEncrypted {
            bytes += wrapNonce
            bytes += wrappedDataKey
            bytes += noncePrefix
        }
        return bytes
    }

    /// Reads a header at the start of `bytes`.
    ///
    /// - Returns: nil when `bytes` do not start with the envelope magic (they are not an
    ///   envelope); otherwise the header and its length in bytes.
    /// - Throws: `ProtectionError` `.unsupportedVersion` for a format this code does not know,
    ///   `.malformedEnvelope` (with the offset) for a damaged or truncated header.
    static func decode(_ bytes: UnsafeRawBufferPointer) throws(ProtectionError) -> (header: EnvelopeHeader, length: Int)? {
        guard bytes.count >= magic.count, bytes.prefix(magic.count).elementsEqual(magic) else { return nil }
        func need(_ count: Int, at offset: Int, for field: String) throws(ProtectionError) {
            if bytes.count < offset + count {
                throw ProtectionError(.malformedEnvelope, "the envelope is cut off inside its header (\(field) at byte \(offset))")
            }
        }
        try need(10, at: 0, for: "fixed fields")
        guard bytes[4] == formatVersion else {
            throw ProtectionError(.unsupportedVersion, "envelope format version \(bytes[4]) is not supported (this build reads version \(formatVersion))")
        }
        guard let algorithm = EnvelopeAlgorithm(rawValue: bytes[5]) else {
            throw ProtectionError(.malformedEnvelope, "unknown algorithm \(bytes[5]) at byte 5")
        }
        let exponent = bytes[6]
        guard chunkExponents.contains(exponent) else {
            throw ProtectionError(.malformedEnvelope, "chunk size exponent \(exponent) at byte 6 is outside \(chunkExponents)")
        }
        guard bytes[7] == 0 else {
            throw ProtectionError(.malformedEnvelope, "unknown flags \(bytes[7]) at byte 7")
        }
        let ownerCount = Int(bytes[8]) << 8 | Int(bytes[9])
        guard (1...maximumOwnerCount).contains(ownerCount) else {
            throw ProtectionError(.malformedEnvelope, "owner length \(ownerCount) at byte 8 is outside 1...\(maximumOwnerCount)")
        }
        try need(ownerCount + 4, at: 10, for: "owner and key version")
        guard let ownerText = String(validating: bytes[10..<10 + ownerCount], as: UTF8.self),
            let owner = OwnerIdentifier(rawValue: ownerText)
        else {
            throw ProtectionError(.malformedEnvelope, "the owner at byte 10 is not an oid: or upn: identifier")
        }
        var offset = 10 + ownerCount
        let keyVersion = bytes[offset..<offset + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        offset += 4
        var header = EnvelopeHeader(algorithm: algorithm, chunkSizeExponent: exponent, owner: owner, keyVersion: keyVersion)
        guard algorithm.isEncrypting else {
            guard keyVersion == 0 else {
                throw ProtectionError(.malformedEnvelope, "an unencrypted envelope names key version \(keyVersion) at byte \(offset - 4)")
            }
            return (header, offset)
        }
        guard keyVersion >= 1 else {
            throw ProtectionError(.malformedEnvelope, "an encrypted envelope names key version 0 at byte \(offset - 4)")
        }
        let prefixCount = noncePrefixCount(for: algorithm)
        try need(wrapNonceCount + wrappedKeyCount + prefixCount, at: offset, for: "wrapped data key")
        header.wrapNonce = Array(bytes[offset..<offset + wrapNonceCount])
        offset += wrapNonceCount
        header.wrappedDataKey = Array(bytes[offset..<offset + wrappedKeyCount])
        offset += wrappedKeyCount
        header.noncePrefix = Array(bytes[offset..<offset + prefixCount])
        offset += prefixCount
        return (header, offset)
    }
}

extension EnvelopeAlgorithm {
    var isEncrypting: Bool { self != .none }
}

/// How an envelope names its owner: `oid:<object id>` or `upn:<user principal name>`, lower-case.
/// This is also the name of the owner's keys in a key store.
public struct OwnerIdentifier: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String

    /// Accepts `oid:...` or `upn:...` with a non-empty value; lower-cases it.
    public init?(rawValue: String) {
        let lowered = rawValue.lowercased()
        guard lowered.hasPrefix("oid:") || lowered.hasPrefix("upn:"), lowered.count > 4, lowered.utf8.count <= EnvelopeHeader.maximumOwnerCount else {
            return nil
        }
        self.rawValue = lowered
    }

    /// The identifier of an account: its OID when known, else its UPN.
    public init(_ account: AccountID) {
        if let oid = account.oid {
            rawValue = "oid:" + oid.lowercased()
        } else {
            rawValue = "upn:" + (account.upn ?? "").lowercased()
        }
    }

    /// The account it names.
    public var account: AccountID {
        let value = String(rawValue.dropFirst(4))
        return rawValue.hasPrefix("oid:") ? AccountID(oid: value)! : AccountID(upn: value)!
    }

    public var description: String { rawValue }
}

func bigEndianBytes(_ value: UInt32) -> [UInt8] {
    [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
}
