public import Foundation
import GRDB

/// One line of the audit log.
public struct AuditEntry: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable {
        case decision
        case wipe
        case bundle
        /// A secret stored or removed (its identifier; never its value).
        case secret
    }

    public let id: Int64
    public let at: Date
    public let kind: Kind
    /// The account concerned, if any.
    public let account: String?
    /// What was decided or done: a decision's action (`saveTo`), `wipe`, `apply`.
    public let action: String
    /// For decisions: allowed or blocked.
    public let allowed: Bool?
    /// The reason, or what was wiped.
    public let detail: String?
}

extension CustodyDatabase {
    /// Whether decisions and wipes are written to the audit log (on by default).
    public func isAuditEnabled() throws(StoreError) -> Bool {
        try read("reading the audit setting") { db in
            try String.fetchOne(db, sql: "SELECT value FROM settings WHERE name = 'audit'") ?? "on"
        } != "off"
    }

    /// Switches the audit log on or off (kept in the database, for every process).
    public func setAuditEnabled(_ enabled: Bool) throws(StoreError) {
        try write("changing the audit setting") { db in
            try db.execute(
                sql: "INSERT INTO settings (name, value) VALUES ('audit', ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value",
                arguments: [enabled ? "on" : "off"])
        }
    }

    /// Appends an entry when auditing is on; returns whether it was written.
    @discardableResult
    public func audit(_ kind: AuditEntry.Kind, account: String?, action: String, allowed: Bool? = nil, detail: String? = nil, at date: Date) throws(StoreError) -> Bool {
        try write("writing the audit log") { db in
            guard try String.fetchOne(db, sql: "SELECT value FROM settings WHERE name = 'audit'") != "off" else { return false }
            try db.execute(
                sql: "INSERT INTO audit_log (at, kind, account, action, allowed, detail) VALUES (?, ?, ?, ?, ?, ?)",
                arguments: [date, kind.rawValue, account, action, allowed, detail])
            return true
        }
    }

    /// Audit entries at or after `since` (all when nil), oldest first.
    public func auditEntries(since: Date? = nil, limit: Int = 10_000) throws(StoreError) -> [AuditEntry] {
        let rows = try read("reading the audit log") { db in
            try Row.fetchAll(
                db, sql: "SELECT id, at, kind, account, action, allowed, detail FROM audit_log WHERE at >= ? ORDER BY id LIMIT ?",
                arguments: [since ?? Date.distantPast, limit])
        }
        var entries: [AuditEntry] = []
        for row in rows {
            guard let id: Int64 = row["id"], let at: Date = row["at"], let kind = AuditEntry.Kind(rawValue: row["kind"] ?? ""),
                let action: String = row["action"]
            else { throw StoreError(.corrupt, "an audit row is damaged", path: path) }
            entries.append(AuditEntry(id: id, at: at, kind: kind, account: row["account"], action: action, allowed: row["allowed"], detail: row["detail"]))
        }
        return entries
    }
}
