@testable import Custody
import CustodyGraph
import CustodyPolicy
import CustodyStore
import CustodyTestSupport
import Foundation
import Synchronization
import Testing

/// Group members by delta: a sync into a state keeps what it read and the `/groups/delta` and
/// `/users/delta` links, and the next sync reads only what changed. Each test checks the
/// bundle against a full read of the same tenant: a delta sync decides exactly as a full one.
@Suite("Graph connector: group members by delta", .timeLimit(.minutes(3)))
struct GraphDeltaTests {
    /// An engine on a state of its own, and a sync for `base`.
    struct Installation {
        let directory: TemporaryDirectory
        let engine: CustodyEngine
        let sync: GraphSync

        init(base: String) async throws {
            directory = try TemporaryDirectory()
            engine = try await CustodyEngine.open(
                CustodyConfiguration(
                    state: .path(directory.file("state.sqlite")), context: EvaluationContext(platform: .ios)))
            sync = try GraphSync(settings: try settings(base))
        }

        /// Syncs into the state; the report and the Graph requests it made. A sync that fails
        /// closes the client first (the test ends there), so the failure is reported, not a
        /// client freed open.
        func run(_ server: GraphServer) async throws -> (report: GraphSyncReport, requests: [String]) {
            let before = server.requests.count
            do {
                let (report, _) = try await sync.sync(into: engine)
                return (report, Array(server.requests.dropFirst(before)))
            } catch {
                await sync.shutdown()
                throw error
            }
        }
    }

    /// The revision a full read of the tenant gives now (a sync to a directory: no cache).
    func fullRevision(_ base: String) async throws -> String {
        let sync = try GraphSync(settings: try settings(base))
        defer { Task { await sync.shutdown() } }
        return try await sync.snapshot().files.contentHash
    }

    @Test(
        "a repeated sync of an unchanged tenant reads the policies and one round of each delta link, no group; the bundle is the same"
    )
    func unchanged() async throws {
        let server = GraphServer(tenant: try standardTenant())
        try await server.serving { base in
            let installation = try await Installation(base: base)
            let first = try await installation.run(server)
            #expect(!first.report.incremental)
            #expect(
                first.report.groupsRead == 3 + 1,
                "finance, contractors, sales, and finance-emea once its link was taken")
            let repeated = try await installation.run(server)
            #expect(repeated.report.incremental)
            #expect(repeated.report.groupsRead == 0)
            #expect(repeated.report.revision == first.report.revision)
            #expect(!repeated.requests.contains { $0.contains("transitiveMembers") }, "\(repeated.requests)")
            // 5 policy listings and the polymorphic managedAppPolicies; one round of each link:
            // the assigned groups', the nested group's (taken when it was found), the users'
            // (which brings licenses and account states up to date: /users is not listed again).
            #expect(repeated.requests.count == 9, "\(repeated.requests)")
            #expect(!repeated.requests.contains { $0.contains("/users?") }, "\(repeated.requests)")
            #expect(repeated.report.revision == (try await fullRevision(base)))
            await installation.sync.shutdown()
        }
    }

    /// Changes to the standard tenant, and how many groups the next sync must read.
    enum Change: String, CaseIterable, CustomTestStringConvertible {
        case memberAdded = "a member added to an assigned group"
        case nestedMemberRemoved = "a member removed from a nested group"
        case userRenamed = "a user renamed"
        case excludedMemberAdded = "an excluded member added"
        case groupNested = "a group nested into an assigned group"
        case groupDeleted = "a group deleted"
        case userUnlicensed = "a user's Intune license removed"
        case userDisabled = "a user disabled"

        var testDescription: String { rawValue }

        func apply(to tenant: inout FakeTenant) {
            switch self {
            case .memberAdded:
                tenant.change(group: "grp-sales") { $0.append(.user(id: People.dave.id, upn: People.dave.upn)) }
            case .nestedMemberRemoved:
                tenant.change(group: "grp-finance-emea") { $0.removeAll { if case .user = $0 { true } else { false } } }
            case .userRenamed: tenant.rename(user: People.bob.id, to: "robert@contoso.com")
            case .excludedMemberAdded:
                tenant.change(group: "grp-contractors") { $0.append(.user(id: People.alice.id, upn: People.alice.upn)) }
            case .groupNested:
                tenant.groups["grp-new"] = [.user(id: People.dave.id, upn: People.dave.upn)]
                tenant.change(group: "grp-sales") { $0.append(.group("grp-new")) }
            case .groupDeleted:
                tenant.change(group: "grp-contractors") { _ in }
                tenant.groups["grp-contractors"] = nil
            case .userUnlicensed: tenant.license(user: People.alice.id, false)
            case .userDisabled: tenant.disable(user: People.alice.id)
            }
        }

        /// Sales read, then read again once grp-new's link is taken; the others once.
        var groupsRead: Int {
            switch self {
            case .userRenamed, .userUnlicensed, .userDisabled: 0
            case .groupNested: 2
            default: 1
            }
        }
    }

    @Test(
        "a change to the tenant: the next sync reads only the groups it touched, and decides as a full read does",
        arguments: Change.allCases)
    func changed(change: Change) async throws {
        let server = GraphServer(tenant: try standardTenant())
        try await server.serving { base in
            let installation = try await Installation(base: base)
            let first = try await installation.run(server)
            server.state.withLock { change.apply(to: &$0.tenant) }
            let next = try await installation.run(server)
            #expect(next.report.incremental)
            #expect(next.report.groupsRead == change.groupsRead, "\(next.requests)")
            #expect(next.report.revision != first.report.revision, "the bundle changed")
            #expect(next.report.revision == (try await fullRevision(base)), "as a full read")
            // And nothing more at the sync after (the links moved on); a group that does not
            // exist is asked for again each time (one request).
            let again = try await installation.run(server)
            #expect(again.report.groupsRead == (change == .groupDeleted ? 1 : 0))
            #expect(again.report.revision == next.report.revision)
            await installation.sync.shutdown()
        }
    }

    @Test("a nested group tracked from its discovery: a member added to it later is read at the next sync")
    func nestedLater() async throws {
        let server = GraphServer(tenant: try standardTenant())
        try await server.serving { base in
            let installation = try await Installation(base: base)
            _ = try await installation.run(server)
            server.state.withLock { state in
                state.tenant.groups["grp-new"] = []
                state.tenant.change(group: "grp-sales") { $0.append(.group("grp-new")) }
            }
            _ = try await installation.run(server)
            server.state.withLock {
                $0.tenant.change(group: "grp-new") { $0.append(.user(id: People.dave.id, upn: People.dave.upn)) }
            }
            let next = try await installation.run(server)
            #expect(next.report.groupsRead == 1, "sales, which holds it")
            #expect(next.report.revision == (try await fullRevision(base)))
            #expect(try installation.engine.policy().print(account: People.account(People.dave)).isAllowed == true)
            await installation.sync.shutdown()
        }
    }

    @Test(
        "the members are read in full when Graph no longer honours a link (410 syncStateNotFound), when the cache is a day old or unreadable, and when the tenant is another"
    )
    func fullAgain() async throws {
        for reason in ["expired link", "a day old", "unreadable", "another version"] {
            let server = GraphServer(tenant: try standardTenant())
            try await server.serving { base in
                let installation = try await Installation(base: base)
                _ = try await installation.run(server)
                let state = installation.engine.database
                switch reason {
                case "expired link":
                    server.state.withLock {
                        $0.tenant.change(group: "grp-sales") {
                            $0.append(.user(id: People.dave.id, upn: People.dave.upn))
                        }; $0.tenant.oldestDelta = $0.tenant.version
                    }
                case "a day old":
                    let text = try await #require(try state.cache("graph-membership"))
                    var object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
                    object["fullReadAt"] = Date().timeIntervalSince1970 - 86_401
                    try await state.saveCache(
                        "graph-membership",
                        String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self))
                case "unreadable":
                    try await state.saveCache("graph-membership", "{not json")
                default:
                    let text = try await #require(try state.cache("graph-membership"))
                    try await state.saveCache(
                        "graph-membership", text.replacingOccurrences(of: #""version":2"#, with: #""version":99"#))
                }
                let next = try await installation.run(server)
                #expect(!next.report.incremental, "\(reason)")
                #expect(next.report.groupsRead == 4, "\(reason)")
                #expect(next.report.revision == (try await fullRevision(base)), "\(reason)")
                let after = try await installation.run(server)
                #expect(after.report.incremental, "\(reason): delta again after the full read")
                await installation.sync.shutdown()
            }
        }
    }

    enum Refusal: String, CaseIterable, CustomTestStringConvertible {
        case usersForbidden = "the users' link answered 403 (User.Read.All withdrawn)"
        case groupsForbidden = "the groups' links answered 403"
        case foreignLink = "a delta round giving a link to another host"
        var testDescription: String { rawValue }
    }

    @Test(
        "delta refused after links were kept: the sync reads every group instead of failing, keeps nothing, and decides as a full read",
        arguments: Refusal.allCases)
    func refusedLater(refusal: Refusal) async throws {
        let server = GraphServer(tenant: try standardTenant())
        try await server.serving { base in
            let installation = try await Installation(base: base)
            _ = try await installation.run(server)
            server.state.withLock { state in
                state.tenant.change(group: "grp-sales") { $0.append(.user(id: People.dave.id, upn: People.dave.upn)) }
                switch refusal {
                case .usersForbidden:
                    state.faults = [
                        Fault(pathContains: "/users/delta", answers: Array(repeating: (403, []), count: 10))
                    ]
                case .groupsForbidden:
                    state.faults = [
                        Fault(pathContains: "/groups/delta", answers: Array(repeating: (403, []), count: 10))
                    ]
                case .foreignLink: state.behaviour.deltaLinkOrigin = "http://127.0.0.2:9"
                }
            }
            let next = try await installation.run(server)
            #expect(!next.report.incremental)
            #expect(next.report.revision == (try await fullRevision(base)))
            #expect(!server.requests.contains { $0.contains("127.0.0.2") }, "nothing follows a link to another host")
            await #expect(try installation.engine.database.cache("graph-membership") == nil, "nothing kept")
            await installation.sync.shutdown()
        }
    }

    @Test(
        "members kept for another Graph root (another port or path on the same host) are not used: every group is read")
    func anotherGraphRoot() async throws {
        let first = GraphServer(tenant: try standardTenant())
        let second = GraphServer(tenant: try standardTenant())
        let directory = try TemporaryDirectory()
        let engine = try await CustodyEngine.open(
            CustodyConfiguration(
                state: .path(directory.file("state.sqlite")), context: EvaluationContext(platform: .ios)))
        try await first.serving { base in
            let sync = try GraphSync(settings: try settings(base))
            _ = try await sync.sync(into: engine)
            await sync.shutdown()
        }
        try await second.serving { base in
            let sync = try GraphSync(settings: try settings(base))
            let (report, _) = try await sync.sync(into: engine)
            await sync.shutdown()
            #expect(!report.incremental)
            #expect(report.groupsRead == 4)
        }
    }

    @Test("an app without User.Read.All (delta refused with 403): every sync reads every group, and nothing is kept")
    func deltaNotAllowed() async throws {
        let server = GraphServer(tenant: try standardTenant())
        server.state.withLock {
            $0.faults = [Fault(pathContains: "/users/delta", answers: Array(repeating: (403, []), count: 10))]
        }
        try await server.serving { base in
            let installation = try await Installation(base: base)
            let first = try await installation.run(server)
            let second = try await installation.run(server)
            #expect(!first.report.incremental && !second.report.incremental)
            #expect(second.report.groupsRead == 3, "the assigned groups, whose listings hold the nested ones")
            await #expect(try installation.engine.database.cache("graph-membership") == nil)
            #expect(second.report.revision == (try await fullRevision(base)))
            await installation.sync.shutdown()
        }
    }

    /// Found from outside: Graph's `@removed` is an object (`{"reason": …}`), and a property
    /// the round includes as null changed to null ("This includes properties being set to null
    /// value", Graph's user delta page). A malformed item makes the round unusable: the members
    /// are read in full, never kept wrong.
    @Test(
        "a users' round with a malformed @removed is not used (full read); a null account state is a change to unknown"
    )
    func hostileUserRounds() async throws {
        let server = GraphServer(tenant: try standardTenant())
        try await server.serving { base in
            let installation = try await Installation(base: base)
            _ = try await installation.run(server)
            server.state.withLock {
                $0.tenant.extraUserDelta = [.object(["id": .string(People.bob.id), "@removed": .string("yes")])]
                $0.tenant.version += 1
            }
            let hostile = try await installation.run(server)
            #expect(!hostile.report.incremental, "the round was not used")
            #expect(hostile.report.revision == (try await fullRevision(base)))

            // Disabled, then enabled again with the round saying null: unknown, as a fresh
            // read that lists it enabled writes nothing either.
            server.state.withLock {
                $0.tenant.extraUserDelta = []
                $0.tenant.disable(user: People.alice.id)
            }
            let disabled = try await installation.run(server)
            #expect(disabled.report.incremental)
            #expect(installation.engine.bundleInForce.map { _ in true } == true)
            server.state.withLock {
                $0.tenant.disabled.remove(People.alice.id)
                $0.tenant.extraUserDelta = [
                    .object([
                        "id": .string(People.alice.id), "userPrincipalName": .string(People.alice.upn),
                        "accountEnabled": .null,
                    ])
                ]
                $0.tenant.version += 1
            }
            let reenabled = try await installation.run(server)
            #expect(reenabled.report.incremental)
            #expect(reenabled.report.revision == (try await fullRevision(base)), "as a full read")
            await installation.sync.shutdown()
        }
    }
}
