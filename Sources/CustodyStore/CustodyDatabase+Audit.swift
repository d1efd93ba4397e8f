import CustodyPolicy
public import Foundation
import GRDB

/// One line of the audit log.
public struct AuditEntry: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// A decision, when decision auditing is on.
        case decision
        case wipe
        /// A bundle applied, rejected or rolled back to; the policy in force frozen or unfrozen.
        case bundle
        /// A secret stored or removed (its identifier; never its value).
        case secret
        /// An account key rotated.
        case key
        /// A service token created or revoked (its id; never the token).
        case token
        /// A bundle signing key trusted or revoked.
        case trust
        /// The audit log, or decision auditing, switched on or off (`AuditRecord.switched`).
        case audit
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
    /// The id an audited decision's answer carried.
    public let decisionID: String?
    /// What an audited decision was asked, to decide it again; nil for other entries, and for
    /// decisions audited before the log kept it or made outside a query (a check-in's launch).
    public let asked: AuditedQuery?

    package init(
        id: Int64, at: Date, kind: Kind, account: String?, action: String, allowed: Bool?, detail: String?,
        decisionID: String?, asked: AuditedQuery? = nil
    ) {
        self.id = id
        self.at = at
        self.kind = kind
        self.account = account
        self.action = action
        self.allowed = allowed
        self.detail = detail
        self.decisionID = decisionID
        self.asked = asked
    }
}

/// What an audited decision was asked and under what, kept with its entry so that it can be
/// decided again under another bundle (`custody replay`).
public struct AuditedQuery: Sendable, Hashable {
    /// The query line as it was asked: a JSON object, as `custody decide` reads it.
    public let line: String
    /// The revision and evaluation context it was decided under: a JSON object with
    /// `revision` and, when set, `platform`, `app` and `managementLevel`.
    public let context: String
    /// The facts recorded for the account that a launch query's missing facts were taken
    /// from, a JSON object as `custody checkin --facts` takes it; nil when none were.
    public let recordedFacts: String?
    /// A launch decision's outcome (`allow`, `warn`, `block`, `wipe`); nil for other actions,
    /// whose outcome is the entry's `allowed`.
    public let outcome: String?

    public init(line: String, context: String, recordedFacts: String?, outcome: String?) {
        self.line = line
        self.context = context
        self.recordedFacts = recordedFacts
        self.outcome = outcome
    }
}

/// An entry to append to the audit log.
public struct AuditRecord: Sendable, Hashable {
    public let kind: AuditEntry.Kind
    public let account: String?
    public let action: String
    public let allowed: Bool?
    public let detail: String?
    public let at: Date
    /// For a decision: the id its answer carries.
    public let decisionID: String?
    /// For a decision: what it was asked, to decide it again.
    public let asked: AuditedQuery?

    /// Control characters in `account`, `action` and `detail` are kept escaped (`\u{0}`), as
    /// `custody audit` prints them: a NUL would cut the entry short in SQLite and be refused by
    /// PostgreSQL, and these texts can come from callers (a freeze's reason, a share target).
    /// `asked` is kept as it is: its texts are JSON, which holds no control character unescaped.
    public init(
        _ kind: AuditEntry.Kind, account: String?, action: String, allowed: Bool? = nil, detail: String? = nil,
        decisionID: String? = nil, asked: AuditedQuery? = nil, at: Date
    ) {
        self.kind = kind
        self.account = account?.escapingControlCharacters
        self.action = action.escapingControlCharacters
        self.allowed = allowed
        self.detail = detail?.escapingControlCharacters
        self.decisionID = decisionID
        self.asked = asked
        self.at = at
    }
}

extension AuditRecord {
    /// Which audit setting a switch changes.
    package enum Switch: Sendable {
        /// The audit log as a whole.
        case log
        /// Decision auditing.
        case decisions
    }

    /// The entry of an audit setting switched on or off, the same on every backend: the log's
    /// last entry before it is switched off and its first once back on, so a gap in the log
    /// is never silent. `action` is `on`, `off`, `decisionsOn` or `decisionsOff`.
    package static func switched(_ setting: Switch, on: Bool, at date: Date) -> AuditRecord {
        let action: String
        let detail: String
        switch setting {
        case .log:
            action = on ? "on" : "off"
            detail =
                on ? "the audit log switched on" : "the audit log switched off: nothing is logged until it is back on"
        case .decisions:
            action = on ? "decisionsOn" : "decisionsOff"
            detail = on ? "decision auditing switched on" : "decision auditing switched off"
        }
        return AuditRecord(.audit, account: nil, action: action, detail: detail, at: date)
    }

    /// The detail of a wipe's audit entry, the same on every backend.
    package static func wipeDetail(identifiers: [String], keyVersions: [String: Int], secrets: Int, reason: String)
        -> String
    {
        let under = identifiers.map { "\($0): \(keyVersions[$0] ?? 0)" }.joined(separator: ", ")
        return
            "key versions deleted: \(keyVersions.values.reduce(0, +)) (\(under)); secrets deleted: \(secrets); \(reason)"
    }

    /// The detail of a bundle's audit entry, the same on every backend.
    package static func bundleDetail(
        contentHash: String, source: String, message: String?, provenance: BundleProvenance = .none
    ) -> String {
        var detail = "\(contentHash.isEmpty ? "(no content hash)" : contentHash) from \(source)"
        if let sequence = provenance.sequence { detail += ", sequence \(sequence)" }
        if !provenance.signers.isEmpty { detail += ", signed by \(provenance.signers.joined(separator: " "))" }
        if let by = provenance.appliedBy { detail += ", by \(by)" }
        if let reason = provenance.reason { detail += ", reason: \(reason)" }
        return detail + (message.map { ": " + $0 } ?? "")
    }
}

extension CustodyDatabase {
    /// Whether the audit log is written at all (on by default): bundles, wipes, key rotations,
    /// secret changes, and decisions when `isDecisionAuditEnabled`.
    public func isAuditEnabled() async throws(StoreError) -> Bool {
        try await read("reading the audit setting") { db in
            try StoredSwitch.isOn(Self.setting("audit", in: db), setting: "audit", absent: true, path: self.path)
        }
    }

    /// Switches the audit log on or off (kept in the database, for every process). A change is
    /// logged (`AuditRecord.switched`): as the last entry before the log goes off, the first
    /// once it is on again.
    public func setAuditEnabled(_ enabled: Bool) async throws(StoreError) {
        try await write("changing the audit setting") { db in
            guard (try Self.setting("audit", in: db) != "off") != enabled else { return }
            let entry = AuditRecord.switched(.log, on: enabled, at: Date())
            if !enabled { try Self.audit(entry, in: db) }
            try Self.setSetting("audit", enabled ? "on" : "off", in: db)
            if enabled { try Self.audit(entry, in: db) }
        }
    }

    /// Whether every decision is audited too (off by default: it costs a database write per
    /// batch of decisions). Needs the audit log on.
    public func isDecisionAuditEnabled() async throws(StoreError) -> Bool {
        try await read("reading the decision audit setting") { db in
            try StoredSwitch.isOn(Self.setting("audit", in: db), setting: "audit", absent: true, path: self.path)
                && StoredSwitch.isOn(
                    Self.setting("audit_decisions", in: db), setting: "audit_decisions", absent: false, path: self.path)
        }
    }

    /// Switches decision auditing on or off.
    public func setDecisionAuditEnabled(_ enabled: Bool) async throws(StoreError) {
        try await write("changing the decision audit setting") { db in
            guard (try Self.setting("audit_decisions", in: db) == "on") != enabled else { return }
            try Self.setSetting("audit_decisions", enabled ? "on" : "off", in: db)
            try Self.audit(AuditRecord.switched(.decisions, on: enabled, at: Date()), in: db)
        }
    }

    /// Deletes up to `limit` entries older than `date`, oldest first (through the time index),
    /// with an `audit` entry saying so in the same transaction; returns how many.
    public func pruneAudit(before date: Date, limit: Int, at now: Date) async throws(StoreError) -> Int {
        try await write("pruning the audit log") { db in
            try db.execute(
                sql: "DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE at < ? ORDER BY at LIMIT ?)",
                arguments: [StoredDate.databaseValue(date), limit])
            let deleted = db.changesCount
            if deleted > 0 {
                try Self.audit(
                    .audit, account: nil, action: "prune",
                    detail: "\(deleted) entries from before \(date.formatted(Date.ISO8601FormatStyle(timeZone: .gmt)))",
                    at: now, in: db)
            }
            return deleted
        }
    }

    static func setting(_ name: String, in db: Database) throws -> String? {
        try SettingRow.value(name, in: db)
    }

    static func setSetting(_ name: String, _ value: String, in db: Database) throws {
        try SettingRow.save(name, value, in: db)
        try recordChange(.setting, [name], at: Date(), in: db)
    }

    /// Appends entries in one transaction when auditing is on; returns how many were written.
    @discardableResult
    public func audit(_ records: [AuditRecord]) async throws(StoreError) -> Int {
        guard !records.isEmpty else { return 0 }
        let added: [String: Int64]? = try await write("writing the audit log") { db in
            guard try Self.setting("audit", in: db) != "off" else { return nil }
            return try AuditInsert.insert(records, in: db, knownDetails: self.auditDetailIDs)
        }
        guard let added else { return 0 }
        // Committed: the new details' ids now name them for good (nothing deletes a detail).
        auditDetailIDs.remember(added)
        return records.count
    }

    /// Appends an entry inside a transaction, when auditing is on; returns whether it did.
    @discardableResult
    static func audit(
        _ kind: AuditEntry.Kind, account: String?, action: String, allowed: Bool? = nil, detail: String?, at date: Date,
        in db: Database
    ) throws -> Bool {
        // The texts as `AuditRecord` keeps them (escaped).
        try audit(
            AuditRecord(kind, account: account, action: action, allowed: allowed, detail: detail, at: date), in: db)
    }

    /// Appends `record` inside a transaction, when auditing is on; returns whether it did.
    @discardableResult
    static func audit(_ record: AuditRecord, in db: Database) throws -> Bool {
        guard try setting("audit", in: db) != "off" else { return false }
        try db.execute(
            sql: "INSERT INTO audit_log (at, kind, account, action, allowed, detail) VALUES (?, ?, ?, ?, ?, ?)",
            arguments: [
                StoredDate.databaseValue(record.at), record.kind.rawValue, record.account, record.action,
                record.allowed, record.detail,
            ])
        return true
    }

    /// Audit entries at or after `since` (all when nil) whose id is above `id`, oldest first.
    public func auditEntries(since: Date?, after id: Int64, limit: Int) async throws(StoreError) -> [AuditEntry] {
        try await read("reading the audit log") { db in
            let statement = try db.cachedStatement(
                sql: "SELECT \(AuditRead.selection) WHERE a.at >= ? AND a.id > ? ORDER BY a.id LIMIT ?")
            try statement.setArguments([StoredDate.databaseValue(since ?? StoredDate.range.lowerBound), id, limit])
            return try AuditRead.entries(statement)
        }
    }

    public func auditDecisions(from: Date, to: Date, action: String?, after id: Int64, limit: Int)
        async throws(StoreError) -> [AuditEntry]
    {
        try await read("reading the audit log's decisions") { db in
            let statement = try db.cachedStatement(
                sql: """
                    SELECT \(AuditRead.selection)
                    WHERE a.kind = 'decision' AND a.at >= ? AND a.at < ? AND (? IS NULL OR a.action = ?) AND a.id > ?
                    ORDER BY a.id LIMIT ?
                    """)
            try statement.setArguments([
                StoredDate.databaseValue(from), StoredDate.databaseValue(to), action, action, id, limit,
            ])
            return try AuditRead.entries(statement)
        }
    }

    public func auditDecisionCount(from: Date, to: Date, action: String?) async throws(StoreError) -> Int {
        try await read("counting the audit log's decisions") { db in
            try Int.fetchOne(
                db,
                sql: """
                    SELECT count(*) FROM audit_log
                    WHERE at >= ? AND at < ? AND kind = 'decision' AND (? IS NULL OR action = ?)
                    """,
                arguments: [StoredDate.databaseValue(from), StoredDate.databaseValue(to), action, action]) ?? 0
        }
    }
}

extension CustodyDatabase {
    /// The installation's evaluation context, as `custody apply` recorded it: raw values of
    /// the platform, app id and management level, each nil when never recorded.
    public func installationContext() async throws(StoreError) -> InstallationContext {
        try await read("reading the installation's context") { db in
            InstallationContext(
                platform: try Self.setting("context_platform", in: db),
                appID: try Self.setting("context_app", in: db),
                managementLevel: try Self.setting("context_management_level", in: db),
                precedence: try Self.setting("precedence", in: db))
        }
    }

    /// Records the fields of the installation's context that are given; the others keep their
    /// stored value.
    public func recordInstallationContext(
        platform: String?, appID: String?, managementLevel: String?, precedence: String?
    ) async throws(StoreError) {
        try await write("recording the installation's context") { db in
            for (name, value) in [
                ("context_platform", platform), ("context_app", appID), ("context_management_level", managementLevel),
                ("precedence", precedence),
            ] {
                guard let value else { continue }
                try Self.setSetting(name, value, in: db)
            }
        }
    }
}
