import CustodyPolicy
public import CustodyStore
import NIOCore
import PostgresNIO

extension PostgresState {
    /// Kept in the settings table as `cache:{name}`, outside the change log.
    public func cache(_ name: String) async throws(StoreError) -> String? {
        try await read("reading the cache \(name)") { session in try Self.setting("cache:" + name, in: session) }
    }

    public func saveCache(_ name: String, _ text: String?) async throws(StoreError) {
        let key = "cache:" + name
        try await write("saving the cache \(name)") { session in
            if let text {
                try session.execute(
                    "INSERT INTO settings (name, value) VALUES (\(key), \(text)) ON CONFLICT (name) DO UPDATE SET value = excluded.value"
                )
            } else {
                try session.execute("DELETE FROM settings WHERE name = \(key)")
            }
        }
    }

    /// A session advisory lock (`pg_try_advisory_lock`) keyed by the schema and `name`, on a
    /// connection of its own: every replica of this state contends for the same key, and the
    /// server frees it when the connection ends, so a replica that dies or is cut off never
    /// holds it for good.
    public func lease(_ name: String) async throws(StoreError) -> (any StateLease)? {
        try await sessions.waiting { [sessions, settings, logger] () throws(StoreError) -> AdvisoryLease? in
            try Self.takeLease(name, sessions: sessions, settings: settings, logger: logger)
        }
    }

    /// `lease(_:)`, waiting on this thread.
    private static func takeLease(
        _ name: String, sessions: PostgresSessions, settings: PostgresSettings, logger: Logger
    ) throws(StoreError) -> AdvisoryLease? {
        let connection = try sessions.connect(answersBefore: sessions.answerCount)
        let key = "custody:\(settings.schema):\(name)"
        do {
            let rows = try sessions.wait(
                connection.query("SELECT pg_try_advisory_lock(hashtextextended(\(key), 0))", logger: logger)
            ).rows
            guard let taken = try rows.first?.decode(Bool.self), taken else {
                sessions.drop(connection)
                return nil
            }
            return AdvisoryLease(connection: connection, sessions: sessions)
        } catch {
            sessions.drop(connection)
            throw StoreError(
                .unavailable, "cannot take the lease \(name): \(PostgresSessions.describe(error))",
                path: settings.redacted)
        }
    }
}

/// An advisory lock held by keeping its connection open. Released by unlocking it before the
/// connection is closed: the server sees a closed connection only a moment later, and another
/// replica asking meanwhile would find it still held. (A connection that cannot be unlocked is
/// closed all the same, and the server frees the lock when it sees it gone.)
final class AdvisoryLease: StateLease {
    private let connection: Locked<PostgresConnection?>
    private let sessions: PostgresSessions

    init(connection: PostgresConnection, sessions: PostgresSessions) {
        self.connection = Locked(connection)
        self.sessions = sessions
    }

    func release() {
        guard let connection = connection.withLock({ $0.take() }) else { return }
        _ = try? sessions.wait(connection.query("SELECT pg_advisory_unlock_all()", logger: sessions.logger))
        sessions.drop(connection)
    }

    deinit { release() }
}
