public import CustodyStore
import NIOCore
import PostgresNIO
import Synchronization

extension PostgresState {
    /// Kept in the settings table as `cache:{name}`, outside the change log.
    public func cache(_ name: String) throws(StoreError) -> String? {
        try read("reading the cache \(name)") { session in try Self.setting("cache:" + name, in: session) }
    }

    public func saveCache(_ name: String, _ text: String?) throws(StoreError) {
        let key = "cache:" + name
        try write("saving the cache \(name)") { session in
            if let text {
                try session.execute("INSERT INTO settings (name, value) VALUES (\(key), \(text)) ON CONFLICT (name) DO UPDATE SET value = excluded.value")
            } else {
                try session.execute("DELETE FROM settings WHERE name = \(key)")
            }
        }
    }

    /// A session advisory lock (`pg_try_advisory_lock`) keyed by the schema and `name`, on a
    /// connection of its own: every replica of this state contends for the same key, and the
    /// server frees it when the connection ends, so a replica that dies or is cut off never
    /// holds it for good.
    public func lease(_ name: String) throws(StoreError) -> (any StateLease)? {
        let connection = try sessions.connect()
        let key = "custody:\(settings.schema):\(name)"
        do {
            let rows = try sessions.wait(connection.query("SELECT pg_try_advisory_lock(hashtextextended(\(key), 0))", logger: logger)).rows
            guard let taken = try rows.first?.decode(Bool.self), taken else {
                sessions.drop(connection)
                return nil
            }
            return AdvisoryLease(connection: connection, sessions: sessions)
        } catch {
            sessions.drop(connection)
            throw StoreError(.unavailable, "cannot take the lease \(name): \(PostgresSessions.describe(error))", path: settings.redacted)
        }
    }
}

/// An advisory lock held by keeping its connection open: released by closing it.
final class AdvisoryLease: StateLease {
    private let connection: Mutex<PostgresConnection?>
    private let sessions: PostgresSessions

    init(connection: PostgresConnection, sessions: PostgresSessions) {
        self.connection = Mutex(connection)
        self.sessions = sessions
    }

    func release() {
        if let connection = connection.withLock({ $0.take() }) { sessions.drop(connection) }
    }

    deinit { release() }
}
