import CustodyPolicy
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
/// (`DatabaseTests.auditBatches`), but for the details: each distinct detail is stored once (once
/// for each writer that remembers it), in `audit_details`, and an entry names it by `detail_id`
/// (an audited decision's reason is most of its row, and one of the few the policy in force
/// gives).
///
/// Runs inside a GRDB write (`db` is the writer's connection, in its transaction): GRDB's own
/// documentation allows raw SQLite calls there (its "Raw SQLite Pointers").
enum AuditInsert {
    /// Rows a statement inserts at most: 64 × 11 = 704 parameters, under SQLite's limit of 32,766.
    static let rowsPerStatement = 64
    private static let columns =
        "(at, kind, account, action, allowed, detail_id, decision_id, query, context_id, facts, outcome)"
    private static let placeholders = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"

    /// Inserts `records` in order.
    /// - Parameter knownDetails: details (reasons, contexts) with their ids in `audit_details`,
    ///   committed.
    /// - Returns: the details this call added to `audit_details`, with their ids: the caller
    ///   remembers them once the transaction is committed, never before (rolled back, they
    ///   name nothing).
    static func insert(_ records: [AuditRecord], in db: Database, knownDetails: AuditDetailIDs) throws
        -> [String: Int64]
    {
        guard let connection = db.sqliteConnection else {
            throw DatabaseError(resultCode: .SQLITE_MISUSE, message: "the database connection is closed")
        }
        var statements: [Int: Prepared] = [:]
        defer { for statement in statements.values { sqlite3_finalize(statement.handle) } }
        let details = try DetailIDs(connection: connection, committed: knownDetails)
        defer { details.finalize() }
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
            try statement.run(records[start..<(start + count)], details: details, connection: connection)
            start += count
        }
        return details.added
    }

    /// One prepared multi-row `INSERT`.
    private struct Prepared {
        let handle: OpaquePointer
        let sql: String

        init(rows: Int, connection: OpaquePointer) throws {
            sql =
                "INSERT INTO audit_log \(AuditInsert.columns) VALUES "
                + repeatElement(AuditInsert.placeholders, count: rows).joined(separator: ", ")
            handle = try AuditInsert.prepare(sql, connection: connection)
        }

        func run(_ records: ArraySlice<AuditRecord>, details: DetailIDs, connection: OpaquePointer) throws {
            // The details' ids first: finding one runs other statements.
            let ids = try records.map { record in
                (
                    detail: try record.detail.map { try details.id(of: $0) },
                    context: try record.asked.map { try details.id(of: $0.context) }
                )
            }
            sqlite3_reset(handle)
            var position: Int32 = 0
            func bind(_ text: String?) throws {
                position += 1
                try check(text.map { bindText($0, at: position) } ?? sqlite3_bind_null(handle, position), connection)
            }
            func bind(_ integer: Int64?) throws {
                position += 1
                try check(
                    integer.map { sqlite3_bind_int64(handle, position, $0) } ?? sqlite3_bind_null(handle, position),
                    connection)
            }
            for (record, id) in zip(records, ids) {
                try bind(StoredDate.text(record.at))
                try bind(record.kind.rawValue)
                try bind(record.account)
                try bind(record.action)
                try bind(record.allowed.map { $0 ? 1 : 0 } as Int64?)
                try bind(id.detail)
                try bind(record.decisionID)
                try bind(record.asked?.line)
                try bind(id.context)
                try bind(record.asked?.recordedFacts)
                try bind(record.asked?.outcome)
            }
            let code = sqlite3_step(handle)
            guard code == SQLITE_DONE else { throw AuditInsert.error(code, connection: connection, sql: sql) }
        }

        private func check(_ code: Int32, _ connection: OpaquePointer) throws {
            guard code == SQLITE_OK else { throw AuditInsert.error(code, connection: connection, sql: sql) }
        }

        private func bindText(_ text: String, at position: Int32) -> Int32 {
            AuditInsert.bindText(text, at: position, of: handle)
        }
    }

    /// The ids of details in `audit_details`: those this writer remembers committed, then those
    /// added in this transaction. A detail it does not remember is added again rather than
    /// looked up: the table is only appended to, so a commit writes its new rows at its end,
    /// where a unique index on the text made every new detail dirty a page of its own somewhere
    /// in the index (about 1.2 MB more written per commit of 10,000 decisions). A detail stored
    /// twice (by another process, or after this one forgot it) costs its bytes once more.
    private final class DetailIDs {
        private let connection: OpaquePointer
        private let insert: OpaquePointer
        private let committed: AuditDetailIDs
        /// Added in this transaction.
        private(set) var added: [String: Int64] = [:]
        /// Details met in this call, by the address of their bytes. A rendered reason is one
        /// `String` shared by every answer that gives it: found by its address, it costs no
        /// hashing of its couple of hundred bytes. Each is kept here, so its storage (and
        /// address) cannot be reused meanwhile; `==` on the same storage is immediate.
        private var byAddress: [UInt: (text: String, id: Int64)] = [:]

        init(connection: OpaquePointer, committed: AuditDetailIDs) throws {
            self.connection = connection
            self.committed = committed
            insert = try AuditInsert.prepare("INSERT INTO audit_details (text) VALUES (?)", connection: connection)
        }

        func finalize() {
            sqlite3_finalize(insert)
        }

        func id(of detail: String) throws -> Int64 {
            // A small string's bytes live in the value itself, not at an address of its own.
            let address =
                detail.utf8.count > 15
                ? detail.utf8.withContiguousStorageIfAvailable { UInt(bitPattern: $0.baseAddress) } : nil
            if let address, let met = byAddress[address], met.text == detail { return met.id }
            let id: Int64
            // Committed first: once a writer has run a while, nearly every detail is.
            if let known = committed.id(of: detail) ?? added[detail] {
                id = known
            } else {
                id = try add(detail)
                added[detail] = id
            }
            if let address { byAddress[address] = (detail, id) }
            return id
        }

        private func add(_ detail: String) throws -> Int64 {
            defer { sqlite3_reset(insert) }
            let sql = "INSERT INTO audit_details"
            let bound = AuditInsert.bindText(detail, at: 1, of: insert)
            guard bound == SQLITE_OK else { throw AuditInsert.error(bound, connection: connection, sql: sql) }
            let code = sqlite3_step(insert)
            guard code == SQLITE_DONE else { throw AuditInsert.error(code, connection: connection, sql: sql) }
            return sqlite3_last_insert_rowid(connection)
        }
    }

    private static func prepare(_ sql: String, connection: OpaquePointer) throws -> OpaquePointer {
        var handle: OpaquePointer?
        let code = sqlite3_prepare_v2(connection, sql, -1, &handle, nil)
        guard code == SQLITE_OK, let handle else {
            sqlite3_finalize(handle)
            throw error(code, connection: connection, sql: sql)
        }
        return handle
    }

    /// Binds `text`, which SQLite copies.
    private static func bindText(_ text: String, at position: Int32, of handle: OpaquePointer) -> Int32 {
        var text = text
        return text.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { characters in
                // A null pointer would bind NULL: an empty text is bound from a C string.
                guard let base = characters.baseAddress, !characters.isEmpty else {
                    return sqlite3_bind_text64(handle, position, "", 0, transient, UInt8(SQLITE_UTF8))
                }
                return sqlite3_bind_text64(
                    handle, position, base, sqlite3_uint64(characters.count), transient, UInt8(SQLITE_UTF8))
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

/// The ids of details an instance of `CustodyDatabase` has stored in `audit_details` and seen
/// committed, so that an audited decision's reason is stored once rather than with every entry.
/// Bounded: callers choose share targets, so details are neither few nor short by
/// force; past `capacity` details or `byteCapacity` bytes of them it starts again empty (a detail
/// forgotten is stored once more).
final class AuditDetailIDs: Sendable {
    static let capacity = 65_536
    static let byteCapacity = 16 << 20
    private let state = Locked<(ids: [String: Int64], bytes: Int)>(([:], 0))

    func id(of detail: String) -> Int64? {
        state.withLock { $0.ids[detail] }
    }

    func remember(_ added: [String: Int64]) {
        guard !added.isEmpty else { return }
        state.withLock { state in
            let bytes = added.keys.reduce(0) { $0 + $1.utf8.count }
            if state.ids.count + added.count > Self.capacity || state.bytes + bytes > Self.byteCapacity {
                state = ([:], 0)
            }
            for (detail, id) in added where state.ids.updateValue(id, forKey: detail) == nil {
                state.bytes += detail.utf8.count
            }
        }
    }
}
