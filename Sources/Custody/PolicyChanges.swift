import CustodyPolicy

/// What changed between two snapshots, as events: computed before the new snapshot is
/// published, so every subscriber hears the same list.
enum PolicyChanges {
    static func events(from old: PolicySnapshot?, to new: PolicySnapshot) -> [PolicyEvent] {
        var events: [PolicyEvent] = []
        let oldAllowed = old?.bundle.tenant.allowedAccounts
        let newAllowed = new.bundle.tenant.allowedAccounts
        if old != nil, oldAllowed.map(normalized) != newAllowed.map(normalized) {
            events.append(.allowedAccountsChanged(old: oldAllowed, new: newAllowed))
        }

        // Every account either bundle's tenant lists, in the new tenant's order, then the
        // accounts only the old one had.
        var accounts = new.bundle.tenant.accounts.map(\.id)
        if let old {
            var known = Set(accounts)
            for account in old.bundle.tenant.accounts.map(\.id) where known.insert(account).inserted {
                accounts.append(account)
            }
        }

        var protection: [PolicyEvent] = []
        var configuration: [PolicyEvent] = []
        let hasConfiguration = !new.bundle.appConfigurations.isEmpty || old?.bundle.appConfigurations.isEmpty == false
        var configurationChanges = ConfigurationChanges(from: old, to: new)
        // A service with no platform, over a bundle of several, decides nothing without one:
        // the accounts whose policy changed are named per platform the bundles have, each
        // event with its platform.
        if new.isPlatformAmbiguous || old?.isPlatformAmbiguous == true {
            let platforms = new.bundle.policyPlatforms.union(old?.bundle.policyPlatforms ?? [])
            for platform in Platform.allCases where platforms.contains(platform) {
                let changed = changedAccounts(
                    accounts, from: old.map { on(platform, $0) }, to: on(platform, new))
                if !changed.isEmpty { events.append(.policyChanged(accounts: changed, platform: platform)) }
            }
        } else {
            let changed = changedAccounts(accounts, from: old, to: new)
            if !changed.isEmpty { events.append(.policyChanged(accounts: changed)) }
        }
        for account in accounts {
            let required = new.encryptionRequired(account: account).isAllowed
            if let old, old.encryptionRequired(account: account).isAllowed != required {
                protection.append(.dataProtectionChanged(account: account, encryptionRequired: required))
            }
            if hasConfiguration, configurationChanges.changed(for: account) {
                configuration.append(.appConfigurationChanged(account: account))
            }
        }
        return events + protection + configuration
    }

    /// `snapshot`'s bundle evaluated on `platform` (its app and management level kept).
    private static func on(_ platform: Platform, _ snapshot: PolicySnapshot) -> PolicySnapshot {
        var context = snapshot.context
        context.platform = platform
        return PolicySnapshot(bundle: snapshot.bundle, context: context, precedence: snapshot.precedence)
    }

    /// The accounts whose effective policy decides something differently in `new` than in
    /// `old`, in `accounts`' order. Effective policies are shared by many accounts: each pair
    /// is compared once.
    private static func changedAccounts(
        _ accounts: [AccountID], from old: PolicySnapshot?, to new: PolicySnapshot
    ) -> [AccountID] {
        var alike: [Pair: Bool] = [:]
        var changed: [AccountID] = []
        for account in accounts {
            let before = old?.effectivePolicy(for: account)
            let after = new.effectivePolicy(for: account)
            let same: Bool
            switch (before, after) {
            case (nil, nil): same = true
            case (let before?, let after?):
                let pair = Pair(before, after)
                if let known = alike[pair] {
                    same = known
                } else {
                    same = before.decidesAlike(after)
                    alike[pair] = same
                }
            default: same = false
            }
            if !same { changed.append(account) }
        }
        return changed
    }

    private static func normalized(_ entries: [String]) -> [String] {
        entries.map { $0.lowercased() }.sorted()
    }

    private struct Pair: Hashable {
        let before: ObjectIdentifier
        let after: ObjectIdentifier

        init(_ before: EffectivePolicy, _ after: EffectivePolicy) {
            self.before = ObjectIdentifier(before)
            self.after = ObjectIdentifier(after)
        }
    }
}
