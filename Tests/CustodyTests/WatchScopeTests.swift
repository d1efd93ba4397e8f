@testable import Custody
import CustodyPolicy
import CustodyProtection
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
}
