/// Works out which policies reach each account, once per snapshot.
///
/// Policies are indexed by the groups they include and exclude, so an account costs a lookup
/// per group it belongs to rather than a scan of every policy.
struct TargetingResolver {
    /// The policies that reach an account: those that apply in the context, and those that would
    /// for some app (whose app lists make up the account's policy-managed apps).
    struct Key: Hashable {
        var applying: PolicyMask
        var managingApps: PolicyMask
    }

    private let bundle: PolicyBundle
    private let context: EvaluationContext
    /// Targeted policies of the context's platform, by how they are assigned.
    private var everyone = PolicyMask()
    private var licensedUsers = PolicyMask()
    private var includedByGroup: [String: PolicyMask] = [:]
    private var excludedByGroup: [String: PolicyMask] = [:]
    /// Policies whose app list and management levels admit the context's app (or every app).
    private var admittingApp = PolicyMask()
    private var admittingAnyApp = PolicyMask()
    private var defaults = PolicyMask()
    private let tenantManagedApps: Set<String>

    init(bundle: PolicyBundle, context: EvaluationContext) {
        self.bundle = bundle
        self.context = context
        self.tenantManagedApps = Set(bundle.tenant.managedApps.map { $0.lowercased() })
        for (index, policy) in bundle.protectionPolicies.enumerated() where policy.admits(platform: context.platform) {
            if policy.targeting.admits(context) { admittingApp.insert(index) }
            if policy.targeting.admits(context, ignoringApp: true) { admittingAnyApp.insert(index) }
            if policy.kind == .defaultManagedAppProtection {
                defaults.insert(index)
                continue
            }
            let targeting = policy.targeting
            if !targeting.hasAssignments {
                everyone.insert(index)
            }
            for target in targeting.included {
                switch target {
                case .group(let group): includedByGroup[group, default: PolicyMask()].insert(index)
                case .allLicensedUsers, .unsupported: licensedUsers.insert(index)
                }
            }
            for group in targeting.excludedGroups {
                excludedByGroup[group, default: PolicyMask()].insert(index)
            }
        }
    }

    /// The policies reaching `account`.
    mutating func key(for account: TenantAccount) -> Key {
        var targeted = everyone
        targeted.formUnion(licensedUsers)
        var excluded = PolicyMask()
        for group in account.groups {
            if let included = includedByGroup[group] { targeted.formUnion(included) }
            if let exclusions = excludedByGroup[group] { excluded.formUnion(exclusions) }
        }
        targeted.subtract(excluded)

        var applying = targeted.intersection(admittingApp)
        var managingApps = targeted.intersection(admittingAnyApp)
        if applying.isEmpty {
            // Untargeted in this context: the tenant's default policy, if any, applies.
            applying = defaults.intersection(admittingApp)
            if managingApps.isEmpty { managingApps = defaults.intersection(admittingAnyApp) }
        }
        return Key(applying: applying, managingApps: managingApps)
    }

    func effectivePolicy(for key: Key) -> EffectivePolicy {
        let policies = key.applying.indices.map { bundle.protectionPolicies[$0] }
        var managedApps = tenantManagedApps
        for index in key.managingApps.indices {
            for app in bundle.protectionPolicies[index].targeting.apps ?? [] {
                if let id = app.id { managedApps.insert(id.lowercased()) }
                if let appID = app.appID { managedApps.insert(appID.lowercased()) }
            }
        }
        return EffectivePolicy(merging: policies, managedAppIDs: managedApps, platform: context.platform)
    }
}

/// A set of policy indices as a bit set.
struct PolicyMask: Hashable {
    private var words: [UInt64] = []

    init() {}

    init(_ indices: [Int]) {
        for index in indices { insert(index) }
    }

    var isEmpty: Bool { words.allSatisfy { $0 == 0 } }

    mutating func insert(_ index: Int) {
        let word = index / 64
        if words.count <= word { words.append(contentsOf: repeatElement(0, count: word + 1 - words.count)) }
        words[word] |= 1 << UInt64(index % 64)
    }

    mutating func formUnion(_ other: PolicyMask) {
        if words.count < other.words.count {
            words.append(contentsOf: repeatElement(0, count: other.words.count - words.count))
        }
        for (index, word) in other.words.enumerated() { words[index] |= word }
    }

    mutating func subtract(_ other: PolicyMask) {
        for index in 0..<min(words.count, other.words.count) { words[index] &= ~other.words[index] }
    }

    func intersection(_ other: PolicyMask) -> PolicyMask {
        var result = PolicyMask()
        result.words = zip(words, other.words).map { $0 & $1 }
        return result
    }

    /// The indices in ascending order.
    var indices: [Int] {
        var result: [Int] = []
        for (wordIndex, word) in words.enumerated() where word != 0 {
            for bit in 0..<64 where word & (1 << UInt64(bit)) != 0 {
                result.append(wordIndex * 64 + bit)
            }
        }
        return result
    }

    static func == (lhs: PolicyMask, rhs: PolicyMask) -> Bool {
        let count = max(lhs.words.count, rhs.words.count)
        for index in 0..<count
        where (index < lhs.words.count ? lhs.words[index] : 0) != (index < rhs.words.count ? rhs.words[index] : 0) {
            return false
        }
        return true
    }

    func hash(into hasher: inout Hasher) {
        // Trailing zero words do not change the set.
        var end = words.count
        while end > 0, words[end - 1] == 0 { end -= 1 }
        for index in 0..<end { hasher.combine(words[index]) }
    }
}
