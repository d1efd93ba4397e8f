import CustodyPolicy
import Foundation
import GRDB
import GRDBSQLite

/// Reads audit entries through SQLite's own statement API: a replay reads a million of them, and
/// GRDB's `Codable` row decoding, which found each of a row's columns by name (hashing it),
/// took nine tenths of its reading (measured: Benchmarks/README.md, "Replay"). A damaged row (a
/// detail both in the row and by id, a text id that names nothing) is refused, never read as an
/// entry without it.
///
/// Runs inside a GRDB read, with the statement GRDB prepared and bound (GRDB's documentation
/// allows raw SQLite calls there: its "Raw SQLite Pointers").
enum AuditRead {
    /// The columns `entries(_:)` reads, in order, from `audit_log a` and its texts joined.
    static let selection = """
        a.id, a.at, a.kind, a.account, a.action, a.allowed, a.detail, a.detail_id, d.text, a.decision_id, a.query,
        a.context_id, c.text, a.facts, a.outcome
        FROM audit_log a LEFT JOIN audit_details d ON d.id = a.detail_id LEFT JOIN audit_details c ON c.id = a.context_id
        """

    /// Every row `statement` (selecting `selection`) gives.
    static func entries(_ statement: Statement) throws -> [AuditEntry] {
        let handle = statement.sqliteStatement
        defer { sqlite3_reset(handle) }
        var entries: [AuditEntry] = []
        // Texts shared by many entries (reasons, contexts), one `String` each by id: read once,
        // and compared by their storage afterwards.
        var shared: [Int64: String] = [:]
        func text(_ column: Int32) -> String? {
            guard sqlite3_column_type(handle, column) != SQLITE_NULL, let bytes = sqlite3_column_text(handle, column)
            else { return nil }
            return String(
                decoding: UnsafeBufferPointer(start: bytes, count: Int(sqlite3_column_bytes(handle, column))),
                as: UTF8.self)
        }
        func integer(_ column: Int32) -> Int64? {
            sqlite3_column_type(handle, column) == SQLITE_NULL ? nil : sqlite3_column_int64(handle, column)
        }
        func sharedText(id column: Int32, text textColumn: Int32) -> (id: Int64?, text: String?) {
            guard let id = integer(column) else { return (nil, nil) }
            if let known = shared[id] { return (id, known) }
            let value = text(textColumn)
            if let value { shared[id] = value }
            return (id, value)
        }
        while true {
            let code = sqlite3_step(handle)
            if code == SQLITE_DONE { break }
            guard code == SQLITE_ROW else {
                throw DatabaseError(
                    resultCode: ResultCode(rawValue: code),
                    message: String(cString: sqlite3_errmsg(sqlite3_db_handle(handle))))
            }
            let id = sqlite3_column_int64(handle, 0)
            guard let at = StoredDate.date(handle, column: 1) else {
                throw RecordError("audit entry \(id) has no time")
            }
            guard let kindText = text(2), let kind = AuditEntry.Kind(rawValue: kindText) else {
                throw RecordError("audit entry \(id) names an unknown kind")
            }
            guard let action = text(4) else { throw RecordError("audit entry \(id) has no action") }
            let detail: String?
            let (detailID, storedDetail) = sharedText(id: 7, text: 8)
            switch (text(6), detailID) {
            case (let own, nil): detail = own
            case (nil, let detailID?):
                guard let storedDetail else {
                    throw RecordError("audit entry \(id) names detail \(detailID), which audit_details does not hold")
                }
                detail = storedDetail
            case (_?, let detailID?):
                throw RecordError("audit entry \(id) has both a detail of its own and detail \(detailID)")
            }
            var asked: AuditedQuery?
            let (contextID, context) = sharedText(id: 11, text: 12)
            switch (text(10), contextID) {
            case (nil, nil): break
            case (let line?, let contextID?):
                guard let context else {
                    throw RecordError("audit entry \(id) names context \(contextID), which audit_details does not hold")
                }
                asked = AuditedQuery(line: line, context: context, recordedFacts: text(13), outcome: text(14))
            case (_?, nil): throw RecordError("audit entry \(id) keeps a query without the context it was decided in")
            case (nil, _?): throw RecordError("audit entry \(id) keeps a context without its query")
            }
            entries.append(
                AuditEntry(
                    id: id, at: at, kind: kind, account: text(3), action: action, allowed: integer(5).map { $0 != 0 },
                    detail: detail, decisionID: text(9), asked: asked))
        }
        return entries
    }
}
