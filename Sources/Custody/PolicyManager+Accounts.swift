public import CustodyPolicy
public import CustodyProtection
public import CustodyStore

/// One account as the installation knows it: the identifier its keys, secrets and check-ins
/// are kept under, and every identifier that names it (or named it) in this state.
public struct ResolvedAccount: Sendable, Hashable {
    /// The account as the tenant in force records it (both forms when it lists both), or as
    /// the state knows it for an account the tenant no longer lists.
    public let id: AccountID
    /// The canonical identifier: the tenant's OID for it, else its UPN.
    public let owner: OwnerIdentifier
    /// Every identifier the account has or had in this state, the canonical one first: its
    /// OID and UPN forms, and aliases recorded from earlier bundles (an old UPN).
    public let identifiers: [OwnerIdentifier]
    /// The tenant in force's record of it; nil when only the state knows it.
    public let tenantAccount: TenantAccount?

    /// The `oid:` and `upn:` identifiers of an id's forms, OID first.
    static func identifiers(of id: AccountID) -> [OwnerIdentifier] {
        [
            id.oid.flatMap { OwnerIdentifier(rawValue: "oid:" + $0) },
            id.upn.flatMap { OwnerIdentifier(rawValue: "upn:" + $0) },
        ].compactMap { $0 }
    }
}

/// Why an account could not be resolved to one account of this installation.
public struct AccountError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// Neither the tenant in force nor the state knows the account.
        case unknown
        /// The account's forms name different accounts, or one identifier names several
        /// accounts in this state.
        case ambiguous
        /// The state database could not be read.
        case storage
    }

    public let code: Code
    /// The account as asked for.
    public let account: AccountID
    public let message: String
    /// For `.storage`: the state's own code (`.unavailable` when it could not be reached).
    public var stateCode: StoreError.Code? = nil

    public var description: String { message }
}

extension PolicyManager {
    /// Resolves `account` to one account of this installation: through the tenant in force
    /// (which links an OID and a UPN), else through the state (an account the tenant no longer
    /// lists, or one whose keys were made for it alone with forced encryption).
    ///
    /// - Throws: `AccountError` `.ambiguous` when the account's OID and UPN name different
    ///   accounts, or an identifier names several accounts in this state; `.unknown` when
    ///   neither the tenant in force nor the state knows it. Never a silent guess.
    public nonisolated func resolve(_ account: AccountID) async throws(AccountError) -> ResolvedAccount {
        let snapshot = self.snapshot
        switch snapshot.resolveAccount(account) {
        case .contradictory(let why):
            throw AccountError(code: .ambiguous, account: account, message: "\(account) is ambiguous: \(why)")
        case .tenant(let tenantAccount):
            let owner = OwnerIdentifier(tenantAccount.id)
            var identifiers = [owner]
            for identifier in ResolvedAccount.identifiers(of: tenantAccount.id) where !identifiers.contains(identifier)
            {
                identifiers.append(identifier)
            }
            for alias in try await recordedAliases(of: owner, for: account) ?? [] {
                if let identifier = OwnerIdentifier(rawValue: alias), !identifiers.contains(identifier) {
                    identifiers.append(identifier)
                }
            }
            return ResolvedAccount(
                id: tenantAccount.id, owner: owner, identifiers: identifiers, tenantAccount: tenantAccount)
        case .unknown:
            var owners = Set<String>()
            for identifier in ResolvedAccount.identifiers(of: account) {
                do {
                    owners.formUnion(try await database?.owners(named: identifier.rawValue) ?? [])
                } catch {
                    throw AccountError(
                        code: .storage, account: account, message: "cannot look up \(account) in the state: \(error)",
                        stateCode: error.code)
                }
            }
            // An owner recorded as another one's alias (a UPN-only account that later got its
            // OID) is that other account.
            var aliases: [String: [String]] = [:]
            for name in owners {
                aliases[name] = try await recordedAliases(of: OwnerIdentifier(rawValue: name), for: account)
            }
            owners = owners.filter { name in
                !owners.contains { $0 != name && aliases[$0]?.contains(name) == true }
            }
            guard let name = owners.first, let owner = OwnerIdentifier(rawValue: name) else {
                let policy =
                    bundleInForce.map { "the bundle in force (revision \(Self.shortRevision($0.revision)))" }
                    ?? "no bundle is in force, and it"
                throw AccountError(
                    code: .unknown, account: account,
                    message:
                        "\(account) is not an account of this installation: \(policy) does not list it, and the state has never seen it"
                )
            }
            guard owners.count == 1 else {
                throw AccountError(
                    code: .ambiguous, account: account,
                    message:
                        "\(account) has named several accounts in this state (\(owners.sorted().joined(separator: ", "))); name it by its OID"
                )
            }
            var identifiers = [owner]
            for alias in try await recordedAliases(of: owner, for: account) ?? [] {
                if let identifier = OwnerIdentifier(rawValue: alias), !identifiers.contains(identifier) {
                    identifiers.append(identifier)
                }
            }
            return ResolvedAccount(id: owner.account, owner: owner, identifiers: identifiers, tenantAccount: nil)
        }
    }

    /// The aliases the state records for `owner`'s account (nil: none recorded). Only the
    /// aliases are read: a time recorded with the account that cannot be read does not stop
    /// resolving it (a wipe must go through).
    private nonisolated func recordedAliases(of owner: OwnerIdentifier?, for account: AccountID)
        async throws(AccountError)
        -> [String]?
    {
        guard let owner else { return nil }
        do {
            return try await database?.aliases(ofAccount: owner.rawValue)
        } catch {
            throw AccountError(
                code: .storage, account: account, message: "cannot look up \(account) in the state: \(error)",
                stateCode: error.code)
        }
    }

    /// The first 12 hex digits of a revision, as people read it.
    static func shortRevision(_ revision: String) -> String {
        revision.isEmpty ? "no revision" : String(revision.prefix(12))
    }

    /// Records that the installation holds data of `account` (its keys were just made): the
    /// account and its identifiers join the state's registry, so a wipe finds them even after
    /// the tenant stops listing it.
    nonisolated func register(_ account: ResolvedAccount) async throws(StoreError) {
        guard let database else { return }
        let names = Set(account.identifiers.map(\.rawValue))
        // Registrations are only ever added to: one seen here need not be read again.
        if registered.withLock({ $0[account.owner.rawValue]?.isSuperset(of: names) == true }) { return }
        if let recorded = try await database.account(owner: account.owner.rawValue),
            Set(recorded.aliases + [recorded.owner]).isSuperset(of: names)
        {
            registered.withLock { $0[account.owner.rawValue, default: []].formUnion(names) }
            return
        }
        try await database.recordAccounts(
            [SeenAccount(owner: account.owner.rawValue, aliases: account.identifiers.map(\.rawValue))], at: clock())
        registered.withLock { $0[account.owner.rawValue, default: []].formUnion(names) }
    }
}
