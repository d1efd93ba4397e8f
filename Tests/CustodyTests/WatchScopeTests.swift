@testable import Custody
import CustodyPolicy
import CustodyProtection
import CustodyStore
import CustodyTestSupport
import Foundation
import Testing

/// Which bundle directory a watch applies when none is given.
@Suite("What a watch applies", .timeLimit(.minutes(1)))
struct WatchScopeTests {
    enum Backend: String, CaseIterable, CustomTestStringConvertible {
        case sqlite, postgres
        var testDescription: String { rawValue }
        static var reachable: [Backend] { TestPostgres.available ? allCases : [.sqlite] }
    }

    @Test(
        "without a directory given, a watch applies the one the bundle in force came from on a state of this machine's own, and none on a shared state (a copy there may be another version)",
        arguments: Backend.reachable)
    func implicitWatch(backend: Backend) async throws {
        let directory = try TemporaryDirectory()
        let bundle = directory.file("bundle")
        try TestBundle().write(to: bundle)
        let engine = try await CustodyEngine.open(
            CustodyConfiguration(
                state: backend == .sqlite
                    ? .path(directory.file("state.sqlite")) : .postgres(TestPostgres.freshURL("watch")),
                masterKey: .keyFile(path: directory.file("master.key")), context: EvaluationContext(platform: .ios)))
        let applied = try await engine.apply(bundleDirectory: bundle)
        // This machine's copy changes (on another host: a copy of another version).
        var changed = TestBundle()
        changed.printBlockedA = true
        try changed.write(to: bundle)

        let watch = engine.watch(interval: .milliseconds(20))
        defer { watch.cancel() }
        switch backend {
        case .sqlite:
            #expect(watch.directory == bundle)
            #expect(
                await eventually(within: .seconds(30)) { engine.bundleInForce?.revision != applied.bundle.revision },
                "the change is applied")
        case .postgres:
            #expect(watch.directory == nil)
            try await Task.sleep(for: .milliseconds(400))
            #expect(engine.bundleInForce?.revision == applied.bundle.revision, "the state's policy stays in force")
        }
        #expect(engine.watch(bundleDirectory: bundle).directory == bundle, "a directory given is always watched")
    }

    /// Who puts the second directory's bundle in force while the watch runs.
    enum Mover: String, CaseIterable, CustomTestStringConvertible {
        /// This engine (as SIGHUP or an apply in the same process would).
        case thisEngine
        /// Another process on the same state (`custody apply --state`), heard through `follow`.
        case anotherProcess
        /// Another process, while this engine does not follow the state (`custody watch`): the
        /// watch reads the change log itself (an outside run found `custody watch` never moved).
        case anotherProcessUnfollowed
        var testDescription: String { rawValue }
    }

    /// Noticed in round 3 and left until now: `custody serve` without `--bundle` kept watching
    /// the directory it started from after a bundle was applied from another, so an edit there
    /// replaced the newer bundle, where a restarted service would have watched the other.
    @Test(
        "a watch of the directory the bundle in force came from moves with it: to another directory a bundle is applied from, leaving edits of the first alone; a rollback ends it",
        arguments: Mover.allCases)
    func followsBundleInForce(mover: Mover) async throws {
        let directory = try TemporaryDirectory()
        let first = directory.file("first")
        let second = directory.file("second")
        try TestBundle().write(to: first)
        try TestBundle(printBlockedA: true).write(to: second)
        let configuration = CustodyConfiguration(
            state: .path(directory.file("state.sqlite")), context: EvaluationContext(platform: .ios))
        let engine = try await CustodyEngine.open(configuration)
        let original = try await engine.apply(bundleDirectory: first).bundle.revision
        let watch = engine.watch(interval: .milliseconds(20))
        defer { watch.cancel() }
        let follower = Task {
            if mover != .anotherProcessUnfollowed { await engine.follow(pollInterval: .milliseconds(50)) }
        }
        defer { follower.cancel() }
        #expect(watch.directory == first)

        let moved: String
        switch mover {
        case .thisEngine:
            moved = try await engine.apply(bundleDirectory: second).bundle.revision
        case .anotherProcess, .anotherProcessUnfollowed:
            moved = try await CustodyEngine.open(configuration).apply(bundleDirectory: second).bundle.revision
            #expect(await eventually { engine.bundleInForce?.revision == moved }, "heard through the state")
        }
        #expect(await eventually { watch.directory == second }, "the watch is where a restart would put it")

        // The directory left: edited, it is not read again (the watcher looks every 20 ms and
        // waits 250 ms for an edit to settle).
        try TestBundle(printBlockedB: true).write(to: first)
        try await Task.sleep(for: .milliseconds(800))
        #expect(engine.bundleInForce?.revision == moved, "an edit of the directory left replaced the bundle in force")

        // The directory now watched: edited, it is applied.
        try TestBundle(printBlockedA: true, printBlockedB: true).write(to: second)
        #expect(
            await eventually(within: .seconds(30)) {
                engine.bundleInForce.map { $0.revision != moved && $0.source == second } ?? false
            }, "an edit of the directory now watched is applied")

        // A rollback ends the watch, as a restart after it would not watch (see EngineTests).
        try await engine.rollback(to: original, reason: "test", by: "test")
        #expect(await eventually { watch.directory == nil }, "no directory is watched after a rollback")
        try TestBundle(nameSuffix: " again").write(to: second)
        try await Task.sleep(for: .milliseconds(800))
        #expect(engine.bundleInForce?.revision == original, "the rollback stays")
    }

    /// The same outside run: the service's watch put an edit of its directory in force 16 to 62
    /// ms after `custody apply` had put another directory's bundle in force, having looked at the
    /// bundle in force before that write. Here the engine has not heard of the other bundle at
    /// all (no follower), the widest form of that window: the state's own check refuses it.
    @Test(
        "an edit offered while another writer's bundle is in force on the state, unheard of here, is not applied over it: nothing changes here or in the state"
    )
    func editLosesToAnotherWriter() async throws {
        let directory = try TemporaryDirectory()
        let first = directory.file("first")
        let second = directory.file("second")
        try TestBundle().write(to: first)
        try TestBundle(printBlockedA: true).write(to: second)
        let configuration = CustodyConfiguration(
            state: .path(directory.file("state.sqlite")), context: EvaluationContext(platform: .ios))
        let engine = try await CustodyEngine.open(configuration)
        let original = try await engine.apply(bundleDirectory: first).bundle.revision
        let other = try await CustodyEngine.open(configuration).apply(bundleDirectory: second).bundle.revision
        #expect(engine.bundleInForce?.revision == original, "not heard of here: this engine does not follow")

        try TestBundle(printBlockedB: true).write(to: first)
        let edit = try BundleFiles.read(directory: first)
        let events = try await engine.manager.apply(
            edit, source: first, provenance: BundleProvenance(appliedBy: "watch"), inForceFrom: first)
        #expect(events.isEmpty)
        #expect(engine.bundleInForce?.revision == original, "nothing was put in force here")
        #expect(try await engine.database.lastAppliedBundle()?.contentHash == other, "the other writer's bundle stays")

        // Without the condition (`custody apply`, `--bundle`), the same edit goes in: the
        // refusal is the condition's, not the edit's.
        let applied = try await engine.manager.apply(edit, source: first)
        #expect(!applied.isEmpty)
        #expect(try await engine.database.lastAppliedBundle()?.contentHash == edit.contentHash)
    }
}
