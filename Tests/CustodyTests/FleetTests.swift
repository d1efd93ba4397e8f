@testable import Custody
import CustodyPolicy
@testable import CustodyPostgres
import CustodyProtection
import CustodyStore
import CustodyTestSupport
import Foundation
import PostgresNIO
import Testing

/// Replicas of one installation on one PostgreSQL state, in one process: each its own engine,
/// its own connections and its own listener, as separate processes would have.
struct Fleet {
    let directory: TemporaryDirectory
    let url: String
    let bundles: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory()
        bundles = try TemporaryDirectory()
        url = TestPostgres.freshURL("fleet")
    }

    /// A replica named `name` (its connections carry the name in `pg_stat_activity`).
    func replica(_ name: String, url: String? = nil) async throws -> CustodyEngine {
        try await CustodyEngine.open(CustodyConfiguration(
            state: .postgres((url ?? self.url) + "&application_name=\(name)"), masterKey: .keyFile(path: directory.file("master.key")),
            context: EvaluationContext(platform: .ios)))
    }

    /// A bundle directory; `variant` makes its revision differ.
    func bundle(_ variant: Int) throws -> String {
        let path = bundles.file("bundle-\(variant)")
        var bundle = TestBundle()
        bundle.printBlockedA = variant % 2 == 1
        bundle.nameSuffix = " \(variant)"
        try bundle.write(to: path)
        return path
    }
}

/// Runs a SQL statement on the test server as its superuser (to kill connections, say).
func superuser(_ sql: String, database: String = "postgres") throws {
    let url = TestPostgres.url ?? "postgres://custody@127.0.0.1:1/missing"
    let admin = try PostgresState(url: url + (url.contains("?") ? "&" : "?") + "schema=fleet_admin")
    defer { admin.close() }
    _ = try admin.sessions.run("test", transaction: false) { session in try session.execute(PostgresQuery(unsafeSQL: sql)) }
}

@Suite("Fleet mode: replicas on one PostgreSQL state", TestPostgres.enabled, .timeLimit(.minutes(3)))
struct FleetTests {
    @Test("replicas started together share one master key record; a bundle applied through one is in force on all three; a wipe through one leaves the account's envelopes unreadable on all")
    func bundleAndWipe() async throws {
        let fleet = try Fleet()
        // Opened at the same moment on a new state: one records the master key, the others
        // check theirs against its record.
        async let a = fleet.replica("a")
        async let b = fleet.replica("b")
        async let c = fleet.replica("c")
        let replicas = try await [a, b, c]
        let followers = replicas.map { engine in Task { await engine.follow(pollInterval: .seconds(60)) } }
        defer { for follower in followers { follower.cancel() } }
        #expect(await eventually { replicas.allSatisfy { $0.replicaStatus.listening } })

        let applied = try await replicas[0].apply(bundleDirectory: try fleet.bundle(0))
        #expect(await eventually { replicas.allSatisfy { $0.bundleInForce?.revision == applied.bundle.revision } }, "in force everywhere")

        let alice = TestBundle.account("A", 0)
        let bob = TestBundle.account("B", 0)
        let sealed = try replicas[1].protect([1, 2, 3], owner: alice, mode: .forceEncryption).envelope
        let other = try replicas[1].protect([4], owner: bob, mode: .forceEncryption).envelope
        for replica in replicas { #expect(try replica.unprotect(sealed) == [1, 2, 3], "each replica has the key cached now") }

        try await replicas[2].wipe(account: alice, reason: "fleet test")
        let wiped = try replicas[2].database.changeBounds().newest
        #expect(await eventually { replicas.allSatisfy { $0.replicaStatus.revision >= wiped } })
        for (index, replica) in replicas.enumerated() {
            let error = await custodyError { _ = try replica.unprotect(sealed) }
            #expect(error?.code == .protection, "replica \(index) still opened a wiped account's envelope")
            #expect(try replica.unprotect(other) == [4], "other accounts keep their data")
        }

        // A bundle applied on another replica after that, too.
        let second = try await replicas[1].apply(bundleDirectory: try fleet.bundle(1))
        #expect(await eventually { replicas.allSatisfy { $0.bundleInForce?.revision == second.bundle.revision } })
    }

    @Test("a replica whose listening connection is killed reconnects and catches up without losing a change")
    func listenerKilled() async throws {
        let fleet = try Fleet()
        let writer = try await fleet.replica("writer")
        let reader = try await fleet.replica("reader")
        // No polling to speak of: only notices (and the catch-up on reconnecting) bring changes.
        let follower = Task { await reader.follow(pollInterval: .seconds(600), staleAfter: .seconds(600)) }
        defer { follower.cancel() }
        #expect(await eventually { reader.replicaStatus.listening })
        let first = try await writer.apply(bundleDirectory: try fleet.bundle(0))
        #expect(await eventually { reader.bundleInForce?.revision == first.bundle.revision })

        try superuser("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'reader listener'")
        // Changes committed while it is away: it never hears their notices.
        let second = try await writer.apply(bundleDirectory: try fleet.bundle(1))
        try writer.setAuditing(decisions: true)
        #expect(await eventually { reader.bundleInForce?.revision == second.bundle.revision }, "caught up on reconnecting")
        let newest = try writer.database.changeBounds().newest
        #expect(await eventually { reader.replicaStatus.revision == newest && reader.replicaStatus.listening })
    }

    @Test("a replica that cannot reach the state keeps answering from the policy in force, reports itself stale, and recovers")
    func unreachable() async throws {
        let name = "fleet_offline_\(UInt32.random(in: 0..<UInt32.max))"
        try superuser("CREATE DATABASE \(name)")
        let base = try #require(TestPostgres.url)
        let url = base.replacingOccurrences(of: "/postgres?", with: "/\(name)?") + "&schema=custody"
        let fleet = try Fleet()
        let replica = try await fleet.replica("offline", url: url)
        try await replica.apply(bundleDirectory: try fleet.bundle(0))
        let follower = Task { await replica.follow(pollInterval: .milliseconds(100), staleAfter: .milliseconds(500)) }
        defer { follower.cancel() }
        #expect(await eventually { replica.replicaStatus.listening && !replica.replicaStatus.isStale() })

        try superuser("ALTER DATABASE \(name) ALLOW_CONNECTIONS false")
        try superuser("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(name)'")
        #expect(await eventually { replica.replicaStatus.isStale() }, "stale once the state is out of reach")
        #expect(replica.replicaStatus.problem != nil)
        let decision = try replica.policy().print(account: TestBundle.account("B", 0))
        #expect(decision.isAllowed, "answers from the policy in force")

        try superuser("ALTER DATABASE \(name) ALLOW_CONNECTIONS true")
        #expect(await eventually { !replica.replicaStatus.isStale() }, "fresh again once it reaches the state")
        follower.cancel()
        try? superuser("DROP DATABASE \(name) WITH (FORCE)")
    }
}
