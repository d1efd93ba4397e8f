public import Foundation
import GRDB

/// One bundle offered to a policy manager, applied or rejected.
public struct BundleRecord: Sendable, Hashable {
    public enum Result: String, Sendable, Hashable {
        case applied
        case rejected
    }

    public let id: Int64
    /// The bundle's content hash (hex), the same for the same files whatever their path.
    public let contentHash: String
    public let appliedAt: Date
    /// Where the bundle came from (its directory).
    public let source: String
    public let result: Result
    /// Why it was rejected; nil when applied.
    public let message: String?

    /// How many history rows a state keeps unless told otherwise: the newest 100 (with the
    /// files of the revisions they name), and always the bundle in force.
    public static let defaultRetained = 100

    package init(id: Int64, contentHash: String, appliedAt: Date, source: String, result: Result, message: String?) {
        self.id = id
        self.contentHash = contentHash
        self.appliedAt = appliedAt
        self.source = source
        self.result = result
        self.message = message
    }
}

extension CustodyDatabase {
    /// Records a bundle that was applied or rejected, with the files of an applied one and the
    /// accounts its tenant lists (see `recordAccounts(_:at:)`), and an audit entry when
    /// auditing is on, all in one transaction: a crash keeps all of it or none. Returns its
    /// record.
    ///
    /// `files` nil: the bundle's files are not kept (an in-memory bundle), so it can never be
    /// restored and is no change for replicas to follow. Otherwise an applied bundle's files
    /// are stored once per revision, however often it is applied, and its application is a
    /// change in the log. The history keeps its newest `retaining` rows (never the one in
    /// force), and a revision's files only while a history row names it.
    /// `events` are appended to the event log in the same transaction; their ids come back.
    @discardableResult
    public func recordBundle(
        contentHash: String, source: String, result: BundleRecord.Result, message: String?,
        files: [StoredFile]?,
        accounts: [SeenAccount], reach: [PolicyReach],
        events: [EventRecord],
        retaining: Int, at date: Date
    ) throws(StoreError) -> RecordedBundle {
        let (id, eventIDs, pruned) = try write("recording a bundle") { db in
            try db.execute(
                sql:
                    "INSERT INTO bundle_history (content_hash, applied_at, source, result, message) VALUES (?, ?, ?, ?, ?)",
                arguments: [contentHash, date, source, result.rawValue, message])
            let id = db.lastInsertedRowID
            if result == .applied, let files {
                try db.execute(
                    sql: "INSERT OR IGNORE INTO bundle_revisions (content_hash, stored_at) VALUES (?, ?)",
                    arguments: [contentHash, date])
                if db.changesCount > 0 {
                    for file in files {
                        try db.execute(
                            sql: "INSERT INTO bundle_revision_files (content_hash, name, bytes) VALUES (?, ?, ?)",
                            arguments: [contentHash, file.name, Data(file.bytes)])
                    }
                }
            }
            try Self.recordAccounts(accounts, at: date, in: db)
            if !reach.isEmpty {
                let insert = try db.makeStatement(
                    sql: "INSERT OR IGNORE INTO policy_reach (account, policy, first_reached) VALUES (?, ?, ?)")
                for (account, policies) in reach.map({ ($0.account, $0.policies) }) {
                    for policy in policies { try insert.execute(arguments: [account, policy, date]) }
                }
            }
            try Self.audit(
                .bundle, account: nil, action: result == .applied ? "apply" : "reject",
                detail: AuditRecord.bundleDetail(contentHash: contentHash, source: source, message: message), at: date,
                in: db)
            if result == .applied, files != nil { try Self.recordChange(.bundle, [contentHash], at: date, in: db) }
            let eventIDs = try Self.appendEvents(events, at: date, in: db)
            return (id, eventIDs, try Self.pruneBundleHistory(retaining: retaining, in: db))
        }
        // Pages freed by pruning leave the write-ahead log with the next checkpoint; empty it
        // now, so that a long history of applies does not leave a log as large as the history.
        if pruned { try? truncateLog() }
        return RecordedBundle(
            record: BundleRecord(
                id: id, contentHash: contentHash, appliedAt: date, source: source, result: result, message: message),
            eventIDs: eventIDs)
    }

    /// Deletes history rows past the newest `retaining` (never the row of the bundle in
    /// force), then every stored revision no applied row names. Returns whether it deleted any.
    private static func pruneBundleHistory(retaining: Int, in db: Database) throws -> Bool {
        let count = try Int.fetchOne(db, sql: "SELECT count(*) FROM bundle_history") ?? 0
        guard count > max(retaining, 1) else { return false }
        let inForce = try Int64.fetchOne(
            db,
            sql:
                "SELECT max(id) FROM bundle_history WHERE result = 'applied' AND content_hash IN (SELECT content_hash FROM bundle_revisions)"
        )
        try db.execute(
            sql: """
                DELETE FROM bundle_history WHERE id NOT IN (SELECT id FROM bundle_history ORDER BY id DESC LIMIT ?) AND id IS NOT ?
                """,
            arguments: [max(retaining, 1), inForce])
        try db.execute(
            sql:
                "DELETE FROM bundle_revisions WHERE content_hash NOT IN (SELECT content_hash FROM bundle_history WHERE result = 'applied')"
        )
        return true
    }

    /// When each policy first reached each account, as recorded by every applied bundle:
    /// account → policy → time.
    public func policyReach() throws(StoreError) -> [String: [String: Date]] {
        try read("reading when policies reached accounts") { db in
            var reach: [String: [String: Date]] = [:]
            let rows = try Row.fetchCursor(db, sql: "SELECT account, policy, first_reached FROM policy_reach")
            while let row = try rows.next() {
                guard let account: String = row["account"], let policy: String = row["policy"],
                    let at: Date = row["first_reached"]
                else { continue }
                reach[account, default: [:]][policy] = at
            }
            return reach
        }
    }

    /// Bundle records, newest first.
    public func bundleHistory(limit: Int) throws(StoreError) -> [BundleRecord] {
        try read("reading the bundle history") { db in
            try BundleHistoryRow.fetchAll(
                db,
                sql:
                    "SELECT id, content_hash, applied_at, source, result, message FROM bundle_history ORDER BY id DESC LIMIT ?",
                arguments: [limit]
            ).map { try $0.record() }
        }
    }

    /// The newest applied bundle that has its files stored, with them (by name).
    public func lastAppliedBundleFiles() throws(StoreError) -> StoredBundle? {
        try read("reading the last applied bundle") { db -> StoredBundle? in
            guard
                let row = try BundleHistoryRow.fetchOne(
                    db,
                    sql: """
                        SELECT id, content_hash, applied_at, source, result, message FROM bundle_history
                        WHERE result = 'applied' AND content_hash IN (SELECT content_hash FROM bundle_revisions) ORDER BY id DESC LIMIT 1
                        """)
            else { return nil }
            let files = try BundleFileRow.fetchAll(
                db, sql: "SELECT name, bytes FROM bundle_revision_files WHERE content_hash = ? ORDER BY name",
                arguments: [row.contentHash])
            return StoredBundle(record: try row.record(), files: files.map(\.file))
        }
    }

    /// The history id of the last time a bundle with this content hash was applied, if ever.
    public func lastApplication(ofRevision contentHash: String) throws(StoreError) -> Int64? {
        try read("reading the bundle history") { db in
            try Int64.fetchOne(
                db, sql: "SELECT max(id) FROM bundle_history WHERE content_hash = ? AND result = 'applied'",
                arguments: [contentHash])
        }
    }

    public func storedBundleRevisions() throws(StoreError) -> [String: Int] {
        try read("reading the stored bundle revisions") { db in
            var revisions: [String: Int] = [:]
            let rows = try Row.fetchCursor(
                db,
                sql: """
                    SELECT r.content_hash AS hash, coalesce(sum(length(f.bytes)), 0) AS bytes FROM bundle_revisions r
                    LEFT JOIN bundle_revision_files f ON f.content_hash = r.content_hash GROUP BY r.content_hash
                    """)
            while let row = try rows.next() { revisions[row["hash"]] = row["bytes"] }
            return revisions
        }
    }

    /// The newest applied bundle, if any.
    public func lastAppliedBundle() throws(StoreError) -> BundleRecord? {
        try bundleHistory(limit: 1_000).first { $0.result == .applied }
    }
}
