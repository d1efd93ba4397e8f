import CustodyPolicy
@testable import CustodyPostgres
import CustodyProtection
import CustodyStore
import CustodyTestSupport
import Foundation
import PostgresNIO
import Testing

/// The state backends, each fresh: SQLite in memory and on disk, and PostgreSQL (a schema of
/// its own on the test server) when one is there.
enum Backend: String, CaseIterable, CustomTestStringConvertible {
    case sqliteInMemory, sqliteOnDisk, postgres

    var testDescription: String { rawValue }

    /// Every backend the tests can reach here (PostgreSQL: see `TestPostgres`).
    static var reachable: [Backend] { TestPostgres.available ? allCases : [.sqliteInMemory, .sqliteOnDisk] }

    func make(in directory: TemporaryDirectory) async throws -> any StateStore {
        switch self {
        case .sqliteInMemory: try CustodyDatabase()
        case .sqliteOnDisk: try CustodyDatabase(path: directory.file("state/state.sqlite"))
        case .postgres: try await PostgresState(url: TestPostgres.freshURL("store"))
        }
    }
}

private let t0 = Date(timeIntervalSince1970: 1_790_000_000)

/// One suite, run against every backend: what the engine relies on from a state.
@Suite("State store contract")
struct StateStoreContractTests {
    @Test(
        "accounts keep their first-seen time and aliases; an identifier names its accounts",
        arguments: Backend.reachable)
    func accounts(backend: Backend) async throws {
        let state = try await backend.make(in: TemporaryDirectory())
        try await state.recordAccounts(
            [
                SeenAccount(owner: "oid:a", aliases: ["upn:alice@contoso.com", "oid:a"]),
                SeenAccount(owner: "upn:bob@contoso.com", aliases: []),
            ], at: t0)
        try await state.recordAccounts(
            [SeenAccount(owner: "oid:a", aliases: ["upn:alice.old@contoso.com"])], at: t0 + 60)
        let alice = try #require(try await state.account(owner: "oid:a"))
        #expect(alice.firstSeen == t0)
        #expect(alice.aliases == ["upn:alice.old@contoso.com", "upn:alice@contoso.com"])
        #expect(try await state.account(owner: "oid:nobody") == nil)
        #expect(try await state.owners(named: "upn:alice@contoso.com") == ["oid:a"])
        #expect(try await state.owners(named: "upn:nobody@contoso.com") == [])
        #expect(try await state.accountsFirstSeen() == ["oid:a": t0, "upn:bob@contoso.com": t0])
        #expect(try await state.aliases(ofAccount: "oid:a") == ["upn:alice.old@contoso.com", "upn:alice@contoso.com"])
        #expect(try await state.aliases(ofAccount: "upn:bob@contoso.com") == [])
        #expect(try await state.aliases(ofAccount: "oid:nobody") == nil)
    }

    @Test(
        "a lease is held by one taker at a time, across instances on one state, and is not re-entrant; released, it can be taken again",
        arguments: Backend.reachable)
    func leases(backend: Backend) async throws {
        let directory = try TemporaryDirectory()
        let url = TestPostgres.freshURL("lease")
        // A second instance on the same state (in memory: the same instance).
        let first: any StateStore
        let second: any StateStore
        switch backend {
        case .sqliteInMemory:
            first = try CustodyDatabase()
            second = first
        case .sqliteOnDisk:
            first = try CustodyDatabase(path: directory.file("state.sqlite"))
            second = try CustodyDatabase(path: directory.file("state.sqlite"))
        case .postgres:
            first = try await PostgresState(url: url)
            second = try await PostgresState(url: url)
        }
        let held = try #require(try await first.lease("graph-sync"))
        #expect(try await second.lease("graph-sync") == nil, "held elsewhere")
        #expect(try await first.lease("graph-sync") == nil, "not re-entrant")
        let other = try #require(try await second.lease("other"), "another name is another lease")
        await other.release()
        await held.release()
        let again = try #require(try await second.lease("graph-sync"), "released, it is free")
        await again.release()
        await again.release()
        #expect(try await first.lease("graph-sync") != nil, "released twice is released once")
    }

    @Test("a cache keeps its text by name, replaced or forgotten, outside the change log", arguments: Backend.reachable)
    func caches(backend: Backend) async throws {
        let state = try await backend.make(in: TemporaryDirectory())
        let before = try await state.changeBounds().newest
        #expect(try await state.cache("graph-membership") == nil)
        try await state.saveCache("graph-membership", #"{"a":1}"#)
        try await state.saveCache("other", "x")
        #expect(try await state.cache("graph-membership") == #"{"a":1}"#)
        let large = String(repeating: "é", count: 1 << 20)
        try await state.saveCache("graph-membership", large)
        #expect(try await state.cache("graph-membership") == large, "replaced, whole")
        try await state.saveCache("graph-membership", nil)
        #expect(try await state.cache("graph-membership") == nil)
        #expect(try await state.cache("other") == "x", "names are apart")
        #expect(try await state.changeBounds().newest == before, "no change for replicas to apply")
    }

    @Test(
        "key versions: in order, a version twice is a conflict, deletion counts, the generation moves",
        arguments: Backend.reachable)
    func keys(backend: Backend) async throws {
        let state = try await backend.make(in: TemporaryDirectory())
        let generation = try await state.keyGeneration()
        try await state.addAccountKey(wrapped(owner, 2))
        try await state.addAccountKey(wrapped(owner, 1))
        try await state.addAccountKey(wrapped(other, 1))
        #expect(try await state.accountKeys(owner: owner.rawValue) == [wrapped(owner, 1), wrapped(owner, 2)])
        #expect(await storeError { try await state.addAccountKey(wrapped(owner, 2, fill: 1)) }?.code == .conflict)
        #expect(try await state.accountKeyOwners() == [owner.rawValue, other.rawValue].sorted())
        #expect(try await state.keyGeneration() > generation)
        #expect(try await state.removeAccountKeys(owner: owner.rawValue) == 2)
        #expect(try await state.removeAccountKeys(owner: owner.rawValue) == 0)
        #expect(try await state.accountKeys(owner: owner.rawValue).isEmpty)
    }

    @Test("the master key record is saved once", arguments: Backend.reachable)
    func masterKeyRecord(backend: Backend) async throws {
        let state = try await backend.make(in: TemporaryDirectory())
        #expect(try await state.masterKeyRecord() == nil)
        let record = MasterKeyRecord(
            kind: .passphrase, salt: [UInt8](repeating: 1, count: 16), opsLimit: 3, memLimit: 1 << 26,
            checkNonce: [UInt8](repeating: 2, count: 24),
            checkCiphertext: [UInt8](repeating: 3, count: 48))
        try await state.saveMasterKeyRecord(record)
        #expect(try await state.masterKeyRecord() == record)
        #expect(await storeError { try await state.saveMasterKeyRecord(record) }?.code == .conflict)
    }

    @Test(
        "a wipe deletes keys, secrets and check-ins under every identifier, records them as wiped and logs one change",
        arguments: Backend.reachable)
    func wipe(backend: Backend) async throws {
        let state = try await backend.make(in: TemporaryDirectory())
        try await state.addAccountKey(wrapped(owner, 1))
        try await state.addAccountKey(wrapped(owner, 2))
        try await state.addAccountKey(wrapped(other, 1))
        try await state.saveSecret(
            SealedSecret(scope: other.rawValue, identifier: "vpn", kind: "password", sealed: [1, 2], updated: t0))
        try await state.checkIn(account: owner.rawValue, at: t0)
        let before = try await state.changeBounds().newest
        let counts = try await state.wipe(
            identifiers: [owner.rawValue, other.rawValue], account: owner.rawValue, reason: "test",
            events: [EventRecord(name: "wiped", body: Array("{}".utf8))], at: t0 + 1)
        #expect(counts.keyVersions == [owner.rawValue: 2, other.rawValue: 1])
        #expect(counts.secrets == 1 && counts.checkIns == 1 && counts.eventIDs.count == 1)
        #expect(try await state.accountKeyOwners().isEmpty)
        #expect(try await state.wipeRecord(of: other.rawValue)?.account == owner.rawValue)
        #expect(try await state.wipeRecord(of: "oid:never") == nil)
        let changes = try await state.changes(after: before)
        #expect(changes.map(\.kind) == [.wipe])
        #expect(changes.first?.subjects == [owner.rawValue, other.rawValue])
        #expect(try await state.auditEntries(since: nil).last?.kind == .wipe)
    }

    @Test("secrets are per scope, replaced, removed; each change is logged", arguments: Backend.reachable)
    func secrets(backend: Backend) async throws {
        let state = try await backend.make(in: TemporaryDirectory())
        try await state.saveSecret(SealedSecret(scope: "", identifier: "b", kind: "password", sealed: [1], updated: t0))
        try await state.saveSecret(SealedSecret(scope: "", identifier: "a", kind: "password", sealed: [2], updated: t0))
        try await state.saveSecret(
            SealedSecret(scope: "", identifier: "a", kind: "certificate", sealed: [3], updated: t0 + 1))
        #expect(try await state.secrets(scope: "").map(\.identifier) == ["a", "b"])
        #expect(try await state.secret(scope: "", identifier: "a")?.sealed == [3])
        #expect(try await state.removeSecret(scope: "", identifier: "a"))
        #expect(try await !state.removeSecret(scope: "", identifier: "a"))
        #expect(try await state.removeSecrets(scope: "") == 1)
        #expect(try await state.changes(after: 0).map(\.kind) == [.secret, .secret, .secret, .secret, .secret])
    }

    @Test("check-ins keep the latest time", arguments: Backend.reachable)
    func checkIns(backend: Backend) async throws {
        let state = try await backend.make(in: TemporaryDirectory())
        try await state.checkIn(account: "oid:a", at: t0 + 10)
        try await state.checkIn(account: "oid:a", at: t0)
        #expect(try await state.lastCheckIn(account: "oid:a") == t0 + 10)
        #expect(try await state.checkIns() == ["oid:a": t0 + 10])
        try await state.removeCheckIn(account: "oid:a")
        #expect(try await state.lastCheckIn(account: "oid:a") == nil)
    }

    @Test(
        "launch facts: an account's last report replaces the one before; an account never reported has none",
        arguments: Backend.reachable)
    func launchFacts(backend: Backend) async throws {
        let state = try await backend.make(in: TemporaryDirectory())
        #expect(try await state.launchFacts(account: "oid:a") == nil)
        try await state.recordLaunchFacts(account: "oid:a", facts: #"{"jailbroken":false}"#, at: t0)
        try await state.recordLaunchFacts(account: "oid:b", facts: #"{"osVersion":"17.4"}"#, at: t0 + 5)
        try await state.recordLaunchFacts(account: "oid:a", facts: #"{"jailbroken":true}"#, at: t0 + 10)
        #expect(
            try await state.launchFacts(account: "oid:a")
                == StoredLaunchFacts(facts: #"{"jailbroken":true}"#, at: t0 + 10))
        #expect(
            try await state.launchFacts(account: "oid:b")
                == StoredLaunchFacts(facts: #"{"osVersion":"17.4"}"#, at: t0 + 5))
        #expect(try await state.launchFacts(account: "oid:c") == nil)
    }

    @Test(
        "bundle history: applied and rejected, the files of the last applied, reach; only applied bundles with files are changes",
        arguments: Backend.reachable)
    func bundles(backend: Backend) async throws {
        let state = try await backend.make(in: TemporaryDirectory())
        try await state.recordBundle(
            contentHash: "aa", source: "one", result: .applied, message: nil,
            files: [StoredFile(name: "b.json", bytes: [2]), StoredFile(name: "a.json", bytes: [1])],
            provenance: .none, accounts: [SeenAccount(owner: "oid:a", aliases: [])],
            reach: [PolicyReach(account: "oid:a", policies: ["p1"])], events: [],
            retaining: 100, at: t0)
        try await state.recordBundle(contentHash: "bb", source: "two", result: .rejected, message: "bad", at: t0 + 1)
        #expect(try await state.bundleHistory().map(\.contentHash) == ["bb", "aa"])
        #expect(try await state.lastAppliedBundle()?.contentHash == "aa")
        let files = try #require(try await state.lastAppliedBundleFiles())
        #expect(
            files.record.contentHash == "aa" && files.files.map(\.name) == ["a.json", "b.json"]
                && files.files[0].bytes == [1])
        #expect(try await state.lastApplication(ofRevision: "aa") != nil)
        #expect(try await state.lastApplication(ofRevision: "bb") == nil)
        #expect(try await state.policyReach() == ["oid:a": ["p1": t0]])
        #expect(try await state.changes(after: 0).map(\.kind) == [.bundle])
        #expect(try await state.changes(after: 0).first?.subjects == ["aa"])
    }

    @Test(
        "a revision's files are stored once however often it is applied; a bundle applied with no files is restorable and a change; one recorded without files is neither",
        arguments: Backend.reachable)
    func bundleRevisions(backend: Backend) async throws {
        let state = try await backend.make(in: TemporaryDirectory())
        let files: [StoredFile] = [StoredFile(name: "tenant.json", bytes: Array(repeating: 7, count: 1_000))]
        for round in 0..<5 {
            try await state.recordBundle(
                contentHash: round % 2 == 0 ? "aa" : "ab", source: "round \(round)", result: .applied, files: files,
                at: t0 + Double(round))
        }
        #expect(
            try await state.storedBundleRevisions() == ["aa": 1_000, "ab": 1_000], "five applies, one copy of each")
        #expect(try await state.bundleHistory().count == 5)
        // The revision in force applied again (another writer was first) is not recorded twice.
        let again = try await state.recordBundle(
            contentHash: "aa", source: "round 5", result: .applied, files: files, at: t0 + 5)
        #expect(again.alreadyApplied)
        #expect(again.record.source == "round 4", "the record of the writer that was first")
        #expect(try await state.bundleHistory().count == 5)

        let before = try await state.changeBounds().newest
        try await state.recordBundle(
            contentHash: "e3", source: "empty on purpose", result: .applied, files: [], at: t0 + 10)
        #expect(try await state.lastAppliedBundleFiles()?.record.contentHash == "e3")
        #expect(try await state.lastAppliedBundleFiles()?.files.isEmpty == true)
        #expect(try await state.changes(after: before).map(\.subjects) == [["e3"]])
        #expect(try await state.storedBundleRevisions() == ["aa": 1_000, "ab": 1_000, "e3": 0])

        let unstored = try await state.changeBounds().newest
        try await state.recordBundle(contentHash: "mem", source: "in memory", result: .applied, files: nil, at: t0 + 11)
        #expect(
            try await state.lastAppliedBundleFiles()?.record.contentHash == "e3",
            "a bundle without files cannot be restored")
        #expect(try await state.changes(after: unstored).isEmpty)
    }

    @Test(
        "the bundle history keeps its newest rows and the bundle in force, and a revision's files while a kept row names it",
        arguments: Backend.reachable)
    func bundleHistoryRetention(backend: Backend) async throws {
        let state = try await backend.make(in: TemporaryDirectory())
        func record(_ hash: String, _ result: BundleRecord.Result, at offset: Double) async throws {
            try await state.recordBundle(
                contentHash: hash, source: hash, result: result, message: result == .rejected ? "bad" : nil,
                files: result == .applied ? [StoredFile(name: "tenant.json", bytes: Array(hash.utf8))] : nil,
                provenance: .none, accounts: [],
                reach: [], events: [],
                retaining: 3, at: t0 + offset)
        }
        try await record("r1", .applied, at: 1)
        try await record("r2", .applied, at: 2)
        try await record("r3", .applied, at: 3)
        await #expect(Set(try state.storedBundleRevisions().keys) == ["r1", "r2", "r3"])
        try await record("r4", .applied, at: 4)
        #expect(try await state.bundleHistory().map(\.contentHash) == ["r4", "r3", "r2"])
        await #expect(
            Set(try state.storedBundleRevisions().keys) == ["r2", "r3", "r4"], "r1's files went with its last row")
        // Refusals are kept apart: a run of them never pushes out the bundles that were in
        // force (the rollback targets), and the newest refusals are kept as many.
        for offset in 5...8 { try await record("bad\(offset)", .rejected, at: Double(offset)) }
        #expect(try await state.lastAppliedBundleFiles()?.record.contentHash == "r4")
        await #expect(Set(try state.storedBundleRevisions().keys) == ["r2", "r3", "r4"])
        #expect(try await state.bundleHistory().map(\.contentHash) == ["bad8", "bad7", "bad6", "r4", "r3", "r2"])
    }

    /// Texts with control characters, and how an audit entry holds them.
    static let controlTexts: [(given: String, stored: String)] = [
        ("before\u{0}after", #"before\u{0}after"#), ("\u{1B}[2Jcleared", #"\u{1B}[2Jcleared"#),
        ("right\u{202E}left", #"right\u{202E}left"#), ("plain", "plain"),
    ]

    @Test(
        "audit entries keep control characters escaped and whole, on every path that writes one",
        arguments: Backend.reachable, controlTexts.indices)
    func auditControlCharacters(backend: Backend, index: Int) async throws {
        let (given, stored) = Self.controlTexts[index]
        let state = try await backend.make(in: TemporaryDirectory())
        // A batch of records, the one-entry form, and an entry written inside another change.
        #expect(
            try await state.audit([AuditRecord(.decision, account: nil, action: "share", detail: given, at: t0)]) == 1)
        #expect(try await state.audit(.wipe, account: given, action: "wipe", detail: given, at: t0))
        try await state.setBundleFreeze(BundleFreeze(reason: given, by: given, at: t0), by: given, at: t0)
        let entries = try await state.auditEntries(since: t0)
        #expect(entries.count == 3)
        #expect(entries[0].detail == stored && entries[1].detail == stored && entries[1].account == stored)
        #expect(entries[2].detail?.contains(stored) == true, "\(entries[2])")
        #expect(entries.allSatisfy { ($0.detail ?? "") == ($0.detail ?? "").escapingControlCharacters })
        // And the other texts the state keeps from callers: a freeze, a token's name, a
        // rollback's reason and who applied it.
        let freeze = try await state.bundleFreeze()
        #expect(freeze?.reason == stored && freeze?.by == stored)
        try await state.addToken(TokenRecord(id: "t1", name: given, scopes: ["decide"], hash: [1, 2, 3], created: t0))
        #expect(try await state.tokens().first?.name == stored)
        let provenance = BundleProvenance(appliedBy: given, reason: given, isRollback: true)
        #expect(provenance.reason == stored && provenance.appliedBy == stored)
    }

    @Test(
        "pruning deletes the entries older than the cutoff, oldest first, at most the limit, and records itself; none older: nothing recorded",
        arguments: Backend.reachable)
    func pruneAudit(backend: Backend) async throws {
        let state = try await backend.make(in: TemporaryDirectory())
        let day: TimeInterval = 86_400
        // Ten entries a day apart, the oldest first: t0 - 9 days ... t0.
        let records = (0..<10).map { index in
            AuditRecord(
                .decision, account: "oid:a", action: "print", allowed: true, detail: "entry \(index)",
                decisionID: "d\(index)", at: t0 - Double(9 - index) * day)
        }
        #expect(try await state.audit(records) == 10)
        let now = t0 + 1
        // Older than t0 - 4.5 days: the five oldest, three at a time at most.
        let cutoff = t0 - 4.5 * day
        #expect(try await state.pruneAudit(before: cutoff, limit: 3, at: now) == 3)
        #expect(try await state.pruneAudit(before: cutoff, limit: 3, at: now) == 2)
        #expect(try await state.pruneAudit(before: cutoff, limit: 3, at: now) == 0)
        let entries = try await state.auditEntries(since: nil)
        let decisions = entries.filter { $0.kind == .decision }
        #expect(decisions.map(\.detail) == (5..<10).map { "entry \($0)" }, "the five newest stay, in order")
        let prunes = entries.filter { $0.kind == .audit && $0.action == "prune" }
        let stamp = cutoff.formatted(Date.ISO8601FormatStyle(timeZone: .gmt))
        #expect(
            prunes.map(\.detail) == ["3 entries from before \(stamp)", "2 entries from before \(stamp)"],
            "each deletion is an entry; one that deleted nothing is not: \(prunes)")
        #expect(prunes.allSatisfy { $0.at == now })
    }

    @Test(
        "a decision keeps what it was asked (query, context, recorded facts, a launch's outcome); a window of decisions reads back in id order, the end excluded, by action and page",
        arguments: Backend.reachable)
    func auditDecisions(backend: Backend) async throws {
        let state = try await backend.make(in: TemporaryDirectory())
        let hour: TimeInterval = 3_600
        let context = #"{"revision":"feed","platform":"ios"}"#
        let print = AuditedQuery(
            line: #"{"action":"print","account":"a@contoso.com"}"#, context: context, recordedFacts: nil, outcome: nil)
        let launch = AuditedQuery(
            line: #" {"action":"launch", "account":"a@contoso.com"}"#, context: #"{"revision":"beef"}"#,
            recordedFacts: #"{"osVersion":"16.4"}"#, outcome: "warn")
        // Six decisions an hour apart from t0 - 2h, a wipe among them, one decision without
        // what it was asked (audited before the log kept it).
        let records = [
            AuditRecord(.decision, account: "a", action: "print", allowed: true, asked: print, at: t0 - 2 * hour),
            AuditRecord(.decision, account: "a", action: "print", allowed: false, asked: print, at: t0 - hour),
            AuditRecord(.wipe, account: "a", action: "wipe", detail: "wiped", at: t0 - hour),
            AuditRecord(.decision, account: "a", action: "launch", allowed: true, asked: launch, at: t0),
            AuditRecord(.decision, account: "b", action: "print", allowed: true, at: t0 + hour),
            AuditRecord(.decision, account: "a", action: "launch", allowed: false, asked: launch, at: t0 + 2 * hour),
            AuditRecord(.decision, account: "a", action: "print", allowed: true, asked: print, at: t0 + 3 * hour),
        ]
        #expect(try await state.audit(records) == records.count)
        // From t0 - 1h (included) to t0 + 2h (excluded).
        let window = try await state.auditDecisions(
            from: t0 - hour, to: t0 + 2 * hour, action: nil, after: 0, limit: 100)
        #expect(window.map(\.at) == [t0 - hour, t0, t0 + hour], "\(window)")
        #expect(window.allSatisfy { $0.kind == .decision })
        #expect(window.map(\.asked) == [print, launch, nil])
        #expect(window.map(\.allowed) == [false, true, true])
        // By action, and a page at a time after the last id read.
        let launches = try await state.auditDecisions(
            from: t0 - 3 * hour, to: t0 + 4 * hour, action: "launch", after: 0, limit: 100)
        #expect(launches.map(\.asked) == [launch, launch] && launches.map(\.allowed) == [true, false])
        var pages: [[Date]] = []
        var after: Int64 = 0
        while true {
            let page = try await state.auditDecisions(
                from: t0 - 3 * hour, to: t0 + 4 * hour, action: "print", after: after, limit: 2)
            guard let last = page.last else { break }
            pages.append(page.map(\.at))
            after = last.id
        }
        #expect(pages == [[t0 - 2 * hour, t0 - hour], [t0 + hour, t0 + 3 * hour]])
        // `custody audit` reads the same.
        let all = try await state.auditEntries(since: nil)
        #expect(
            all.filter { $0.kind == .decision }.map(\.asked) == records.filter { $0.kind == .decision }.map(\.asked))
        #expect(all.first { $0.kind == .wipe }?.asked == nil)
    }

    @Test(
        "a shadow: set with its files (replacing another and its tallies), tallied per replica only while it is the state's, ended by stop or by applying its revision, each a change and audited",
        arguments: Backend.reachable)
    func shadow(backend: Backend) async throws {
        let state = try await backend.make(in: TemporaryDirectory())
        #expect(try await state.shadow() == nil)
        #expect(try await !state.endShadow(by: "cli", at: t0))
        let files = [StoredFile(name: "b.json", bytes: Array("{}".utf8)), StoredFile(name: "a.json", bytes: [0, 1])]
        let first = ShadowRecord(id: "one", revision: "feed", source: "/bundles/next", by: "cli", since: t0)
        let before = try await state.changeBounds().newest
        try await state.setShadow(StoredShadow(record: first, files: files), at: t0)
        let stored = try #require(try await state.shadow())
        #expect(stored.record == first && stored.files.map(\.name) == ["a.json", "b.json"])
        #expect(stored.files.first?.bytes == [0, 1])
        #expect(try await state.changes(after: before).map(\.kind) == [.shadow])
        // Each replica's count replaces its last; another shadow's id is refused.
        #expect(try await state.recordShadowTally(shadow: "one", replica: "r1", tally: "1", at: t0))
        #expect(try await state.recordShadowTally(shadow: "one", replica: "r1", tally: "2", at: t0 + 1))
        #expect(try await state.recordShadowTally(shadow: "one", replica: "r2", tally: "5", at: t0 + 1))
        #expect(try await !state.recordShadowTally(shadow: "other", replica: "r3", tally: "9", at: t0 + 1))
        #expect(try await state.shadowTallies(shadow: "one").map { "\($0.replica)=\($0.tally)" } == ["r1=2", "r2=5"])
        // Set again: the old one's tallies go.
        let second = ShadowRecord(id: "two", revision: "beef", source: "http", by: nil, since: t0 + 2)
        try await state.setShadow(StoredShadow(record: second, files: files), at: t0 + 2)
        #expect(try await state.shadowTallies(shadow: "one").isEmpty)
        #expect(try await state.recordShadowTally(shadow: "two", replica: "r1", tally: "3", at: t0 + 3))
        // Stopped: its files go, its record says how, its tallies stay, a late count still lands.
        #expect(try await state.endShadow(by: "ops\u{1B}", at: t0 + 4))
        let ended = try #require(try await state.shadow())
        #expect(ended.record.ended == t0 + 4 && ended.record.endedHow == "stopped by ops\\u{1B}" && ended.files.isEmpty)
        #expect(try await !state.endShadow(by: "cli", at: t0 + 5))
        #expect(try await state.recordShadowTally(shadow: "two", replica: "r1", tally: "4", at: t0 + 5))
        #expect(try await state.shadowTallies(shadow: "two").map(\.tally) == ["4"])
        // Applying a bundle of a running shadow's revision ends it as promoted; another does not.
        let third = ShadowRecord(id: "three", revision: "cafe", source: "http", by: nil, since: t0 + 6)
        try await state.setShadow(StoredShadow(record: third, files: files), at: t0 + 6)
        _ = try await state.recordBundle(
            contentHash: "0ther", source: "x", result: .applied, files: files, at: t0 + 7)
        #expect(try await state.shadow()?.record.isRunning == true)
        _ = try await state.recordBundle(contentHash: "cafe", source: "x", result: .applied, files: files, at: t0 + 8)
        let promoted = try #require(try await state.shadow()?.record)
        #expect(promoted.endedHow == "promoted" && promoted.ended == t0 + 8)
        let actions = try await state.auditEntries(since: nil).filter { $0.kind == .bundle }.map(\.action)
        #expect(
            actions.filter { $0.hasPrefix("shadow") } == ["shadow", "shadow", "shadow-end", "shadow", "shadow-end"])
    }

    @Test("the audit log writes while on, not while off; settings changes are logged", arguments: Backend.reachable)
    func audit(backend: Backend) async throws {
        let state = try await backend.make(in: TemporaryDirectory())
        #expect(try await state.isAuditEnabled())
        #expect(
            try await state.audit(
                .decision, account: "oid:a", action: "saveTo", allowed: false, detail: "blocked", at: t0))
        // Each switch that changes a setting is logged (the log's last entry before it goes off,
        // its first once on again); one that changes nothing, or decision auditing switched
        // while the log is off, is not.
        try await state.setAuditEnabled(false)
        try await state.setAuditEnabled(false)
        try await state.setDecisionAuditEnabled(true)
        try await state.setDecisionAuditEnabled(false)
        #expect(try await !state.audit(.decision, account: "oid:a", action: "saveTo", at: t0))
        try await state.setAuditEnabled(true)
        try await state.setAuditEnabled(true)
        try await state.setDecisionAuditEnabled(true)
        try await state.setDecisionAuditEnabled(true)
        #expect(try await state.isDecisionAuditEnabled())
        #expect(
            try await state.audit([
                AuditRecord(.decision, account: nil, action: "print", allowed: true, decisionID: "d1", at: t0 + 1)
            ]) == 1)
        let entries = try await state.auditEntries(since: t0)
        #expect(entries.map(\.action) == ["saveTo", "off", "on", "decisionsOn", "print"])
        #expect(entries.map(\.kind) == [.decision, .audit, .audit, .audit, .decision])
        #expect(entries[1].detail == "the audit log switched off: nothing is logged until it is back on")
        #expect(entries[0].allowed == false && entries[0].detail == "blocked" && entries[4].decisionID == "d1")
        #expect(try await state.auditEntries(since: t0 + 1).count == 4)
        // A page starts after the id it is given, whatever the time.
        #expect(
            try await state.auditEntries(since: nil, after: entries[1].id, limit: 2).map(\.action) == [
                "on", "decisionsOn",
            ])
        #expect(try await state.auditEntries(since: t0 + 1, after: entries[0].id, limit: 10).count == 4)
        #expect(try await state.auditEntries(since: nil, after: entries[4].id, limit: 10).isEmpty)
        try await state.recordInstallationContext(
            platform: "ios", appID: nil, managementLevel: nil, precedence: "incumbent")
        try await state.recordInstallationContext(platform: nil, appID: "com.example", managementLevel: nil)
        let context = try await state.installationContext()
        #expect(
            context.platform == "ios" && context.appID == "com.example" && context.managementLevel == nil
                && context.precedence == "incumbent")
        #expect(try await state.changes(after: 0).allSatisfy { $0.kind == .setting })
    }

    @Test("events: ids in order, pruned past the retention, bounds that never go back", arguments: Backend.reachable)
    func events(backend: Backend) async throws {
        let state = try await backend.make(in: TemporaryDirectory())
        #expect(try await state.eventBounds().newest == 0)
        try await state.setEventRetention(3)
        let ids = try await state.appendEvents((1...5).map { EventRecord(name: "e\($0)", body: [UInt8($0)]) }, at: t0)
        #expect(ids == [1, 2, 3, 4, 5])
        #expect(try await state.events(after: 0).map(\.id) == [3, 4, 5])
        #expect(try await state.events(after: 3, limit: 1).map(\.name) == ["e4"])
        let bounds = try await state.eventBounds()
        #expect(bounds.oldest == 3 && bounds.newest == 5)
    }

    @Test("tokens: created, revoked once, each a change that moves the generation", arguments: Backend.reachable)
    func tokens(backend: Backend) async throws {
        let state = try await backend.make(in: TemporaryDirectory())
        let generation = try await state.tokenGeneration()
        try await state.addToken(
            TokenRecord(
                id: "t1", name: "ops", scopes: ["decide", "admin"], hash: [UInt8](repeating: 7, count: 32), created: t0)
        )
        #expect(
            await storeError {
                try await state.addToken(TokenRecord(id: "t1", name: nil, scopes: [], hash: [], created: t0))
            }?.code
                == .conflict)
        #expect(try await state.token(id: "t1")?.scopes == ["decide", "admin"])
        #expect(try await state.revokeToken(id: "t1", at: t0 + 1))
        #expect(try await !state.revokeToken(id: "t1", at: t0 + 2))
        #expect(try await state.token(id: "t1")?.revoked == t0 + 1)
        #expect(try await state.tokens().map(\.id) == ["t1"])
        #expect(try await state.tokenGeneration() == generation + 2)
        #expect(try await state.changes(after: 0).map(\.kind) == [.token, .token])
    }

    /// Rotations of token "old" (made at t0, expiring at `expires`), asked at t0 + 10 with the
    /// old token to expire at `until`: whether it is done, and the old token's expiry after.
    static let rotations: [(expires: Date?, revoked: Bool, until: Date, done: Bool, after: Date?)] = [
        (nil, false, t0 + 3_600, true, t0 + 3_600),  // no expiry: the overlap sets one
        (t0 + 100, false, t0 + 3_600, true, t0 + 100),  // expiring sooner: kept
        (t0 + 7_200, false, t0 + 3_600, true, t0 + 3_600),  // expiring later: brought forward
        (t0 + 5, false, t0 + 3_600, false, t0 + 5),  // already expired: not rotated
        (nil, true, t0 + 3_600, false, nil),  // revoked: not rotated
    ]

    @Test(
        "tokens: an expiry kept; a rotation issues the successor and bounds the old one's life, in one change; last use only moves forward",
        arguments: Backend.reachable, rotations.indices)
    func tokenRotation(backend: Backend, index: Int) async throws {
        let (expires, revoked, until, done, after) = Self.rotations[index]
        let state = try await backend.make(in: TemporaryDirectory())
        try await state.addToken(
            TokenRecord(id: "old", name: "ops", scopes: ["read"], hash: [1], created: t0, expires: expires))
        #expect(try await state.token(id: "old")?.expires == expires)
        if revoked { try await state.revokeToken(id: "old", at: t0 + 1) }
        let changes = try await state.changes(after: 0).count
        let successor = TokenRecord(
            id: "new", name: "ops", scopes: ["read"], hash: [2], created: t0 + 10, expires: t0 + 86_400)
        #expect(try await state.rotateToken(id: "old", successor: successor, expires: until) == done)
        #expect(try await state.token(id: "old")?.expires == after)
        let stored = try await state.token(id: "new")
        #expect((stored != nil) == done)
        if done {
            #expect(stored?.expires == t0 + 86_400 && stored?.scopes == ["read"] && stored?.name == "ops")
            #expect(try await state.changes(after: 0).count == changes + 1)
            #expect(try await state.auditEntries(since: nil, after: 0, limit: 100).last?.action == "rotate")
            // Rotated once: not again (its successor is the one to rotate).
            let again = TokenRecord(id: "newer", name: nil, scopes: ["read"], hash: [3], created: t0 + 11)
            #expect(try await !state.rotateToken(id: "old", successor: again, expires: t0 + 20))
            #expect(try await state.token(id: "newer") == nil)
            #expect(try await state.rotateToken(id: "new", successor: again, expires: t0 + 20))
        }
        try await state.recordTokenUse(id: "old", at: t0 + 60)
        try await state.recordTokenUse(id: "old", at: t0 + 30)
        #expect(try await state.token(id: "old")?.lastUsed == t0 + 60)
    }

    @Test(
        "the change log: revisions in order, pruned past its retention, bounds tell a reader it missed some",
        arguments: Backend.reachable)
    func changeLog(backend: Backend) async throws {
        let state = try await backend.make(in: TemporaryDirectory())
        let empty = try await state.changeBounds()
        #expect(empty.oldest == nil && empty.newest == 0)
        try await state.setChangeRetention(2)
        for version in 1...4 { try await state.addAccountKey(wrapped(owner, UInt32(version))) }
        let changes = try await state.changes(after: 0)
        #expect(changes.map(\.revision) == [3, 4])
        #expect(changes.allSatisfy { $0.kind == .key && $0.subjects == [owner.rawValue] })
        let bounds = try await state.changeBounds()
        #expect(bounds.oldest == 3 && bounds.newest == 4)
        #expect(try await state.changes(after: 4).isEmpty)
    }
}

/// How a state URL is read, without a server.
@Suite("PostgreSQL state URL")
struct PostgresURLTests {
    @Test(
        "the user, password and database are percent-decoded once, an IPv6 address is the one in brackets, and the port is the one written",
        arguments: [
            ("postgres://app:a%2541b@h/db", "app", "a%41b", "db", "h", 5432),
            ("postgres://app:a%25b@h/db", "app", "a%b", "db", "h", 5432),
            ("postgres://app:p%40ss%3Aw%2Fd@h:6432/my%20db", "app", "p@ss:w/d", "my db", "h", 6432),
            ("postgres://us%2541er@[::1]:5433/db", "us%41er", nil, "db", "::1", 5433),
            ("postgresql://u@127.0.0.1:65535/db", "u", nil, "db", "127.0.0.1", 65535),
        ] as [(String, String, String?, String, String, Int)])
    func parsed(url: String, user: String, password: String?, database: String, host: String, port: Int) throws {
        let configuration = try PostgresSettings(url: url + (url.contains("?") ? "&" : "?") + "sslmode=disable")
            .configuration
        #expect(configuration.username == user)
        #expect(configuration.password == password)
        #expect(configuration.database == database)
        #expect(configuration.host == host)
        #expect(configuration.port == port)
    }
}

/// What only one backend has.
@Suite("PostgreSQL state", TestPostgres.enabled)
struct PostgresStateTests {
    @Test(
        "a malformed or unreachable state URL is a typed error naming what is wrong, never with its password",
        arguments: [
            ("mysql://u@h/db", "not a PostgreSQL URL"),
            ("postgres://h/db", "names no user"),
            ("postgres://u@h", "names no database"),
            ("postgres://u@h/db?schema=Bad-Name", "not a plain identifier"),
            ("postgres://u@h/db?sslmode=sometimes", "sslmode"),
            ("postgres://u@h/db?colour=blue", "unknown parameter \"colour\""),
            ("postgres://u:hunter2@127.0.0.1:1/db?sslmode=disable", "cannot connect"),
            ("postgres://u:hunter2@h:99999/db", "not a TCP port"),
            ("postgres://u@h:65536/db", "not a TCP port"),
            ("postgres://u@h/db?schema=pg_custody", "PostgreSQL's own"),
            ("postgres://u@h/db?schema=information_schema", "PostgreSQL's own"),
        ])
    func badURLs(url: String, message: String) async throws {
        let error = await storeError { _ = try await PostgresState(url: url) }
        #expect(error?.code == .open)
        #expect("\(error.map { "\($0)" } ?? "")".contains(message))
        #expect(!"\(error.map { "\($0)" } ?? "")".contains("hunter2"))
    }

    @Test("a schema written by a newer Custody is refused; replicas opening one schema together migrate it once")
    func migrations() async throws {
        let url = TestPostgres.freshURL("migrate")
        var states: [PostgresState] = []
        for _ in 0..<3 { states.append(try await PostgresState(url: url)) }
        #expect(try await states[0].changeBounds().newest == 0)
        _ = try await states[0].sessions.run("test", transaction: true) { session in
            try await session.execute(
                "INSERT INTO custody_migrations (identifier, applied_at) VALUES ('v99: from the future', now())")
        }
        let error = await storeError { _ = try await PostgresState(url: url) }
        #expect(error?.code == .migration)
        #expect(error?.message.contains("newer Custody") == true)
    }

    @Test("a notice follows each committed change, and the listener starts with the newest revision")
    func notifications() async throws {
        let state = try await PostgresState(url: TestPostgres.freshURL("notify"))
        try await state.addAccountKey(wrapped(owner, 1))
        var revisions = state.changeNotifications().makeAsyncIterator()
        #expect(try await revisions.next() == 1)
        try await state.addAccountKey(wrapped(owner, 2))
        try await state.addToken(TokenRecord(id: "t", name: nil, scopes: ["decide"], hash: [1], created: t0))
        // Notices may coalesce, and each heartbeat repeats the newest revision (a loaded
        // machine sees one between two commits): in order, never backwards, up to 3.
        var seen: [Int64] = [1]
        while seen.last != 3, let next = try await revisions.next() {
            #expect(next >= seen.last!, "never backwards: \(seen) then \(next)")
            if next != seen.last { seen.append(next) }
        }
        #expect(seen.last == 3, "\(seen)")
        #expect(Set(seen).isSubset(of: [1, 2, 3]), "\(seen)")
    }
}
