/// An account (identity): an Entra object id (OID, the stable key) and/or a user principal
/// name (UPN, an e-mail-like alias).
///
/// Both forms compare case-insensitively: an `AccountID` is normalized once when created, so
/// comparing and looking one up later costs a hash of a cached value. Two ids are equal when
/// they carry the same forms; whether an OID-only id and a UPN-only id name the same person is
/// something only the tenant knows (see `PolicySnapshot.isSameAccount(_:_:)`).
public struct AccountID: Sendable, Hashable, CustomStringConvertible {
    /// The object id as given (trimmed), if known.
    public let oid: String?
    /// The user principal name as given (trimmed), if known.
    public let upn: String?

    let oidKey: AccountKey?
    let upnKey: AccountKey?

    /// Creates an id from an OID, a UPN or both. Returns nil when both are nil or blank.
    public init?(oid: String? = nil, upn: String? = nil) {
        let oid = oid.map(trimmed).flatMap { $0.isEmpty ? nil : $0 }
        let upn = upn.map(trimmed).flatMap { $0.isEmpty ? nil : $0 }
        guard oid != nil || upn != nil else { return nil }
        self.oid = oid
        self.upn = upn
        self.oidKey = oid.map(AccountKey.init)
        self.upnKey = upn.map(AccountKey.init)
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
        if let oidKey, let otherOID = other.oidKey { return oidKey == otherOID }
        if let upnKey, let otherUPN = other.upnKey { return upnKey == otherUPN }
        return false
    }

    public static func == (lhs: AccountID, rhs: AccountID) -> Bool {
        lhs.oidKey == rhs.oidKey && lhs.upnKey == rhs.upnKey
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

private func trimmed(_ text: String) -> String {
    guard let first = text.firstIndex(where: { !$0.isWhitespace }) else { return "" }
    let last = text.lastIndex(where: { !$0.isWhitespace })!
    return String(text[first...last])
}

/// The GUID inside `text` (8-4-4-4-12 hex digits, optionally in braces), or nil.
private func guidForm(_ text: String) -> String? {
    var utf8 = Array(text.utf8)[...]
    if utf8.first == UInt8(ascii: "{"), utf8.last == UInt8(ascii: "}") {
        utf8 = utf8.dropFirst().dropLast()
    }
    guard utf8.count == 36 else { return nil }
    for (offset, byte) in utf8.enumerated() {
        if [8, 13, 18, 23].contains(offset) {
            guard byte == UInt8(ascii: "-") else { return nil }
        } else if hexValue(byte) == nil {
            return nil
        }
    }
    return String(decoding: utf8, as: UTF8.self)
}
