import CustodyStore
import CustodyTestSupport
import Foundation
import Testing

/// `recordBundle(…inForceFrom:…)`: a watch that follows the bundle in force records an edit of
/// its directory only while the state's bundle in force still came from there. An outside run
/// found the service's watch putting an edit of the directory it watched in force 16 to 62 ms
/// after `custody apply` had put another directory's bundle in force (3 of 16 tries): its own
/// look at the bundle in force came before the other write.
@Suite("State store contract: a bundle recorded only over its own directory's")
struct ConditionalRecordTests {
    private static let start = Date(timeIntervalSince1970: 1_790_000_000)

    /// The state's history before the watch's edit of directory "watched" is recorded.
    enum History: String, CaseIterable, CustomTestStringConvertible {
        /// Nothing was ever applied.
        case empty
        /// The watched directory's bundle is in force.
        case watchedInForce
        /// Another writer applied another directory's bundle since.
        case anotherApplied
        /// A rollback put the watched directory's earlier revision back.
        case rolledBack
        /// Another directory's bundle was refused since: a refusal changes nothing in force.
        case anotherRefused
        var testDescription: String { rawValue }

        /// Whether the edit may be recorded over this history.
        var recordsEdit: Bool { self == .watchedInForce || self == .anotherRefused }
    }

    @Test(
        "an edit is recorded only while the bundle in force came from its directory and is no rollback; otherwise a conflict, and nothing is written",
        arguments: Backend.reachable, History.allCases)
    func onlyOverItsOwn(backend: Backend, history: History) async throws {
        let state = try await backend.make(in: TemporaryDirectory())
        func apply(_ hash: String, from source: String, rollback: Bool = false, at offset: TimeInterval) async throws {
            try await state.recordBundle(
                contentHash: hash, source: source, result: .applied, message: nil,
                files: [StoredFile(name: "tenant.json", bytes: Array(hash.utf8))],
                provenance: BundleProvenance(isRollback: rollback), accounts: [], reach: [], events: [],
                retaining: 100, at: Self.start + offset)
        }
        switch history {
        case .empty: break
        case .watchedInForce: try await apply("w1", from: "/watched", at: 0)
        case .anotherApplied:
            try await apply("w1", from: "/watched", at: 0)
            try await apply("o1", from: "/other", at: 1)
        case .rolledBack:
            try await apply("w1", from: "/watched", at: 0)
            try await apply("w2", from: "/watched", at: 1)
            try await apply("w1", from: "/watched", rollback: true, at: 2)
        case .anotherRefused:
            try await apply("w1", from: "/watched", at: 0)
            try await state.recordBundle(
                contentHash: "o1", source: "/other", result: .rejected, message: "bad", at: Self.start + 1)
        }
        let before = try await state.lastAppliedBundle()
        let changesBefore = try await state.changes(after: 0).count

        var thrown: StoreError?
        do throws(StoreError) {
            try await state.recordBundle(
                contentHash: "edit", source: "/watched", result: .applied, message: nil,
                files: [StoredFile(name: "tenant.json", bytes: [1])], provenance: .none, accounts: [], reach: [],
                events: [], retaining: 100, inForceFrom: "/watched", at: Self.start + 10)
        } catch {
            thrown = error
        }

        if history.recordsEdit {
            #expect(thrown == nil, "\(String(describing: thrown))")
            #expect(try await state.lastAppliedBundle()?.contentHash == "edit")
        } else {
            #expect(thrown?.code == .conflict, "\(String(describing: thrown))")
            #expect(try await state.lastAppliedBundle() == before, "nothing was written")
            #expect(try await state.changes(after: 0).count == changesBefore, "no change was logged")
        }
    }
}
