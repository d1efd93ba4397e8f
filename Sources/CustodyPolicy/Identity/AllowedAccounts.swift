/// The tenant's allowed-accounts list, ready for matching.
///
/// An entry matches an account by OID or UPN, case-insensitively, and also when the tenant
/// links the entry's form to the account's other form (an allowed UPN admits the same account
/// asked for by OID).
struct AllowedAccounts: Sendable {
    let entries: [String]
    private let entryByKey: [AccountKey: Int]
    private let entryByTenantIndex: [Int32: Int]

    init(entries: [String], directory: AccountDirectory) {
        self.entries = entries
        var entryByKey: [AccountKey: Int] = [:]
        var entryByTenantIndex: [Int32: Int] = [:]
        for (position, entry) in entries.enumerated() {
            let key = AccountKey(entry)
            if entryByKey[key] == nil { entryByKey[key] = position }
            if let id = AccountID(entry), let index = directory.index(of: id), entryByTenantIndex[index] == nil {
                entryByTenantIndex[index] = position
            }
        }
        self.entryByKey = entryByKey
        self.entryByTenantIndex = entryByTenantIndex
    }

    /// The entry that admits the account, or nil.
    func match(_ id: AccountID, tenantIndex: Int32) -> String? {
        if let position = id.oidKey.flatMap({ entryByKey[$0] }) ?? id.upnKey.flatMap({ entryByKey[$0] }) {
            return entries[position]
        }
        if tenantIndex >= 0, let position = entryByTenantIndex[tenantIndex] {
            return entries[position]
        }
        return nil
    }

    /// An entry with the same local part as the account's UPN but another domain: the most
    /// common near miss (a user signed in with a personal or other-tenant address).
    func sameLocalPartEntry(as id: AccountID) -> String? {
        guard let upn = id.upnKey?.value, let at = upn.firstIndex(of: "@") else { return nil }
        let local = upn[...at]
        return entries.first { entry in
            let folded = caseFolded(entry)
            return folded.hasPrefix(local) && folded != upn
        }
    }
}
