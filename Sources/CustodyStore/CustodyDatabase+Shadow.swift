public import Foundation
import CustodyPolicy
import GRDB

extension CustodyDatabase {
    // MARK: Shadow mode

    static let shadowSetting = "shadow"

    public func shadow() async throws(StoreError) -> StoredShadow? {
        try await read("reading the shadow bundle") { db -> StoredShadow? in
            guard let text = try Self.setting(Self.shadowSetting, in: db), !text.isEmpty else { return nil }
            let record = try ShadowRecord.decode(text)
            let files = try Row.fetchAll(db, sql: "SELECT name, bytes FROM shadow_files ORDER BY name").map { row in
                StoredFile(name: row["name"], bytes: [UInt8](row["bytes"] as Data))
            }
            return StoredShadow(record: record, files: record.isRunning ? files : [])
        }
    }

    public func setShadow(_ shadow: StoredShadow, at date: Date) async throws(StoreError) {
        try await write("setting the shadow bundle") { db in
            try db.execute(sql: "DELETE FROM shadow_files")
            try db.execute(sql: "DELETE FROM shadow_tallies")
            for file in shadow.files {
                try db.execute(
                    sql: "INSERT INTO shadow_files (name, bytes) VALUES (?, ?)",
                    arguments: [file.name, Data(file.bytes)])
            }
            try SettingRow.save(Self.shadowSetting, try shadow.record.encoded(), in: db)
            try Self.recordChange(.shadow, [shadow.record.id], at: date, in: db)
            try Self.audit(
                .bundle, account: nil, action: "shadow",
                detail: "\(shadow.record.revision) from \(shadow.record.source)"
                    + (shadow.record.by.map { " (by \($0))" } ?? ""), at: date, in: db)
        }
    }

    @discardableResult
    public func endShadow(by: String?, at date: Date) async throws(StoreError) -> Bool {
        try await write("ending the shadow bundle") { db in
            try Self.endShadow(
                how: "stopped" + (by.map { " by \($0.escapingControlCharacters)" } ?? ""), at: date, in: db)
        }
    }

    /// Ends the running shadow, when there is one (and, with `revision`, when it is of that
    /// revision): its files go, its record says how it ended. Returns whether one ended.
    static func endShadow(how: String, revision: String? = nil, at date: Date, in db: Database) throws -> Bool {
        guard let text = try setting(shadowSetting, in: db), !text.isEmpty else { return false }
        var record = try ShadowRecord.decode(text)
        guard record.isRunning, revision == nil || record.revision == revision else { return false }
        record.ended = date
        record.endedHow = how
        try db.execute(sql: "DELETE FROM shadow_files")
        try SettingRow.save(shadowSetting, try record.encoded(), in: db)
        try recordChange(.shadow, [record.id], at: date, in: db)
        try audit(.bundle, account: nil, action: "shadow-end", detail: "\(record.revision) \(how)", at: date, in: db)
        return true
    }

    @discardableResult
    public func recordShadowTally(shadow id: String, replica: String, tally: String, at date: Date)
        async throws(StoreError) -> Bool
    {
        try await write("recording a shadow tally") { db in
            guard let text = try Self.setting(Self.shadowSetting, in: db), !text.isEmpty,
                try ShadowRecord.decode(text).id == id
            else { return false }
            try db.execute(
                sql: """
                    INSERT INTO shadow_tallies (replica, shadow, tally, updated_at) VALUES (?, ?, ?, ?)
                    ON CONFLICT (replica) DO UPDATE SET shadow = excluded.shadow, tally = excluded.tally,
                        updated_at = excluded.updated_at
                    """, arguments: [replica, id, tally, date])
            return true
        }
    }

    public func shadowTallies(shadow id: String) async throws(StoreError) -> [ShadowTallyRecord] {
        try await read("reading the shadow tallies") { db in
            try Row.fetchAll(
                db, sql: "SELECT replica, tally, updated_at FROM shadow_tallies WHERE shadow = ? ORDER BY replica",
                arguments: [id]
            ).map { row in
                ShadowTallyRecord(replica: row["replica"], tally: row["tally"], updatedAt: row["updated_at"])
            }
        }
    }
}
