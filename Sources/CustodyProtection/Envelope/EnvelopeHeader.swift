public import CustodyPolicy

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The header of an envelope (docs/format.md): who owns the data, how it is sealed, and for
/// encrypted envelopes what turns the owner's account key into the data key: a salt it is
/// derived from with a check value (algorithms 3 and 4), or the data key wrapped (1 and 2).
///
/// ```
/// magic 89 43 53 54 · version · algorithm · chunk-size exponent · flags
/// owner length (BE16) · owner (UTF-8) · key version (BE32)
/// [derived key:] salt (32) · key check (16)
/// [wrapped key:] wrap nonce (24) · wrapped data key (48) · nonce prefix (7 or 19)
/// ```
struct EnvelopeHeader: Sendable, Hashable {
    static let magic: [UInt8] = [0x89, 0x43, 0x53, 0x54]
    static let formatVersion: UInt8 = 1
    static let wrapNonceCount = 24
    static let wrappedKeyCount = EnvelopeAlgorithm.keyCount + EnvelopeAlgorithm.tagCount
    static let saltCount = 32
    static let keyCheckCount = 16
    static let maximumOwnerCount = 1_024
    /// Chunk size exponents a reader accepts: 1 KiB to 1 MiB chunks. The bound keeps a reader's
    /// memory small whatever a header declares (no writer used more than 2^20).
    static let chunkExponents: ClosedRange<UInt8> = 10...20
    /// Bytes of the fixed fields before the owner.
    private static let fixedCount = 10
    /// Bytes of the largest header there can be.
    static let maximumCount = fixedCount + maximumOwnerCount + 4 + wrapNonceCount + wrappedKeyCount + 19

    let algorithm: EnvelopeAlgorithm
    /// Plaintext bytes per chunk: 2^exponent.
    let chunkSizeExponent: UInt8
    let owner: OwnerIdentifier
    /// The account key version that wraps or derives the data key; 0 when not encrypted.
    let keyVersion: UInt32
    /// The header as written: the associated data of every chunk. The fields below are views
    /// into it, so a header costs one allocation whether it is built or read.
    let bytes: [UInt8]
    /// Bytes up to and including the key version: the associated data of the data-key wrap.
    let prefixCount: Int

    var chunkSize: Int { 1 << Int(chunkSizeExponent) }
    var isEncrypted: Bool { algorithm != .none }
    /// Bytes of the whole header.
    var count: Int { bytes.count }

    var encodedPrefix: ArraySlice<UInt8> { bytes[..<prefixCount] }
    var wrapNonce: ArraySlice<UInt8> { isWrapped ? bytes[prefixCount..<prefixCount + Self.wrapNonceCount] : [] }
    var wrappedDataKey: ArraySlice<UInt8> {
        isWrapped
            ? bytes[prefixCount + Self.wrapNonceCount..<prefixCount + Self.wrapNonceCount + Self.wrappedKeyCount] : []
    }
    /// The first bytes of every chunk nonce: stored for wrapped-key envelopes; seven zero bytes
    /// for derived-key envelopes (their data key is never used for another envelope).
    var noncePrefix: ArraySlice<UInt8> {
        if algorithm.derivesKey { return Self.zeroNoncePrefix[...] }
        return isWrapped ? bytes[(prefixCount + Self.wrapNonceCount + Self.wrappedKeyCount)...] : []
    }
    /// The header up to and including the salt: what a derived data key is derived from.
    var derivationInput: ArraySlice<UInt8> { algorithm.derivesKey ? bytes[..<(prefixCount + Self.saltCount)] : [] }
    /// The key check of a derived-key envelope.
    var keyCheck: ArraySlice<UInt8> { algorithm.derivesKey ? bytes[(prefixCount + Self.saltCount)...] : [] }

    private var isWrapped: Bool { isEncrypted && !algorithm.derivesKey }
    /// The nonce prefix of every derived-key envelope.
    static let zeroNoncePrefix = [UInt8](repeating: 0, count: 7)

    /// Bytes of the nonce prefix for an algorithm: the nonce less the 4-byte counter and the
    /// 1-byte last-chunk flag.
    static func noncePrefixCount(for algorithm: EnvelopeAlgorithm) -> Int {
        algorithm == .none ? 0 : algorithm.nonceCount - 5
    }

    /// Bytes after the prefix for an algorithm.
    static func suffixCount(for algorithm: EnvelopeAlgorithm) -> Int {
        if algorithm == .none { return 0 }
        if algorithm.derivesKey { return saltCount + keyCheckCount }
        return wrapNonceCount + wrappedKeyCount + noncePrefixCount(for: algorithm)
    }

    /// The header of an unencrypted envelope.
    init(unencryptedFor owner: OwnerIdentifier, chunkSizeExponent: UInt8) {
        self.init(algorithm: .none, chunkSizeExponent: chunkSizeExponent, owner: owner, keyVersion: 0, suffixCount: 0) {
            _, _ in
        }
    }

    /// The header of a wrapped-key envelope (algorithms 1 and 2).
    /// - Parameter wrap: writes the wrapped data key (48 bytes, `into`), sealed under the wrap
    ///   nonce with the header's prefix (`prefix`) as associated data.
    init(
        algorithm: EnvelopeAlgorithm, chunkSizeExponent: UInt8, owner: OwnerIdentifier, keyVersion: UInt32,
        wrapNonce: UnsafeRawBufferPointer, noncePrefix: UnsafeRawBufferPointer,
        wrap: (_ prefix: UnsafeRawBufferPointer, _ nonce: UnsafeRawBufferPointer, _ into: UnsafeMutableRawBufferPointer)
            -> Void
    ) {
        precondition(
            algorithm.isEncrypting && !algorithm.derivesKey && keyVersion >= 1,
            "a wrapped-key header needs its algorithm and a key version")
        precondition(
            wrapNonce.count == Self.wrapNonceCount && noncePrefix.count == Self.noncePrefixCount(for: algorithm))
        self.init(
            algorithm: algorithm, chunkSizeExponent: chunkSizeExponent, owner: owner, keyVersion: keyVersion,
            suffixCount: Self.suffixCount(for: algorithm)
        ) { prefix, suffix in
            let nonce = UnsafeMutableRawBufferPointer(rebasing: suffix[..<Self.wrapNonceCount])
            nonce.copyMemory(from: wrapNonce)
            let wrapped = UnsafeMutableRawBufferPointer(
                rebasing: suffix[Self.wrapNonceCount..<Self.wrapNonceCount + Self.wrappedKeyCount])
            wrap(prefix, UnsafeRawBufferPointer(nonce), wrapped)
            UnsafeMutableRawBufferPointer(rebasing: suffix[(Self.wrapNonceCount + Self.wrappedKeyCount)...]).copyMemory(
                from: noncePrefix)
        }
    }

    /// The header of a derived-key envelope (algorithms 3 and 4).
    /// - Parameter derive: given the header up to and including the salt, writes the key check
    ///   (16 bytes, `into`); the caller keeps the data key the same derivation yields.
    init(
        derivingAlgorithm algorithm: EnvelopeAlgorithm, chunkSizeExponent: UInt8, owner: OwnerIdentifier,
        keyVersion: UInt32,
        salt: UnsafeRawBufferPointer,
        derive: (_ input: UnsafeRawBufferPointer, _ keyCheck: UnsafeMutableRawBufferPointer) -> Void
    ) {
        precondition(
            algorithm.derivesKey && keyVersion >= 1, "a derived-key header needs its algorithm and a key version")
        precondition(salt.count == Self.saltCount)
        self.init(
            algorithm: algorithm, chunkSizeExponent: chunkSizeExponent, owner: owner, keyVersion: keyVersion,
            suffixCount: Self.suffixCount(for: algorithm)
        ) { prefix, suffix in
            Self.fillDerivedSuffix(prefix: prefix, suffix: suffix, salt: { $0.copyMemory(from: salt) }, derive: derive)
        }
    }

    /// Bytes of the header of an envelope of `algorithm` for `owner`.
    static func count(for algorithm: EnvelopeAlgorithm, owner: OwnerIdentifier) -> Int {
        count(for: algorithm, ownerCount: owner.rawValue.utf8.count)
    }

    /// Bytes of the header of an envelope of `algorithm` whose owner identifier is `ownerCount`
    /// bytes long.
    static func count(for algorithm: EnvelopeAlgorithm, ownerCount: Int) -> Int {
        fixedCount + ownerCount + 4 + suffixCount(for: algorithm)
    }

    /// Writes a derived-key header straight into `output` (exactly
    /// `count(for: algorithm, owner: owner)` bytes, the start of an envelope being built):
    /// `salt` fills the 32-byte salt, `derive` writes the key check as for
    /// `init(derivingAlgorithm:...)`.
    static func writeDerived(
        into output: UnsafeMutableRawBufferPointer, algorithm: EnvelopeAlgorithm, chunkSizeExponent: UInt8,
        owner: OwnerIdentifier, keyVersion: UInt32,
        salt: (_ into: UnsafeMutableRawBufferPointer) -> Void,
        derive: (_ input: UnsafeRawBufferPointer, _ keyCheck: UnsafeMutableRawBufferPointer) -> Void
    ) {
        precondition(
            algorithm.derivesKey && keyVersion >= 1, "a derived-key header needs its algorithm and a key version")
        precondition(output.count == count(for: algorithm, owner: owner))
        write(
            into: output, algorithm: algorithm, chunkSizeExponent: chunkSizeExponent, owner: owner,
            keyVersion: keyVersion
        ) { prefix, suffix in
            fillDerivedSuffix(prefix: prefix, suffix: suffix, salt: salt, derive: derive)
        }
    }

    /// Salt, then key check, after the prefix of a derived-key header.
    private static func fillDerivedSuffix(
        prefix: UnsafeRawBufferPointer, suffix: UnsafeMutableRawBufferPointer,
        salt: (_ into: UnsafeMutableRawBufferPointer) -> Void,
        derive: (_ input: UnsafeRawBufferPointer, _ keyCheck: UnsafeMutableRawBufferPointer) -> Void
    ) {
        salt(UnsafeMutableRawBufferPointer(rebasing: suffix[..<saltCount]))
        // The prefix and the salt are contiguous: the derivation's input.
        let input = UnsafeRawBufferPointer(start: prefix.baseAddress, count: prefix.count + saltCount)
        derive(input, UnsafeMutableRawBufferPointer(rebasing: suffix[saltCount...]))
    }

    /// Encodes the prefix, then lets `fillSuffix` write the `suffixCount` bytes after it.
    private init(
        algorithm: EnvelopeAlgorithm, chunkSizeExponent: UInt8, owner: OwnerIdentifier, keyVersion: UInt32,
        suffixCount: Int,
        fillSuffix: (_ prefix: UnsafeRawBufferPointer, _ suffix: UnsafeMutableRawBufferPointer) -> Void
    ) {
        self.algorithm = algorithm
        self.chunkSizeExponent = chunkSizeExponent
        self.owner = owner
        self.keyVersion = keyVersion
        let prefixCount = owner.rawValue.utf8.count + Self.fixedCount + 4
        self.prefixCount = prefixCount
        bytes = [UInt8](unsafeUninitializedCapacity: prefixCount + suffixCount) { buffer, initialized in
            Self.write(
                into: UnsafeMutableRawBufferPointer(buffer), algorithm: algorithm,
                chunkSizeExponent: chunkSizeExponent, owner: owner, keyVersion: keyVersion, fillSuffix: fillSuffix)
            initialized = prefixCount + suffixCount
        }
    }

    /// Encodes a header into `raw` (exactly its size): the prefix, then what `fillSuffix`
    /// writes after it.
    private static func write(
        into raw: UnsafeMutableRawBufferPointer, algorithm: EnvelopeAlgorithm, chunkSizeExponent: UInt8,
        owner: OwnerIdentifier, keyVersion: UInt32,
        fillSuffix: (_ prefix: UnsafeRawBufferPointer, _ suffix: UnsafeMutableRawBufferPointer) -> Void
    ) {
        precondition(
            algorithm == .none || keyVersion >= 1, "an encrypted header needs its algorithm and a key version")
        var ownerText = owner.rawValue
        ownerText.withUTF8 { ownerBytes in
            let prefixCount = ownerBytes.count + fixedCount + 4
            raw.copyBytes(from: magic)
            raw[4] = formatVersion
            raw[5] = algorithm.rawValue
            raw[6] = chunkSizeExponent
            raw[7] = 0
            raw[8] = UInt8(ownerBytes.count >> 8)
            raw[9] = UInt8(ownerBytes.count & 0xFF)
            UnsafeMutableRawBufferPointer(rebasing: raw[fixedCount..<fixedCount + ownerBytes.count])
                .copyMemory(from: UnsafeRawBufferPointer(ownerBytes))
            raw.storeBytes(of: keyVersion.bigEndian, toByteOffset: prefixCount - 4, as: UInt32.self)
            fillSuffix(
                UnsafeRawBufferPointer(rebasing: raw[..<prefixCount]),
                UnsafeMutableRawBufferPointer(rebasing: raw[prefixCount...]))
        }
    }

    private init(
        decoded bytes: [UInt8], algorithm: EnvelopeAlgorithm, chunkSizeExponent: UInt8, owner: OwnerIdentifier,
        keyVersion: UInt32, prefixCount: Int
    ) {
        self.algorithm = algorithm
        self.chunkSizeExponent = chunkSizeExponent
        self.owner = owner
        self.keyVersion = keyVersion
        self.bytes = bytes
        self.prefixCount = prefixCount
    }

    /// Reads a header at the start of `bytes`.
    ///
    /// - Returns: nil when `bytes` do not start with the envelope magic (they are not an
    ///   envelope); otherwise the header, whose `count` is its length in bytes.
    /// - Throws: `ProtectionError` `.unsupportedVersion` for a format this code does not know,
    ///   `.malformedEnvelope` (with the offset) for a damaged or truncated header.
    static func decode(_ bytes: UnsafeRawBufferPointer) throws(ProtectionError) -> EnvelopeHeader? {
        try read(bytes).map { EnvelopeHeader($0, copying: bytes) }
    }

    /// The header `read(_:)` found at the start of `bytes`, its bytes copied.
    init(_ fields: Fields, copying bytes: UnsafeRawBufferPointer) {
        self.init(
            decoded: Array(bytes[..<fields.count]), algorithm: fields.algorithm,
            chunkSizeExponent: fields.chunkSizeExponent, owner: fields.owner, keyVersion: fields.keyVersion,
            prefixCount: fields.prefixCount)
    }

    /// A header's fields, read where its bytes are (`read(_:)`), without a copy of them.
    struct Fields {
        let algorithm: EnvelopeAlgorithm
        let chunkSizeExponent: UInt8
        let owner: OwnerIdentifier
        let keyVersion: UInt32
        /// Bytes up to and including the key version.
        let prefixCount: Int
        /// Bytes of the whole header.
        let count: Int
    }

    /// Reads a header at the start of `bytes` where it is, with every check `decode(_:)` makes
    /// (it is `decode` without the copy).
    /// - Parameter knownOwner: an identifier the header probably names (the owner of the last
    ///   envelope read): when its bytes are the header's, it is taken rather than read again.
    static func read(_ bytes: UnsafeRawBufferPointer, knownOwner: OwnerIdentifier? = nil) throws(ProtectionError)
        -> Fields?
    {
        guard bytes.count >= 4, bytes[0] == 0x89, bytes[1] == 0x43, bytes[2] == 0x53, bytes[3] == 0x54 else {
            return nil  // not the magic (`magic`, spelled out: one comparison a byte, no sequence)
        }
        func need(_ count: Int, at offset: Int, for field: String) throws(ProtectionError) {
            if bytes.count < offset + count {
                throw ProtectionError(
                    .malformedEnvelope, "the envelope is cut off inside its header (\(field) at byte \(offset))")
            }
        }
        try need(fixedCount, at: 0, for: "fixed fields")
        guard bytes[4] == formatVersion else {
            throw ProtectionError(
                .unsupportedVersion,
                "envelope format version \(bytes[4]) is not supported (this build reads version \(formatVersion))")
        }
        guard let algorithm = EnvelopeAlgorithm(rawValue: bytes[5]) else {
            throw ProtectionError(.malformedEnvelope, "unknown algorithm \(bytes[5]) at byte 5")
        }
        let exponent = bytes[6]
        guard chunkExponents.contains(exponent) else {
            throw ProtectionError(
                .malformedEnvelope,
                "chunk size exponent \(exponent) at byte 6 is outside \(chunkExponents) (chunks of 1 KiB to 1 MiB; larger ones are refused so that reading stays in bounded memory)"
            )
        }
        guard bytes[7] == 0 else {
            throw ProtectionError(.malformedEnvelope, "unknown flags \(bytes[7]) at byte 7")
        }
        let ownerCount = Int(bytes[8]) << 8 | Int(bytes[9])
        guard (1...maximumOwnerCount).contains(ownerCount) else {
            throw ProtectionError(
                .malformedEnvelope, "owner length \(ownerCount) at byte 8 is outside 1...\(maximumOwnerCount)")
        }
        try need(ownerCount + 4, at: fixedCount, for: "owner and key version")
        let ownerBytes = UnsafeRawBufferPointer(rebasing: bytes[fixedCount..<fixedCount + ownerCount])
        let owner: OwnerIdentifier
        if let knownOwner, knownOwner.isEncoded(as: ownerBytes) {
            owner = knownOwner
        } else if let read = OwnerIdentifier(encoded: ownerBytes) {
            owner = read
        } else {
            throw ProtectionError(
                .malformedEnvelope, "the owner at byte \(fixedCount) is not a lower-case oid: or upn: identifier")
        }
        let prefixCount = fixedCount + ownerCount + 4
        let keyVersion = bytes[prefixCount - 4..<prefixCount].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let count: Int
        if algorithm.isEncrypting {
            guard keyVersion >= 1 else {
                throw ProtectionError(
                    .malformedEnvelope, "an encrypted envelope names key version 0 at byte \(prefixCount - 4)")
            }
            let suffix = suffixCount(for: algorithm)
            try need(suffix, at: prefixCount, for: algorithm.derivesKey ? "key salt and check" : "wrapped data key")
            count = prefixCount + suffix
        } else {
            guard keyVersion == 0 else {
                throw ProtectionError(
                    .malformedEnvelope,
                    "an unencrypted envelope names key version \(keyVersion) at byte \(prefixCount - 4)")
            }
            count = prefixCount
        }
        return Fields(
            algorithm: algorithm, chunkSizeExponent: exponent, owner: owner, keyVersion: keyVersion,
            prefixCount: prefixCount, count: count)
    }
}

extension EnvelopeAlgorithm {
    var isEncrypting: Bool { self != .none }
}

/// How an envelope names its owner: `oid:<object id>` or `upn:<user principal name>`, lower-case.
/// This is also the name of the owner's keys in a key store.
public struct OwnerIdentifier: RawRepresentable, Codable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String

    /// Accepts `oid:...` or `upn:...` with a non-empty value; lower-cases it.
    public init?(rawValue: String) {
        let lowered = lowerCased(rawValue)
        guard Self.isWellFormed(lowered) else { return nil }
        self.rawValue = lowered
    }

    /// The identifier as an envelope header stores it: UTF-8, already lower-case (the format
    /// allows one spelling per owner).
    init?(encoded bytes: UnsafeRawBufferPointer) {
        let text: String
        switch Self.asciiCase(of: bytes) {
        case .lower:
            text = String(decoding: bytes, as: UTF8.self)
        case .upper:
            return nil
        case .notASCII:
            guard let decoded = String(validating: bytes, as: UTF8.self), decoded.lowercased() == decoded else {
                return nil
            }
            text = decoded
        }
        guard Self.isWellFormed(text) else { return nil }
        rawValue = text
    }

    private enum ASCIICase {
        case lower, upper, notASCII
    }

    /// Whether `bytes` are ASCII with no upper case, ASCII with some, or not all ASCII.
    private static func asciiCase(of bytes: UnsafeRawBufferPointer) -> ASCIICase {
        var result = ASCIICase.lower
        for byte in bytes {
            if byte >= 0x80 { return .notASCII }
            if byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") { result = .upper }
        }
        return result
    }

    /// Whether `bytes` are this identifier as a header stores it (so reading them would give
    /// this identifier back): a comparison, where `init(encoded:)` would build and check a new one.
    func isEncoded(as bytes: UnsafeRawBufferPointer) -> Bool {
        let text = rawValue.utf8
        guard text.count == bytes.count else { return false }
        let compared = text.withContiguousStorageIfAvailable { text in
            guard let mine = text.baseAddress, let theirs = bytes.baseAddress else { return true }
            return UnsafeRawPointer(mine) == theirs || memcmp(mine, theirs, bytes.count) == 0
        }
        return compared ?? text.elementsEqual(bytes)
    }

    /// Whether this is the identifier of `account` (`init(_:)`), decided on the bytes when the
    /// account's identifier is ASCII (as OIDs and UPNs almost always are), without building it.
    func names(_ account: AccountID) -> Bool {
        let isOID = account.oid != nil
        var value = account.oid ?? account.upn ?? ""
        var text = rawValue
        let answer: Bool? = text.withUTF8 { text in
            value.withUTF8 { value in
                guard text.count == value.count + 4,
                    text[0] == (isOID ? UInt8(ascii: "o") : UInt8(ascii: "u")),
                    text[1] == (isOID ? UInt8(ascii: "i") : UInt8(ascii: "p")),
                    text[2] == (isOID ? UInt8(ascii: "d") : UInt8(ascii: "n")), text[3] == UInt8(ascii: ":")
                else {
                    // Lower-casing other than ASCII's can change the length: built and compared below.
                    return isASCII(value) ? false : nil
                }
                // An ASCII value is its identifier's tail once its capitals are lowered; a
                // lower-case one (an OID, usually) is compared whole.
                guard isASCII(value) else { return nil }
                if memcmp(text.baseAddress! + 4, value.baseAddress!, value.count) == 0 { return true }
                for index in 0..<value.count {
                    let byte = value[index]
                    let lower = byte &- UInt8(ascii: "A") < 26 ? byte | 0x20 : byte
                    if text[index + 4] != lower { return false }
                }
                return true
            }
        }
        return answer ?? (self == OwnerIdentifier(account))
    }

    /// Bytes of `OwnerIdentifier(account)`, counted without building it when the account's
    /// value is ASCII (lowering ASCII capitals keeps the length; other lowering may not).
    static func encodedCount(of account: AccountID) -> Int {
        var value = account.oid ?? account.upn ?? ""
        let ascii = value.withUTF8 { isASCII($0) }
        return ascii ? 4 + value.utf8.count : OwnerIdentifier(account).rawValue.utf8.count
    }

    /// The identifier of an account: its OID when known, else its UPN.
    public init(_ account: AccountID) {
        if let oid = account.oid {
            rawValue = "oid:" + lowerCased(oid)
        } else {
            rawValue = "upn:" + lowerCased(account.upn ?? "")
        }
    }

    /// The identifier data of `account` is kept under: the tenant's record of it when `policy`
    /// knows it (its OID, so every form of the account shares one key, secret and check-in),
    /// else the account's own.
    public init(_ account: AccountID, policy: PolicySnapshot?) {
        self.init(policy?.tenantAccount(for: account)?.id ?? account)
    }

    private static func isWellFormed(_ text: String) -> Bool {
        let count = text.utf8.count
        guard count > 4, count <= EnvelopeHeader.maximumOwnerCount else { return false }
        // The value must itself name an account: not blank, no control characters, the
        // same once trimmed (so `account` gives back exactly this owner).
        let isOID = text.utf8.starts(with: "oid:".utf8)
        guard isOID || text.utf8.starts(with: "upn:".utf8) else { return false }
        // A value `AccountID` takes as given (what identifiers almost always are) is decided on
        // the bytes, without building it; any other goes through `AccountID`'s checks below.
        var copy = text
        if copy.withUTF8({ AccountID.isTakenAsGiven(UnsafeBufferPointer(rebasing: $0[4...])) }) { return true }
        // The prefix is four ASCII bytes, so dropping four bytes never splits a scalar (and
        // "upn:" followed by a combining mark keeps the mark, whatever graphemes form).
        let value = String(decoding: text.utf8.dropFirst(4), as: UTF8.self)
        return isOID ? AccountID(oid: value)?.oid == value : AccountID(upn: value)?.upn == value
    }

    /// The account it names.
    public var account: AccountID {
        // By bytes, as `isWellFormed` checked it: "upn:" followed by a combining mark is still
        // this owner's UPN, whatever graphemes the text forms.
        let value = String(decoding: rawValue.utf8.dropFirst(4), as: UTF8.self)
        return rawValue.utf8.starts(with: "oid:".utf8) ? AccountID(oid: value)! : AccountID(upn: value)!
    }

    public var description: String { rawValue }

    /// Two identifiers are one owner when their bytes are equal: as the key stores tell owners
    /// apart (SQLite's and PostgreSQL's text, the key files' names) and as headers record them.
    /// `String`'s own equality would take a precomposed `é` and an `e` with a combining accent
    /// for one owner, which every store keeps apart: a long-lived key ring would then seal and
    /// open one spelling's envelopes with the other spelling's key.
    public static func == (lhs: OwnerIdentifier, rhs: OwnerIdentifier) -> Bool {
        let compared = lhs.rawValue.utf8.withContiguousStorageIfAvailable {
            rhs.isEncoded(as: UnsafeRawBufferPointer($0))
        }
        return compared ?? lhs.rawValue.utf8.elementsEqual(rhs.rawValue.utf8)
    }

    public func hash(into hasher: inout Hasher) {
        let bytes = rawValue.utf8
        let hashed: Void? = bytes.withContiguousStorageIfAvailable { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        if hashed == nil {
            Array(bytes).withUnsafeBytes { hasher.combine(bytes: $0) }
        }
    }
}

/// Whether every byte of `bytes` is ASCII, read eight at a time.
private func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
    let raw = UnsafeRawBufferPointer(bytes)
    var seen: UInt64 = 0
    var index = 0
    while index + 8 <= raw.count {
        seen |= raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
        index += 8
    }
    while index < raw.count {
        seen |= UInt64(raw[index])
        index += 1
    }
    return seen & 0x8080_8080_8080_8080 == 0
}

/// `text` lower-cased; returned as is, without the copy, when it has no upper case.
private func lowerCased(_ text: String) -> String {
    var copy = text
    let plain = copy.withUTF8 { bytes in
        for byte in bytes where byte >= 0x80 || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z")) {
            return false
        }
        return true
    }
    return plain ? text : text.lowercased()
}

func bigEndianBytes(_ value: UInt32) -> [UInt8] {
    [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
}
