@testable import Custody
import CustodyPolicy
import CustodyStore
import CustodyTestSupport
import Foundation
import Logging
import Testing

/// Shadow mode (issue 51): every live decision decided under a candidate too, the
/// disagreements counted.
///
/// The oracle is never the shadow's own code: each query is also decided by a second
/// installation that has the candidate in force, and the shadow must count exactly the
/// differences between its answers and the live ones.
@Suite("Shadow mode: live decisions decided under a candidate too", .timeLimit(.minutes(3)))
struct ShadowTests {
    static let t0 = EngineTests.t0

    /// An installation with the replay tests' base bundle in force and the launch accounts
    /// checked in, and the candidate's directory.
    static func live() async throws -> (Installation, CustodyEngine, candidate: String) {
        let installation = try Installation()
        let engine = try await installation.open()
        try await engine.apply(
            bundleDirectory: try ReplayTests.exampleBundle(in: installation, "base", edits: ReplayTests.baseEdits))
        try await ReplayTests.checkIn(engine, installation, facts: ReplayTests.factsBefore, at: Self.t0 - 60)
        let candidate = try ReplayTests.exampleBundle(in: installation, "candidate", edits: ReplayTests.candidateEdits)
        return (installation, engine, candidate)
    }

    /// Runs the engine's shadow until the returned task is cancelled, and waits until it runs
    /// the state's shadow (or none is set).
    static func runShadow(_ engine: CustodyEngine) async throws -> Task<Void, Never> {
        let task = Task { await engine.runShadow(recordInterval: .milliseconds(1)) }
        let expected = try await engine.shadowStatus().map { $0.isRunning ? $0.id : nil } ?? nil
        for _ in 0..<400 where engine.shadows.current.withLock({ $0?.record.id }) != expected {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(engine.shadows.current.withLock({ $0?.record.id }) == expected, "the shadow runs")
        return task
    }

    @Test(
        "disagreements are counted exactly under concurrent load: what the candidate, in force elsewhere, answers otherwise",
        arguments: [4, 5] as [UInt64])
    func exactUnderLoad(seed: UInt64) async throws {
        let (installation, engine, candidate) = try await Self.live()
        let direct = try Installation()
        let oracle = try await direct.open()
        try await oracle.apply(bundleDirectory: candidate)
        try await ReplayTests.checkIn(oracle, direct, facts: ReplayTests.factsBefore, at: Self.t0 - 60)
        try await engine.setShadow(try BundleFiles.read(directory: candidate), source: candidate, by: "test")
        let shadow = try await Self.runShadow(engine)
        defer { shadow.cancel() }

        let lines = ReplayTests.queries(count: 1_200, seed: seed)
        var after: [String] = []
        for line in lines { after.append(try await ReplayTests.outcome(oracle, line, clock: direct.clock)) }
        // Eight callers at once, as a service's requests come.
        let clock = installation.clock
        let before = try await withThrowingTaskGroup(of: [(Int, String)].self) { group in
            for worker in 0..<8 {
                group.addTask {
                    var outcomes: [(Int, String)] = []
                    for index in stride(from: worker, to: lines.count, by: 8) {
                        outcomes.append((index, try await ReplayTests.outcome(engine, lines[index], clock: clock)))
                    }
                    return outcomes
                }
            }
            var all = [String](repeating: "", count: lines.count)
            for try await outcomes in group { for (index, outcome) in outcomes { all[index] = outcome } }
            return all
        }
        await engine.drainShadow()
        let status = try #require(try await engine.shadowStatus())
        var loosened = 0
        var tightened = 0
        var byAction: [String: Int] = [:]
        for (index, line) in lines.enumerated() where before[index] != after[index] {
            if ReplayTests.loosens(line, before[index], after[index]) { loosened += 1 } else { tightened += 1 }
            let action = try #require(
                (try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["action"] as? String)
            byAction[action, default: 0] += 1
        }
        #expect(status.dropped == 0, "the queue holds these")
        #expect(status.report.decided == lines.count && status.report.refused == 0 && status.report.unreadable == 0)
        #expect(status.report.loosened == loosened && status.report.tightened == tightened, "\(status.report)")
        #expect(status.report.unchanged == lines.count - loosened - tightened)
        #expect(loosened > 0 && tightened > 0)
        #expect(Dictionary(uniqueKeysWithValues: status.report.byAction.map { ($0.key, $0.flipped) }) == byAction)
        #expect(status.replicas == 1 && status.isRunning && status.problem == nil)
        // A loosening flip comes first, with both answers' reasons.
        let first = try #require(status.report.flips.first)
        #expect(first.loosens && first.setting == "printBlocked" && first.before == "block" && first.after == "allow")
        #expect(first.sample.reasonBefore?.contains("printBlocked is true") == true, "\(first.sample)")
        #expect(first.sample.reasonAfter.contains("printBlocked is false"), "\(first.sample)")
    }

    @Test("what is asked for a person (the console's what-if) is no live decision: the shadow does not count it")
    func reportsAreNotLive() async throws {
        let (installation, engine, candidate) = try await Self.live()
        defer { withExtendedLifetime(installation) {} }
        try await engine.setShadow(try BundleFiles.read(directory: candidate), source: candidate, by: nil)
        let shadow = try await Self.runShadow(engine)
        defer { shadow.cancel() }
        let options = DecisionStream.Options(currentTime: { .seconds(Self.t0.timeIntervalSince1970) })
        let line = Array(#"{"action":"print","account":"alice@contoso.com"}"#.utf8)
        _ = try await engine.decide(line: line, options: options, report: true)
        _ = try await engine.decide(line: line, options: options)
        await engine.drainShadow()
        let status = try #require(try await engine.shadowStatus())
        #expect(status.report.decided == 1 && status.report.loosened == 1)
    }

    @Test(
        "a check-in's launch is a live decision: the shadow decides it with the facts reported"
    )
    func checkInLaunch() async throws {
        let (installation, engine, candidate) = try await Self.live()
        try await engine.setShadow(try BundleFiles.read(directory: candidate), source: candidate, by: nil)
        let shadow = try await Self.runShadow(engine)
        defer { shadow.cancel() }
        // Below iOS 17: the base warns, the candidate blocks (minimumRequiredOsVersion).
        try await ReplayTests.checkIn(engine, installation, facts: ReplayTests.factsBefore, at: Self.t0)
        await engine.drainShadow()
        let status = try #require(try await engine.shadowStatus())
        let flip = try #require(status.report.flips.first)
        // Alice alone of the three is in Finance, whose policy the candidate changes. Microsoft:
        // "minimumRequiredOsVersion ... Block access" and "minimumWarningOsVersion ... Warn" (the
        // iOS app protection settings page): warn becomes block.
        #expect(status.report.decided == 3 && status.report.tightened == 1, "\(status.report.flips)")
        #expect(flip.action == "launch" && flip.before == "warn" && flip.after == "block")
        #expect(flip.sample.account == "alice@contoso.com" && flip.setting == "minimumRequiredOsVersion")
    }

    @Test(
        "a shadow outlives a restart; what each process counted is summed; a second process on the state picks up a new shadow from the change log"
    )
    func restartAndFleet() async throws {
        let (installation, engine, candidate) = try await Self.live()
        let files = try BundleFiles.read(directory: candidate)
        let set = try await engine.setShadow(files, source: candidate, by: "test")
        let line = Array(#"{"action":"print","account":"alice@contoso.com"}"#.utf8)
        let options = DecisionStream.Options(currentTime: { .seconds(Self.t0.timeIntervalSince1970) })
        let first = try await Self.runShadow(engine)
        for _ in 0..<3 { _ = try await engine.decide(line: line, options: options) }
        await engine.drainShadow()
        first.cancel()
        await first.value
        // A new process: the shadow is read from the state.
        let restarted = try await installation.open()
        let second = try await Self.runShadow(restarted)
        defer { second.cancel() }
        #expect(restarted.shadows.current.withLock { $0?.record.id } == set.id)
        for _ in 0..<2 { _ = try await restarted.decide(line: line, options: options) }
        await restarted.drainShadow()
        let status = try #require(try await restarted.shadowStatus())
        #expect(
            status.id == set.id && status.replicas == 2 && status.report.decided == 5 && status.report.loosened == 5)

        // Another replica following the state hears of a stop and of a new shadow.
        let follower = Task { await restarted.follow(pollInterval: .milliseconds(20)) }
        defer { follower.cancel() }
        #expect(try await engine.stopShadow(by: "test"))
        try await Self.waitFor { restarted.shadows.current.withLock { $0 } == nil }
        let again = try await engine.setShadow(files, source: candidate, by: "test")
        try await Self.waitFor { restarted.shadows.current.withLock { $0?.record.id } == again.id }
    }

    static func waitFor(_ condition: () -> Bool) async throws {
        for _ in 0..<500 where !condition() { try await Task.sleep(for: .milliseconds(10)) }
        #expect(condition())
    }

    @Test(
        "promoting the shadow is applying its files: it ends as promoted; stop ends it; its counts stay until another is set"
    )
    func promotionAndStop() async throws {
        let (installation, engine, candidate) = try await Self.live()
        defer { withExtendedLifetime(installation) {} }
        let files = try BundleFiles.read(directory: candidate)
        try await engine.setShadow(files, source: candidate, by: "test")
        let shadow = try await Self.runShadow(engine)
        defer { shadow.cancel() }
        let options = DecisionStream.Options(currentTime: { .seconds(Self.t0.timeIntervalSince1970) })
        _ = try await engine.decide(
            line: Array(#"{"action":"print","account":"alice@contoso.com"}"#.utf8), options: options)
        await engine.drainShadow()
        try await engine.apply(bundleDirectory: candidate)
        let promoted = try #require(try await engine.shadowStatus())
        #expect(!promoted.isRunning && promoted.endedHow == "promoted" && promoted.report.decided == 1)
        #expect(try await !engine.stopShadow(by: "test"), "nothing runs any more")
        // A shadow of the bundle in force would never disagree.
        await #expect(throws: CustodyError.self) { try await engine.setShadow(files, source: candidate, by: nil) }
        let base = try BundleFiles.read(directory: await engine.bundleHistory(limit: 2).last!.source)
        let next = try await engine.setShadow(base, source: "base", by: nil)
        let stopped = try await engine.stopShadow(by: "ops")
        let status = try #require(try await engine.shadowStatus())
        #expect(stopped && status.id == next.id && status.endedHow == "stopped by ops" && status.report.decided == 0)
    }

    @Test(
        "the first disagreement of each kind is logged at warning with both answers, once for the shadow's life, the rest at debug; the shadow's own decisions do not repeat the policy's warnings"
    )
    func logging() async throws {
        let (installation, engine, candidate) = try await Self.live()
        let capture = LogCapture()
        let clock = installation.clock
        let logged = try await CustodyEngine.open(
            CustodyConfiguration(
                state: .path(installation.state), context: EvaluationContext(platform: .ios),
                logger: capture.logger(label: "custody"), now: { clock.now }))
        withExtendedLifetime(engine) {}
        try await logged.setShadow(try BundleFiles.read(directory: candidate), source: candidate, by: nil)
        let shadow = try await Self.runShadow(logged)
        defer { shadow.cancel() }
        let options = DecisionStream.Options(currentTime: { .seconds(Self.t0.timeIntervalSince1970) })
        // Each its own request, its own batch, decided in a wake of its own.
        for line in [
            #"{"action":"print","account":"alice@contoso.com"}"#, #"{"action":"print","account":"alice@contoso.com"}"#,
            #"{"action":"print","account":"alice@contoso.com"}"#,
            #"{"action":"accountAllowed","account":"alice@fabrikam.com"}"#,
        ] {
            _ = try await logged.decide(line: Array(line.utf8), options: options)
            await logged.drainShadow()
        }
        let disagreements = capture.records.filter { $0.message == "the shadow bundle decides otherwise" }
        #expect(disagreements.filter { $0.level == .warning }.count == 1, "\(disagreements.map(\.level))")
        #expect(disagreements.filter { $0.level == .debug }.count == 2)
        let warning = try #require(disagreements.first { $0.level == .warning })
        #expect(warning.metadata["liveReason"]?.contains("printBlocked is true") == true, "\(warning.metadata)")
        #expect(warning.metadata["shadowReason"]?.contains("printBlocked is false") == true)
        #expect(warning.metadata["account"] == "alice@contoso.com" && warning.metadata["setting"] == "printBlocked")
        // alice@fabrikam.com is refused by the policy (another domain): said once, by the live decision.
        #expect(
            capture.records.filter { $0.message.contains("Account not allowed") }.count == 1,
            "\(capture.records.map(\.message))")
    }

    @Test("refused: a shadow that does not load, with its diagnostics; no status without one")
    func refusals() async throws {
        let (installation, engine, _) = try await Self.live()
        #expect(try await engine.shadowStatus() == nil)
        let broken = installation.directory.file("broken")
        try FileManager.default.createDirectory(atPath: broken, withIntermediateDirectories: true)
        try Data(#"{"policies": ["#.utf8).write(to: URL(fileURLWithPath: broken + "/policy.json"))
        let error = await #expect(throws: CustodyError.self) {
            try await engine.setShadow(try BundleFiles.read(directory: broken), source: broken, by: nil)
        }
        #expect(error?.code == .bundle && error?.diagnostics.isEmpty == false)
        #expect(try await engine.shadowStatus() == nil)
    }

    @Test(
        "a full queue drops and counts what it cannot take, never waits; every decision offered is decided or dropped")
    func boundedQueue() async throws {
        let (installation, engine, candidate) = try await Self.live()
        defer { withExtendedLifetime(installation) {} }
        let bundle = try BundleFiles.read(directory: candidate).load()
        let runner = ShadowRunner(
            record: ShadowRecord(id: "q", revision: "r", source: "s", by: nil, since: Self.t0), bundle: bundle,
            precedence: engine.manager.slot.current.snapshot.precedence, logger: engine.logger)
        let snapshot = engine.manager.slot.current.snapshot
        let item = ShadowItem(
            line: Array(#"{"action":"print","account":"alice@contoso.com"}"#.utf8), recordedFacts: nil,
            at: .seconds(Self.t0.timeIntervalSince1970), allowed: false, launch: nil)
        let batch = ShadowBatch(snapshot: snapshot, items: Array(repeating: item, count: ShadowRunner.batchSize))
        let batches = ShadowRunner.queueCapacity / ShadowRunner.batchSize + 3
        // No worker yet: the queue fills, and the rest are dropped at once.
        for _ in 0..<batches { runner.offer(batch) }
        let offered = batches * ShadowRunner.batchSize
        let dropped = 3 * ShadowRunner.batchSize
        runner.finish()
        runner.offer(batch)
        await runner.run { _ in }
        let counts = try #require(runner.takeChangedCounts())
        #expect(counts.dropped == dropped + ShadowRunner.batchSize, "what could not be queued, and after the end")
        #expect(counts.tally.decided == offered - dropped && counts.tally.loosened == offered - dropped)
        #expect(runner.isDrained)
    }
}

@Suite("Shadow mode on a fleet: one shadow for every replica", TestPostgres.enabled, .timeLimit(.minutes(3)))
struct FleetShadowTests {
    @Test(
        "a shadow set through one replica is decided under by all (heard through the change log); the status sums what each counted; applying its files through another promotes it everywhere"
    )
    func fleetWide() async throws {
        let fleet = try await Fleet()
        let a = try await fleet.replica("shadow-a")
        let b = try await fleet.replica("shadow-b")
        let base = try fleet.bundle(0)
        let candidate = try fleet.bundle(1)
        try await a.apply(bundleDirectory: base)
        let followers = [a, b].map { engine in Task { await engine.follow(pollInterval: .seconds(1)) } }
        let shadows = [a, b].map { engine in Task { await engine.runShadow(recordInterval: .milliseconds(1)) } }
        defer { for task in followers + shadows { task.cancel() } }
        try await ShadowTests.waitFor { b.bundleInForce?.revision == a.bundleInForce?.revision }
        let set = try await a.setShadow(try BundleFiles.read(directory: candidate), source: candidate, by: "test")
        // B hears of it from PostgreSQL's notice, well within the poll interval.
        try await ShadowTests.waitFor { b.shadows.current.withLock { $0?.record.id } == set.id }
        // The test bundle's variant 1 blocks printing for account A.
        let line = #"{"action":"print","account":"\#(TestBundle.account("A", 0))"}"#
        for _ in 0..<3 { _ = try await decide(a, line) }
        for _ in 0..<4 { _ = try await decide(b, line) }
        await a.drainShadow()
        await b.drainShadow()
        let status = try #require(try await a.shadowStatus())
        #expect(status.replicas == 2 && status.report.decided == 7 && status.report.tightened == 7, "\(status.report)")
        #expect(status.report.bySetting.map(\.key) == ["printBlocked"])
        try await b.apply(bundleDirectory: candidate)
        try await ShadowTests.waitFor { a.shadows.current.withLock { $0 } == nil }
        #expect(try await a.shadowStatus()?.endedHow == "promoted")
    }
}
