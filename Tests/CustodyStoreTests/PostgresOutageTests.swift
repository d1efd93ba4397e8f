@testable import CustodyPostgres
import CustodyPolicy
import CustodyProtection
import CustodyStore
import CustodyTestSupport
import Foundation
import Logging
import PostgresNIO
import Synchronization
import Testing

/// A PostgreSQL state whose network fails, through a `NetworkProxy`: calls never wait out their
/// own deadlines for a server known not to answer, and the first answer ends the outage.
@Suite("PostgreSQL state: outages", TestPostgres.enabled, .timeLimit(.minutes(2)))
struct PostgresOutageTests {
    /// A state through `proxy`, with a fast heartbeat (so that tests take seconds, not minutes).
    static func state(through proxy: NetworkProxy, _ label: String = "t", url: String? = nil, retry: Duration)
        async throws
        -> PostgresState
    {
        var settings = try PostgresSettings(
            url: TestPostgres.url(url ?? TestPostgres.freshURL(label), throughPort: proxy.port))
        settings.heartbeatInterval = .milliseconds(100)
        settings.heartbeatTimeout = .milliseconds(400)
        settings.retryInterval = retry
        settings.configuration.options.connectTimeout = .seconds(1)
        return try await PostgresState(settings: settings)
    }

    /// How long `body` took, and the `StoreError` it threw (nil: none).
    /// Measured on `TimingExecutor`'s threads: the call's own time, not the test pool's queue.
    static func timed(_ body: @Sendable () async throws -> Void) async -> (seconds: Double, error: StoreError?) {
        await onTimingThreads {
            let start = ContinuousClock.now
            let error = await storeError(body)
            let elapsed = start.duration(to: .now)
            return (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18, error)
        }
    }

    @Test(
        "a state whose network goes silent: the listener's heartbeat finds it, the call in flight gives up then, later calls fail at once with `unavailable`, and the first answer after healing ends it"
    )
    func silentNetwork() async throws {
        let proxy = try TestPostgres.proxy()
        defer { try? proxy.close() }
        let state = try await Self.state(through: proxy, "silent", retry: .seconds(60))
        defer { state.close() }
        var notices = state.changeNotifications().makeAsyncIterator()
        #expect(try await notices.next() == 0, "the listener answers its first heartbeat")
        #expect(try await state.changeBounds().newest == 0)

        proxy.blackhole()
        // A call on a pooled connection: without the heartbeat it would wait its 35 s deadline.
        let inFlight = await Self.timed { _ = try await state.changeBounds() }
        #expect(inFlight.error?.code == .unavailable)
        #expect(inFlight.seconds < 5, "gave up when the heartbeat found the silence, not at its own deadline")
        #expect(state.sessions.unreachable != nil)
        // The listener ended too: its stream says why.
        let ended = await Task {
            do {
                while try await notices.next() != nil {}
                return nil as StoreError?
            } catch {
                return error as? StoreError
            }
        }.value
        #expect(ended?.code == .unavailable)

        // While the state is known not to answer, calls do not try: no wait at all.
        let later = await Self.timed { try await state.addAccountKey(wrapped(owner, 1)) }
        #expect(later.error?.code == .unavailable)
        #expect(later.error?.message.contains("has not answered since") == true)
        #expect(later.seconds < 0.5)

        proxy.heal()
        // A listener is what finds the state again: its first answer ends the outage.
        var again = state.changeNotifications().makeAsyncIterator()
        #expect(try await again.next() == 0)
        #expect(state.sessions.unreachable == nil)
        try await state.addAccountKey(wrapped(owner, 1))
        #expect(try await state.changeBounds().newest == 1, "nothing was written while unreachable")
    }

    @Test(
        "a state whose connections are cut: a call fails with `unavailable` at once; without a listener one call tries again after the retry interval, with one no call does, and the outage ends when it reconnects"
    )
    func cutNetwork() async throws {
        let proxy = try TestPostgres.proxy()
        defer { try? proxy.close() }
        let state = try await Self.state(through: proxy, "cut", retry: .seconds(2))
        defer { state.close() }
        #expect(try await state.changeBounds().newest == 0)

        proxy.cut()
        let first = await Self.timed { _ = try await state.changeBounds() }
        #expect(first.error?.code == .unavailable)
        #expect(first.seconds < 2)
        // No listener: within the retry interval nothing tries; after it, one call does.
        let soon = await Self.timed { _ = try await state.changeBounds() }
        #expect(soon.error?.message.contains("has not answered since") == true, "refused without trying")
        try await Task.sleep(for: .milliseconds(2_100))
        let trial = await Self.timed { _ = try await state.changeBounds() }
        #expect(trial.error?.code == .unavailable)
        #expect(trial.error?.message.contains("cannot connect") == true, "tried again")
        // A listener that cannot connect keeps the outage on; calls do not try while it does.
        let listener = Task {
            for attempt in 0... {
                do {
                    for try await _ in state.changeNotifications() {}
                } catch {}
                if Task.isCancelled { return attempt }
                try? await Task.sleep(for: .milliseconds(100))
            }
            return 0
        }
        defer { listener.cancel() }
        try await Task.sleep(for: .milliseconds(500))
        for _ in 0..<3 {
            let call = await Self.timed { _ = try await state.changeBounds() }
            #expect(call.error?.code == .unavailable)
            #expect(call.error?.message.contains("has not answered since") == true, "refused without trying")
            #expect(call.seconds < 0.2)
        }
        proxy.heal()
        #expect(
            await eventually { state.sessions.unreachable == nil }, "the listener's first heartbeat ends the outage")
        #expect(try await state.changeBounds().newest == 0)
    }

    @Test(
        "opening a state that cannot be reached is an `open` error, never `unavailable`",
        arguments: [NetworkProxy.Mode.cut, .blackhole])
    func openUnreachable(mode: NetworkProxy.Mode) async throws {
        let proxy = try TestPostgres.proxy()
        defer { try? proxy.close() }
        if mode == .cut { proxy.cut() } else { proxy.blackhole() }
        var settings = try PostgresSettings(
            url: TestPostgres.url(TestPostgres.freshURL("open"), throughPort: proxy.port))
        settings.configuration.options.connectTimeout = .seconds(1)
        let error = await storeError { _ = try await PostgresState(settings: settings) }
        #expect(error?.code == .open)
        #expect(error?.message.contains("cannot connect") == true)
    }

    /// Issue 47, item 7: on a slow link a replica's own protect and unprotect waited for the
    /// statement deadline (26 to 60 s) for an account key.
    @Test(
        "on a slow link, what a request waits on (a key, the key generation, a first key) gives up at the request deadline with `unavailable`, changes nothing, and is no outage; other reads wait for the link"
    )
    func slowLink() async throws {
        let proxy = try TestPostgres.proxy()
        defer { try? proxy.close() }
        var settings = try PostgresSettings(
            url: TestPostgres.url(TestPostgres.freshURL("slow") + "&request_timeout=1", throughPort: proxy.port))
        #expect(settings.requestTimeout == .seconds(1))
        settings.retryInterval = .seconds(60)
        let state = try await PostgresState(settings: settings)
        defer { state.close() }
        try await state.addAccountKey(wrapped(owner, 1))

        // 700 ms each way: every round trip takes 1.4 s, longer than the request deadline.
        proxy.slow(.milliseconds(700))
        let calls: [(String, @Sendable () async throws -> Void)] = [
            ("reading the keys of", { _ = try await state.accountKeys(owner: owner.rawValue) }),
            ("reading the key generation", { _ = try await state.keyGeneration() }),
            ("adding key version 2", { try await state.addAccountKey(wrapped(owner, 2)) }),
        ]
        for (what, call) in calls {
            let result = await Self.timed(call)
            #expect(result.error?.code == .unavailable, "\(what): \(String(describing: result.error))")
            #expect(result.error?.message.contains(what) == true, "\(String(describing: result.error))")
            #expect(result.error?.message.contains("request_timeout") == true, "\(String(describing: result.error))")
            #expect(result.seconds >= 0.9 && result.seconds < 2, "\(what) gave up at 1 s, not at 35: \(result.seconds)")
        }
        // Within one request the calls share its deadline: the three together take about the
        // timeout, not three times it (a protect making a first key makes four such calls).
        let request = await Self.timed {
            try await StateRequest.$began.withValue(.now) {
                for (_, call) in calls { _ = await Self.timed(call) }
                throw StoreError(.unavailable, "done")
            }
        }
        #expect(request.seconds < 1.9, "one request, one deadline: \(request.seconds)")
        #expect(state.sessions.unreachable == nil, "a slow state is not an outage: later calls still try")
        // What no request waits on is not cut short: it takes as long as the link does.
        let bounds = await Self.timed { _ = try await state.changeBounds() }
        #expect(bounds.error == nil, "\(String(describing: bounds.error))")
        #expect(bounds.seconds >= 1.4)

        proxy.heal()
        #expect(
            try await state.accountKeys(owner: owner.rawValue).map(\.version) == [1],
            "the abandoned write changed nothing")
    }

    /// Issue 47, item 9: PostgreSQL stopped as a crash would (`-m immediate`), under writes, on
    /// a durable cluster of the test's own.
    @Test(
        "PostgreSQL crashing under writes: every write acknowledged is there after it restarts, every one refused is not, and writes go on after it"
    )
    func serverCrash() async throws {
        let cluster = try await offThePool { try PrivatePostgres() }
        defer { cluster.stop() }
        var settings = try PostgresSettings(url: cluster.url + "&schema=crash")
        settings.retryInterval = .milliseconds(100)
        settings.configuration.options.connectTimeout = .seconds(2)
        let state = try await PostgresState(settings: settings)
        defer { state.close() }

        // One writer, a task of its own: key version after version.
        let outcomes = Mutex<(acknowledged: [UInt32], refused: [UInt32], unknown: [UInt32])>(([], [], []))
        let stop = Atomic<Bool>(false)
        let writer = Task {
            var version: UInt32 = 0
            while !stop.load(ordering: .relaxed) {
                version += 1
                let error = await storeError { try await state.addAccountKey(wrapped(owner, version)) }
                outcomes.withLock {
                    switch error?.code {
                    case nil: $0.acknowledged.append(version)
                    case .outcomeUnknown?: $0.unknown.append(version)
                    default: $0.refused.append(version)
                    }
                }
                if error != nil { try? await Task.sleep(for: .milliseconds(20)) }
            }
        }
        // Writes before the crash, refusals during it, then writes after it: each phase ends
        // when it has happened (a loaded machine is slow), not after a fixed time.
        #expect(
            await eventually(within: .seconds(30)) { outcomes.withLock { $0.acknowledged.count } >= 5 },
            "writes are acknowledged before the crash")
        try await offThePool { try cluster.halt() }
        #expect(
            await eventually(within: .seconds(30)) { !outcomes.withLock { $0.refused.isEmpty } },
            "a write is refused while the server is down")
        let during = outcomes.withLock { $0 }
        try await offThePool { try cluster.resume() }
        let resumed = during.acknowledged.count
        #expect(
            await eventually(within: .seconds(30)) { outcomes.withLock { $0.acknowledged.count } > resumed + 5 },
            "writes go on once the server is back")
        stop.store(true, ordering: .relaxed)
        await writer.value

        let final = outcomes.withLock { $0 }
        let stored = Set(try await state.accountKeys(owner: owner.rawValue).map(\.version))
        #expect(!final.acknowledged.isEmpty && !final.refused.isEmpty, "writes before, during and after: \(final)")
        let lost = final.acknowledged.filter { !stored.contains($0) }
        #expect(lost.isEmpty, "acknowledged, then lost in the crash: \(lost)")
        let ghosts = final.refused.filter { stored.contains($0) }
        #expect(ghosts.isEmpty, "refused (nothing changed), yet committed: \(ghosts)")
        #expect(stored.isSubset(of: Set(final.acknowledged + final.unknown)), "nothing else was written")
    }

    @Test(
        "a commit whose reply the network holds back is `outcome-unknown`, never a refusal, and the state holds what was committed"
    )
    func replyHeldBack() async throws {
        let proxy = try TestPostgres.proxy()
        defer { try? proxy.close() }
        let url = TestPostgres.freshURL("held")
        let state = try await Self.state(through: proxy, url: url, retry: .seconds(60))
        defer { state.close() }
        let direct = try await PostgresState(url: url)
        defer { direct.close() }
        var notices = state.changeNotifications().makeAsyncIterator()
        #expect(try await notices.next() == 0, "the listener answers its first heartbeat")
        let first = String(repeating: "a", count: 64), second = String(repeating: "b", count: 64)
        _ = try await state.recordBundle(
            contentHash: first, source: "test", result: .applied,
            files: [StoredFile(name: "tenant.json", bytes: Array("{}".utf8))], at: Date()
        )

        // The commit waits on the server for a lock this test holds (a key of its own, in the
        // two-number space no product lock uses). Once it waits, the network starts holding back
        // replies and the lock is let go: the server commits, and its reply never arrives.
        let key = Int32.random(in: 1..<Int32.max)
        _ = try await direct.sessions.run("test", transaction: false) { session in
            try await session.execute(
                PostgresQuery(
                    unsafeSQL:
                        "CREATE FUNCTION held_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_advisory_lock(4242, \(key)); PERFORM pg_advisory_unlock(4242, \(key)); RETURN NULL; END $$"
                ))
            try await session.execute(
                PostgresQuery(
                    unsafeSQL: """
                        CREATE CONSTRAINT TRIGGER held_commit AFTER INSERT ON bundle_history DEFERRABLE INITIALLY DEFERRED
                        FOR EACH ROW EXECUTE FUNCTION held_commit()
                        """))
        }
        // The lock is held, and the commit waited for, by this task; the commit is a task of its own.
        var recording: Task<(error: StoreError?, returned: ContinuousClock.Instant), Never>?
        let heldAt: ContinuousClock.Instant? = try await direct.sessions.run("test", transaction: false) { session in
            try await session.execute("SELECT pg_advisory_lock(4242, \(key))")
            recording = Task {
                let error = await storeError {
                    _ = try await state.recordBundle(
                        contentHash: second, source: "test", result: .applied,
                        files: [StoredFile(name: "tenant.json", bytes: Array("{ }".utf8))],
                        at: Date())
                }
                return (error, ContinuousClock.now)
            }
            let waiting = PostgresQuery(
                unsafeSQL:
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = 4242 AND objid = \(key) AND NOT granted"
            )
            let giveUp = ContinuousClock.now + .seconds(30)
            var committing = false
            while !committing, ContinuousClock.now < giveUp {
                committing = try await session.value(waiting, as: Int64.self) == 1
                if !committing { try await Task.sleep(for: .milliseconds(10)) }
            }
            let heldAt = committing ? ContinuousClock.now : nil
            if committing { proxy.holdReplies() }
            try await session.execute("SELECT pg_advisory_unlock(4242, \(key))")
            return heldAt
        }
        let held = try #require(heldAt, "the commit reached the server and waited for the lock")
        let call = try #require(await recording?.value, "the call returned")
        #expect(call.error?.code == .outcomeUnknown, "\(String(describing: call.error))")
        #expect(
            held.duration(to: call.returned) < .seconds(5),
            "found out by the heartbeat once replies were held, not at the statement deadline")
        #expect(try await direct.lastAppliedBundleFiles()?.record.contentHash == second, "the server committed it")
        proxy.heal()
    }
}

/// What counts as evidence of an outage, without a server: a failed attempt begins one only
/// when the server has not answered since the attempt began.
@Suite("PostgreSQL state: what begins an outage")
struct OutageEvidenceTests {
    /// A failure, and how many answers came between the attempt's start and its failure.
    @Test(
        "a failure begins an outage only when no answer came after its attempt began",
        arguments: [(answersMeanwhile: 0, outage: true), (1, false), (3, false)])
    func staleFailures(answersMeanwhile: Int, outage: Bool) throws {
        let sessions = PostgresSessions(
            settings: try PostgresSettings(url: "postgres://custody@127.0.0.1:1/postgres?sslmode=disable"),
            logger: Logger(label: "test"))
        let began = sessions.answerCount
        for _ in 0..<answersMeanwhile { sessions.answered() }
        sessions.lost("the connection was closed", answersBefore: began)
        #expect((sessions.unreachable != nil) == outage)
        // An attempt begun after the latest answer is evidence, whatever came before it.
        sessions.lost("cannot connect", answersBefore: sessions.answerCount)
        #expect(sessions.unreachable?.reason == "cannot connect")
        // And an answer ends it; a failure older than that answer does not bring it back.
        let during = sessions.answerCount
        sessions.answered()
        #expect(sessions.unreachable == nil)
        sessions.lost("a connection the outage closed, found closed late", answersBefore: during)
        #expect(sessions.unreachable == nil, "the state answered after that attempt began")
    }
}

/// `transaction_timeout` and `request_timeout` in a state URL: the replica's own deadlines for
/// a write transaction and for what a request waits on.
@Suite("PostgreSQL state URL: the replica's own deadlines")
struct DeadlineURLTests {
    @Test(
        "transaction_timeout and request_timeout take whole seconds from 1 to 300 (defaults 30 and 3); anything else is an open error that names the parameter",
        arguments: ["transaction_timeout", "request_timeout"],
        [
            ("", nil as Int?, true), ("=1", 1, true), ("=300", 300, true), ("=0", nil, false), ("=301", nil, false),
            ("=2.5", nil, false), ("=", nil, false), ("=-3", nil, false), ("=5&NAME=6", nil, false),
        ] as [(String, Int?, Bool)])
    func deadline(name: String, value: (text: String, seconds: Int?, valid: Bool)) {
        let url =
            "postgres://custody@127.0.0.1:1/postgres?sslmode=disable"
            + (value.text.isEmpty ? "" : "&\(name)\(value.text.replacingOccurrences(of: "NAME", with: name))")
        do {
            let settings = try PostgresSettings(url: url)
            #expect(value.valid)
            let expected = value.seconds ?? (name == "transaction_timeout" ? 30 : 3)
            let got = name == "transaction_timeout" ? settings.transactionTimeout : settings.requestTimeout
            #expect(got == .seconds(expected))
        } catch {
            #expect(!value.valid, "\(error)")
            #expect(error.code == .open)
            #expect(error.message.contains(name), "\(error.message)")
        }
    }
}
