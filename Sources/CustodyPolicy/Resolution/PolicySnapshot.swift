public import Logging

/// A bundle resolved for one evaluation context: every account's effective policy computed
/// once, immutable, and safe to share between any number of threads and tasks.
///
/// Decisions read it without locks or allocation: an account lookup is one hash probe of a
/// value cached in its `AccountID`. Accounts reached by the same set of policies share one
/// `EffectivePolicy`, so a tenant of 100,000 accounts with a few policies resolves to a
/// handful of merges.
///
/// Targeting: a policy applies to an account when one of its included targets matches (a group
/// of the account, all licensed users) and none of its excluded groups does; a document without
/// an `assignments` list applies to every account of the tenant, an empty list (Intune's
/// unassigned policy) to none, and an account the tenant records as unlicensed is reached by no
/// policy. Filtered assignments are decided on the facts a launch query gives, and read the
/// restrictive way where facts are missing. Platform, app list and management level
/// come from the context. `defaultManagedAppProtection` policies apply to the tenant's accounts
/// that no targeted policy reaches. Accounts outside the tenant are unmanaged.
public final class PolicySnapshot: Sendable {
    /// The bundle this snapshot evaluates.
    public let bundle: PolicyBundle
    /// The platform, app and management level it was resolved for: the context it was given,
    /// with the platform the bundle implies when that context names none (see
    /// `PolicyBundle.platform(for:)`).
    public let context: EvaluationContext
    /// The context names no platform and the bundle holds policies of several: every decision
    /// about a managed account is refused (`Finding.Code.platformRequired`), never merged
    /// across platforms.
    public let isPlatformAmbiguous: Bool

    let directory: AccountDirectory
    /// For each tenant account, its index in `effectivePolicies`, or -1 when unmanaged.
    let policyIndexOfAccount: [Int32]
    let effectivePolicies: [EffectivePolicy]
    let allowedAccounts: AllowedAccounts?
    /// For each tenant account, its index in `configurations`, or -1 when unmanaged.
    let configurationIndexOfAccount: [Int32]
    let configurations: [AppConfiguration]
    let logger: Logger
    /// How applying policies combine (see `PolicyPrecedence`).
    public let precedence: PolicyPrecedence
    /// For each tenant account, its index in `setAsideLists`, or -1 when nothing was set aside.
    let setAsideIndexOfAccount: [Int32]
    let setAsideLists: [[PolicyReference]]
    /// Reasons rendered for decisions on this snapshot, shared by every decision stream.
    let explanations = RenderedExplanations()
    /// The identity near misses logged already (each once per snapshot, see `LogOnce`).
    let nearMisses = LogOnce()
    /// When assignments of the context's platform are filtered: the resolver that decides them
    /// on a query's facts, and the effective policies it has merged (nil otherwise).
    let filterResolver: TargetingResolver?
    let filteredPolicies = Locked<[TargetingResolver.Key: EffectivePolicy]>([:])

    /// Resolves `bundle` for `context`.
    /// - Parameter logger: receives diagnostics of identity near misses (never key material or
    ///   data); by default a logger labelled `custody.policy`.
    /// - Parameter precedence: how several policies reaching one account combine; by default
    ///   all merge, most restrictive first.
    public init(
        bundle: PolicyBundle, context requested: EvaluationContext = EvaluationContext(),
        precedence: PolicyPrecedence = .mostRestrictive,
        logger: Logger? = nil
    ) {
        var context = requested
        var ambiguous = false
        do {
            context.platform = try bundle.platform(for: requested)
        } catch {
            ambiguous = true
        }
        self.bundle = bundle
        self.context = context
        self.isPlatformAmbiguous = ambiguous
        self.precedence = precedence
        self.logger = logger ?? Logger(label: "custody.policy")
        let directory = AccountDirectory(accounts: bundle.tenant.accounts)
        self.directory = directory
        self.allowedAccounts = bundle.tenant.allowedAccounts.map { AllowedAccounts(entries: $0, directory: directory) }

        // Accounts reached by the same policies share one EffectivePolicy, and one
        // AppConfiguration; unmanaged accounts have neither (-1).
        let resolver = TargetingResolver(bundle: bundle, context: context)
        self.filterResolver = resolver.hasFilters ? resolver : nil
        let configurationResolver = ConfigurationResolver(bundle: bundle, context: context)
        var effective = SharedValues<TargetingResolver.Key, EffectivePolicy>()
        var configurations = SharedValues<[Int], AppConfiguration>()
        var setAside = SharedValues<[Int], [PolicyReference]>()
        var policyIndexOfAccount: [Int32] = []
        var configurationIndexOfAccount: [Int32] = []
        var setAsideIndexOfAccount: [Int32] = []
        policyIndexOfAccount.reserveCapacity(bundle.tenant.accounts.count)
        configurationIndexOfAccount.reserveCapacity(bundle.tenant.accounts.count)
        for account in bundle.tenant.accounts {
            var key = resolver.key(for: account)
            guard !key.applying.isEmpty else {
                policyIndexOfAccount.append(-1)
                configurationIndexOfAccount.append(-1)
                setAsideIndexOfAccount.append(-1)
                continue
            }
            if precedence.rule == .incumbent {
                let (kept, aside) = precedence.split(key.applying.indices, of: bundle.protectionPolicies, for: account)
                if !aside.isEmpty {
                    key.applying = PolicyMask(kept)
                    setAsideIndexOfAccount.append(
                        setAside.index(of: aside) { $0.map { bundle.protectionPolicies[$0].reference } })
                } else {
                    setAsideIndexOfAccount.append(-1)
                }
            } else {
                setAsideIndexOfAccount.append(-1)
            }
            policyIndexOfAccount.append(effective.index(of: key) { resolver.effectivePolicy(for: $0) })
            let reaching = bundle.appConfigurations.isEmpty ? [] : configurationResolver.policies(reaching: account)
            configurationIndexOfAccount.append(
                configurations.index(of: reaching) { configurationResolver.configuration(of: $0) })
        }
        self.effectivePolicies = effective.values
        self.policyIndexOfAccount = policyIndexOfAccount
        self.configurations = configurations.values
        self.configurationIndexOfAccount = configurationIndexOfAccount
        self.setAsideLists = setAside.values
        self.setAsideIndexOfAccount = setAsideIndexOfAccount
    }

    /// The policies that reach `account` but were set aside because others reached it first
    /// (`incumbent` precedence only; empty otherwise).
    public func setAsidePolicies(for account: AccountID) -> [PolicyReference] {
        guard let index = directory.index(of: account) else { return [] }
        let list = setAsideIndexOfAccount[Int(index)]
        return list < 0 ? [] : setAsideLists[Int(list)]
    }

    /// The app configuration that reaches `account`: nil when the account is unmanaged (not in
    /// the tenant, or no protection policy applies), empty when it is managed and no
    /// configuration policy reaches it.
    public func appConfiguration(for account: AccountID?) -> AppConfiguration? {
        guard let account, let index = directory.index(of: account) else { return nil }
        let configuration = configurationIndexOfAccount[Int(index)]
        return configuration < 0 ? nil : configurations[Int(configuration)]
    }

    /// The index of `account`'s configuration in `configurations`, or -1 when it has none.
    func configurationIndex(of account: AccountID) -> Int32 {
        guard let index = directory.index(of: account) else { return -1 }
        return configurationIndexOfAccount[Int(index)]
    }

    /// The distinct effective policies of the tenant's managed accounts.
    public var distinctEffectivePolicies: [EffectivePolicy] { effectivePolicies }

    /// The effective policy of `account`, or nil when it is unmanaged (no policy applies, or
    /// the account is not in the tenant, or the account is nil).
    public func effectivePolicy(for account: AccountID?) -> EffectivePolicy? {
        resolve(account).policy
    }

    /// Whether at least one protection policy applies to `account`.
    public func isManaged(_ account: AccountID?) -> Bool {
        resolve(account).policy != nil
    }

    /// The tenant's record of `account`, or nil when the tenant does not know it (or the
    /// account's forms contradict each other: see `resolveAccount(_:)`).
    public func tenantAccount(for account: AccountID) -> TenantAccount? {
        directory.index(of: account).map { directory.accounts[Int($0)] }
    }

    /// What the tenant makes of `account`: the account it names, no account, or a
    /// contradiction (an OID and a UPN that the tenant records for different accounts, or a
    /// form it records for an account whose other form differs). Decisions about a
    /// contradictory account are blocked; queries naming one are errors.
    public func resolveAccount(_ account: AccountID) -> AccountResolution {
        let found = directory.find(account)
        if found >= 0 { return .tenant(directory.accounts[Int(found)]) }
        guard found == AccountDirectory.contradictory else { return .unknown }
        return .contradictory(directory.contradiction(of: account))
    }

    /// Whether `first` and `second` name the same account: the same tenant account when the
    /// tenant knows both (which links OID and UPN), else equal OIDs, else equal UPNs.
    /// Nil names no account and is the same as nothing.
    public func isSameAccount(_ first: AccountID?, _ second: AccountID?) -> Bool {
        isSame(first, resolve(first), second, resolve(second))
    }

    // MARK: Internals shared by the decisions

    /// An account as a decision sees it: where the tenant lists it and its policy. The id itself
    /// stays with the caller, so resolving copies no strings.
    struct Party {
        /// Index in the tenant, `AccountDirectory.unknown`, `AccountDirectory.contradictory` or
        /// `Party.platformAmbiguous`.
        let index: Int32
        let policy: EffectivePolicy?
        var isManaged: Bool { policy != nil }
        /// The account's OID and UPN name different accounts: decisions about it are blocked.
        var isContradictory: Bool { index == AccountDirectory.contradictory }

        /// A managed account of a snapshot whose platform is ambiguous.
        static let platformAmbiguous: Int32 = -3

        /// Why a decision about this party must be refused, or nil when it can be decided.
        @inline(__always)
        func refusal(_ role: AccountRole) -> Finding.Code? {
            guard index < AccountDirectory.unknown else { return nil }
            return index == AccountDirectory.contradictory ? .contradictoryAccount(role) : .platformRequired
        }
    }

    @inline(__always)
    func resolve(_ account: AccountID?) -> Party {
        guard let account else { return Party(index: AccountDirectory.unknown, policy: nil) }
        let index = directory.find(account)
        guard index >= 0 else { return Party(index: index, policy: nil) }
        let policyIndex = policyIndexOfAccount[Int(index)]
        guard policyIndex >= 0 else { return Party(index: index, policy: nil) }
        if isPlatformAmbiguous { return Party(index: Party.platformAmbiguous, policy: nil) }
        return Party(index: index, policy: effectivePolicies[Int(policyIndex)])
    }

    /// `resolve(_:)` with the assignment filters decided on the app and device facts a query
    /// gives: the policies whose filters the facts rule out no longer reach the account. Without
    /// filtered assignments (or facts that decide them) it is `resolve(_:)`.
    func resolve(_ account: AccountID?, facts: LaunchFacts) -> Party {
        let party = resolve(account)
        guard let filterResolver, party.index >= 0 else { return party }
        let tenantAccount = directory.accounts[Int(party.index)]
        guard filterResolver.dependsOnFacts(tenantAccount) else { return party }
        let filterFacts = FilterFacts(launch: facts, managementLevel: context.managementLevel)
        guard !filterFacts.isEmpty else { return party }
        let key = filterResolver.key(for: tenantAccount, facts: filterFacts)
        guard !key.applying.isEmpty else { return Party(index: party.index, policy: nil) }
        if let cached = filteredPolicies.withLock({ $0[key] }) { return Party(index: party.index, policy: cached) }
        let policy = filterResolver.effectivePolicy(for: key)
        filteredPolicies.withLock { cache in
            // Bounded: facts vary, and each distinct set of reaching policies is kept once.
            if cache.count >= 4_096 { cache.removeAll() }
            cache[key] = policy
        }
        return Party(index: party.index, policy: policy)
    }

    /// Same tenant account when both resolve; otherwise the ids' own forms decide, with a
    /// resolved side compared by the tenant's full record (so an unknown OID carrying a known
    /// account's UPN is not that account).
    @inline(__always)
    func isSame(_ firstID: AccountID?, _ first: Party, _ secondID: AccountID?, _ second: Party) -> Bool {
        guard let firstID, let secondID else { return false }
        switch (first.index >= 0, second.index >= 0) {
        case (true, true): return first.index == second.index
        case (true, false): return directory.accounts[Int(first.index)].id.isSameAccount(as: secondID)
        case (false, true): return firstID.isSameAccount(as: directory.accounts[Int(second.index)].id)
        case (false, false): return firstID.isSameAccount(as: secondID)
        }
    }
}

/// What a tenant makes of an account id (`PolicySnapshot.resolveAccount(_:)`).
public enum AccountResolution: Sendable, Hashable {
    /// The tenant's account: its record carries both forms when the tenant lists both.
    case tenant(TenantAccount)
    /// The tenant does not know the account: it is unmanaged.
    case unknown
    /// The id's forms name different accounts, or disagree with the tenant's record; the
    /// message says how.
    case contradictory(String)
}

/// Values shared by every account with the same key: each distinct key's value is made once.
struct SharedValues<Key: Hashable, Value> {
    private var indexOfKey: [Key: Int32] = [:]
    private(set) var values: [Value] = []

    /// The index of `key`'s value in `values`, made by `make` the first time the key comes.
    mutating func index(of key: Key, make: (Key) -> Value) -> Int32 {
        if let index = indexOfKey[key] { return index }
        let index = Int32(values.count)
        values.append(make(key))
        indexOfKey[key] = index
        return index
    }
}
