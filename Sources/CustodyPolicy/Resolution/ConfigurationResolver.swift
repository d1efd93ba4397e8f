/// Works out which app configuration policies reach each account, once per snapshot.
///
/// Targeting is the protection policies' (included groups or all licensed users, excluded
/// groups winning, a document without assignments meaning every account and an empty list no one; app list and management levels from
/// the context), with two differences: configuration only reaches managed accounts (an app
/// receives MAM configuration for an account it manages), and a tenant default (`__IsDefault`)
/// reaches every managed account whatever its assignments say.
struct ConfigurationResolver {
    private let sources: [AppConfiguration.Source?]
    private let policies: [AppConfigurationPolicy]

    init(bundle: PolicyBundle, context: EvaluationContext) {
        policies = bundle.appConfigurations
        sources = bundle.appConfigurations.map { policy in
            guard policy.targeting.admits(context) else { return nil }
            var values: [String: String] = [:]
            for (name, value) in policy.settings { values[name] = value }
            return AppConfiguration.Source(
                policy: policy.reference, isDefault: AppConfiguration.isDefault(values), values: values)
        }
    }

    /// The indices of the policies that reach `account`, ascending.
    func policies(reaching account: TenantAccount) -> [Int] {
        let groups = Set(account.groups)
        return sources.indices.filter { index in
            guard let source = sources[index] else { return false }
            if source.isDefault { return true }
            let targeting = policies[index].targeting
            guard !targeting.reachesEveryAccount else { return true }
            if !targeting.excludedGroups.isDisjoint(with: groups) { return false }
            // Filters are undecided here (no facts): a filtered exclusion does not exclude, a
            // filtered inclusion includes.
            let reaches = { (target: PolicyTargeting.Target) in
                switch target {
                case .group(let group): groups.contains(group)
                case .allLicensedUsers, .unsupported: true
                }
            }
            return targeting.included.contains(where: reaches)
                || targeting.filteredInclusions.contains { reaches($0.target) }
        }
    }

    func configuration(of indices: [Int]) -> AppConfiguration {
        AppConfiguration(sources: indices.compactMap { sources[$0] })
    }
}
