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

    /// Creates an id from an OID, a UPN or both. Returns nil when both are nil or blank.
    public init?(oid: String? = nil, upn: String? = nil) {
        let oid = oid.map(trimmed).flatMap { $0.isEmpty ? nil : $0 }
        let upn = upn.map(trimmed).flatMap { $0.isEmpty ? nil : $0 }
        guard oid != nil || upn != nil else { return nil }
        storage = Storage(oid: oid, upn: upn)
    }

    /// Creates an id from one identifier: a GUID (optionally in braces) is taken as an OID,
    /// anything else as a UPN. Returns nil for a blank string.
    ///
    /// Lookups in a tenant also try the other form, so a non-GUID OID still resolves.
    public init?(_ identifier: String) {
        let value = trimmed(identifier)
        if let guid = guidForm(value) {
            self.init(oid: guid)
        } else {
            self.init(upn: value)
        }
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
        return (0x21...0x7E).contains(first) && (0x21...0x7E).contains(last)
    }
    if visibleEnds { return text }
    guard let first = text.firstIndex(where: { !$0.isWhitespace }) else { return "" }
    let last = text.lastIndex(where: { !$0.isWhitespace })!
    return String(text[first...last])
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
