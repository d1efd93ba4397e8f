/// An index of a tenant's accounts by OID and by UPN, case-insensitive.
///
/// Resolving an `AccountID` finds the tenant account it names: by OID first (the stable key),
/// else by UPN, else by the other form for ids given as a bare string. An id whose UPN belongs to
/// a tenant account with a different OID does not resolve: the UPN was reassigned or mistyped.
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

    /// The index of the tenant account `id` names, or nil when it names none.
    @inline(__always)
    func index(of id: AccountID) -> Int32? {
        if let key = id.oidKey {
            if let index = byOID.find(key) { return index }
            if let upnKey = id.upnKey {
                // An OID we do not know with a UPN we do: only the same account if the tenant
                // never recorded that account's OID.
                guard let index = byUPN.find(upnKey), accounts[Int(index)].id.oid == nil else { return nil }
                return index
            }
            return byUPN.find(key)
        }
        if let key = id.upnKey {
            return byUPN.find(key) ?? byOID.find(key)
        }
        return nil
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
