import Foundation
import Logging

/// What the connector keeps between syncs (in the state, as the cache `graph-membership`) so
/// that a repeated sync reads only what changed: the members of every group it read, and the
/// delta links (`/groups/delta`, `/users/delta`) that say which groups and users changed since.
///
/// Kept for one tenant (`source`); read in full again once a day, when Graph no longer honours
/// a link, or when the cache is of another version or tenant.
struct MembershipCache: Codable, Sendable, Equatable {
    /// 2: every user's UPN, license and account state kept, the users' link selecting them.
    static let currentVersion = 2
    /// Its name in the state.
    static let name = "graph-membership"
    /// How long a full read is trusted before the next sync reads every group again.
    static let fullReadInterval: TimeInterval = 86_400

    var version = currentVersion
    var source: String
    /// When the members were last read in full (seconds since 1970).
    var fullReadAt: TimeInterval
    /// The members of each group read, by group ID.
    var groups: [String: GroupMembers]
    /// Delta links, each for up to `GroupDeltaLink.limit` of the groups tracked (the groups
    /// assigned and the groups nested in them).
    var groupLinks: [GroupDeltaLink]
    /// The delta link of `/users/delta`: renamed, deleted, newly (un)licensed, disabled users.
    var userLink: String
    /// Every user of the tenant, by OID, as the last listing and the users' rounds since say:
    /// what a repeated sync needs of `/users` without listing it again. Nil until a sync that
    /// tracks changes has listed them.
    var users: [String: UserRecord]? = nil

    var trackedGroups: Set<String> { Set(groupLinks.flatMap(\.groups)) }

    /// Whether the cache may be used for `source` at `now`.
    func usable(for source: String, at now: Date) -> Bool {
        version == Self.currentVersion && self.source == source
            && now.timeIntervalSince1970 - fullReadAt < Self.fullReadInterval
            && now.timeIntervalSince1970 >= fullReadAt
    }
}

/// A user as the connector keeps it: its UPN ("" when Graph gave none), whether it holds an
/// Intune license and whether its account is enabled (nil: Graph did not say).
struct UserRecord: Codable, Sendable, Equatable {
    var upn: String
    var licensed: Bool?
    var enabled: Bool?
}

/// The transitive members of one group: its users (OID → UPN, "" when Graph gave none) and the
/// groups nested in it, at any depth.
struct GroupMembers: Codable, Sendable, Equatable {
    var users: [String: String]
    var nested: [String]
}

/// A `/groups/delta` link that tracks these groups.
struct GroupDeltaLink: Codable, Sendable, Equatable {
    /// Graph takes at most 50 `id eq` terms in one delta filter.
    static let limit = 50
    var groups: [String]
    var link: String
}

/// Reads the members of the assigned groups, by delta when a usable cache says what was read
/// before, in full otherwise.
struct MembershipReader {
    let client: GraphClient
    let source: String
    let now: Date
    let logger: Logger
    let progress: (@Sendable (String) -> Void)?
    /// Whether to take delta links (for a cache kept for the next sync).
    var tracking: Bool

    /// The groups' members (nil: the group does not exist), the cache to keep, and whether the
    /// read was by delta.
    struct Result {
        var members: [String: GroupMembers?] = [:]
        var cache: MembershipCache
        var incremental: Bool
        var groupsRead = 0
        /// Whether the delta links were taken: the cache is worth keeping.
        var tracked = true
    }

    func read(_ assigned: [String], cache: MembershipCache?) async throws(GraphError) -> Result {
        if tracking, let cache, cache.usable(for: source, at: now) {
            do {
                return try await incremental(assigned, cache: cache)
            } catch  where error.code == .deltaUnavailable {
                logger.warning("the kept delta links cannot be used; every group is read: \(error)")
            }
        }
        if tracking {
            do {
                return try await full(assigned)
            } catch  where error.code == .deltaUnavailable {
                // Refused (User.Read.All or GroupMember.Read.All withdrawn), or links Graph
                // should not give: every group read, nothing kept, as a sync to a directory.
                logger.warning(
                    "delta queries cannot be used; this sync reads every group and keeps nothing (delta reads need User.Read.All and GroupMember.Read.All): \(error)"
                )
            }
        }
        var reader = self
        reader.tracking = false
        return try await reader.full(assigned)
    }

    /// Every group read; with `tracking`, the delta links taken first, so a change made
    /// meanwhile is in the next round.
    private func full(_ assigned: [String]) async throws(GraphError) -> Result {
        let userLink =
            tracking ? try await latest("/users/delta?$select=\(Member.userProperties)&$deltatoken=latest") : ""
        var result = Result(
            cache: MembershipCache(
                source: source, fullReadAt: now.timeIntervalSince1970, groups: [:], groupLinks: [], userLink: userLink),
            incremental: false)
        result.tracked = tracking
        try await track(Set(assigned), in: &result.cache)
        try await readGroups(assigned, into: &result)
        return result
    }

    /// The groups that changed since the cache's links (or hold a nested group that did), and
    /// groups not read before; the others as cached, with renamed and deleted users applied.
    private func incremental(_ assigned: [String], cache: MembershipCache) async throws(GraphError) -> Result {
        var cache = cache
        var changed = Set<String>()
        for index in cache.groupLinks.indices {
            let round = try await deltaRound(cache.groupLinks[index].link)
            changed.formUnion(round.items.map(\.id))
            cache.groupLinks[index].link = round.deltaLink
        }
        let users = try await deltaRound(cache.userLink)
        cache.userLink = users.deltaLink
        // A renamed user keeps its groups; a deleted one leaves them (the groups' own rounds
        // say so too). The kept users take every change: name, license, account state.
        for user in users.items {
            for group in cache.groups.keys where cache.groups[group]?.users[user.id] != nil {
                if user.removed {
                    cache.groups[group]?.users[user.id] = nil
                } else if let upn = user.userPrincipalName {
                    cache.groups[group]?.users[user.id] = upn
                }
            }
            guard cache.users != nil else { continue }
            if user.removed {
                cache.users?[user.id] = nil
                continue
            }
            var record = cache.users?[user.id] ?? UserRecord(upn: "")
            if let upn = user.userPrincipalName { record.upn = upn }
            // A property the round includes changed, null included ("This includes properties
            // being set to null value", Graph's user delta page).
            if user.hasAssignedPlans { record.licensed = user.assignedPlans.map(Member.intuneLicense(in:)) }
            if user.hasAccountEnabled { record.enabled = user.accountEnabled }
            cache.users?[user.id] = record
        }
        let toRead = assigned.filter { group in
            guard let members = cache.groups[group] else { return true }
            return changed.contains(group) || members.nested.contains(where: changed.contains)
        }
        var result = Result(cache: cache, incremental: true)
        for group in assigned where !toRead.contains(group) { result.members[group] = cache.groups[group] }
        try await track(Set(toRead).subtracting(cache.trackedGroups), in: &result.cache)
        try await readGroups(toRead, into: &result)
        // Groups no longer assigned are not kept.
        result.cache.groups = result.cache.groups.filter { assigned.contains($0.key) }
        logger.info(
            "group members read by delta",
            metadata: [
                "changed": "\(changed.count)", "read": "\(result.groupsRead)", "users changed": "\(users.items.count)",
            ])
        return result
    }

    /// Reads `groups`; then, for nested groups no link tracks yet, takes links for them and
    /// reads again the groups that hold them (a change before the link was taken is in that
    /// read, one after it in the next round), until no nested group is new.
    private func readGroups(_ groups: [String], into result: inout Result) async throws(GraphError) {
        var pending = groups
        while !pending.isEmpty {
            let read = try await members(of: pending)
            result.groupsRead += read.count
            for (group, members) in read {
                result.members[group] = .some(members)
                result.cache.groups[group] = members
            }
            let untracked = Set(read.values.compactMap { $0 }.flatMap(\.nested)).subtracting(result.cache.trackedGroups)
            guard tracking, !untracked.isEmpty else { return }
            try await track(untracked, in: &result.cache)
            pending = read.filter { $0.value?.nested.contains(where: untracked.contains) == true }.map(\.key).sorted()
        }
    }

    /// Takes the latest delta links for `groups` (50 to a link).
    private func track(_ groups: Set<String>, in cache: inout MembershipCache) async throws(GraphError) {
        guard tracking else { return }
        let sorted = groups.sorted()
        for start in stride(from: 0, to: sorted.count, by: GroupDeltaLink.limit) {
            let chunk = Array(sorted[start..<min(start + GroupDeltaLink.limit, sorted.count)])
            let filter = chunk.map { "id eq '\($0.replacingOccurrences(of: "'", with: "''"))'" }.joined(
                separator: " or ")
            let encoded =
                filter.addingPercentEncoding(
                    withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~'"))) ?? filter
            let link = try await latest("/groups/delta?$filter=\(encoded)&$select=members&$deltatoken=latest")
            cache.groupLinks.append(GroupDeltaLink(groups: chunk, link: link))
        }
    }

    /// The deltaLink of a "sync from now" round (`$deltatoken=latest`: no data, only the link).
    private func latest(_ url: String) async throws(GraphError) -> String {
        try await deltaRound(url).deltaLink
    }

    /// One delta round. A link Graph no longer honours (`resyncRequired`), refuses (400, 403,
    /// 404) or answers with what it should not (a link to another host, a page that is not
    /// Graph's) is `deltaUnavailable`: the sync reads every group instead of failing.
    /// Throttling, server errors and timeouts stay failures of the sync, as for any request.
    private func deltaRound(_ url: String) async throws(GraphError) -> (items: [DeltaItem], deltaLink: String) {
        do {
            return try await client.delta(url, of: DeltaItem.self)
        } catch
            where error.code == .resyncRequired || error.code == .invalidResponse
            || [400, 403, 404].contains(error.status ?? 0)
        {
            throw GraphError(.deltaUnavailable, error.message, request: error.request, status: error.status)
        }
    }

    /// The transitive members of each group (nil: it does not exist), read side by side:
    /// users, and the groups nested in it (devices and other objects are not accounts).
    private func members(of groups: [String]) async throws(GraphError) -> [String: GroupMembers?] {
        let client = self.client
        let width = max(1, client.settings.concurrency)
        var read: [String: GroupMembers?] = [:]
        do {
            try await withThrowingTaskGroup(of: (String, [Member]?).self) { tasks in
                var pending = groups[...]
                func start() {
                    guard let group = pending.popFirst() else { return }
                    let escaped =
                        group.addingPercentEncoding(
                            withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? group
                    tasks.addTask {
                        let url = "/groups/\(escaped)/transitiveMembers?$select=id,userPrincipalName&$top=999"
                        return (group, try await client.collect(url, of: Member.self, missingIsNil: true))
                    }
                }
                for _ in 0..<width { start() }
                while let (group, members) = try await tasks.next() {
                    read[group] = .some(
                        members.map { members in
                            var users: [String: String] = [:]
                            for member in members where member.isUser {
                                users[member.id] = users[member.id] ?? member.userPrincipalName ?? ""
                            }
                            let nested = Set(members.filter(\.isGroup).map(\.id)).sorted()
                            return GroupMembers(users: users, nested: nested)
                        })
                    progress?("groups \(read.count)/\(groups.count)")
                    start()
                }
            }
        } catch let error as GraphError {
            throw error
        } catch {
            throw GraphError(.request, "reading group members failed: \(error)")
        }
        return read
    }
}

/// An item of a delta round: what changed (its id), and for a user its UPN, service plans
/// and account state, or `@removed`.
struct DeltaItem: Decodable, Sendable {
    let id: String
    let userPrincipalName: String?
    let assignedPlans: [Member.AssignedPlan]?
    let accountEnabled: Bool?
    /// Whether the round includes these properties (a null is a change to null).
    let hasAssignedPlans: Bool
    let hasAccountEnabled: Bool
    let removed: Bool

    enum CodingKeys: String, CodingKey {
        case id, userPrincipalName, assignedPlans, accountEnabled
        case removed = "@removed"
    }

    /// `@removed`: `{"reason": "changed" | "deleted"}`.
    private struct Removal: Decodable {
        let reason: String?
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        userPrincipalName = try container.decodeIfPresent(String.self, forKey: .userPrincipalName)
        assignedPlans = try container.decodeIfPresent([Member.AssignedPlan].self, forKey: .assignedPlans)
        accountEnabled = try container.decodeIfPresent(Bool.self, forKey: .accountEnabled)
        hasAssignedPlans = container.contains(.assignedPlans)
        hasAccountEnabled = container.contains(.accountEnabled)
        // Graph's `@removed` is an object (`{"reason": "changed"}`): anything else is not Graph's.
        if container.contains(.removed) {
            _ = try container.decode(Removal.self, forKey: .removed)
            removed = true
        } else {
            removed = false
        }
    }
}
