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

    init() async throws {
        directory = try TemporaryDirectory()
        bundles = try TemporaryDirectory()
        url = TestPostgres.freshURL("fleet")
    }

    /// A replica named `name` (its connections carry the name in `pg_stat_activity`).
    func replica(_ name: String, url: String? = nil) async throws -> CustodyEngine {
        try await CustodyEngine.open(
            CustodyConfiguration(
                state: .postgres((url ?? self.url) + "&application_name=\(name)"),
                masterKey: .keyFile(path: directory.file("master.key")),
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

/// One decision through a decision session of `engine` (what the service does per request).
func decide(_ engine: CustodyEngine, _ line: String) async throws(CustodyError) -> String {
    var session = try await engine.decisionSession(options: DecisionStream.Options(currentTime: { .seconds(0) }))
    defer { engine.end(session) }
    var output: [UInt8] = []
    Array(line.utf8).withUnsafeBytes { session.answer(line: $0, into: &output) }
    return String(decoding: output, as: UTF8.self)
}

/// Runs `sql` in the schema of `engine`'s PostgreSQL state.
func inSchema(of engine: CustodyEngine, _ sql: String) async throws {
    let state = try #require(engine.database as? PostgresState)
    _ = try await state.sessions.run("test", transaction: false) { session in
        try await session.execute(PostgresQuery(unsafeSQL: sql))
    }
}

/// Runs a SQL statement on the test server as its superuser (to kill connections, say).
func superuser(_ sql: String, database: String = "postgres") async throws {
    let url = TestPostgres.url ?? "postgres://custody@127.0.0.1:1/missing"
    let admin = try await PostgresState(url: url + (url.contains("?") ? "&" : "?") + "schema=fleet_admin")
    defer { admin.close() }
    _ = try await admin.sessions.run("test", transaction: false) { session in
        try await session.execute(PostgresQuery(unsafeSQL: sql))
    }
}

@Suite("Fleet mode: replicas on one PostgreSQL state", TestPostgres.enabled, .serialized, .timeLimit(.minutes(3)))
struct FleetTests {
    @Test(
        "replicas started together share one master key record; a bundle applied through one is in force on all three; a wipe through one leaves the account's envelopes unreadable on all"
    )
    func bundleAndWipe() async throws {
        let fleet = try await Fleet()
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
        #expect(
            await eventually { replicas.allSatisfy { $0.bundleInForce?.revision == applied.bundle.revision } },
            "in force everywhere")

        let alice = TestBundle.account("A", 0)
        let bob = TestBundle.account("B", 0)
        let sealed = try await replicas[1].protect([1, 2, 3], owner: alice, mode: .forceEncryption).envelope
        let other = try await replicas[1].protect([4], owner: bob, mode: .forceEncryption).envelope
        for replica in replicas {
            #expect(try await replica.unprotect(sealed) == [1, 2, 3], "each replica has the key cached now")
        }

        try await replicas[2].wipe(account: alice, reason: "fleet test")
        let wiped = try await replicas[2].database.changeBounds().newest
        #expect(await eventually { replicas.allSatisfy { $0.replicaStatus.revision >= wiped } })
        for (index, replica) in replicas.enumerated() {
            let error = await custodyError { _ = try await replica.unprotect(sealed) }
            #expect(error?.code == .protection, "replica \(index) still opened a wiped account's envelope")
            #expect(try await replica.unprotect(other) == [4], "other accounts keep their data")
        }

        // A bundle applied on another replica after that, too.
        let second = try await replicas[1].apply(bundleDirectory: try fleet.bundle(1))
        #expect(await eventually { replicas.allSatisfy { $0.bundleInForce?.revision == second.bundle.revision } })
    }

    @Test("a replica whose listening connection is killed reconnects and catches up without losing a change")
    func listenerKilled() async throws {
        let fleet = try await Fleet()
        let writer = try await fleet.replica("writer")
        let reader = try await fleet.replica("reader")
        // No polling to speak of: only notices (and the catch-up on reconnecting) bring changes.
        let follower = Task { await reader.follow(pollInterval: .seconds(600), staleAfter: .seconds(600)) }
        defer { follower.cancel() }
        #expect(await eventually { reader.replicaStatus.listening })
        let first = try await writer.apply(bundleDirectory: try fleet.bundle(0))
        #expect(await eventually { reader.bundleInForce?.revision == first.bundle.revision })

        try await superuser(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'reader listener'")
        // Changes committed while it is away: it never hears their notices.
        let second = try await writer.apply(bundleDirectory: try fleet.bundle(1))
        try await writer.setAuditing(decisions: true)
        #expect(
            await eventually { reader.bundleInForce?.revision == second.bundle.revision }, "caught up on reconnecting")
        let newest = try await writer.database.changeBounds().newest
        #expect(await eventually { reader.replicaStatus.revision == newest && reader.replicaStatus.listening })
    }

    @Test(
        "a replica that cannot reach the state keeps answering from the policy in force, reports itself stale, and recovers"
    )
    func unreachable() async throws {
        let name = "fleet_offline_\(UInt32.random(in: 0..<UInt32.max))"
        try await superuser("CREATE DATABASE \(name)")
        let base = try #require(TestPostgres.url)
        let url = base.replacingOccurrences(of: "/postgres?", with: "/\(name)?") + "&schema=custody"
        let fleet = try await Fleet()
        let replica = try await fleet.replica("offline", url: url)
        try await replica.apply(bundleDirectory: try fleet.bundle(0))
        let follower = Task { await replica.follow(pollInterval: .milliseconds(100), staleAfter: .milliseconds(500)) }
        defer { follower.cancel() }
        #expect(await eventually { replica.replicaStatus.listening && !replica.replicaStatus.isStale() })

        try await superuser("ALTER DATABASE \(name) ALLOW_CONNECTIONS false")
        try await superuser("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(name)'")
        #expect(await eventually { replica.replicaStatus.isStale() }, "stale once the state is out of reach")
        // Stale comes with time (no answer within 500 ms); the reason with the call that fails,
        // which on a loaded machine can end after that.
        #expect(await eventually { replica.replicaStatus.problem != nil }, "and why")
        let decision = try replica.policy().print(account: TestBundle.account("B", 0))
        #expect(decision.isAllowed, "answers from the policy in force")

        try await superuser("ALTER DATABASE \(name) ALLOW_CONNECTIONS true")
        #expect(await eventually { !replica.replicaStatus.isStale() }, "fresh again once it reaches the state")
        follower.cancel()
        try? await superuser("DROP DATABASE \(name) WITH (FORCE)")
    }

    @Test(
        "a replica cut off from the state keeps deciding and accepting the tokens it verified, uses no account key, says it is stale; healed, it catches up and the wipe made meanwhile holds there",
        arguments: [NetworkProxy.Mode.blackhole, .cut])
    func partitioned(fault: NetworkProxy.Mode) async throws {
        let fleet = try await Fleet()
        let proxy = try TestPostgres.proxy()
        defer { try? proxy.close() }
        let a = try await fleet.replica("a")
        let c = try await fleet.replica("c", url: TestPostgres.url(fleet.url, throughPort: proxy.port))
        // Stale after 3 s without an answer: with 1 s, a poll held up on a loaded machine (the
        // whole suite beside the tool checks) made c stale before the fault, and it rightly
        // refused to protect.
        let followers = [a, c].map { engine in
            Task { await engine.follow(pollInterval: .milliseconds(200), staleAfter: .seconds(3)) }
        }
        defer { for follower in followers { follower.cancel() } }
        let applied = try await a.apply(bundleDirectory: try fleet.bundle(0))
        #expect(await eventually { c.bundleInForce?.revision == applied.bundle.revision && c.replicaStatus.listening })

        let alice = TestBundle.account("A", 0)
        let bob = TestBundle.account("B", 0)
        let aliceEnvelope = try await c.protect([1], owner: alice, mode: .forceEncryption).envelope
        let bobEnvelope = try await c.protect([2], owner: bob, mode: .forceEncryption).envelope
        let known = try await a.createToken(scopes: [.decide]).bearer
        let unseen = try await a.createToken(scopes: [.decide]).bearer
        let created = try await a.database.changeBounds().newest
        #expect(await eventually { c.replicaStatus.revision == created })
        #expect(try await c.authenticate(bearer: known) != nil)
        #expect(!c.replicaStatus.isStale())

        if fault == .cut { proxy.cut() } else { proxy.blackhole() }
        try await a.wipe(account: alice, reason: "fleet test: partition")
        #expect(await eventually(within: .seconds(12)) { c.replicaStatus.isStale() }, "c says it is stale")
        #expect(await eventually { c.replicaStatus.problem != nil }, "and why")

        // Decisions, and tokens it verified, never wait for the state.
        let start = ContinuousClock.now
        #expect(try await decide(c, #"{"action":"print","account":"b0@contoso.com"}"#).contains(#""allowed":true"#))
        #expect(try c.policy().print(account: bob).isAllowed)
        #expect(try await c.authenticate(bearer: known)?.grants(.decide) == true)
        #expect(
            start.duration(to: .now) < .seconds(6),
            "answered without waiting for the state (which takes 10 s to fail to connect, 35 s to time out)")

        // What it cannot confirm, it refuses: a token it never verified is not called invalid,
        // and no envelope opens, the wiped account's or another's.
        #expect(await custodyError { _ = try await c.authenticate(bearer: unseen) }?.code == .state)
        #expect(await custodyError { _ = try await c.unprotect(aliceEnvelope) }?.code == .state)
        #expect(await custodyError { _ = try await c.unprotect(bobEnvelope) }?.code == .state)
        #expect(await custodyError { _ = try await c.protect([3], owner: bob, mode: .forceEncryption) }?.code == .state)

        proxy.heal()
        #expect(await eventually(within: .seconds(15)) { !c.replicaStatus.isStale() }, "fresh again once healed")
        let newest = try await a.database.changeBounds().newest
        #expect(await eventually { c.replicaStatus.revision == newest }, "caught up with what it missed")
        let error = await custodyError { _ = try await c.unprotect(aliceEnvelope) }
        #expect(error?.code == .protection, "the wipe made while it was cut off holds on c")
        #expect(error?.message.contains("wiped") == true)
        #expect(try await c.unprotect(bobEnvelope) == [2])
        #expect(try await c.authenticate(bearer: unseen) != nil)
    }

    @Test(
        "a bundle applied to the state that does not load on a replica leaves its policy in force and marks it stale with the reason, until a bundle that loads is applied"
    )
    func divergence() async throws {
        let fleet = try await Fleet()
        let a = try await fleet.replica("a")
        let b = try await fleet.replica("b")
        let follower = Task { await b.follow(pollInterval: .seconds(60)) }
        defer { follower.cancel() }
        let first = try await a.apply(bundleDirectory: try fleet.bundle(0))
        #expect(await eventually { b.bundleInForce?.revision == first.bundle.revision && !b.replicaStatus.isStale() })

        // What a newer Custody could write: a bundle this one cannot load.
        let unloadable = String(repeating: "e", count: 64)
        try await a.database.recordBundle(
            contentHash: unloadable, source: "a newer Custody", result: .applied,
            files: [StoredFile(name: "tenant.json", bytes: Array(#"{"accounts": 7}"#.utf8))], at: Date())
        let recorded = try await a.database.changeBounds().newest
        #expect(await eventually { b.replicaStatus.revision == recorded })
        // The contact time is set once the whole catch-up has returned, just after the revision.
        #expect(
            await eventually { b.replicaStatus.reachesState() }, "it reaches the state: the policy is what it lacks")
        let status = b.replicaStatus
        #expect(status.divergence?.contains("does not load here") == true)
        #expect(status.isStale(), "a replica that cannot put the state's policy in force says so")
        #expect(b.bundleInForce?.revision == first.bundle.revision, "the policy in force stays")
        #expect(try await decide(b, #"{"action":"print","account":"a0@contoso.com"}"#).contains(#""allowed""#))

        let second = try await a.apply(bundleDirectory: try fleet.bundle(1))
        #expect(await eventually { b.bundleInForce?.revision == second.bundle.revision })
        // Cleared once the catch-up that put it in force returns, a moment after.
        #expect(await eventually { b.replicaStatus.divergence == nil })
        #expect(await eventually { !b.replicaStatus.isStale() })
    }

    @Test("a replica's own subscribers hear of a bundle another replica applied: its events and its typed streams")
    func subscribersOfOtherReplicas() async throws {
        let fleet = try await Fleet()
        let a = try await fleet.replica("a")
        let b = try await fleet.replica("b")
        try await a.apply(bundleDirectory: try fleet.bundle(0))
        let follower = Task { await b.follow(pollInterval: .seconds(60)) }
        defer { follower.cancel() }
        #expect(
            await eventually { b.bundleInForce?.revision == a.bundleInForce?.revision && b.replicaStatus.listening })
        let alice = TestBundle.account("A", 0)
        var events = b.events().makeAsyncIterator()
        var policies = b.effectivePolicy(for: alice).makeAsyncIterator()
        let before = try #require(await policies.next() ?? nil)
        #expect(before.printBlocked.value == false)

        try await a.apply(bundleDirectory: try fleet.bundle(1))
        let after = try #require(await policies.next() ?? nil)
        #expect(after.printBlocked.value == true, "the typed stream yields the new policy")
        var heard: [PolicyEvent] = []
        while let event = await events.next() {
            heard.append(event)
            if case .policyChanged = event { break }
        }
        #expect(
            heard.contains { if case .policyChanged(let accounts, _) = $0 { accounts.contains(alice) } else { false } })
    }

    @Test(
        "a bundle whose commit the state never confirms is not a refusal: the writer says the outcome is unknown, and the bundle the state committed is in force everywhere once it is heard again"
    )
    func commitNeverConfirmed() async throws {
        let fleet = try await Fleet()
        let proxy = try TestPostgres.proxy()
        defer { try? proxy.close() }
        let a = try await fleet.replica("a")
        let writer = try await fleet.replica("w", url: TestPostgres.url(fleet.url, throughPort: proxy.port))
        let followers = [a, writer].map { engine in
            Task { await engine.follow(pollInterval: .milliseconds(200), staleAfter: .seconds(1)) }
        }
        defer { for follower in followers { follower.cancel() } }
        let first = try await a.apply(bundleDirectory: try fleet.bundle(0))
        #expect(
            await eventually {
                writer.bundleInForce?.revision == first.bundle.revision && writer.replicaStatus.listening
            })

        // The commit of the next bundle takes a second and a half on the server; the writer's
        // connection is cut meanwhile, so its answer never arrives. The server commits anyway.
        try await inSchema(
            of: a,
            "CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(1.5); RETURN NULL; END $$"
        )
        try await inSchema(
            of: a,
            "CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON bundle_history DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION slow_commit()"
        )
        let second = try fleet.bundle(1)
        // Cut from a thread of its own: the apply below blocks a cooperative thread while it
        // waits for the commit, and a busy machine may have no other free for a task.
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.7) { proxy.cut() }
        let error = await custodyError { _ = try await writer.apply(bundleDirectory: second) }
        #expect(error?.code == .outcomeUnknown, "\(String(describing: error))")
        let revision = try BundleFiles.read(directory: second).contentHash
        #expect(error?.message.contains(revision) == true, "it names the revision to check")

        #expect(
            await eventually { a.bundleInForce?.revision == revision },
            "the state committed it: in force on the replica that hears it")
        #expect(try await a.database.bundleHistory().first?.result == .applied, "and it was never recorded as rejected")
        proxy.heal()
        #expect(
            await eventually(within: .seconds(15)) { writer.bundleInForce?.revision == revision },
            "and on the writer once healed")
        try await inSchema(of: a, "DROP TRIGGER slow_commit ON bundle_history")
    }

    @Test(
        "a bundle change while the state is out of reach is a state failure, never an invalid bundle; nothing changes anywhere",
        arguments: [NetworkProxy.Mode.blackhole, .cut])
    func bundleWhileStateAway(fault: NetworkProxy.Mode) async throws {
        let fleet = try await Fleet()
        let proxy = try TestPostgres.proxy()
        defer { try? proxy.close() }
        let a = try await fleet.replica("a")
        let writer = try await fleet.replica("w", url: TestPostgres.url(fleet.url, throughPort: proxy.port))
        let follower = Task { await writer.follow(pollInterval: .milliseconds(200), staleAfter: .seconds(1)) }
        defer { follower.cancel() }
        let first = try await a.apply(bundleDirectory: try fleet.bundle(0))
        #expect(
            await eventually {
                writer.bundleInForce?.revision == first.bundle.revision && writer.replicaStatus.listening
            })
        if fault == .cut { proxy.cut() } else { proxy.blackhole() }
        #expect(await eventually(within: .seconds(8)) { writer.replicaStatus.isStale() })
        let error = await custodyError { _ = try await writer.apply(bundleDirectory: try fleet.bundle(1)) }
        #expect(error?.code == .state, "\(String(describing: error))")
        #expect(writer.bundleInForce?.revision == first.bundle.revision)
        #expect(a.bundleInForce?.revision == first.bundle.revision)
        #expect(try await a.database.bundleHistory().first?.result == .applied, "no rejection recorded")
        proxy.heal()
    }

    @Test(
        "a watched directory changed while the state is out of reach is applied once it is back, not only at the next edit"
    )
    func watchRetriesStateFailure() async throws {
        let fleet = try await Fleet()
        let proxy = try TestPostgres.proxy()
        defer { try? proxy.close() }
        let writer = try await fleet.replica("w", url: TestPostgres.url(fleet.url, throughPort: proxy.port))
        let directory = try fleet.bundle(0)
        let first = try await writer.apply(bundleDirectory: directory)
        proxy.cut()
        var changed = TestBundle()
        changed.printBlockedA = true
        try changed.write(to: directory)
        let watch = writer.watch(bundleDirectory: directory, interval: .milliseconds(50))
        defer { watch.cancel() }
        try await Task.sleep(for: .milliseconds(600))
        #expect(
            writer.bundleInForce?.revision == first.bundle.revision, "nothing is in force that the state did not record"
        )
        proxy.heal()
        #expect(
            await eventually(within: .seconds(15)) { writer.bundleInForce?.revision != first.bundle.revision },
            "the unchanged directory is read again")
        #expect(
            try await writer.database.lastAppliedBundle()?.contentHash == writer.bundleInForce?.revision,
            "and the state records it")
    }

    @Test(
        "bundles put through two replicas at the same moment: the one in force everywhere is the one whose change committed last"
    )
    func concurrentBundles() async throws {
        let fleet = try await Fleet()
        let a = try await fleet.replica("a")
        let b = try await fleet.replica("b")
        let followers = [a, b].map { engine in Task { await engine.follow(pollInterval: .milliseconds(100)) } }
        defer { for follower in followers { follower.cancel() } }
        var variant = 0
        for round in 0..<12 {
            let first = try BundleFiles.read(directory: try fleet.bundle(variant))
            let second = try BundleFiles.read(directory: try fleet.bundle(variant + 1))
            variant += 2
            async let throughA: Void = { _ = try await a.apply(files: first, source: "a") }()
            async let throughB: Void = { _ = try await b.apply(files: second, source: "b") }()
            _ = try await (throughA, throughB)
            let last = try #require(
                try await a.database.changes(after: 0, limit: 100_000).last { $0.kind == .bundle }?.subjects.first)
            #expect(
                try await a.database.lastAppliedBundleFiles()?.record.contentHash == last,
                "round \(round): the state's bundle in force")
            #expect(
                await eventually { a.bundleInForce?.revision == last && b.bundleInForce?.revision == last },
                "round \(round): both replicas")
        }
    }

    @Test(
        "a replica cut off in the middle of its own write does not stall the others' writes: the server ends its transaction within seconds"
    )
    func cutOffMidTransaction() async throws {
        let fleet = try await Fleet()
        let proxy = try TestPostgres.proxy()
        defer { try? proxy.close() }
        let a = try await fleet.replica("a")
        let stuck = try await fleet.replica("s", url: TestPostgres.url(fleet.url, throughPort: proxy.port))
        _ = try await a.apply(bundleDirectory: try fleet.bundle(0))
        // Inserting a history row takes a second on the server; the replica is cut off
        // meanwhile, so its transaction sits open holding the change counter's lock.
        try await inSchema(
            of: a,
            """
            CREATE FUNCTION slow_insert() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN IF current_setting('application_name') = 's' THEN PERFORM pg_sleep(1); END IF; RETURN NULL; END $$
            """)
        try await inSchema(
            of: a,
            "CREATE TRIGGER slow_insert AFTER INSERT ON bundle_history FOR EACH ROW EXECUTE FUNCTION slow_insert()")
        let stalled = Task { try? await stuck.apply(bundleDirectory: try fleet.bundle(1)) }
        try await Task.sleep(for: .milliseconds(500))
        proxy.blackhole()
        try await Task.sleep(for: .milliseconds(800))

        let started = ContinuousClock.now
        let applied = try await a.apply(bundleDirectory: try fleet.bundle(2))
        let waited = started.duration(to: .now)
        #expect(waited < .seconds(9), "a healthy replica's write waited \(waited)")
        let wiped = ContinuousClock.now
        _ = try await a.wipe(account: TestBundle.account("A", 0), reason: "fleet test")
        #expect(wiped.duration(to: .now) < .seconds(2))
        #expect(try await a.database.lastAppliedBundleFiles()?.record.contentHash == applied.bundle.revision)
        proxy.heal()
        _ = await stalled.value
        try await inSchema(of: a, "DROP TRIGGER slow_insert ON bundle_history")
    }

    @Test(
        "a bundle change whose files cannot be read yet is not counted as applied: the replica is behind until it reads them, then puts the bundle in force"
    )
    func unreadableBundleChange() async throws {
        let fleet = try await Fleet()
        let a = try await fleet.replica("a")
        let b = try await fleet.replica("b")
        let first = try await a.apply(bundleDirectory: try fleet.bundle(0))
        let follower = Task { await b.follow(pollInterval: .milliseconds(100), staleAfter: .seconds(1)) }
        defer { follower.cancel() }
        // The bundle is in force on b a moment before its change is counted as applied: wait
        // for both.
        let firstChange = try await a.database.changeBounds().newest
        #expect(
            await eventually {
                b.bundleInForce?.revision == first.bundle.revision && b.replicaStatus.revision == firstChange
                    && !b.replicaStatus.isStale()
            })
        let before = b.replicaStatus.revision

        let second = try await a.apply(bundleDirectory: try fleet.bundle(1))
        try await inSchema(of: a, "ALTER TABLE bundle_revision_files RENAME TO bundle_revision_files_away")
        let newest = try await a.database.changeBounds().newest
        // b hears of the change (the log reads), cannot read the bundle, and stays behind.
        #expect(await eventually { b.replicaStatus.newestKnown == newest && b.replicaStatus.problem != nil })
        try await Task.sleep(for: .milliseconds(300))
        #expect(b.replicaStatus.revision == before, "the change is not counted as applied")
        #expect(b.bundleInForce?.revision == first.bundle.revision)
        #expect(await eventually { b.replicaStatus.isStale() }, "and it says it is behind")

        try await inSchema(of: a, "ALTER TABLE bundle_revision_files_away RENAME TO bundle_revision_files")
        #expect(await eventually { b.bundleInForce?.revision == second.bundle.revision }, "put in force once readable")
        #expect(await eventually { b.replicaStatus.revision == newest && !b.replicaStatus.isStale() })
    }

    @Test(
        "PostgreSQL stopped as a crash would and started again: replicas decide from the policy in force meanwhile, refuse what needs the state, and recover by themselves with nothing lost"
    )
    func serverRestarted() async throws {
        let server = try PrivatePostgres()
        defer { server.stop() }
        let url = server.url + "&schema=custody"
        let fleet = try await Fleet()
        let a = try await fleet.replica("a", url: url)
        let b = try await fleet.replica("b", url: url)
        // Stale after 3 s without an answer, not 1: b protects and unprotects while the state
        // answers, and a poll held up on a loaded machine must not make it stale then.
        let followers = [a, b].map { engine in
            Task { await engine.follow(pollInterval: .milliseconds(200), staleAfter: .seconds(3)) }
        }
        defer { for follower in followers { follower.cancel() } }
        let first = try await a.apply(bundleDirectory: try fleet.bundle(0))
        #expect(await eventually { b.bundleInForce?.revision == first.bundle.revision && b.replicaStatus.listening })
        let alice = TestBundle.account("A", 0)
        let sealed = try await b.protect([7], owner: alice, mode: .forceEncryption).envelope

        try server.halt()
        #expect(
            await eventually(within: .seconds(12)) { a.replicaStatus.isStale() && b.replicaStatus.isStale() },
            "both say they are stale")
        #expect(
            try await decide(b, #"{"action":"print","account":"b0@contoso.com"}"#).contains(#""allowed":true"#),
            "decisions go on")
        #expect(await custodyError { _ = try await b.unprotect(sealed) }?.code == .state, "no key without the state")
        let wipe = await custodyError { try await a.wipe(account: alice, reason: "while down") }
        #expect(wipe?.code == .state, "\(String(describing: wipe))")
        let refused = await custodyError { _ = try await a.apply(bundleDirectory: try fleet.bundle(1)) }
        #expect(
            refused?.code == .state,
            "a bundle change is a state failure, not an invalid bundle: \(String(describing: refused))")

        try server.resume()
        #expect(
            await eventually(within: .seconds(20)) { !a.replicaStatus.isStale() && !b.replicaStatus.isStale() },
            "fresh again by themselves")
        #expect(await eventually { b.replicaStatus.listening }, "listening again")
        #expect(try await b.unprotect(sealed) == [7], "the key is there: the refused wipe did nothing")
        let second = try await a.apply(bundleDirectory: try fleet.bundle(1))
        #expect(await eventually { b.bundleInForce?.revision == second.bundle.revision }, "changes flow again")
        #expect(
            try await a.database.bundleHistory().allSatisfy { $0.result == .applied }, "nothing recorded as rejected")
    }

    /// From an outside run: writes queued on one replica behind another writer's lock each had
    /// the whole transaction deadline once the writes ahead of them let them in, so the twelfth
    /// of twelve bundles was answered after 60 s, and bundles whose callers had given up were
    /// committed when the lock was let go.
    @Test(
        "writes queued on one replica behind another writer's lock are refused within the transaction deadline counted from when they were asked for, and none commits after"
    )
    func queuedWritesKeepTheirDeadline() async throws {
        let fleet = try await Fleet()
        let replica = try await fleet.replica("a", url: fleet.url + "&transaction_timeout=2")
        try await replica.apply(bundleDirectory: try fleet.bundle(0))
        let revision = try #require(replica.bundleInForce?.revision)
        let bundles = try (1...3).map { try BundleFiles.read(directory: try fleet.bundle($0)) }
        let other = try await PostgresState(url: fleet.url)
        defer { other.close() }
        // Another writer holds the change counter's row lock for 5 s: longer than two deadlines,
        // shorter than three, so a write let in after the second one's deadline could commit.
        let holding = Task {
            _ = try? await other.sessions.run("holding the change counter", transaction: true) { session in
                try await session.execute("SELECT value FROM counters WHERE name = 'change' FOR UPDATE")
                try await session.execute("SELECT pg_sleep(5)")
            }
        }
        try await Task.sleep(for: .milliseconds(500))
        let writes = bundles.enumerated().map { index, files in
            Task { () -> (CustodyError?, Duration) in
                let start = ContinuousClock.now
                let error = await custodyError { _ = try await replica.apply(files: files, source: "queued \(index)") }
                return (error, start.duration(to: .now))
            }
        }
        for (index, write) in writes.enumerated() {
            let (error, took) = await write.value
            #expect(error?.code == .state, "write \(index): \(String(describing: error))")
            #expect(
                error?.message.contains("nothing was changed") == true, "write \(index): \(String(describing: error))")
            #expect(took < .seconds(3.5), "write \(index) answered at its 2 s deadline from asking: \(took)")
        }
        await holding.value
        try await Task.sleep(for: .milliseconds(500))
        #expect(replica.bundleInForce?.revision == revision)
        #expect(try await other.lastAppliedBundleFiles()?.record.contentHash == revision, "nothing was committed")
    }
}
