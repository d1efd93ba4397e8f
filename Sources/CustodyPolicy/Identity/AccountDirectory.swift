/// An index of a tenant's accounts by OID and by UPN, case-insensitive.
///
/// Resolving an `AccountID` finds the tenant account it names: by OID first (the stable key),
/// else by UPN, else by the other form for ids given as a bare string. An id whose UPN belongs to
/// a tenant account with a different OID does not resolve: the UPN was reassigned or mistyped.
struct AccountDirectory: Sendable {
    let accounts: [TenantAccount]
    private let byOID: [AccountKey: Int32]
    private let byUPN: [AccountKey: Int32]

    /// Builds the index. Duplicates are rejected earlier, by the tenant loader; here the first wins.
    init(accounts: [TenantAccount]) {
        self.accounts = accounts
        var byOID: [AccountKey: Int32] = [:]
        var byUPN: [AccountKey: Int32] = [:]
        byOID.reserveCapacity(accounts.count)
        byUPN.reserveCapacity(accounts.count)
        for (index, account) in accounts.enumerated() {
            if let key = account.id.oidKey, byOID[key] == nil { byOID[key] = Int32(index) }
            if let key = account.id.upnKey, byUPN[key] == nil { byUPN[key] = Int32(index) }
        }
        self.byOID = byOID
        self.byUPN = byUPN
    }

    /// The index of the tenant account `id` names, or nil when it names none.
    func index(of id: AccountID) -> Int32? {
        if let key = id.oidKey {
            if let index = byOID[key] { return index }
            if let upnKey = id.upnKey {
                // An OID we do not know with a UPN we do: only the same account if the tenant
                // never recorded that account's OID.
                guard let index = byUPN[upnKey], accounts[Int(index)].id.oid == nil else { return nil }
                return index
            }
            return byUPN[key]
        }
        if let key = id.upnKey {
            return byUPN[key] ?? byOID[key]
        }
        return nil
    }

    /// The tenant account whose UPN has the same local part as `id`'s UPN but another domain,
    /// for diagnosing a near miss.
    func sameLocalPart(as id: AccountID) -> TenantAccount? {
        guard let upn = id.upnKey?.value, let at = upn.firstIndex(of: "@") else { return nil }
        let local = upn[...at]
        return accounts.first { account in
            guard let other = account.id.upnKey?.value else { return false }
            return other.hasPrefix(local) && other != upn
        }
    }
}
