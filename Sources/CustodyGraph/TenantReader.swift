import Foundation
import Logging

/// One snapshot of a tenant: its app protection and app configuration policies, each with its
/// apps and assignments, and the users of every group they include or exclude.
struct TenantSnapshot: Sendable {
    /// Policies (and the assignment filters they name) by file name (`{collection}-{id}.json`).
    var policies: [String: GraphJSON] = [:]
    /// The target of every assignment of every policy.
    var assignmentTargets: [GraphJSON] {
        policies.values.flatMap { policy in (policy["assignments"]?.array ?? []).compactMap { $0["target"] } }
    }
    /// How many of `policies` are policies, not assignment filters.
    var policyCount: Int { policies.keys.filter { !$0.hasPrefix("assignmentFilters-") }.count }
    /// Users by object ID: their UPN, the assigned groups they are in (transitively), and
    /// whether they hold an Intune license (nil: Graph did not say).
    var users: [String: (upn: String?, groups: Set<String>, licensed: Bool?, enabled: Bool?)] = [:]
    /// Things that did not stop the sync but that an administrator should know.
    var warnings: [String] = []
    /// What to keep for the next sync's delta reads (nil when changes are not tracked).
    var membershipCache: MembershipCache?
    /// Whether the members were read by delta, and how many groups were read.
    var incremental = false
    var groupsRead = 0
}

/// A collection of policies under `/deviceAppManagement`.
struct PolicyCollection: Sendable {
    let name: String
    let type: String
    /// Whether its policies have assignments (a default protection applies to all users and
    /// has none).
    let assigned: Bool

    static let all = [
        PolicyCollection(
            name: "iosManagedAppProtections", type: "#microsoft.graph.iosManagedAppProtection", assigned: true),
        PolicyCollection(
            name: "androidManagedAppProtections", type: "#microsoft.graph.androidManagedAppProtection", assigned: true),
        PolicyCollection(
            name: "windowsManagedAppProtections", type: "#microsoft.graph.windowsManagedAppProtection", assigned: true),
        PolicyCollection(
            name: "defaultManagedAppProtections", type: "#microsoft.graph.defaultManagedAppProtection", assigned: false),
        PolicyCollection(
            name: "targetedManagedAppConfigurations", type: "#microsoft.graph.targetedManagedAppConfiguration",
            assigned: true),
    ]
}

/// Reads a snapshot through a `GraphClient`.
struct TenantReader {
    let client: GraphClient
    let logger: Logger
    let progress: (@Sendable (String) -> Void)?
    /// The tenant and the Graph root it is read from: what is kept is kept for them alone.
    let source: String
    /// With `tracking`, delta links are taken and the members kept for the next sync;
    /// `cache` is what the last sync kept (nil: read every group).
    var tracking = false
    var cache: MembershipCache?

    func read() async throws(GraphError) -> TenantSnapshot {
        var snapshot = TenantSnapshot()
        for collection in PolicyCollection.all {
            try await readPolicies(of: collection, into: &snapshot)
        }
        try await readOtherPolicies(into: &snapshot)
        try await readFilters(into: &snapshot)
        // The groups the assignments name, included or excluded; all users when a policy is
        // assigned to every licensed user, or when a default policy reaches the users no
        // targeted policy does.
        var groups = Set<String>()
        var everyone = snapshot.policies.keys.contains { $0.hasPrefix("defaultManagedAppProtections-") }
        for target in snapshot.assignmentTargets {
            switch target["@odata.type"]?.string {
            case "#microsoft.graph.groupAssignmentTarget", "#microsoft.graph.exclusionGroupAssignmentTarget":
                if let group = target["groupId"]?.string, !group.isEmpty { groups.insert(group) }
            case "#microsoft.graph.allLicensedUsersAssignmentTarget":
                everyone = true
            default:
                break
            }
        }
        progress?("\(snapshot.policies.count) policies, \(groups.count) groups")
        try await readMembers(of: groups.sorted(), into: &snapshot)
        // Every user's Intune license (Microsoft: app protection needs "a license for Microsoft
        // Intune assigned to their Microsoft Entra account") and account state: kept from the
        // last sync and brought up to date by the users' delta round when the members were read
        // by delta, else one listing of /users (then kept for the next sync). Users in no
        // assigned group are accounts only when a default policy or an all-licensed-users
        // assignment can reach them.
        let records: [String: UserRecord]
        if snapshot.incremental, let kept = snapshot.membershipCache?.users {
            records = kept
        } else {
            let listed = try await client.collect("/users?$select=\(Member.userProperties)&$top=999", of: Member.self)
            var read: [String: UserRecord] = [:]
            for user in listed ?? [] where user.isUser {
                // Graph lists a user once: a second listing (another UPN, another license) is
                // contradictory, and a page that lists it again and again would never end.
                guard read[user.id] == nil else {
                    throw GraphError(
                        .invalidResponse, "/users lists user \(user.id) more than once",
                        request: "GET \(client.settings.graphURL)/users")
                }
                read[user.id] = UserRecord(
                    upn: user.userPrincipalName ?? "", licensed: user.hasIntuneLicense, enabled: user.accountEnabled)
            }
            records = read
            snapshot.membershipCache?.users = read
        }
        if everyone {
            for (id, record) in records {
                guard !record.upn.isEmpty else { throw Self.missingUPN(id) }
                snapshot.users[id, default: (record.upn, [], nil, nil)].upn = record.upn
            }
        }
        for id in snapshot.users.keys {
            snapshot.users[id]?.licensed = records[id]?.licensed
            snapshot.users[id]?.enabled = records[id]?.enabled
        }
        let unlicensed = snapshot.users.values.filter { $0.licensed == false }.count
        if unlicensed > 0 {
            snapshot.warnings.append(
                "\(unlicensed) user\(unlicensed == 1 ? " has" : "s have") no Intune license: no app protection policy reaches \(unlicensed == 1 ? "it" : "them"), as in Intune"
            )
        }
        return snapshot
    }

    /// Every managed-app policy of the tenant, from the polymorphic `managedAppPolicies`: the
    /// retired Windows Information Protection policies are kept in the bundle (which lists them
    /// as not enforced), and a type Custody does not know, one Microsoft added later, is named
    /// in a warning rather than passed over in silence.
    private func readOtherPolicies(into snapshot: inout TenantSnapshot) async throws(GraphError) {
        let read = Set(PolicyCollection.all.map { $0.type.lowercased() })
        let listed = try await client.collect("/deviceAppManagement/managedAppPolicies", of: GraphJSON.self) ?? []
        var unknown: [String: Int] = [:]
        for item in listed {
            guard case .object(let members) = item, let type = members["@odata.type"]?.string else { continue }
            let lowered = type.lowercased()
            if read.contains(lowered) { continue }
            if let collection = Self.retired[lowered], let id = members["id"]?.string, !id.isEmpty {
                snapshot.policies[Self.fileName(collection: collection, id: id)] = .object(
                    Self.withoutAnnotations(members))
            } else {
                unknown[type, default: 0] += 1
            }
        }
        for (type, count) in unknown.sorted(by: { $0.key < $1.key }) {
            snapshot.warnings.append(
                "\(count) managed-app polic\(count == 1 ? "y" : "ies") of type \(type), which Custody does not read: \(count == 1 ? "it is" : "they are") not enforced"
            )
        }
    }

    /// Retired policy types kept in the bundle, by the file-name prefix they are written under.
    static let retired = [
        "#microsoft.graph.windowsinformationprotectionpolicy": "windowsInformationProtectionPolicies",
        "#microsoft.graph.mdmwindowsinformationprotectionpolicy": "mdmWindowsInformationProtectionPolicies",
    ]

    /// The assignment filters the assignments name (`/deviceManagement/assignmentFilters`,
    /// beta; read only when one is named), each as a bundle file of its own. A named filter
    /// Graph does not list is left for the bundle to warn about: read the restrictive way.
    private func readFilters(into snapshot: inout TenantSnapshot) async throws(GraphError) {
        var named = Set<String>()
        for target in snapshot.assignmentTargets {
            let type = target["deviceAndAppManagementAssignmentFilterType"]?.string?.lowercased()
            if let id = target["deviceAndAppManagementAssignmentFilterId"]?.string, !id.isEmpty,
                type == "include" || type == "exclude"
            {
                named.insert(id)
            }
        }
        guard !named.isEmpty else { return }
        let filters = try await client.collect("/deviceManagement/assignmentFilters", of: GraphJSON.self) ?? []
        for filter in filters {
            guard case .object(var members) = filter, let id = members["id"]?.string, named.contains(id) else {
                continue
            }
            members = Self.withoutAnnotations(members)
            members["@odata.type"] = .string("#microsoft.graph.deviceAndAppManagementAssignmentFilter")
            snapshot.policies[Self.fileName(collection: "assignmentFilters", id: id)] = .object(members)
        }
        let missing = named.subtracting(filters.compactMap { $0["id"]?.string })
        for id in missing.sorted() {
            snapshot.warnings.append(
                "assignment filter \(id) is named by an assignment but Graph does not list it: it is read as undecided (an inclusion includes, an exclusion does not exclude)"
            )
        }
    }

    /// A user Graph lists without its UPN: the app may read only "limited information" of
    /// members. Decided by OID alone, every query naming the user's UPN would find an
    /// unmanaged account, so the sync fails instead.
    static func missingUPN(_ id: String) -> GraphError {
        GraphError(
            .permission,
            "user \(id) is listed without a userPrincipalName: the app reads only limited information of users; grant it User.Read.All (or User.ReadBasic.All) so every account is known by its UPN"
        )
    }

    private func readMembers(of groups: [String], into snapshot: inout TenantSnapshot) async throws(GraphError) {
        let reader = MembershipReader(
            client: client, source: source, now: Date(), logger: logger, progress: progress, tracking: tracking)
        let result = try await reader.read(groups, cache: tracking ? cache : nil)
        snapshot.membershipCache = tracking && result.tracked ? result.cache : nil
        snapshot.incremental = result.incremental
        snapshot.groupsRead = result.groupsRead
        for group in groups {
            guard let members = result.members[group] ?? nil else {
                // A group deleted but still named by an assignment reaches no one.
                snapshot.warnings.append("group \(group) named by an assignment does not exist; it reaches no one")
                continue
            }
            for (id, upn) in members.users {
                guard !upn.isEmpty else { throw Self.missingUPN(id) }
                snapshot.users[id, default: (upn, [], nil, nil)].groups.insert(group)
            }
        }
    }

    private func readPolicies(of collection: PolicyCollection, into snapshot: inout TenantSnapshot)
        async throws(GraphError)
    {
        let expand = collection.assigned ? "apps,assignments" : "apps"
        let base = "/deviceAppManagement/\(collection.name)"
        let listed = try await client.collect("\(base)?$expand=\(expand)", of: GraphJSON.self) ?? []
        for item in listed {
            guard case .object(var members) = item, let id = members["id"]?.string, !id.isEmpty else {
                throw GraphError(
                    .invalidResponse, "an item of \(collection.name) has no id",
                    request: "GET \(client.settings.graphURL)\(base)")
            }
            // A navigation Graph paged inside $expand (`apps@odata.nextLink`): its first page
            // alone would protect fewer apps, or miss assignments; read it in full below.
            let paged = ["apps", "assignments"].filter { members["\($0)@odata.nextLink"] != nil }
            members = Self.withoutAnnotations(members)
            for navigation in paged { members[navigation] = nil }
            if members["@odata.type"] == nil { members["@odata.type"] = .string(collection.type) }
            let escaped =
                id.addingPercentEncoding(
                    withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/"))) ?? id
            // A listing that ignored $expand: each policy's apps and assignments read alone.
            var gone = false
            for navigation in collection.assigned ? ["apps", "assignments"] : ["apps"] where members[navigation] == nil
            {
                guard
                    let read = try await client.collect(
                        "\(base)/\(escaped)/\(navigation)", of: GraphJSON.self, missingIsNil: true)
                else {
                    gone = true
                    break
                }
                members[navigation] = .array(read.map { $0.object.map { .object(Self.withoutAnnotations($0)) } ?? $0 })
            }
            if gone {
                // Deleted between the listing and this read: it is not in the tenant now.
                snapshot.warnings.append(
                    "\(collection.name) \(id) was deleted while the tenant was read; it is left out")
                continue
            }
            for navigation in ["apps", "assignments"] {
                if let list = members[navigation]?.array {
                    members[navigation] = .array(list.sorted { ($0["id"]?.string ?? "") < ($1["id"]?.string ?? "") })
                }
            }
            snapshot.policies[Self.fileName(collection: collection.name, id: id)] = .object(members)
        }
    }

    /// A policy's members without Graph's per-response annotations (`@odata.context`,
    /// `apps@odata.context`, …), which change with the request rather than the tenant.
    static func withoutAnnotations(_ members: [String: GraphJSON]) -> [String: GraphJSON] {
        members.filter { key, _ in
            !(key.hasSuffix("@odata.context") || key.hasSuffix("@odata.nextLink") || key.hasSuffix("@odata.count")
                || key.hasSuffix("@odata.deltaLink"))
        }
    }

    /// `{collection}-{id}.json`, the id kept when it is plain and replaced by its SHA-256
    /// otherwise (a file name holds no `/`, no control character, and stays short).
    static func fileName(collection: String, id: String) -> String {
        let plain =
            id.count <= 128
            && id.unicodeScalars.allSatisfy {
                $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "-_.".unicodeScalars.contains($0))
            }
            && !id.hasPrefix(".")
        return "\(collection)-\(plain ? id : GraphBundle.digest(Array(id.utf8))).json"
    }
}

/// A member of a group as `transitiveMembers` lists it: a user (what the cast asks for), or a
/// device or a group from a server that lists every kind; or a user of `/users`.
struct Member: Decodable, Sendable {
    let id: String
    let userPrincipalName: String?
    let type: String?
    /// The user's service plans, when the listing selected them.
    let assignedPlans: [AssignedPlan]?
    /// Whether the account is enabled in Entra ID, when the listing selected it.
    let accountEnabled: Bool?

    struct AssignedPlan: Decodable, Sendable {
        let service: String?
        let capabilityStatus: String?
    }

    enum CodingKeys: String, CodingKey {
        case id, userPrincipalName, assignedPlans, accountEnabled
        case type = "@odata.type"
    }

    /// What a user listing (and the users' delta) selects.
    static let userProperties = "id,userPrincipalName,accountEnabled,assignedPlans"

    /// Whether an enabled Intune service plan (service `SCO`) is among the user's plans; nil
    /// when Graph did not list them.
    var hasIntuneLicense: Bool? { assignedPlans.map(Self.intuneLicense(in:)) }

    /// Whether an enabled Intune service plan (service `SCO`) is among `plans`.
    static func intuneLicense(in plans: [AssignedPlan]) -> Bool {
        plans.contains {
            $0.service?.lowercased() == "sco" && ($0.capabilityStatus ?? "Enabled").lowercased() == "enabled"
        }
    }

    /// Users only: devices, groups and service principals are not accounts.
    var isUser: Bool { (type == nil || type == "#microsoft.graph.user") && !id.isEmpty }
    /// A group nested in the one listed.
    var isGroup: Bool { type == "#microsoft.graph.group" && !id.isEmpty }
}
