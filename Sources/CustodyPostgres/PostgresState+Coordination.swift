import CustodyPolicy
public import CustodyStore
import NIOCore
import PostgresNIO

extension PostgresState {
    /// Kept in the settings table as `cache:{name}`, outside the change log.
    public func cache(_ name: String) async throws(StoreError) -> String? {
        try await read("reading the cache \(name)") { session in try await Self.setting("cache:" + name, in: session) }
    }

    public func saveCache(_ name: String, _ text: String?) async throws(StoreError) {
        let key = "cache:" + name
        try await write("saving the cache \(name)") { session in
            if let text {
                try await session.execute(
                    "INSERT INTO settings (name, value) VALUES (\(key), \(text)) ON CONFLICT (name) DO UPDATE SET value = excluded.value"
                )
            } else {
                try await session.execute("DELETE FROM settings WHERE name = \(key)")
            }
        }
    }

    /// A session advisory lock (`pg_try_advisory_lock`) keyed by the schema and `name`, on a
    /// connection of its own: every replica of this state contends for the same key, and the
    /// server frees it when the connection ends, so a replica that dies or is cut off never
    /// holds it for good.
    public func lease(_ name: String) async throws(StoreError) -> (any StateLease)? {
        let connection = try await sessions.connect(answersBefore: sessions.answerCount)
        let key = "custody:\(settings.schema):\(name)"
        do {
            let taking: EventLoopFuture<PostgresQueryResult> = connection.query(
                "SELECT pg_try_advisory_lock(hashtextextended(\(key), 0))", logger: logger)
            let rows = try await sessions.wait(taking).rows
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

    /// Unlocks and closes the connection; returns once the server has answered the unlock (or
    /// the statement deadline passed), so that the next taker, on a connection of its own,
    /// finds the lease free.
    func release() async {
        guard let connection = connection.withLock({ $0.take() }) else { return }
        let unlock: EventLoopFuture<PostgresQueryResult> = connection.query(
            "SELECT pg_advisory_unlock_all()", logger: sessions.logger)
        _ = try? await sessions.wait(unlock)
        sessions.drop(connection)
    }

    /// A lease never released: the unlock is sent and the connection closed once it is
    /// answered, without waiting.
    deinit {
        guard let connection = connection.withLock({ $0.take() }) else { return }
        let sessions = sessions
        connection.query("SELECT pg_advisory_unlock_all()", logger: sessions.logger).whenComplete { _ in
            sessions.drop(connection)
        }
    }
}
