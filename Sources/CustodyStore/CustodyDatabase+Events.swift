public import Foundation
import GRDB

/// An event to append to the state's event log: its name and its JSON.
public struct EventRecord: Sendable, Hashable {
    public let name: String
    public let body: [UInt8]

    public init(name: String, body: [UInt8]) {
        self.name = name
        self.body = body
    }
}

/// An event as the log keeps it.
public struct StoredEvent: Sendable, Hashable {
    /// Increasing, never reused: the event's id in Server-Sent Events.
    public let id: Int64
    public let at: Date
    public let name: String
    public let body: [UInt8]

    public init(id: Int64, at: Date, name: String, body: [UInt8]) {
        self.id = id
        self.at = at
        self.name = name
        self.body = body
    }
}

extension CustodyDatabase {
    /// How many events the log keeps (the newest); older ones are pruned as new ones come.
    public static let defaultEventRetention: Int64 = 10_000

    /// Appends events to the log; returns their ids, in order.
    @discardableResult
    public func appendEvents(_ records: [EventRecord], at date: Date) async throws(StoreError) -> [Int64] {
        guard !records.isEmpty else { return [] }
        return try await write("appending to the event log") { db in try Self.appendEvents(records, at: date, in: db) }
    }

    static func appendEvents(_ records: [EventRecord], at date: Date, in db: Database) throws -> [Int64] {
        guard !records.isEmpty else { return [] }
        var ids: [Int64] = []
        for record in records {
            var row = EventRow(at: date, name: record.name, body: Data(record.body))
            try row.insert(db)
            ids.append(db.lastInsertedRowID)
        }
        let retention =
            Int64(try SettingRow.value("event_retention", in: db) ?? "")
            ?? defaultEventRetention
        try db.execute(sql: "DELETE FROM events WHERE id <= ?", arguments: [ids[ids.count - 1] - retention])
        return ids
    }

    /// Events after `id`, oldest first, at most `limit`.
    public func events(after id: Int64, limit: Int) async throws(StoreError) -> [StoredEvent] {
        try await read("reading the event log") { db in
            try EventRow.filter(Column("id") > id).order(Column("id")).limit(limit).fetchAll(db).map { try $0.event() }
        }
    }

    /// The oldest event id the log still holds (nil when empty) and the newest one ever
    /// given (0 before the first).
    public func eventBounds() async throws(StoreError) -> LogBounds {
        try await read("reading the event log") { db in
            let oldest = try Int64.fetchOne(db, sql: "SELECT min(id) FROM events")
            let newest = try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'events'") ?? 0
            return LogBounds(oldest: oldest, newest: newest)
        }
    }

    /// Sets how many events the log keeps.
    public func setEventRetention(_ count: Int64) async throws(StoreError) {
        try await write("changing the event retention") { db in
            try SettingRow.save("event_retention", String(max(1, count)), in: db)
        }
    }
}
