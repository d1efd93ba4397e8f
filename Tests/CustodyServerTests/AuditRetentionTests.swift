import CustodyStore
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

@testable import Custody
@testable import CustodyServer

@Suite("serve --audit-retention", .timeLimit(.minutes(1)))
struct AuditRetentionTests {
    @Test("the service prunes the audit log's entries older than the retention at start; newer ones stay")
    func prunesAtStart() async throws {
        let fixture = try await ServiceFixture.make()
        let now = Date()
        let records = (0..<5).map { index in
            AuditRecord(
                .decision, account: "oid:a", action: "print", allowed: true, detail: "old \(index)",
                at: now - 2 * 86_400)
        }
        #expect(try await fixture.engine.database.audit(records) == 5)
        var configuration = fixture.configuration
        configuration.auditRetention = .seconds(86_400)
        try await buildApplication(configuration: configuration, engine: fixture.engine).test(.live) { _ in
            var remaining = 5
            for _ in 0..<100 {
                remaining = try await fixture.engine.auditEntries(since: nil).count {
                    $0.detail?.hasPrefix("old ") == true
                }
                if remaining == 0 { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(remaining == 0)
            let entries = try await fixture.engine.auditEntries(since: nil)
            #expect(entries.contains { $0.action == "prune" && $0.detail?.hasPrefix("5 entries from before ") == true })
            #expect(entries.contains { $0.kind == .bundle }, "what is newer stays")
        }
    }
}
