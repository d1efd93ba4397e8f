import Logging

extension PolicySnapshot {
    /// May `account` use managed apps at all? (the tenant's `allowedAccounts`)
    ///
    /// A null list allows every account. Otherwise an entry must match the account's UPN or
    /// OID, case-insensitively, directly or through the tenant's link between the two. Near
    /// misses are logged for diagnosis: a match that differs only in case (allowed), and an
    /// entry with the same local part at another domain (not allowed); each pair of account
    /// and entry once per snapshot, however many decisions meet it.
    public func accountAllowed(_ account: AccountID?) -> Decision {
        // The tenant's list, not a policy: no platform is needed.
        let index = account.map { directory.find($0) } ?? AccountDirectory.unknown
        if index == AccountDirectory.contradictory { return .refused(.accountAllowed, .contradictoryAccount(.account)) }
        guard let allowedAccounts else {
            return Decision(.accountAllowed, allowed: true, Finding(.allowedAccountsUnrestricted, nil))
        }
        guard let account else {
            return Decision(.accountAllowed, allowed: false, Finding(.allowedAccountNotListed, nil))
        }
        if let entry = allowedAccounts.match(account, tenantIndex: index) {
            if entry != account.upn, entry != account.oid,
                AccountID(entry).map({ $0.isSameAccount(as: account) }) == true
            {
                logNearMiss(.notice, "Allowed account matched ignoring case", account: account, entry: entry)
            }
            return Decision(.accountAllowed, allowed: true, Finding(.allowedAccountListed(entry), nil))
        }
        if let nearMiss = allowedAccounts.sameLocalPartEntry(as: account) {
            logNearMiss(
                .warning, "Account not allowed: an allowed entry has the same local part at another domain",
                account: account, entry: nearMiss)
        }
        return Decision(.accountAllowed, allowed: false, Finding(.allowedAccountNotListed, nil))
    }

    /// Logs an identity near miss the first time this snapshot meets it (`nearMisses`).
    private func logNearMiss(_ level: Logger.Level, _ message: String, account: AccountID, entry: String) {
        guard logger.logLevel <= level else { return }
        // Compared as the allowed list compares: ignoring case.
        switch nearMisses.first("\(message)\u{0}\(account)\u{0}\(entry)".lowercased()) {
        case .first:
            logger.log(
                level: level, "\(message)", metadata: ["account": "\(account)", "allowedEntry": "\(entry)"])
        case .repeated:
            break
        case .limitReached:
            // About no account in particular: the one that reached the limit is not logged.
            logger.log(
                level: level, "Identity near misses: \(nearMisses.limit) logged for this bundle; further ones are not")
        }
    }

    /// May `account` still use its data after `offlineFor` without a successful check-in?
    ///
    /// From `periodOfflineBeforeAccessCheck` on, access is blocked until the account checks in
    /// (`OfflineState.accessBlocked`); from `periodOfflineBeforeWipeIsEnforced` on, its data is
    /// to be wiped (`OfflineState.wipeRequired`). Unmanaged accounts are never blocked.
    /// A negative time (a check-in stamped in the future) up to `clockSkew` counts as no time
    /// offline; beyond it the check-in is not believed and access is blocked, as `launch` does.
    public func offlineAccess(account: AccountID?, offlineFor: Duration) -> Decision {
        let party = resolve(account)
        if let refusal = party.refusal(.account) { return .refused(.offlineAccess, refusal) }
        guard let policy = party.policy else {
            return Decision(.offlineAccess, allowed: true, Finding(.unmanaged(.account), nil))
        }
        if offlineFor < .zero - Self.clockSkew {
            return Decision(
                .offlineAccess, allowed: false, Finding(.checkInInFuture(ahead: .zero - offlineFor), policy))
        }
        let offline = max(offlineFor, .zero)
        let state: OfflineState
        if policy.wipesWhenOffline, offline >= policy.periodOfflineBeforeWipeIsEnforced.value.duration {
            state = .wipeRequired
        } else if offline >= policy.periodOfflineBeforeAccessCheck.value.duration {
            state = .accessBlocked
        } else {
            state = .online
        }
        return Decision(
            .offlineAccess, allowed: state == .online, Finding(.offline(state, offlineFor: offline), policy))
    }
}
