public import CustodyStore
public import Foundation
import CustodyPolicy
import PostgresNIO

extension PostgresState {
    // MARK: Shadow mode

    static let shadowSetting = "shadow"

    public func shadow() async throws(StoreError) -> StoredShadow? {
        try await read("reading the shadow bundle") { session -> StoredShadow? in
            guard let record = try await self.shadowRecord(in: session) else { return nil }
            guard record.isRunning else { return StoredShadow(record: record, files: []) }
            let files = try await session.query("SELECT name, bytes FROM shadow_files ORDER BY name COLLATE \"C\"").map
            {
                row in
                let (name, bytes) = try row.decode((String, Data).self)
                return StoredFile(name: name, bytes: [UInt8](bytes))
            }
            return StoredShadow(record: record, files: files)
        }
    }

    /// The shadow's record, when the state has one.
    private func shadowRecord(in session: PostgresSession) async throws -> ShadowRecord? {
        guard let text = try await Self.setting(Self.shadowSetting, in: session), !text.isEmpty else { return nil }
        do {
            return try ShadowRecord.decode(text)
        } catch {
            throw corrupt("the shadow setting is not readable: \(error)")
        }
    }

    public func setShadow(_ shadow: StoredShadow, at date: Date) async throws(StoreError) {
        try await write("setting the shadow bundle") { session in
            // Writers of the shadow one at a time (the lock every change takes).
            try await session.execute("SELECT value FROM counters WHERE name = 'change' FOR UPDATE")
            try await session.execute("DELETE FROM shadow_files")
            try await session.execute("DELETE FROM shadow_tallies")
            for file in shadow.files {
                try await session.execute(
                    "INSERT INTO shadow_files (name, bytes) VALUES (\(file.name), \(Data(file.bytes)))")
            }
            try await session.execute(
                "INSERT INTO settings (name, value) VALUES (\(Self.shadowSetting), \(try shadow.record.encoded())) ON CONFLICT (name) DO UPDATE SET value = excluded.value"
            )
            try await self.recordChange(.shadow, [shadow.record.id], at: date, in: session)
            try await Self.audit(
                .bundle, account: nil, action: "shadow",
                detail: "\(shadow.record.revision) from \(shadow.record.source)"
                    + (shadow.record.by.map { " (by \($0))" } ?? ""), at: date, in: session)
        }
    }

    @discardableResult
    public func endShadow(by: String?, at date: Date) async throws(StoreError) -> Bool {
        try await write("ending the shadow bundle") { session in
            try await session.execute("SELECT value FROM counters WHERE name = 'change' FOR UPDATE")
            return try await self.endShadow(
                how: "stopped" + (by.map { " by \($0.escapingControlCharacters)" } ?? ""), at: date, in: session)
        }
    }

    /// Ends the running shadow, when there is one (and, with `revision`, when it is of that
    /// revision): its files go, its record says how it ended. Returns whether one ended. The
    /// caller holds the change lock.
    func endShadow(how: String, revision: String? = nil, at date: Date, in session: PostgresSession) async throws
        -> Bool
    {
        guard var record = try await shadowRecord(in: session), record.isRunning,
            revision == nil || record.revision == revision
        else { return false }
        record.ended = date
        record.endedHow = how
        try await session.execute("DELETE FROM shadow_files")
        try await session.execute(
            "UPDATE settings SET value = \(try record.encoded()) WHERE name = \(Self.shadowSetting)")
        try await recordChange(.shadow, [record.id], at: date, in: session)
        try await Self.audit(
            .bundle, account: nil, action: "shadow-end", detail: "\(record.revision) \(how)", at: date, in: session)
        return true
    }

    @discardableResult
    public func recordShadowTally(shadow id: String, replica: String, tally: String, at date: Date)
        async throws(StoreError) -> Bool
    {
        try await write("recording a shadow tally") { session in
            // Only while the shadow is the state's (a share lock: a new shadow, which deletes the
            // tallies, waits for this write, or this one sees it).
            guard
                let text = try await session.value(
                    "SELECT value FROM settings WHERE name = \(Self.shadowSetting) FOR SHARE", as: String.self),
                (try? ShadowRecord.decode(text))?.id == id
            else { return false }
            try await session.execute(
                """
                INSERT INTO shadow_tallies (replica, shadow, tally, updated_at) VALUES (\(replica), \(id), \(tally), \(date))
                ON CONFLICT (replica) DO UPDATE SET shadow = excluded.shadow, tally = excluded.tally,
                    updated_at = excluded.updated_at
                """)
            return true
        }
    }

    public func shadowTallies(shadow id: String) async throws(StoreError) -> [ShadowTallyRecord] {
        try await read("reading the shadow tallies") { session in
            try await session.query(
                "SELECT replica, tally, updated_at FROM shadow_tallies WHERE shadow = \(id) ORDER BY replica COLLATE \"C\""
            ).map { row throws in
                let (replica, tally, at) = try row.decode((String, String, Date).self)
                return ShadowTallyRecord(replica: replica, tally: tally, updatedAt: at)
            }
        }
    }
}
