/// Why a policy does or does not reach one account: what `custody policy show` lists for every
/// policy whose assignments name the account (its groups, all licensed users, every account).
public struct AssignmentReach: Sendable, Hashable {
    public let policy: PolicyReference
    /// Whether the policy applies to the account in the snapshot's context.
    public let reaches: Bool
    /// Why, in words: "included by group g", "excluded by group contractors", "filtered by f-ipad
    /// (undecided without launch facts: included)", "for android", "the account has no Intune
    /// license".
    public let reason: String
}

extension PolicySnapshot {
    /// For each protection policy whose assignments name `account` (one of its groups, all
    /// licensed users, or every account for a document without assignments), whether it reaches
    /// the account and why; policies that name nothing of the account are left out. Empty for
    /// an account the tenant does not list.
    public func reach(of account: AccountID) -> [AssignmentReach] {
        guard let tenantAccount = tenantAccount(for: account) else { return [] }
        let applying = Set((effectivePolicy(for: account)?.policies ?? []).map(\.index))
        let groups = Set(tenantAccount.groups)
        var result: [AssignmentReach] = []
        for policy in bundle.protectionPolicies {
            let targeting = policy.targeting
            var named: [String] = []
            var excludedBy: [String] = []
            if policy.kind == .defaultManagedAppProtection {
                named.append("the tenant's default policy")
            } else if targeting.reachesEveryAccount {
                named.append("every account (the document lists no assignments)")
            }
            for target in targeting.included {
                switch target {
                case .group(let group) where groups.contains(group): named.append("included by group \(group)")
                case .group: break
                case .allLicensedUsers: named.append("included as a licensed user")
                case .unsupported(let type): named.append("included by \(type), counted as every user")
                }
            }
            for filtered in targeting.filteredInclusions {
                let names: Bool
                switch filtered.target {
                case .group(let group): names = groups.contains(group)
                case .allLicensedUsers, .unsupported: names = true
                }
                guard names else { continue }
                let filter = bundle.assignmentFilters[filtered.filterID]?.name ?? filtered.filterID
                named.append(
                    "included by \(filtered.target.label) where filter \(filter) \(filtered.mode == .include ? "matches" : "does not match") (decided on a launch query's facts; without them, included)"
                )
            }
            for group in targeting.excludedGroups.sorted() where groups.contains(group) {
                excludedBy.append("excluded by group \(group)")
            }
            for filtered in targeting.filteredExclusions {
                guard case .group(let group) = filtered.target, groups.contains(group) else { continue }
                let filter = bundle.assignmentFilters[filtered.filterID]?.name ?? filtered.filterID
                named.append(
                    "excluded by group \(group) where filter \(filter) \(filtered.mode == .include ? "matches" : "does not match") (decided on a launch query's facts; without them, not excluded)"
                )
            }
            guard !named.isEmpty || !excludedBy.isEmpty else { continue }
            let reaches = applying.contains(policy.reference.index)
            var why = named + excludedBy
            if !reaches {
                if tenantAccount.licensed == false {
                    why.append("the account has no Intune license")
                } else if !policy.admits(platform: context.platform) {
                    let own = policy.kind.platform?.rawValue ?? "ios and android"
                    why.append("for \(own), not \(context.platform?.rawValue ?? "any platform")")
                } else if !policy.targeting.admits(context) {
                    why.append("its app list or management levels do not admit \(context)")
                } else if policy.kind == .defaultManagedAppProtection {
                    why.append("a targeted policy reaches the account")
                } else if excludedBy.isEmpty && !targeting.hasInclusions && !targeting.reachesEveryAccount {
                    why.append("no assignment includes anyone")
                }
            }
            result.append(
                AssignmentReach(policy: policy.reference, reaches: reaches, reason: why.joined(separator: "; ")))
        }
        return result
    }
}

extension PolicyTargeting.Target {
    /// The target in words.
    var label: String {
        switch self {
        case .group(let group): "group \(group)"
        case .allLicensedUsers: "all licensed users"
        case .unsupported(let type): type
        }
    }
}

extension PolicySnapshot {
    /// Whether some account of the tenant is reached by a protection policy in this snapshot's
    /// context (its platform, app and management level).
    public var managesSomeAccount: Bool { policyIndexOfAccount.contains { $0 >= 0 } }
}

extension PolicyBundle {
    /// Whether some account of the tenant is reached by an app protection policy (or the
    /// default policy) on some platform the bundle's policies are for. A bundle that manages no
    /// account would allow every decision: it goes in force only on purpose (`allowEmpty`).
    /// Filtered assignments count as they read without facts (an inclusion includes).
    public var managesSomeAccount: Bool {
        guard !tenant.accounts.isEmpty, !protectionPolicies.isEmpty else { return false }
        return policyPlatforms.contains { platform in
            let resolver = TargetingResolver(bundle: self, context: EvaluationContext(platform: platform))
            return tenant.accounts.contains { !resolver.key(for: $0).applying.isEmpty }
        }
    }
}
