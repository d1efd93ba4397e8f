/// An index of a tenant's accounts by OID and by UPN, case-insensitive.
///
/// Resolving an `AccountID` finds the tenant account it names: by OID first (the stable key),
/// else by UPN, else by the other form for ids given as a bare string. An id that carries both
/// forms resolves only when they agree with the tenant (see `find(_:)`); otherwise it is
/// contradictory, and decisions about it are blocked.
///
/// Lookups are on the decision hot path, so the two indexes are open-addressing tables keyed by
/// the hash every `AccountID` computed once when it was made: a lookup is a few probes and one
/// string comparison, with no hashing and no allocation.
struct AccountDirectory: Sendable {
    let accounts: [TenantAccount]
    private let byOID: AccountTable
    private let byUPN: AccountTable

    /// Builds the index. Duplicates are rejected earlier, by the tenant loader; here the first wins.
    init(accounts: [TenantAccount]) {
        self.accounts = accounts
        byOID = AccountTable(keys: accounts.map(\.id.oidKey))
        byUPN = AccountTable(keys: accounts.map(\.id.upnKey))
    }

    /// What `find` returns for an id the tenant does not know.
    static let unknown: Int32 = -1
    /// What `find` returns for an id whose OID and UPN name different accounts, or whose one
    /// form the tenant knows for an account recorded with another value of the other form.
    static let contradictory: Int32 = -2

    /// The index of the tenant account `id` names, or nil when it names none (unknown or
    /// contradictory).
    @inline(__always)
    func index(of id: AccountID) -> Int32? {
        let found = find(id)
        return found >= 0 ? found : nil
    }

    /// The index of the tenant account `id` names, `unknown` or `contradictory`.
    ///
    /// An id with both forms must agree with the tenant: its OID and UPN name the same
    /// account, or the tenant records no value of the other form for the account one names.
    /// `{"oid": alice's, "upn": bob's}` and `{"oid": unknown, "upn": alice's}` (alice having an
    /// OID) are contradictory, never a silent pick of one form.
    @inline(__always)
    func find(_ id: AccountID) -> Int32 {
        guard let oidKey = id.oidKey else {
            guard let upnKey = id.upnKey else { return Self.unknown }
            return byUPN.find(upnKey) ?? byOID.find(upnKey) ?? Self.unknown
        }
        let byOIDIndex = byOID.find(oidKey)
        guard let upnKey = id.upnKey else {
            return byOIDIndex ?? byUPN.find(oidKey) ?? Self.unknown
        }
        let byUPNIndex = byUPN.find(upnKey)
        switch (byOIDIndex, byUPNIndex) {
        case (let oidIndex?, let upnIndex?):
            return oidIndex == upnIndex ? oidIndex : Self.contradictory
        case (let oidIndex?, nil):
            return accounts[Int(oidIndex)].id.upn == nil ? oidIndex : Self.contradictory
        case (nil, let upnIndex?):
            return accounts[Int(upnIndex)].id.oid == nil ? upnIndex : Self.contradictory
        case (nil, nil):
            return Self.unknown
        }
    }
}

extension AccountDirectory {
    /// Why `id` is contradictory, in words (see `find(_:)`).
    func contradiction(of id: AccountID) -> String {
        let oidIndex = id.oidKey.flatMap { byOID.find($0) }
        let upnIndex = id.upnKey.flatMap { byUPN.find($0) }
        let oid = id.oid ?? "", upn = id.upn ?? ""
        switch (oidIndex, upnIndex) {
        case (let oidIndex?, let upnIndex?):
            return
                "the OID \(oid) is \(accounts[Int(oidIndex)].id)'s but the UPN \(upn) is \(accounts[Int(upnIndex)].id)'s"
        case (let oidIndex?, nil):
            return
                "the OID \(oid) is \(accounts[Int(oidIndex)].id)'s, whose UPN the tenant records as \(accounts[Int(oidIndex)].id.upn ?? "")"
        case (nil, let upnIndex?):
            return
                "the UPN \(upn) is the tenant's account with OID \(accounts[Int(upnIndex)].id.oid ?? ""), not \(oid), which the tenant does not know"
        case (nil, nil):
            return "the tenant knows neither \(oid) nor \(upn)"
        }
    }
}

/// An open-addressing hash table from `AccountKey` to an account index, linear probing, at most
/// half full.
private struct AccountTable: Sendable {
    private struct Slot: Sendable {
        var hash: UInt64
        /// The account's index, or -1 for an empty slot.
        var index: Int32
    }

    private let slots: [Slot]
    private let keys: [String]
    private let mask: Int

    init(keys accountKeys: [AccountKey?]) {
        var capacity = 8
        while capacity < accountKeys.count * 2 { capacity <<= 1 }
        var slots = [Slot](repeating: Slot(hash: 0, index: -1), count: capacity)
        var keys = [String](repeating: "", count: accountKeys.count)
        let mask = capacity - 1
        for (index, key) in accountKeys.enumerated() {
            guard let key else { continue }
            keys[index] = key.value
            var position = Int(truncatingIfNeeded: key.hashValue64) & mask
            while slots[position].index >= 0 {
                if slots[position].hash == key.hashValue64, keys[Int(slots[position].index)] == key.value { break }
                position = (position + 1) & mask
            }
            if slots[position].index < 0 { slots[position] = Slot(hash: key.hashValue64, index: Int32(index)) }
        }
        self.slots = slots
        self.keys = keys
        self.mask = mask
    }

    @inline(__always)
    func find(_ key: AccountKey) -> Int32? {
        var position = Int(truncatingIfNeeded: key.hashValue64) & mask
        while true {
            let slot = slots[position]
            if slot.index < 0 { return nil }
            if slot.hash == key.hashValue64, keys[Int(slot.index)] == key.value { return slot.index }
            position = (position + 1) & mask
        }
    }
}
