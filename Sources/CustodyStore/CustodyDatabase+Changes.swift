import Foundation
import GRDB

extension CustodyDatabase {
    /// Appends a change inside a write transaction, and prunes the log past its retention.
    static func recordChange(_ kind: StateChange.Kind, _ subjects: [String], at date: Date, in db: Database) throws {
        try db.execute(
            sql: "INSERT INTO changes (at, kind, subjects) VALUES (?, ?, ?)",
            arguments: [date, kind.rawValue, StateChange.encode(subjects)])
        let revision = db.lastInsertedRowID
        let retention =
            Int64(try String.fetchOne(db, sql: "SELECT value FROM settings WHERE name = 'change_retention'") ?? "")
            ?? StateChange.defaultRetention
        if revision > retention {
            try db.execute(sql: "DELETE FROM changes WHERE revision <= ?", arguments: [revision - retention])
        }
    }

    public func changes(after revision: Int64, limit: Int) throws(StoreError) -> [StateChange] {
        let rows = try read("reading the change log") { db in
            try Row.fetchAll(
                db,
                sql: "SELECT revision, at, kind, subjects FROM changes WHERE revision > ? ORDER BY revision LIMIT ?",
                arguments: [revision, limit])
        }
        var changes: [StateChange] = []
        for row in rows {
            guard let revision: Int64 = row["revision"], let at = row.storedDate("at"), let kind: String = row["kind"],
                let subjects: String = row["subjects"]
            else { throw StoreError(.corrupt, "a change log row is damaged", path: path) }
            changes.append(
                StateChange(
                    revision: revision, at: at, kind: StateChange.Kind(rawValue: kind),
                    subjects: StateChange.decode(subjects)))
        }
        return changes
    }

    public func changeBounds() throws(StoreError) -> LogBounds {
        try read("reading the change log") { db in
            let oldest = try Int64.fetchOne(db, sql: "SELECT min(revision) FROM changes")
            let newest = try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'changes'") ?? 0
            return LogBounds(oldest: oldest, newest: newest)
        }
    }

    public func setChangeRetention(_ count: Int64) throws(StoreError) {
        try write("changing the change log retention") { db in
            try db.execute(
                sql:
                    "INSERT INTO settings (name, value) VALUES ('change_retention', ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value",
                arguments: [String(max(1, count))])
        }
    }

    public func purgeDeletedRows() throws(StoreError) {
        try truncateLog()
    }
}
