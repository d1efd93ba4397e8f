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
    /// Its sequence, signers and signature, and who applied it.
    public let provenance: BundleProvenance

    /// How many history rows a state keeps unless told otherwise: the newest 50 applied and the
    /// newest 50 refused (with the files of the revisions they name), and always the bundle in
    /// force.
    public static let defaultRetained = 50

    package init(
        id: Int64, contentHash: String, appliedAt: Date, source: String, result: Result, message: String?,
        provenance: BundleProvenance = .none
    ) {
        self.id = id
        self.contentHash = contentHash
        self.appliedAt = appliedAt
        self.source = source
        self.result = result
        self.message = message
        self.provenance = provenance
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
        files: [StoredFile]?, provenance: BundleProvenance,
        accounts: [SeenAccount], reach: [PolicyReach],
        events: [EventRecord],
        retaining: Int, inForceFrom expected: String?, at date: Date
    ) async throws(StoreError) -> RecordedBundle {
        let (id, eventIDs, pruned, existing) = try await write("recording a bundle") {
            db -> (Int64, [Int64], Bool, BundleRecord?) in
            if result == .applied, files != nil {
                let last = try BundleHistoryRow.fetchOne(
                    db,
                    sql:
                        "SELECT \(BundleHistoryRow.columns) FROM bundle_history WHERE result <> 'rejected' ORDER BY id DESC LIMIT 1"
                )?.record()
                // The same files under the same signature in force already: another writer (the
                // service's watch, say, racing `custody apply`) applied them first. Nothing is
                // written twice; the caller is told, and announces nothing.
                if let last, last.contentHash == contentHash, last.provenance.signature == provenance.signature {
                    return (last.id, [], false, last)
                }
                if let expected, let superseded = BundleRecord.supersession(of: last, expecting: expected) {
                    throw superseded
                }
            }
            // Read before this bundle's row is written, which would count in it.
            let highest = try self.highestSequence(in: db)
            // Only a bundle that becomes the installation's policy (one with its files) answers
            // to the state's rules; an in-memory one is this process's alone.
            if result == .applied, files != nil {
                let trusted = try TrustedKeyRow.fetchAll(db).map { (id: $0.keyID, revoked: $0.revokedAt != nil) }
                if let refusal = BundleAdmission.refusal(
                    of: provenance,
                    // A freeze that cannot be read refuses the bundle (`.corrupt`): never taken for none.
                    frozen: try Self.setting(Self.freezeSetting, in: db).flatMap {
                        $0.isEmpty ? nil : try BundleFreeze.decode($0)
                    },
                    highestSequence: highest,
                    trusted: trusted)
                {
                    throw StoreError(.refused, refusal)
                }
            }
            var row = BundleHistoryRow(
                contentHash: contentHash, appliedAt: date, source: source, result: result.rawValue, message: message,
                provenance: provenance)
            try row.insert(db)
            let id = db.lastInsertedRowID
            // The highest sequence ever put in force, which a rollback does not lower: an
            // older signed bundle is never taken again as new.
            if result == .applied, let sequence = provenance.sequence, !provenance.isRollback, sequence > highest {
                try SettingRow.save(Self.sequenceSetting, String(sequence), in: db)
            }
            if result == .applied, let files {
                try BundleRevisionRow(contentHash: contentHash, storedAt: date).insert(db, onConflict: .ignore)
                if db.changesCount > 0 {
                    for file in files {
                        try BundleFileRow(contentHash: contentHash, name: file.name, bytes: Data(file.bytes)).insert(db)
                    }
                }
                // The shadow's files are in force now: it has nothing left to compare.
                _ = try Self.endShadow(how: "promoted", revision: contentHash, at: date, in: db)
            }
            try Self.recordAccounts(accounts, at: date, in: db)
            if !reach.isEmpty {
                for (account, policies) in reach.map({ ($0.account, $0.policies) }) {
                    for policy in policies {
                        try PolicyReachRow(account: account, policy: policy, firstReached: date)
                            .insert(db, onConflict: .ignore)
                    }
                }
            }
            try Self.audit(
                .bundle, account: nil,
                action: result == .rejected ? "reject" : provenance.isRollback ? "rollback" : "apply",
                detail: AuditRecord.bundleDetail(
                    contentHash: contentHash, source: source, message: message, provenance: provenance),
                at: date, in: db)
            if result == .applied, files != nil { try Self.recordChange(.bundle, [contentHash], at: date, in: db) }
            let eventIDs = try Self.appendEvents(events, at: date, in: db)
            return (id, eventIDs, try Self.pruneBundleHistory(retaining: retaining, in: db), nil)
        }
        if let existing { return RecordedBundle(record: existing, eventIDs: [], alreadyApplied: true) }
        // Pages freed by pruning leave the write-ahead log with the next checkpoint; empty it
        // now, so that a long history of applies does not leave a log as large as the history.
        if pruned { try? await truncateLog() }
        return RecordedBundle(
            record: BundleRecord(
                id: id, contentHash: contentHash, appliedAt: date, source: source, result: result, message: message,
                provenance: provenance),
            eventIDs: eventIDs)
    }

    /// The setting that keeps the highest sequence ever applied.
    static let sequenceSetting = "bundle-sequence"
    /// The setting that keeps the last history id a sequence reset put behind it: applied rows
    /// up to it no longer count in the highest sequence.
    static let sequenceResetSetting = "bundle-sequence-reset-after"

    /// Deletes applied rows past the newest `retaining` applied ones (never the row of the
    /// bundle in force) and refused rows past the newest `retaining` refused ones (a run of
    /// refusals never pushes a rollback target out), then every stored revision no applied
    /// row names. Returns whether it deleted any.
    private static func pruneBundleHistory(retaining: Int, in db: Database) throws -> Bool {
        let kept = max(retaining, 1)
        let count =
            try Int.fetchOne(
                db, sql: "SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM bundle_history GROUP BY result)")
            ?? 0
        guard count > kept else { return false }
        let inForce = try Int64.fetchOne(
            db,
            sql:
                "SELECT max(id) FROM bundle_history WHERE result = 'applied' AND content_hash IN (SELECT content_hash FROM bundle_revisions)"
        )
        try db.execute(
            sql: """
                DELETE FROM bundle_history WHERE id NOT IN (
                    SELECT id FROM (SELECT id, row_number() OVER (PARTITION BY result ORDER BY id DESC) AS rank FROM bundle_history)
                    WHERE rank <= ?) AND id IS NOT ?
                """,
            arguments: [kept, inForce])
        try db.execute(
            sql:
                "DELETE FROM bundle_revisions WHERE content_hash NOT IN (SELECT content_hash FROM bundle_history WHERE result = 'applied')"
        )
        return true
    }

    /// When each policy first reached each account, as recorded by every applied bundle:
    /// account → policy → time.
    public func policyReach() async throws(StoreError) -> [String: [String: Date]] {
        try await read("reading when policies reached accounts") { db in
            var reach: [String: [String: Date]] = [:]
            let rows = try PolicyReachRow.fetchCursor(db)
            while let row = try rows.next() { reach[row.account, default: [:]][row.policy] = row.firstReached }
            return reach
        }
    }

    /// Bundle records, newest first.
    public func bundleHistory(limit: Int) async throws(StoreError) -> [BundleRecord] {
        try await read("reading the bundle history") { db in
            try BundleHistoryRow.fetchAll(
                db,
                sql:
                    "SELECT \(BundleHistoryRow.columns) FROM bundle_history ORDER BY id DESC LIMIT ?",
                arguments: [limit]
            ).map { try $0.record() }
        }
    }

    /// The newest applied bundle that has its files stored, with them (by name).
    public func lastAppliedBundleFiles() async throws(StoreError) -> StoredBundle? {
        try await read("reading the last applied bundle") { db -> StoredBundle? in
            guard
                let row = try BundleHistoryRow.fetchOne(
                    db,
                    sql: """
                        SELECT \(BundleHistoryRow.columns) FROM bundle_history
                        WHERE result <> 'rejected' AND content_hash IN (SELECT content_hash FROM bundle_revisions) ORDER BY id DESC LIMIT 1
                        """)
            else { return nil }
            return StoredBundle(record: try row.record(), files: try Self.files(ofRevision: row.contentHash, in: db))
        }
    }

    /// A kept revision's files with the newest history row that applied it; nil when the
    /// state keeps no such revision.
    public func storedBundle(revision contentHash: String) async throws(StoreError) -> StoredBundle? {
        try await read("reading a kept bundle") { db -> StoredBundle? in
            guard
                let row = try BundleHistoryRow.fetchOne(
                    db,
                    sql: """
                        SELECT \(BundleHistoryRow.columns) FROM bundle_history
                        WHERE result <> 'rejected' AND content_hash = ? AND content_hash IN (SELECT content_hash FROM bundle_revisions)
                        ORDER BY id DESC LIMIT 1
                        """, arguments: [contentHash])
            else { return nil }
            return StoredBundle(record: try row.record(), files: try Self.files(ofRevision: contentHash, in: db))
        }
    }

    /// A stored revision's files, in name order.
    private static func files(ofRevision contentHash: String, in db: Database) throws -> [StoredFile] {
        try BundleFileRow.filter(Column("content_hash") == contentHash).order(Column("name")).fetchAll(db).map(\.file)
    }

    /// The highest sequence of a signed bundle ever applied (a rollback does not lower it); 0
    /// when none was.
    public func bundleSequence() async throws(StoreError) -> Int64 {
        try await read("reading the highest bundle sequence") { db in
            try self.highestSequence(in: db)
        }
    }

    /// The highest sequence ever applied: the setting that keeps it (a sequence is at least 1,
    /// no setting is 0; anything else is damage), and the history's own record of it since the
    /// last reset, whichever is higher (a setting lost does not let an older bundle back in
    /// while the history still names a higher one).
    private func highestSequence(in db: Database) throws -> Int64 {
        let kept = try StoredNumber.integer(
            Self.setting(Self.sequenceSetting, in: db), setting: Self.sequenceSetting, minimum: 1, path: path)
        let resetAfter = try StoredNumber.integer(
            Self.setting(Self.sequenceResetSetting, in: db), setting: Self.sequenceResetSetting, minimum: 0, path: path)
        let recorded =
            try Int64.fetchOne(
                db,
                sql: "SELECT max(sequence) FROM bundle_history WHERE result = 'applied' AND NOT rollback AND id > ?",
                arguments: [resetAfter]) ?? 0
        return max(kept, recorded)
    }

    /// Sets the highest sequence to `sequence` (lower than it was, or 0 for none), audited with
    /// the reason and who did it: the next signed bundle is taken when its sequence is above
    /// it. The history before the reset no longer counts in it. Returns the highest sequence
    /// before the reset.
    public func resetBundleSequence(
        to sequence: Int64, reason: String, by who: String?, at date: Date
    ) async throws(StoreError) -> Int64 {
        try await write("resetting the bundle sequence") { db in
            let before = try self.highestSequence(in: db)
            let lastRow = try Int64.fetchOne(db, sql: "SELECT max(id) FROM bundle_history") ?? 0
            if sequence > 0 {
                try Self.setSetting(Self.sequenceSetting, String(sequence), in: db)
            } else {
                try db.execute(sql: "DELETE FROM settings WHERE name = ?", arguments: [Self.sequenceSetting])
            }
            try Self.setSetting(Self.sequenceResetSetting, String(lastRow), in: db)
            try Self.audit(
                .bundle, account: nil, action: "reset-sequence",
                detail: "from \(before) to \(sequence): \(reason)" + (who.map { " (by \($0))" } ?? ""), at: date, in: db
            )
            return before
        }
    }

    /// The history id of the last time a bundle with this content hash was applied, if ever.
    public func lastApplication(ofRevision contentHash: String) async throws(StoreError) -> Int64? {
        try await read("reading the bundle history") { db in
            try Int64.fetchOne(
                db, sql: "SELECT max(id) FROM bundle_history WHERE content_hash = ? AND result = 'applied'",
                arguments: [contentHash])
        }
    }

    public func storedBundleRevisions() async throws(StoreError) -> [String: Int] {
        try await read("reading the stored bundle revisions") { db in
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
    public func lastAppliedBundle() async throws(StoreError) -> BundleRecord? {
        try await bundleHistory(limit: 1_000).first { $0.result == .applied }
    }
}
