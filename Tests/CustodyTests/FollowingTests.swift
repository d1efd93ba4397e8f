@testable import Custody
import CustodyPolicy
import CustodyProtection
import CustodyStore
import CustodyTestSupport
import Foundation
import Synchronization
import Testing

/// What an engine that follows the state's change log keeps, and what it forgets, whatever the
/// backend (SQLite here: two engines on one file stand for two processes).
@Suite("Following the change log", .timeLimit(.minutes(1)))
struct FollowingTests {
    static func engine(_ directory: TemporaryDirectory) async throws -> CustodyEngine {
        try await CustodyEngine.open(
            CustodyConfiguration(
                state: .path(directory.file("state.sqlite")), masterKey: .keyFile(path: directory.file("master.key")),
                context: EvaluationContext(platform: .ios)))
    }

    enum TokenChange: String, CaseIterable, CustomTestStringConvertible {
        case revokeOne, createAnother
        var testDescription: String { rawValue }
    }

    @Test(
        "while following, a token change forgets that token only: a revoked token stops working, the others stay verified without reading the state",
        arguments: TokenChange.allCases)
    func tokenChanges(change: TokenChange) async throws {
        let directory = try TemporaryDirectory()
        let follower = try await Self.engine(directory)
        let other = try await Self.engine(directory)
        let first = try await other.createToken(scopes: [.decide])
        let second = try await other.createToken(scopes: [.decide])
        let following = Task { await follower.follow(pollInterval: .milliseconds(20)) }
        defer { following.cancel() }
        let created = try await other.database.changeBounds().newest
        #expect(await eventually { follower.replicaStatus.revision == created })
        #expect(try await follower.authenticate(bearer: first.bearer) != nil)
        #expect(try await follower.authenticate(bearer: second.bearer) != nil)
        #expect(follower.tokenCache.remembered(first.bearer) != nil, "kept without a time limit while following")

        switch change {
        case .revokeOne: #expect(try await other.revokeToken(id: first.token.id))
        case .createAnother: _ = try await other.createToken(scopes: [.read])
        }
        let changed = try await other.database.changeBounds().newest
        #expect(await eventually { follower.replicaStatus.revision == changed })
        #expect(
            follower.tokenCache.remembered(second.bearer) != nil, "a change to another token leaves this one verified")
        switch change {
        case .revokeOne:
            #expect(follower.tokenCache.remembered(first.bearer) == nil)
            #expect(try await follower.authenticate(bearer: first.bearer) == nil, "revoked elsewhere: refused here")
        case .createAnother:
            #expect(follower.tokenCache.remembered(first.bearer) != nil)
        }
    }

    @Test(
        "while following, decision auditing switched by another process reaches new decision sessions through the change log",
        arguments: [true, false])
    func auditSetting(on: Bool) async throws {
        let directory = try TemporaryDirectory()
        let follower = try await Self.engine(directory)
        let other = try await Self.engine(directory)
        try await follower.apply(bundleDirectory: TestPaths.package("policies"))
        try await other.setAuditing(decisions: !on)
        let following = Task { await follower.follow(pollInterval: .milliseconds(20)) }
        defer { following.cancel() }
        let options = DecisionStream.Options(currentTime: { .zero })
        #expect(await eventually { (try? await follower.decisionSession(options: options).isAuditing) == !on })
        try await other.setAuditing(decisions: on)
        #expect(await eventually { (try? await follower.decisionSession(options: options).isAuditing) == on })
    }

    @Test(
        "work that waits on the state's executor holds none of Swift's cooperative threads", .serialized,
        arguments: [2, 8])
    func stateExecutor(blocked: Int) async throws {
        final class Gate: Sendable {
            let open = Mutex(false)
            let waiting = Atomic<Int>(0)
        }
        let gate = Gate()
        // Were the waiters to hold the pool's threads (there are as many as cores), no other
        // work could run until the gate opens: a thread of its own opens it after a while, so
        // that such a failure is reported, not hung. What is checked is an order (the pool's
        // work finished while every waiter still waited), not a time.
        let watchdog = Thread { [gate] in
            var slept = 0
            while slept < 4_000, !gate.open.withLock({ $0 }) {
                usleep(10_000)
                slept += 1
            }
            gate.open.withLock { $0 = true }
        }
        watchdog.start()
        let waiters = (0..<blocked).map { _ in
            Task {
                await StateExecutor.run {
                    gate.waiting.add(1, ordering: .relaxed)
                    // A synchronous wait, as a state call makes for its server.
                    while !gate.open.withLock({ $0 }) { usleep(1_000) }
                }
            }
        }
        #expect(await eventually { gate.waiting.load(ordering: .relaxed) == blocked }, "every waiter runs at once")
        // Meanwhile, work on the cooperative pool goes on.
        let done = await withTaskGroup(of: Int.self) { group in
            for value in 0..<64 { group.addTask { value } }
            return await group.reduce(0, +)
        }
        let stillWaiting = !gate.open.withLock { $0 }
        #expect(done == 2_016)
        #expect(stillWaiting, "the pool's work finished only after the waiters were let go")
        gate.open.withLock { $0 = true }
        for waiter in waiters { await waiter.value }
    }

    /// When another process's bundle was applied, against the refusal this process told of.
    enum Order: String, CaseIterable, CustomTestStringConvertible {
        case appliedAfterRefusal, appliedBeforeRefusal
        var testDescription: String { rawValue }
    }

    /// An outside run: `/readyz` went on warning that the last bundle offered was refused after
    /// `custody apply` had put a newer bundle in force, where an apply in the process itself
    /// forgets the refusal (`lastBundleRejection`: "since one was put in force").
    @Test(
        "a refusal is forgotten once a bundle applied elsewhere after it is put in force here, and kept for one applied before it",
        arguments: Order.allCases)
    func refusalAndAdoption(order: Order) async throws {
        let directory = try TemporaryDirectory()
        let first = directory.file("first")
        let other = directory.file("other")
        let broken = directory.file("broken")
        try TestBundle().write(to: first)
        try TestBundle(printBlockedA: true).write(to: other)
        try FileManager.default.createDirectory(atPath: broken, withIntermediateDirectories: true)
        try Data("{".utf8).write(to: URL(fileURLWithPath: directory.file("broken/tenant.json")))
        let configuration = CustodyConfiguration(
            state: .path(directory.file("state.sqlite")), context: EvaluationContext(platform: .ios))
        let engine = try await CustodyEngine.open(configuration)
        try await engine.apply(bundleDirectory: first)
        let elsewhere = try await CustodyEngine.open(configuration)
        if order == .appliedBeforeRefusal { try await elsewhere.apply(bundleDirectory: other) }
        // Clocks count in whole microseconds or coarser: the two moments are kept apart.
        try await Task.sleep(for: .milliseconds(20))
        _ = try? await engine.apply(bundleDirectory: broken)
        #expect(engine.lastBundleRejection?.source.hasSuffix("broken") == true, "the refusal is told of")
        try await Task.sleep(for: .milliseconds(20))
        if order == .appliedAfterRefusal { try await elsewhere.apply(bundleDirectory: other) }

        try await engine.applyChanges()
        #expect(engine.bundleInForce?.source == other, "the other process's bundle is in force here")
        switch order {
        case .appliedAfterRefusal:
            #expect(engine.lastBundleRejection == nil, "a bundle applied after the refusal makes it past")
        case .appliedBeforeRefusal:
            #expect(engine.lastBundleRejection != nil, "the refusal came after that bundle: still the latest word")
        }
    }
}
