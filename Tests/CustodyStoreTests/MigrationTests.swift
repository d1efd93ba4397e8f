import CustodyTestSupport
import Foundation
import GRDB
import Testing

@testable import CustodyStore

@Suite("Bringing older states up to date")
struct MigrationTests {
    @Test(
        "a state written before revisions were stored once keeps every applied bundle's files, one copy per revision, and the bundle in force"
    )
    func bundleFilesOncePerRevision() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        // A state as the previous Custody left it: a copy of the files per application.
        let queue = try DatabaseQueue(path: path)
        try CustodyDatabase.migrator.migrate(queue, upTo: "v6: the change log replicas follow")
        try await queue.write { db in
            let at = Date(timeIntervalSince1970: 1_790_000_000)
            for (id, hash, result) in [
                (1, "aa", "applied"), (2, "bb", "applied"), (3, "aa", "applied"), (4, "cc", "rejected"),
            ] {
                try db.execute(
                    sql:
                        "INSERT INTO bundle_history (id, content_hash, applied_at, source, result) VALUES (?, ?, ?, 'dir', ?)",
                    arguments: [id, hash, at.addingTimeInterval(Double(id)), result])
                guard result == "applied" else { continue }
                for name in ["tenant.json", "policy.json"] {
                    try db.execute(
                        sql: "INSERT INTO bundle_files (bundle_id, name, bytes) VALUES (?, ?, ?)",
                        arguments: [id, name, Data("\(hash) \(name)".utf8)])
                }
            }
        }
        try queue.close()

        let state = try CustodyDatabase(path: path)
        #expect(try await state.storedBundleRevisions() == ["aa": 28, "bb": 28])
        let inForce = try #require(try await state.lastAppliedBundleFiles())
        #expect(inForce.record.id == 3 && inForce.record.contentHash == "aa")
        #expect(inForce.files.map(\.name) == ["policy.json", "tenant.json"])
        #expect(
            inForce.files.map { String(decoding: $0.bytes, as: UTF8.self) } == ["aa policy.json", "aa tenant.json"])
        #expect(
            try await state.bundleHistory().map(\.contentHash) == ["cc", "aa", "bb", "aa"], "the history itself is kept"
        )
    }
}
