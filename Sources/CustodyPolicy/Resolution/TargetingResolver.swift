/// Works out which policies reach each account, once per snapshot.
///
/// Policies are indexed by the groups they include and exclude, so an account costs a lookup
/// per group it belongs to rather than a scan of every policy.
struct TargetingResolver: Sendable {
    /// The policies that reach an account: those that apply in the context, and those that would
    /// for some app (whose app lists make up the account's policy-managed apps).
    struct Key: Hashable, Sendable {
        var applying: PolicyMask
        var managingApps: PolicyMask
    }

    /// An assignment narrowed by a filter, indexed by the group it names (or every licensed user).
    struct FilteredAssignment: Sendable {
        var policy: Int
        var filter: AssignmentFilter?
        var mode: PolicyTargeting.FilterMode
        /// Whether it is an exclusion.
        var excludes: Bool
    }

    private let bundle: PolicyBundle
    private let context: EvaluationContext
    /// Targeted policies of the context's platform, by how they are assigned.
    private var everyone = PolicyMask()
    private var licensedUsers = PolicyMask()
    private var includedByGroup: [String: PolicyMask] = [:]
    private var excludedByGroup: [String: PolicyMask] = [:]
    private var filteredByGroup: [String: [FilteredAssignment]] = [:]
    private var filteredForLicensedUsers: [FilteredAssignment] = []
    /// Policies whose app list and management levels admit the context's app (or every app).
    private var admittingApp = PolicyMask()
    private var admittingAnyApp = PolicyMask()
    private var defaults = PolicyMask()
    private let tenantManagedApps: Set<String>

    /// Whether any assignment of the context's platform is filtered: only then do facts change
    /// which policies reach an account.
    var hasFilters: Bool { !filteredByGroup.isEmpty || !filteredForLicensedUsers.isEmpty }

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
            if targeting.reachesEveryAccount {
                everyone.insert(index)
            }
            for target in targeting.included {
                switch target {
                case .group(let group): includedByGroup[group, default: PolicyMask()].insert(index)
                case .allLicensedUsers: licensedUsers.insert(index)
                case .unsupported: everyone.insert(index)
                }
            }
            for group in targeting.excludedGroups {
                excludedByGroup[group, default: PolicyMask()].insert(index)
            }
            for (filtered, excludes) in targeting.filteredInclusions.map({ ($0, false) })
                + targeting.filteredExclusions.map({ ($0, true) })
            {
                let assignment = FilteredAssignment(
                    policy: index, filter: bundle.assignmentFilters[filtered.filterID], mode: filtered.mode,
                    excludes: excludes)
                switch filtered.target {
                case .group(let group): filteredByGroup[group, default: []].append(assignment)
                case .allLicensedUsers, .unsupported: filteredForLicensedUsers.append(assignment)
                }
            }
        }
    }

    /// The policies reaching `account`, on the app and device `facts` (nil: none known).
    ///
    /// Microsoft requires an Intune license for app protection ("The end user must have a
    /// license for Microsoft Intune assigned to their Microsoft Entra account"): an account the
    /// tenant records as unlicensed is reached by no policy. A filtered assignment reads the
    /// restrictive way when the facts do not decide its filter: an inclusion includes, an
    /// exclusion does not exclude.
    func key(for account: TenantAccount, facts: FilterFacts? = nil) -> Key {
        guard account.licensed != false else { return Key(applying: PolicyMask(), managingApps: PolicyMask()) }
        var targeted = everyone
        targeted.formUnion(licensedUsers)
        var excluded = PolicyMask()
        for group in account.groups {
            if let included = includedByGroup[group] { targeted.formUnion(included) }
            if let exclusions = excludedByGroup[group] { excluded.formUnion(exclusions) }
        }
        if hasFilters {
            let apply = { (assignment: FilteredAssignment) in
                let result = assignment.filter.map { $0.rule.evaluate(facts ?? FilterFacts()) } ?? .unknown
                let holds: Bool =
                    switch (assignment.mode, result) {
                    case (.include, .matches), (.exclude, .doesNotMatch): true
                    case (.include, .doesNotMatch), (.exclude, .matches): false
                    // Undecided: an inclusion includes, an exclusion does not exclude.
                    case (_, .unknown): !assignment.excludes
                    }
                guard holds else { return }
                if assignment.excludes {
                    excluded.insert(assignment.policy)
                } else {
                    targeted.insert(assignment.policy)
                }
            }
            filteredForLicensedUsers.forEach(apply)
            for group in account.groups { filteredByGroup[group]?.forEach(apply) }
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

    /// Whether facts can change which policies reach `account` (a group of it, or every
    /// licensed user, has a filtered assignment).
    func dependsOnFacts(_ account: TenantAccount) -> Bool {
        guard hasFilters, account.licensed != false else { return false }
        return !filteredForLicensedUsers.isEmpty || account.groups.contains { filteredByGroup[$0] != nil }
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
struct PolicyMask: Hashable, Sendable {
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
