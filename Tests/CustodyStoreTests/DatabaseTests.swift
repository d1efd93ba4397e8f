import CustodyStore
import CustodyTestSupport
import Foundation
import GRDB
import Testing

@Suite("Database")
struct DatabaseTests {
    let t0 = Date(timeIntervalSince1970: 1_790_000_000)

    @Test(
        "--state names a file, or a directory that holds state.sqlite",
        arguments: [
            (state: "db.sqlite", expected: "db.sqlite"),
            (state: "state-dir/", expected: "state-dir/state.sqlite"),
        ])
    func statePaths(state: String, expected: String) async throws {
        #expect(CustodyDatabase.path(forState: state) == expected)
        let directory = try TemporaryDirectory()
        #expect(CustodyDatabase.path(forState: directory.path) == directory.file("state.sqlite"))
    }

    @Test("a database reopens with what was written, and a newer schema is refused with a clear error")
    func reopen() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("nested/state.sqlite")
        try await CustodyDatabase(path: path).checkIn(account: "alice@contoso.com", at: t0)
        #expect(try await CustodyDatabase(path: path).lastCheckIn(account: "alice@contoso.com") == t0)
        let attributes = try FileManager.default.attributesOfItem(atPath: directory.file("nested"))
        #expect((attributes[.posixPermissions] as? Int) == 0o700)

        // A migration this build does not know: written by a newer Custody.
        try runSQL(path, "INSERT INTO grdb_migrations (identifier) VALUES ('v99: from the future')")
        let error = storeError { _ = try CustodyDatabase(path: path) }
        #expect(error?.code == .migration)
        #expect(error?.message.contains("newer Custody") == true)
    }

    @Test("a file that is not a database is a typed error naming it")
    func notADatabase() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        try Data("this is not sqlite".utf8).write(to: URL(fileURLWithPath: path))
        let error = storeError { _ = try CustodyDatabase(path: path) }
        #expect(error?.path == path)
        #expect(error.map { [.open, .migration].contains($0.code) } == true)
    }

    @Test("check-ins keep the latest date")
    func checkIns() async throws {
        let database = try CustodyDatabase()
        try await database.checkIn(account: "alice", at: t0)
        try await database.checkIn(account: "alice", at: t0.addingTimeInterval(-60))
        #expect(try await database.lastCheckIn(account: "alice") == t0)
        try await database.checkIn(account: "alice", at: t0.addingTimeInterval(60))
        #expect(try await database.lastCheckIn(account: "alice") == t0.addingTimeInterval(60))
        #expect(try await database.lastCheckIn(account: "bob") == nil)
        try await database.removeCheckIn(account: "alice")
        #expect(try await database.checkIns().isEmpty)
    }

    @Test("bundle history lists applied and rejected bundles, newest first")
    func bundleHistory() async throws {
        let database = try CustodyDatabase()
        try await database.recordBundle(contentHash: "aa", source: "policies", result: .applied, at: t0)
        try await database.recordBundle(
            contentHash: "bb", source: "policies", result: .rejected, message: "tenant.json:3:5: error",
            at: t0.addingTimeInterval(1))
        let history = try await database.bundleHistory()
        #expect(history.map(\.contentHash) == ["bb", "aa"])
        #expect(history.first?.message == "tenant.json:3:5: error")
        #expect(try await database.lastAppliedBundle()?.contentHash == "aa")
    }

    @Test("the audit log records while on, and not while off")
    func audit() async throws {
        let database = try CustodyDatabase()
        #expect(try await database.isAuditEnabled())
        #expect(
            try await database.audit(
                .decision, account: "alice", action: "saveTo", allowed: false, detail: "blocked", at: t0)
        )
        try await database.setAuditEnabled(false)
        #expect(try await !database.audit(.wipe, account: "alice", action: "wipe", at: t0.addingTimeInterval(1)))
        try await database.setAuditEnabled(true)
        try await database.audit(
            .wipe, account: "bob", action: "wipe", detail: "2 key versions", at: t0.addingTimeInterval(2))
        let entries = try await database.auditEntries()
        #expect(entries.map(\.action) == ["saveTo", "off", "on", "wipe"], "the switches are logged")
        #expect(entries.first?.allowed == false)
        #expect(try await database.auditEntries(since: t0.addingTimeInterval(1)).map(\.account) == [nil, nil, "bob"])
    }

    /// Entries of every shape: each kind, NULL and empty texts, non-ASCII and long texts,
    /// quotes, every `allowed`, a date GRDB formats itself (before 1583) and one in the last second
    /// of 9999.
    @Test(
        "what a decision was asked is kept in its row, its context once in audit_details however many entries and transactions name it, and read back whole"
    )
    func auditedQueriesStoredOnce() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        let asked = [
            AuditedQuery(
                line: #"{"action":"print","account":"a@contoso.com"}"#, context: #"{"revision":"feed"}"#,
                recordedFacts: nil, outcome: nil),
            AuditedQuery(
                line: #"{"action":"launch","account":"a@contoso.com"}"#, context: #"{"revision":"feed"}"#,
                recordedFacts: #"{"osVersion":"17.0"}"#, outcome: "warn"),
        ]
        let records = (0..<300).map { index in
            AuditRecord(
                .decision, account: "a", action: index % 2 == 0 ? "print" : "launch", allowed: true, detail: "reason",
                decisionID: "d\(index)", asked: asked[index % 2], at: t0)
        }
        let database = try CustodyDatabase(path: path)
        #expect(try await database.audit(Array(records[..<150])) == 150)
        #expect(try await database.audit(Array(records[150...])) == 150)
        let texts = try await DatabaseQueue(path: path).read { db in
            try String.fetchAll(db, sql: "SELECT text FROM audit_details")
        }
        #expect(texts.sorted() == ["reason", asked[0].context].sorted(), "\(texts)")
        let entries = try await database.auditEntries(since: nil, limit: 1_000)
        #expect(entries.map(\.asked) == records.map(\.asked))
    }

    @Test(
        "a damaged audit row is an error naming the entry, never an entry without what it lost",
        arguments: [
            ("UPDATE audit_log SET detail = 'mine'", "both a detail of its own and detail"),
            ("DELETE FROM audit_details WHERE text LIKE '{\"revision\"%'", "names context"),
            ("UPDATE audit_log SET context_id = NULL", "keeps a query without the context"),
            ("UPDATE audit_log SET query = NULL", "keeps a context without its query"),
            ("UPDATE audit_log SET detail_id = 999999", "names detail 999999"),
            ("UPDATE audit_log SET kind = 'bogus'", "unknown kind"),
            ("UPDATE audit_log SET at = 'never'", "has no time"),
        ])
    func damagedAuditRows(damage: String, message: String) async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        let database = try CustodyDatabase(path: path)
        let asked = AuditedQuery(
            line: #"{"action":"launch","account":"a@contoso.com"}"#, context: #"{"revision":"feed"}"#,
            recordedFacts: #"{"osVersion":"17.0"}"#, outcome: "warn")
        #expect(
            try await database.audit([
                AuditRecord(
                    .decision, account: "a", action: "launch", allowed: true, detail: "reason", asked: asked, at: t0)
            ]) == 1)
        #expect(try await database.auditEntries(since: nil).first?.asked == asked)
        try await DatabaseQueue(path: path).write { try $0.execute(sql: damage) }
        let reopened = try CustodyDatabase(path: path)
        let t0 = self.t0
        var reads = [{ () async throws -> [AuditEntry] in try await reopened.auditEntries(since: nil) }]
        // A time that is no time is outside every window, and an unknown kind is no decision:
        // only the whole log reads those.
        if !damage.contains("SET at"), !damage.contains("SET kind") {
            reads.append {
                try await reopened.auditDecisions(from: t0 - 1, to: t0 + 1, action: nil, after: 0, limit: 10)
            }
        }
        for read in reads {
            do {
                let entries = try await read()
                Issue.record("\(damage): read \(entries)")
            } catch {
                #expect("\(error)".contains(message), "\(damage): \(error)")
            }
        }
    }

    static func mixedRecords(_ count: Int, from start: Date) -> [AuditRecord] {
        let texts: [String?] = [
            "user1@contoso.com", nil, "", "ünïcødé 👩‍💻 账户", "it's \"quoted\"", String(repeating: "long ", count: 400),
        ]
        let dates = [
            Date(timeIntervalSince1970: -13_000_000_000), Date(timeIntervalSince1970: 253_402_300_799.123),
        ]
        let allowed: [Bool?] = [nil, true, false]
        let kinds = AuditEntry.Kind.allCases
        return (0..<count).map { (index: Int) -> AuditRecord in
            let at: Date = index % 50 == 49 ? dates[index % 2] : start.addingTimeInterval(Double(index) * 0.0015)
            let decisionID: String? = index % 4 == 0 ? nil : "id-\(index)"
            return AuditRecord(
                kinds[index % kinds.count], account: texts[index % texts.count], action: "action \(index)",
                allowed: allowed[index % 3], detail: texts[(index / 2) % texts.count], decisionID: decisionID, at: at)
        }
    }

    @Test(
        "a batch of entries is stored as GRDB stores them one by one, in order, around the rows a statement takes",
        arguments: [0, 1, 2, 63, 64, 65, 127, 128, 129, 300])
    func auditBatches(count: Int) async throws {
        let directory = try TemporaryDirectory()
        let records = Self.mixedRecords(count, from: t0)
        let batched = directory.file("batched.sqlite")
        #expect(try await CustodyDatabase(path: batched).audit(records) == count)
        // The reference: the same schema, each entry inserted through GRDB's own arguments.
        let single = directory.file("single.sqlite")
        _ = try CustodyDatabase(path: single)
        try await DatabaseQueue(path: single).write { db in
            for record in records {
                try db.execute(
                    sql: """
                        INSERT INTO audit_log (at, kind, account, action, allowed, detail, decision_id)
                        VALUES (?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        record.at, record.kind.rawValue, record.account, record.action, record.allowed, record.detail,
                        record.decisionID,
                    ])
            }
        }
        // Each row with its detail, kept in the row (the reference) or in audit_details (the batch).
        let select = """
            SELECT a.id, typeof(a.at), a.at, a.kind, typeof(a.account), a.account, a.action, typeof(a.allowed),
                a.allowed, typeof(coalesce(a.detail, d.text)), coalesce(a.detail, d.text), typeof(a.decision_id),
                a.decision_id
            FROM audit_log a LEFT JOIN audit_details d ON d.id = a.detail_id ORDER BY a.id
            """
        let stored = try DatabaseQueue(path: batched).read { try Row.fetchAll($0, sql: select) }
        let expected = try DatabaseQueue(path: single).read { try Row.fetchAll($0, sql: select) }
        // Each distinct detail once.
        let details = try await DatabaseQueue(path: batched).read { db in
            try String.fetchAll(db, sql: "SELECT text FROM audit_details ORDER BY id")
        }
        var seen: Set<String> = []
        #expect(details == records.compactMap(\.detail).filter { seen.insert($0).inserted })
        #expect(stored.count == expected.count)
        let firstDifference = zip(stored, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset
        #expect(firstDifference == nil, "row \(firstDifference ?? 0): \(stored[firstDifference ?? 0])")
        // And they read back as they were given.
        let entries = try await CustodyDatabase(path: batched).auditEntries(since: nil, limit: count + 10)
        #expect(entries.map(\.detail) == records.map(\.detail))
        #expect(entries.map(\.allowed) == records.map(\.allowed))
    }

    @Test("a detail is stored once across batches, and a batch rolled back leaves no id behind")
    func auditDetailsStoredOnce() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        let database = try CustodyDatabase(path: path)
        func record(_ account: String, _ detail: String?) -> AuditRecord {
            AuditRecord(.decision, account: account, action: "saveTo", allowed: false, detail: detail, at: t0)
        }
        // An entry as Custody wrote them before details were stored once: its detail in the row.
        try runSQL(
            path,
            """
            INSERT INTO audit_log (at, kind, account, action, allowed, detail)
            VALUES ('2026-01-01 00:00:00.000', 'decision', 'older', 'print', 0, 'blocked by P1')
            """)
        try await database.audit([record("a", "blocked by P1"), record("b", "blocked by P1"), record("c", nil)])
        // The second batch's first detail is new and its transaction fails after storing it.
        try runSQL(
            path,
            """
            CREATE TRIGGER refuse BEFORE INSERT ON audit_log WHEN NEW.account = 'refused'
            BEGIN SELECT RAISE(ABORT, 'refused'); END
            """)
        await #expect(throws: StoreError.self) {
            try await database.audit([record("d", "blocked by P2"), record("refused", "blocked by P1")])
        }
        try await database.audit([record("e", "blocked by P2"), record("f", "blocked by P1")])
        let entries = try await database.auditEntries()
        #expect(entries.map(\.account) == ["older", "a", "b", "c", "e", "f"])
        #expect(
            entries.map(\.detail) == [
                "blocked by P1", "blocked by P1", "blocked by P1", nil, "blocked by P2", "blocked by P1",
            ])
        let stored = try await DatabaseQueue(path: path).read { db in
            try String.fetchAll(db, sql: "SELECT text FROM audit_details ORDER BY id")
        }
        #expect(stored == ["blocked by P1", "blocked by P2"])
    }

    @Test("sealed secrets are stored per scope, replaced, and removed")
    func secrets() async throws {
        let database = try CustodyDatabase()
        let secret = SealedSecret(scope: "oid:a", identifier: "vpn", kind: "password", sealed: [1, 2, 3], updated: t0)
        try await database.saveSecret(secret)
        try await database.saveSecret(
            SealedSecret(scope: "", identifier: "vpn", kind: "password", sealed: [9], updated: t0))
        #expect(try await database.secret(scope: "oid:a", identifier: "vpn") == secret)
        try await database.saveSecret(
            SealedSecret(scope: "oid:a", identifier: "vpn", kind: "password", sealed: [4], updated: t0))
        #expect(try await database.secret(scope: "oid:a", identifier: "vpn")?.sealed == [4])
        #expect(try await database.secrets(scope: "").count == 1)
        #expect(try await database.removeSecrets(scope: "oid:a") == 1)
        #expect(try await database.removeSecret(scope: "", identifier: "vpn"))
        #expect(try await !database.removeSecret(scope: "", identifier: "vpn"))
    }
}

extension DatabaseTests {
    /// A row another version (or a hand) damaged, per table the store reads records from: the
    /// reader's error, and what it must say.
    static let damagedRows: [(table: String, sql: String, read: @Sendable (CustodyDatabase) async throws -> Void)] = [
        (
            "tokens", "UPDATE tokens SET created = 'not a time'",
            { _ = try await $0.tokens() }
        ),
        (
            "secrets", "UPDATE secrets SET updated = 'not a time'",
            { _ = try await $0.secrets(scope: "") }
        ),
        (
            "check_ins", "UPDATE check_ins SET at = 'not a time'",
            { _ = try await $0.checkIns() }
        ),
        (
            "audit_log", "UPDATE audit_log SET kind = 'no such kind'",
            { _ = try await $0.auditEntries(since: nil, limit: 100) }
        ),
        (
            "bundle_history", "UPDATE bundle_history SET result = 'no such result'",
            { _ = try await $0.bundleHistory(limit: 10) }
        ),
        (
            "audit_details", "DELETE FROM audit_details",
            { _ = try await $0.auditEntries(since: nil, limit: 100) }
        ),
        (
            "audit_log", "UPDATE audit_log SET detail = 'a second detail' WHERE detail_id IS NOT NULL",
            { _ = try await $0.auditEntries(since: nil, limit: 100) }
        ),
    ]

    @Test(
        "a damaged row is a corrupt state naming what was read, never a crash or a default",
        arguments: damagedRows.indices)
    func damagedRow(index: Int) async throws {
        let (table, sql, read) = Self.damagedRows[index]
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        let database = try CustodyDatabase(path: path)
        try await database.addToken(TokenRecord(id: "t1", name: nil, scopes: ["read"], hash: [1, 2], created: t0))
        try await database.saveSecret(
            SealedSecret(scope: "", identifier: "vpn", kind: "password", sealed: [1], updated: t0))
        try await database.checkIn(account: "alice@contoso.com", at: t0)
        try await database.recordBundle(contentHash: "h", source: "test", result: .applied, at: t0)
        try await database.audit([AuditRecord(.decision, account: "alice", action: "print", detail: "blocked", at: t0)])
        try await read(database)  // whole before
        try runSQL(path, sql)
        let reopened = try CustodyDatabase(path: path)
        do {
            try await read(reopened)
            Issue.record("a damaged \(table) row was read without an error")
        } catch let error as StoreError {
            #expect(error.code == .corrupt, "\(table): \(error)")
        }
    }
}

/// Runs one statement on the file with GRDB directly, bypassing the store (to set up states
/// only another version could write).
func runSQL(_ path: String, _ sql: String) throws {
    try DatabaseQueue(path: path).write { db in try db.execute(sql: sql) }
}
