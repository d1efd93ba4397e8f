/// An account (identity): an Entra object id (OID, the stable key) and/or a user principal
/// name (UPN, an e-mail-like alias).
///
/// Both forms compare case-insensitively: an `AccountID` is normalized once when created, so
/// comparing and looking one up later costs a hash of a cached value. Two ids are equal when
/// they carry the same forms; whether an OID-only id and a UPN-only id name the same person is
/// something only the tenant knows (see `PolicySnapshot.isSameAccount(_:_:)`).
public struct AccountID: Sendable, Hashable, CustomStringConvertible {
    /// The forms and their case-folded keys, shared by every copy: copying an `AccountID` costs
    /// one reference count, whatever it holds.
    private final class Storage: Sendable {
        let oid: String?
        let upn: String?
        let oidKey: AccountKey?
        let upnKey: AccountKey?

        init(oid: String?, upn: String?) {
            self.oid = oid
            self.upn = upn
            self.oidKey = oid.map(AccountKey.init)
            self.upnKey = upn.map(AccountKey.init)
        }
    }

    private let storage: Storage

    /// The object id as given (trimmed), if known.
    public var oid: String? { storage.oid }
    /// The user principal name as given (trimmed), if known.
    public var upn: String? { storage.upn }

    var oidKey: AccountKey? { storage.oidKey }
    var upnKey: AccountKey? { storage.upnKey }

    /// The longest form an id may have, in UTF-8 bytes, as given and once case-folded: an
    /// envelope names its owner in at most 1,024 bytes, four of them the `oid:`/`upn:` prefix.
    public static let maximumLength = 1_020

    /// Creates an id from an OID, a UPN or both. Returns nil when both are nil or blank, or
    /// when a form is not a valid identifier (`init(validatingOID:upn:)` says why).
    public init?(oid: String? = nil, upn: String? = nil) {
        guard let id = try? AccountID(validatingOID: oid, upn: upn) else { return nil }
        self = id
    }

    /// Creates an id from an OID, a UPN or both, saying why when it cannot: both blank, a form
    /// longer than `maximumLength` bytes, or a form holding a control character (which could
    /// rewrite a terminal line or a log entry when printed).
    public init(validatingOID oid: String?, upn: String?) throws(InvalidAccountID) {
        let oid = try oid.map(trimmed).flatMap { (form: String) throws(InvalidAccountID) -> String? in
            form.isEmpty ? nil : try Self.validated(form, form: "oid")
        }
        let upn = try upn.map(trimmed).flatMap { (form: String) throws(InvalidAccountID) -> String? in
            form.isEmpty ? nil : try Self.validated(form, form: "upn")
        }
        guard oid != nil || upn != nil else { throw InvalidAccountID(.blank, form: oid == nil ? "upn" : "oid") }
        storage = Storage(oid: oid, upn: upn)
    }

    /// Creates an id from one identifier: a GUID (optionally in braces) is taken as an OID,
    /// anything else as a UPN. Returns nil for a blank or invalid string.
    ///
    /// Lookups in a tenant also try the other form, so a non-GUID OID still resolves.
    public init?(_ identifier: String) {
        guard let id = try? AccountID(validating: identifier) else { return nil }
        self = id
    }

    /// Creates an id from one identifier as `init?(_:)` does, saying why when it cannot.
    public init(validating identifier: String) throws(InvalidAccountID) {
        let value = trimmed(identifier)
        if let guid = guidForm(value) {
            try self.init(validatingOID: guid, upn: nil)
        } else {
            guard !value.isEmpty else { throw InvalidAccountID(.blank, form: "identifier") }
            try self.init(validatingOID: nil, upn: value)
        }
    }

    /// Whether `bytes` are a form `init(validatingOID:upn:)` takes exactly as given, decided on
    /// the bytes alone: printable ASCII (no control character, no DEL) with visible first and
    /// last bytes (nothing to trim), at most `maximumLength` of them. A form that is not may
    /// still be valid (non-ASCII, or padded): only the full check says.
    package static func isTakenAsGiven(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let first = bytes.first, let last = bytes.last, bytes.count <= maximumLength,
            isVisibleASCII(first), isVisibleASCII(last)
        else { return false }
        return isPrintableASCII(bytes)
    }

    /// `form` when it can name an account; else why not.
    private static func validated(_ text: String, form: String) throws(InvalidAccountID) -> String {
        var copy = text
        let plainASCII = copy.withUTF8 { bytes in
            bytes.count <= maximumLength && isPrintableASCII(bytes)
        }
        if plainASCII { return text }
        let count = text.utf8.count
        guard count <= maximumLength else { throw InvalidAccountID(.tooLong(count), form: form) }
        for (offset, scalar) in text.unicodeScalars.enumerated() where isUnprintable(scalar) {
            throw InvalidAccountID(.controlCharacter(scalar, offset: offset), form: form)
        }
        let folded = caseFolded(text).utf8.count
        guard folded <= maximumLength else { throw InvalidAccountID(.tooLong(folded), form: form) }
        return text
    }

    /// The UPN if known, else the OID: how the account is shown to people.
    public var description: String { upn ?? oid ?? "" }

    /// Whether two ids name the same account without consulting a tenant: their OIDs are equal
    /// when both have one, else their UPNs are equal when both have one.
    ///
    /// An OID-only id and a UPN-only id cannot be compared this way; a tenant that links the two
    /// forms can (`PolicySnapshot.isSameAccount(_:_:)`).
    public func isSameAccount(as other: AccountID) -> Bool {
        if storage === other.storage { return true }
        if let oidKey, let otherOID = other.oidKey { return oidKey == otherOID }
        if let upnKey, let otherUPN = other.upnKey { return upnKey == otherUPN }
        return false
    }

    public static func == (lhs: AccountID, rhs: AccountID) -> Bool {
        lhs.storage === rhs.storage || (lhs.oidKey == rhs.oidKey && lhs.upnKey == rhs.upnKey)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(oidKey)
        hasher.combine(upnKey)
    }
}

/// A case-folded identifier with its hash computed once, for fast dictionary lookups.
struct AccountKey: Sendable, Hashable {
    let value: String
    let hashValue64: UInt64

    init(_ raw: String) {
        let folded = caseFolded(raw)
        value = folded
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        var copy = folded
        copy.withUTF8 { bytes in
            for byte in bytes {
                hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
            }
        }
        hashValue64 = hash
    }

    static func == (lhs: AccountKey, rhs: AccountKey) -> Bool {
        lhs.hashValue64 == rhs.hashValue64 && lhs.value == rhs.value
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(hashValue64)
    }
}

/// Lower-cases `text`, skipping the work (and the allocation) when it has no upper case.
func caseFolded(_ text: String) -> String {
    var needsFolding = false
    var copy = text
    copy.withUTF8 { bytes in
        for byte in bytes where byte >= 0x80 || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z")) {
            needsFolding = true
            break
        }
    }
    return needsFolding ? text.lowercased() : text
}

/// `text` without leading and trailing whitespace; returned as is (no copy, no Unicode lookups)
/// when its first and last bytes are visible ASCII, as identifiers almost always are.
private func trimmed(_ text: String) -> String {
    var copy = text
    let visibleEnds = copy.withUTF8 { bytes in
        guard let first = bytes.first, let last = bytes.last else { return false }
        return isVisibleASCII(first) && isVisibleASCII(last)
    }
    if visibleEnds { return text }
    // ASCII spaces only: a tab, NEL, a no-break or ideographic space, or a line separator
    // around an identifier is not trimmed away (the controls among them are refused, and the
    // rest make an identifier that names no account).
    guard let first = text.unicodeScalars.firstIndex(where: { $0 != " " }) else { return "" }
    let last = text.unicodeScalars.lastIndex(where: { $0 != " " })!
    return String(text.unicodeScalars[first...last])
}

/// Whether every byte is printable ASCII: no control character, no DEL, nothing beyond ASCII.
private func isPrintableASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
    !bytes.contains { $0 < 0x20 || $0 >= 0x7F }
}

/// Whether `byte` is a visible ASCII character (not a space, not a control).
private func isVisibleASCII(_ byte: UInt8) -> Bool {
    (0x21...0x7E).contains(byte)
}

/// The GUID inside `text` (8-4-4-4-12 hex digits, optionally in braces), or nil.
private func guidForm(_ text: String) -> String? {
    var copy = text
    let range: Range<Int>? = copy.withUTF8 { bytes in
        var range = 0..<bytes.count
        if bytes.count == 38, bytes[0] == UInt8(ascii: "{"), bytes[37] == UInt8(ascii: "}") { range = 1..<37 }
        guard range.count == 36 else { return nil }
        for offset in 0..<36 {
            let byte = bytes[range.lowerBound + offset]
            if offset == 8 || offset == 13 || offset == 18 || offset == 23 {
                guard byte == UInt8(ascii: "-") else { return nil }
            } else if hexValue(byte) == nil {
                return nil
            }
        }
        return range
    }
    guard let range else { return nil }
    if range.count == copy.utf8.count { return text }
    return String(copy.utf8.dropFirst(range.lowerBound).prefix(range.count))
}

/// Why a string cannot name an account.
public struct InvalidAccountID: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Reason: Sendable, Equatable {
        /// Empty or only whitespace.
        case blank
        /// Longer than `AccountID.maximumLength` UTF-8 bytes (as given or case-folded).
        case tooLong(Int)
        /// A control or bidirectional-formatting character, at this character offset.
        case controlCharacter(Unicode.Scalar, offset: Int)
    }

    public let reason: Reason
    /// Which form was wrong: `oid`, `upn` or `identifier`.
    public let form: String

    init(_ reason: Reason, form: String) {
        self.reason = reason
        self.form = form
    }

    public var description: String {
        switch reason {
        case .blank:
            "an account needs a non-blank OID or UPN"
        case .tooLong(let count):
            "the account's \(form) is \(count) bytes long; at most \(AccountID.maximumLength) are allowed"
        case .controlCharacter(let scalar, let offset):
            "the account's \(form) holds the control character \(escapedScalar(scalar)) at character \(offset + 1); identifiers may not contain control characters"
        }
    }
}

/// Whether `scalar` may not appear in an identifier: a C0 or C1 control, DEL, a line or
/// paragraph separator, or a bidirectional embedding, override or isolate (which reorder what
/// a terminal shows).
package func isUnprintable(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.value {
    case 0x00...0x1F, 0x7F...0x9F, 0x2028, 0x2029, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069, 0x061C:
        true
    default:
        false
    }
}

/// `U+XXXX` for one scalar.
func escapedScalar(_ scalar: Unicode.Scalar) -> String {
    let hex = String(scalar.value, radix: 16, uppercase: true)
    return "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
}

extension String {
    /// The text with every control or bidirectional-formatting character written as `\u{XX}`,
    /// so text that came from input (an owner, an account, an app id) cannot rewrite a terminal
    /// line or forge a log entry when printed. Returned as is (no copy) when there is none.
    public var escapingControlCharacters: String {
        var copy = self
        let clean = copy.withUTF8 { bytes in !bytes.contains { $0 < 0x20 || $0 == 0x7F || $0 >= 0xC2 } }
        if clean || !unicodeScalars.contains(where: isUnprintable) { return self }
        var result = ""
        result.reserveCapacity(utf8.count + 8)
        for scalar in unicodeScalars {
            if isUnprintable(scalar) {
                result += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
