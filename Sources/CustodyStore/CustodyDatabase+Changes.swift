import Foundation
import GRDB

extension CustodyDatabase {
    /// Appends a change inside a write transaction, and prunes the log past its retention.
    static func recordChange(_ kind: StateChange.Kind, _ subjects: [String], at date: Date, in db: Database) throws {
        var row = ChangeRow(at: date, kind: kind.rawValue, subjects: StateChange.encode(subjects))
        try row.insert(db)
        let revision = db.lastInsertedRowID
        let retention =
            Int64(try SettingRow.value("change_retention", in: db) ?? "")
            ?? StateChange.defaultRetention
        if revision > retention {
            try db.execute(sql: "DELETE FROM changes WHERE revision <= ?", arguments: [revision - retention])
        }
    }

    public func changes(after revision: Int64, limit: Int) async throws(StoreError) -> [StateChange] {
        try await read("reading the change log") { db in
            try ChangeRow.filter(Column("revision") > revision).order(Column("revision")).limit(limit).fetchAll(db)
                .map { try $0.change() }
        }
    }

    public func changeBounds() async throws(StoreError) -> LogBounds {
        try await read("reading the change log") { db in
            let oldest = try Int64.fetchOne(db, sql: "SELECT min(revision) FROM changes")
            let newest = try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'changes'") ?? 0
            return LogBounds(oldest: oldest, newest: newest)
        }
    }

    public func setChangeRetention(_ count: Int64) async throws(StoreError) {
        try await write("changing the change log retention") { db in
            try SettingRow.save("change_retention", String(max(1, count)), in: db)
        }
    }

    public func purgeDeletedRows() async throws(StoreError) {
        try await truncateLog()
    }
}
