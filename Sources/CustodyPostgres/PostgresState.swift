import CustodyProtection
public import CustodyStore
import Foundation
public import Logging
import NIOCore
import PostgresNIO
import CustodyPolicy

/// Custody's state on PostgreSQL, for a fleet of replicas sharing one state: the same tables,
/// migrations and errors as the SQLite state (`CustodyDatabase`), through postgres-nio.
///
/// Every write that other replicas must hear of appends to the change log in its own
/// transaction and sends a `NOTIFY` with the new revision (the number only, never the data);
/// `changeNotifications()` listens on a connection of its own. Change revisions and event ids
/// are numbered under one row lock each, so they are in commit order.
///
/// Thread-safe: share one instance per process. `close()` ends its connections.
public final class PostgresState: ChangeNotifying, WriteReporting {
    public let settings: PostgresSettings
    let sessions: PostgresSessions
    let logger: Logger

    public var path: String? { settings.redacted }
    public var isReadOnly: Bool { false }

    /// Connects to the state at `url` and brings its schema up to date.
    /// - Throws: `StoreError` `.open` when the URL is malformed or the database cannot be
    ///   reached; `.migration` when it was written by a newer Custody or a migration fails.
    public convenience init(url: String, logger: Logger = Logger(label: "custody.state")) async throws(StoreError) {
        try await self.init(settings: PostgresSettings(url: url), logger: logger)
    }

    /// Connects with `settings` and brings the schema up to date; the caller is suspended,
    /// never blocked, while the server answers.
    public init(settings: PostgresSettings, logger: Logger = Logger(label: "custody.state")) async throws(StoreError) {
        self.settings = settings
        self.logger = logger
        let sessions = PostgresSessions(settings: settings, logger: logger)
        self.sessions = sessions
        do {
            try await PostgresMigrations.migrate(sessions)
        } catch {
            sessions.close()
            // A state that cannot be reached at all is one that cannot be opened.
            throw error.code == .unavailable ? StoreError(.open, error.message, path: error.path) : error
        }
    }

    deinit {
        sessions.close()
    }

    /// The write under way longest (one waiting for another replica's lock, or a slow link).
    public var oldestPendingWrite: PendingWrite? { sessions.oldestPendingWrite }

    /// Ends every connection; later calls fail.
    public func close() {
        sessions.close()
    }

    /// A write transaction. `bound: .request` for what a request waits on (see
    /// `PostgresSettings.requestTimeout`).
    @discardableResult
    func write<T: Sendable>(
        _ what: String, bound: PostgresSessions.Bound = .statement,
        _ body: (PostgresSession) async throws -> T
    ) async throws(StoreError) -> T {
        try await sessions.run(what, transaction: true, bound: bound, body)
    }

    /// Reads outside a transaction. `bound: .request` for what a request waits on.
    func read<T: Sendable>(
        _ what: String, bound: PostgresSessions.Bound = .statement,
        _ body: (PostgresSession) async throws -> T
    ) async throws(StoreError) -> T {
        try await sessions.run(what, transaction: false, bound: bound, body)
    }

    func corrupt(_ message: String) -> StoreError { StoreError(.corrupt, message, path: path) }

    // MARK: The change log

    /// Appends a change (numbered under the counter's row lock) and notifies listeners at commit.
    func recordChange(_ kind: StateChange.Kind, _ subjects: [String], at date: Date, in session: PostgresSession)
        async throws
    {
        guard
            let revision = try await session.value(
                "UPDATE counters SET value = value + 1 WHERE name = 'change' RETURNING value", as: Int64.self)
        else {
            throw corrupt("the change counter is missing")
        }
        try await session.execute(
            "INSERT INTO changes (revision, at, kind, subjects) VALUES (\(revision), \(date), \(kind.rawValue), \(StateChange.encode(subjects)))"
        )
        let retention =
            Int64(
                try await session.value("SELECT value FROM settings WHERE name = 'change_retention'", as: String.self)
                    ?? "")
            ?? StateChange.defaultRetention
        if revision > retention {
            try await session.execute("DELETE FROM changes WHERE revision <= \(revision - retention)")
        }
        try await session.execute("SELECT pg_notify(\(settings.channel), \(String(revision)))")
    }

    public func changes(after revision: Int64, limit: Int) async throws(StoreError) -> [StateChange] {
        let rows = try await read("reading the change log") { session in
            try await session.query(
                "SELECT revision, at, kind, subjects FROM changes WHERE revision > \(revision) ORDER BY revision LIMIT \(limit)"
            )
            .map { try $0.decode((Int64, Date, String, String).self) }
        }
        return rows.map {
            StateChange(
                revision: $0.0, at: $0.1, kind: StateChange.Kind(rawValue: $0.2), subjects: StateChange.decode($0.3))
        }
    }

    public func changeBounds() async throws(StoreError) -> LogBounds {
        try await read("reading the change log") { session in
            let oldest = try await session.value("SELECT min(revision) FROM changes", as: Int64.self)
            let newest =
                try await session.value("SELECT value FROM counters WHERE name = 'change'", as: Int64.self) ?? 0
            return LogBounds(oldest: oldest, newest: newest)
        }
    }

    public func setChangeRetention(_ count: Int64) async throws(StoreError) {
        try await write("changing the change log retention") { session in
            try await session.execute(
                "INSERT INTO settings (name, value) VALUES ('change_retention', \(String(max(1, count)))) ON CONFLICT (name) DO UPDATE SET value = excluded.value"
            )
        }
    }

    /// PostgreSQL keeps no copy Custody controls: a deleted row's space is reclaimed by
    /// VACUUM, and the write-ahead log and backups are the operator's (docs/hardening.md).
    public func purgeDeletedRows() async throws(StoreError) {}

    public func changeNotifications() -> AsyncThrowingStream<Int64, any Error> {
        let (stream, continuation) = AsyncThrowingStream<Int64, any Error>.makeStream(
            bufferingPolicy: .bufferingNewest(64))
        let sessions = sessions
        let task = sessions.listen {
            let began = sessions.answerCount
            let connection: PostgresConnection
            do {
                connection = try await sessions.connect(
                    applicationName: sessions.settings.applicationName + " listener")
            } catch {
                let reason = "cannot connect to the state to listen: \(PostgresSessions.describe(error))"
                sessions.lost(reason, answersBefore: began)
                continuation.finish(throwing: StoreError(.unavailable, reason, path: sessions.settings.redacted))
                return
            }
            let heartbeat = Heartbeat()
            do {
                try await withTaskCancellationHandler {
                    try await connection.listen(on: sessions.settings.channel) { notifications in
                        heartbeat.start(on: connection, sessions: sessions, continuation: continuation)
                        for try await notification in notifications {
                            if let revision = Int64(notification.payload) { continuation.yield(revision) }
                        }
                    }
                } onCancel: {
                    // The notices end with the connection.
                    sessions.drop(connection)
                }
                if Task.isCancelled {
                    continuation.finish()
                } else {
                    continuation.finish(
                        throwing: heartbeat.failure
                            ?? StoreError(
                                .unavailable, "the listening connection ended", path: sessions.settings.redacted))
                }
            } catch  where Task.isCancelled {
                continuation.finish()
            } catch {
                let failure =
                    heartbeat.failure
                    ?? (error as? StoreError)
                    ?? StoreError(
                        .unavailable, "listening for changes failed: \(PostgresSessions.describe(error))",
                        path: sessions.settings.redacted)
                continuation.finish(throwing: failure)
            }
            heartbeat.stop()
            sessions.drop(connection)
        }
        guard let task else {
            continuation.finish(
                throwing: StoreError(
                    .database, "listening for changes failed: the state is closed", path: sessions.settings.redacted))
            return stream
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// The listening connection's heartbeat, driven by the connection's own event loop (so that
    /// nothing it does waits for a thread of Swift's pool): it asks for the newest revision at
    /// once (listening has started: from here on every newer revision is either this one or
    /// arrives as a notice), then every `heartbeatInterval`, yielding each answer. An answer
    /// that does not come within `heartbeatTimeout` means the connection is lost, though the
    /// network may never say so: the state is marked unreachable (calls waiting for it give up),
    /// and the connection is closed, which ends the notices.
    final class Heartbeat: Sendable {
        private let state = Locked<(task: RepeatedTask?, failure: StoreError?)>((nil, nil))

        /// Why it stopped the connection, if it did.
        var failure: StoreError? { state.withLock { $0.failure } }

        func start(
            on connection: PostgresConnection, sessions: PostgresSessions,
            continuation: AsyncThrowingStream<Int64, any Error>.Continuation
        ) {
            let interval = TimeAmount(sessions.settings.heartbeatInterval)
            let timeout = TimeAmount(sessions.settings.heartbeatTimeout)
            let task = connection.eventLoop.scheduleRepeatedAsyncTask(initialDelay: .zero, delay: interval) {
                [self] repeated in
                let began = sessions.answerCount
                return sessions.deadlined(
                    connection.query("SELECT value FROM counters WHERE name = 'change'", logger: sessions.logger),
                    within: timeout
                )
                .flatMapThrowing { result in
                    sessions.answered()
                    for row in result.rows { continuation.yield(try row.decode(Int64.self)) }
                }
                .flatMapErrorThrowing { error in
                    let reason =
                        "the listening connection did not answer its heartbeat: \(PostgresSessions.describe(error))"
                    self.state.withLock {
                        $0.failure = StoreError(.unavailable, reason, path: sessions.settings.redacted)
                    }
                    if PostgresSessions.isConnectionError(error) { sessions.lost(reason, answersBefore: began) }
                    repeated.cancel()
                    sessions.drop(connection)
                    throw error
                }
            }
            state.withLock { $0.task = task }
        }

        func stop() {
            state.withLock { $0.task }?.cancel()
        }
    }
}
