import CustodyStore
import Dispatch
import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization

/// A small pool of PostgreSQL connections used synchronously: each call takes a connection,
/// runs its statements (in a transaction for writes) and gives it back. The connections run
/// on an event loop of their own, so a caller blocked waiting for one (on a thread of Swift's
/// pool or an HTTP server's loop) never blocks the loop that completes it. Every wait has a
/// deadline: an unreachable server is an error within the statement timeout, never a hang.
final class PostgresSessions: Sendable {
    let settings: PostgresSettings
    let group: MultiThreadedEventLoopGroup
    let logger: Logger
    private let idle = Mutex<[PostgresConnection]>([])
    private let slots: DispatchSemaphore
    private let nextID = Atomic<Int>(1)
    private let closed = Atomic<Bool>(false)

    init(settings: PostgresSettings, logger: Logger) {
        self.settings = settings
        self.logger = logger
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        slots = DispatchSemaphore(value: settings.maximumConnections)
    }

    var deadline: TimeAmount { .nanoseconds(Int64(settings.statementTimeout.components.seconds) * 1_000_000_000 + 5_000_000_000) }

    /// Runs `body` on a connection: in a transaction when `transaction`. A connection that
    /// failed (closed by the server, a timeout) is dropped; when that happens before anything
    /// was sent, the call is retried once on a new connection.
    func run<T>(_ what: String, transaction: Bool, _ body: (PostgresSession) throws -> T) throws(StoreError) -> T {
        guard !closed.load(ordering: .relaxed) else { throw StoreError(.database, "\(what) failed: the state is closed", path: settings.redacted) }
        guard slots.wait(timeout: .now() + .seconds(Int(settings.statementTimeout.components.seconds))) == .success else {
            throw StoreError(.database, "\(what) failed: every connection to the state stayed busy", path: settings.redacted)
        }
        defer { slots.signal() }
        var attempt = 0
        while true {
            attempt += 1
            let pooled = idle.withLock { $0.popLast() }
            let connection: PostgresConnection
            if let pooled, !pooled.isClosed {
                connection = pooled
            } else {
                connection = try connect()
            }
            let session = PostgresSession(connection: connection, sessions: self)
            do {
                if transaction { try session.execute("BEGIN") }
                let result = try body(session)
                if transaction { try session.execute("COMMIT") }
                give(back: connection)
                return result
            } catch let error as StoreError {
                if transaction { finish(connection, rollingBack: true) } else { give(back: connection) }
                throw error
            } catch {
                let lost = Self.isConnectionError(error)
                if lost {
                    drop(connection)
                    if attempt == 1, !session.sentAnything || (pooled != nil && session.statements <= 1) {
                        logger.debug("a pooled connection to the state was lost; retrying on a new one")
                        continue
                    }
                } else if transaction {
                    finish(connection, rollingBack: true)
                } else {
                    give(back: connection)
                }
                throw StoreError(Self.code(of: error), "\(what) failed: \(Self.describe(error))", path: settings.redacted)
            }
        }
    }

    private func give(back connection: PostgresConnection) {
        guard !connection.isClosed, !closed.load(ordering: .relaxed) else {
            drop(connection)
            return
        }
        idle.withLock { $0.append(connection) }
    }

    private func finish(_ connection: PostgresConnection, rollingBack: Bool) {
        do {
            try PostgresSession(connection: connection, sessions: self).execute("ROLLBACK")
            give(back: connection)
        } catch {
            drop(connection)
        }
    }

    /// Closes `connection` without waiting.
    private func drop(_ connection: PostgresConnection) {
        let closing: EventLoopFuture<Void> = connection.close()
        // Kept alive until closed: postgres-nio requires a connection closed before it is freed.
        closing.whenComplete { _ in withExtendedLifetime(connection) {} }
    }

    /// A new connection.
    func connect() throws(StoreError) -> PostgresConnection {
        let future = PostgresConnection.connect(on: group.next(), configuration: settings.configuration, id: makeID(), logger: logger)
        do {
            return try wait(future)
        } catch {
            throw StoreError(.open, "cannot connect to the state: \(Self.describe(error))", path: settings.redacted)
        }
    }

    /// A new connection, for a caller in a task (the change listener).
    func connect(applicationName: String) async throws -> PostgresConnection {
        var configuration = settings.configuration
        configuration.options.additionalStartupParameters = configuration.options.additionalStartupParameters.map {
            $0.0 == "application_name" ? ($0.0, applicationName) : $0
        }
        return try await PostgresConnection.connect(on: group.next(), configuration: configuration, id: makeID(), logger: logger)
    }

    private func makeID() -> Int { nextID.add(1, ordering: .relaxed).oldValue }

    /// `future`'s value, waiting at most the statement deadline.
    func wait<T: Sendable>(_ future: EventLoopFuture<T>) throws -> T {
        let loop = future.eventLoop
        let promise = loop.makePromise(of: T.self)
        let timer = loop.scheduleTask(in: deadline) { promise.fail(PostgresTimeout()) }
        future.cascade(to: promise)
        promise.futureResult.whenComplete { _ in timer.cancel() }
        return try promise.futureResult.wait()
    }

    /// Closes every connection and stops the event loop; later calls fail.
    func close() {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        let connections = idle.withLock { idle in
            defer { idle.removeAll() }
            return idle
        }
        // Nothing here waits: this may run in a deinit on any thread, an event loop's included.
        for connection in connections { drop(connection) }
        group.shutdownGracefully { _ in }
    }

    static func isConnectionError(_ error: any Error) -> Bool {
        if error is PostgresTimeout { return true }
        guard let error = error as? PSQLError else { return error is ChannelError || error is IOError }
        return [.clientClosedConnection, .serverClosedConnection, .connectionError, .uncleanShutdown].contains(error.code)
            || (error.code == .server && error.serverInfo?[.sqlState].map { $0.hasPrefix("57P") || $0.hasPrefix("08") } == true)
    }

    static func code(of error: any Error) -> StoreError.Code {
        guard let error = error as? PSQLError, let state = error.serverInfo?[.sqlState] else { return .database }
        if state.hasPrefix("23") { return .conflict }
        if state == "XX001" || state == "XX002" { return .corrupt }
        return .database
    }

    static func describe(_ error: any Error) -> String {
        if error is PostgresTimeout { return "the database did not answer in time" }
        guard let error = error as? PSQLError else { return "\(error)" }
        if let message = error.serverInfo?[.message] {
            return message + (error.serverInfo?[.sqlState].map { " (SQLSTATE \($0))" } ?? "")
        }
        switch error.code {
        case .serverClosedConnection, .uncleanShutdown: return "the database closed the connection"
        case .clientClosedConnection: return "the connection to the database was closed"
        case .connectionError: return "cannot reach the database (\(error.underlying.map { "\($0)" } ?? "connection error"))"
        default: return "\(error.code)"
        }
    }
}

struct PostgresTimeout: Error {}

/// One connection lent to a call: statements run synchronously with the pool's deadline.
final class PostgresSession {
    let connection: PostgresConnection
    let sessions: PostgresSessions
    private(set) var statements = 0
    var sentAnything: Bool { statements > 0 }

    init(connection: PostgresConnection, sessions: PostgresSessions) {
        self.connection = connection
        self.sessions = sessions
    }

    /// The rows `query` returns.
    @discardableResult
    func query(_ query: PostgresQuery) throws -> [PostgresRow] {
        statements += 1
        return try sessions.wait(connection.query(query, logger: sessions.logger)).rows
    }

    /// Runs `query`; returns how many rows it changed.
    @discardableResult
    func execute(_ query: PostgresQuery) throws -> Int {
        statements += 1
        return try sessions.wait(connection.query(query, logger: sessions.logger)).metadata.rows ?? 0
    }

    /// The first column of the first row, if any.
    func value<T: PostgresDecodable>(_ query: PostgresQuery, as type: T.Type = T.self) throws -> T? where T._DecodableType == T {
        guard let row = try self.query(query).first else { return nil }
        return try row.decode(T?.self)
    }
}
