import Foundation
import GRDB
import GRDBSQLite

/// Appends audit rows through SQLite's own statement API, many rows to a statement.
///
/// With decision auditing on, every decision is a row, and the decision service writes a batch
/// request's thousand rows on the database's one writer before it answers: the writer's cost a
/// row bounds every audited caller. Through GRDB's `StatementArguments` a row boxed its seven
/// values into existentials and `DatabaseValue`s and measured each text's length again; here
/// each value is bound straight from the record's own storage, and one statement inserts up to
/// `rowsPerStatement` rows, so SQLite runs its statement set-up once for them all. The rows,
/// their order and their values are what `INSERT ... VALUES (?, ...)` one by one would write
/// (`DatabaseTests.auditBatches`).
///
/// Runs inside a GRDB write (`db` is the writer's connection, in its transaction): GRDB's own
/// documentation allows raw SQLite calls there (its "Raw SQLite Pointers").
enum AuditInsert {
    /// Rows a statement inserts at most: 64 × 7 = 448 parameters, under SQLite's limit of 32,766.
    static let rowsPerStatement = 64
    private static let columns = "(at, kind, account, action, allowed, detail, decision_id)"
    private static let placeholders = "(?, ?, ?, ?, ?, ?, ?)"

    /// Inserts `records` in order.
    static func insert(_ records: [AuditRecord], in db: Database) throws {
        guard let connection = db.sqliteConnection else {
            throw DatabaseError(resultCode: .SQLITE_MISUSE, message: "the database connection is closed")
        }
        var statements: [Int: Prepared] = [:]
        defer { for statement in statements.values { sqlite3_finalize(statement.handle) } }
        var start = records.startIndex
        while start < records.endIndex {
            let count = min(rowsPerStatement, records.endIndex - start)
            let statement: Prepared
            if let prepared = statements[count] {
                statement = prepared
            } else {
                statement = try Prepared(rows: count, connection: connection)
                statements[count] = statement
            }
            try statement.run(records[start..<(start + count)], connection: connection)
            start += count
        }
    }

    /// One prepared multi-row `INSERT`.
    private struct Prepared {
        let handle: OpaquePointer
        let sql: String

        init(rows: Int, connection: OpaquePointer) throws {
            sql =
                "INSERT INTO audit_log \(AuditInsert.columns) VALUES "
                + repeatElement(AuditInsert.placeholders, count: rows).joined(separator: ", ")
            var handle: OpaquePointer?
            let code = sqlite3_prepare_v2(connection, sql, -1, &handle, nil)
            guard code == SQLITE_OK, let handle else {
                sqlite3_finalize(handle)
                throw AuditInsert.error(code, connection: connection, sql: sql)
            }
            self.handle = handle
        }

        func run(_ records: ArraySlice<AuditRecord>, connection: OpaquePointer) throws {
            sqlite3_reset(handle)
            var position: Int32 = 0
            func bind(_ text: String?) throws {
                position += 1
                try check(text.map { bindText($0, at: position) } ?? sqlite3_bind_null(handle, position), connection)
            }
            for record in records {
                try bind(StoredDate.text(record.at))
                try bind(record.kind.rawValue)
                try bind(record.account)
                try bind(record.action)
                position += 1
                try check(
                    record.allowed.map { sqlite3_bind_int(handle, position, $0 ? 1 : 0) }
                        ?? sqlite3_bind_null(handle, position), connection)
                try bind(record.detail)
                try bind(record.decisionID)
            }
            let code = sqlite3_step(handle)
            guard code == SQLITE_DONE else { throw AuditInsert.error(code, connection: connection, sql: sql) }
        }

        private func check(_ code: Int32, _ connection: OpaquePointer) throws {
            guard code == SQLITE_OK else { throw AuditInsert.error(code, connection: connection, sql: sql) }
        }

        /// Binds `text`, which SQLite copies.
        private func bindText(_ text: String, at position: Int32) -> Int32 {
            var text = text
            return text.withUTF8 { bytes in
                bytes.withMemoryRebound(to: CChar.self) { characters in
                    // A null pointer would bind NULL: an empty text is bound from a C string.
                    guard let base = characters.baseAddress, !characters.isEmpty else {
                        return sqlite3_bind_text64(handle, position, "", 0, AuditInsert.transient, UInt8(SQLITE_UTF8))
                    }
                    return sqlite3_bind_text64(
                        handle, position, base, sqlite3_uint64(characters.count), AuditInsert.transient,
                        UInt8(SQLITE_UTF8))
                }
            }
        }
    }

    /// SQLite's `SQLITE_TRANSIENT`: it copies the bound bytes before the call returns.
    private static let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)

    private static func error(_ code: Int32, connection: OpaquePointer, sql: String) -> DatabaseError {
        DatabaseError(
            resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(connection)), sql: sql)
    }
}
