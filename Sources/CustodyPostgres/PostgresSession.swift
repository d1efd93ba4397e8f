import CustodyStore
import Dispatch
import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Tracing
import CustodyPolicy
import Synchronization

/// A small pool of PostgreSQL connections: each call takes a connection, runs its statements
/// (in a transaction for writes) and gives it back. The caller is suspended while it waits for
/// a connection or an answer, never blocked, and the connections run on an event loop of their
/// own. Every wait has a deadline: an unreachable server is an error within the statement
/// timeout, never a hang.
///
/// That event loop is one for the whole process (`eventLoops`), shared by every state and never
/// stopped, as NIO's own singleton groups are: a loop stopped while a connection attempt was
/// still under way on it (a DNS answer, a socket connecting, for an attempt whoever asked for
/// has given up on) leaves that attempt's channel and the loop itself unreleased, and no state
/// can know every attempt NIO still runs for it. Closing a state closes its connections.
///
/// Once the state is found unreachable (a connection cannot be made, a call or the listener's
/// heartbeat times out), calls fail at once with `unavailable` rather than each waiting for its
/// deadline, and the first answer from the server ends the outage. What tries again is the
/// listener, where there is one (it reconnects with backoff); otherwise one call at a time is
/// let through, `retryInterval` after the last attempt failed.
final class PostgresSessions: Sendable {
    let settings: PostgresSettings
    let logger: Logger
    private let idle = Locked<[PostgresConnection]>([])
    private let slots: ConnectionSlots
    private let nextID = Atomic<Int>(1)
    private let closed = Atomic<Bool>(false)
    private let outage = Locked<Outage?>(nil)
    /// How many answers the server has given: a failure is evidence of an outage only when no
    /// answer came after the failed attempt began (see `lost`).
    private let answers = Atomic<UInt64>(0)
    /// How to make each call waiting for the server give up: done when the state is found
    /// unreachable, so that no call waits out its own deadline for a server known not to answer.
    private let waiting = Locked<(next: Int, giveUp: [Int: @Sendable () -> Void])>((0, [:]))
    /// The writes under way, by call: what each does and when it began (`oldestPendingWrite`).
    private let writes = Locked<(next: Int, started: [Int: (what: String, at: ContinuousClock.Instant)])>((0, [:]))
    /// The listeners' tasks (`PostgresState.changeNotifications`), cancelled by `close()`.
    private let listeners = Locked<(next: Int, tasks: [Int: Task<Void, Never>])>((0, [:]))

    /// The event loop every state's connections run on (see the type's documentation).
    static let eventLoops = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    /// Since when, and why, the state has not answered.
    struct Outage: Error {
        var since: Date
        var reason: String
        /// When a call may next try the state again, and whether one is trying now.
        var nextTrial: ContinuousClock.Instant
        var trying: Bool
    }

    init(settings: PostgresSettings, logger: Logger) {
        self.settings = settings
        self.logger = logger
        slots = ConnectionSlots(settings.maximumConnections)
    }

    var deadline: TimeAmount { TimeAmount(settings.statementTimeout + .seconds(5)) }

    /// The write that has been under way longest, if any.
    var oldestPendingWrite: PendingWrite? {
        let now = ContinuousClock.now
        return writes.withLock { writes in
            writes.started.values.min { $0.at < $1.at }.map { PendingWrite(what: $0.what, elapsed: now - $0.at) }
        }
    }

    /// How long a call may take as a whole, beyond each statement's own deadline.
    enum Bound: Sendable {
        /// Each statement within the statement deadline; a write transaction within
        /// `transactionTimeout`.
        case statement
        /// Everything, from waiting for a connection to the last answer, within
        /// `requestTimeout` (and a write within `transactionTimeout` too): what a request
        /// waits on.
        case request
    }

    /// The deadline of a call that begins now, and what it is called in messages. A write's
    /// transaction deadline counts from when the write asked (`StateRequest.writeBegan`), so
    /// that one queued behind this process's other writes is answered within it of asking.
    private func limit(_ bound: Bound, transaction: Bool) -> Deadline? {
        let now = ContinuousClock.now
        let transactionDeadline =
            transaction
            ? Deadline(
                at: (StateRequest.writeBegan.map { min($0, now) } ?? now) + settings.transactionTimeout,
                within: settings.transactionTimeout, name: "transaction_timeout")
            : nil
        switch bound {
        case .request:
            // Within a request, every call shares the request's deadline (`StateRequest`).
            let began = StateRequest.began.map { min($0, now) } ?? now
            let request = Deadline(
                at: began + settings.requestTimeout, within: settings.requestTimeout, name: "request_timeout")
            guard let transactionDeadline, transactionDeadline.at < request.at else { return request }
            return transactionDeadline
        case .statement:
            return transactionDeadline
        }
    }

    /// When a call must be over, and what sets it.
    struct Deadline: Sendable {
        let at: ContinuousClock.Instant
        let within: Duration
        let name: String
    }

    /// Runs `body` on a connection: in a transaction when `transaction`, within `bound`. A
    /// connection that failed (closed by the server, a timeout) is dropped; when that happens
    /// before anything was sent, the call is retried once on a new connection.
    ///
    /// The call runs on `Self.executor` from its first statement to its last: each answer resumes
    /// it on those threads, never behind the caller's other work (a busy cooperative pool made a
    /// transaction's statements wait there for their turn, up to its deadline).
    func run<T>(
        _ what: String, transaction: Bool, bound: Bound = .statement, _ body: (PostgresSession) async throws -> T
    ) async throws(StoreError) -> T {
        func onStateThreads() async throws(StoreError) -> T {
            try await withTaskExecutorPreference(Self.executor) { () async throws(StoreError) -> T in
                try await runHere(what, transaction: transaction, bound: bound, body)
            }
        }
        guard let tracer else { return try await onStateThreads() }
        // A client span per call, a child of the request's (or the sync's) when there is one.
        // Named by its kind, not by `what`, which can name an account: a trace collector is
        // another party, and span names should be few.
        let span = tracer.startSpan(transaction ? "state write" : "state read", ofKind: .client)
        span.attributes["db.system.name"] = "postgresql"
        span.attributes["db.namespace"] = settings.configuration.database
        span.attributes["custody.state.schema"] = settings.schema
        defer { span.end() }
        do {
            return try await onStateThreads()
        } catch {
            span.attributes["error.type"] = "\(error.code)"
            span.setStatus(SpanStatus(code: .error))
            throw error
        }
    }

    /// The tracer the process set up (`InstrumentationSystem`) when it traces; nil when it does
    /// not, so an untraced call pays nothing for tracing.
    private let tracer: (any Tracer)? = InstrumentationSystem.tracer is NoOpTracer ? nil : InstrumentationSystem.tracer

    /// The threads PostgreSQL calls run on between their statements (see `run`): a few, since
    /// nothing on them waits (every wait for the server is a suspension); started on first use
    /// and kept for the life of the process.
    static let executor = PostgresExecutor(threads: 4)

    private func runHere<T>(
        _ what: String, transaction: Bool, bound: Bound, _ body: (PostgresSession) async throws -> T
    ) async throws(StoreError) -> T {
        guard !closed.load(ordering: .relaxed) else {
            throw StoreError(.database, "\(what) failed: the state is closed", path: settings.redacted)
        }
        let trial = try admit(what)
        let began = answerCount
        let deadline = limit(bound, transaction: transaction)
        // A trial that ends without an answer or a loss (a body's own error) lets the next one try.
        defer { if trial { outage.withLock { $0?.trying = false } } }
        let slotWait =
            NIODeadline.now() + TimeAmount(deadline.map { max(.zero, $0.at - .now) } ?? settings.statementTimeout)
        guard await slots.take(before: slotWait, on: Self.eventLoops.next()) else {
            if let deadline {
                throw Self.pastDeadline(what, deadline, transaction: transaction, settings: settings)
            }
            lost("every connection to the state stayed busy", answersBefore: began)
            throw StoreError(
                .unavailable, "\(what) failed: every connection to the state stayed busy", path: settings.redacted)
        }
        defer { slots.give() }
        // A write is on record while it is under way (`oldestPendingWrite`).
        let write =
            transaction
            ? writes.withLock { writes in
                defer { writes.next += 1 }
                writes.started[writes.next] = (what, .now)
                return writes.next
            } : nil
        defer { if let write { _ = writes.withLock { $0.started.removeValue(forKey: write) } } }
        return try await attempts(what, transaction: transaction, deadline: deadline, since: began, body)
    }

    /// A call that gave up at its deadline: nothing was changed (a write not yet committing is
    /// rolled back when its connection closes).
    private static func pastDeadline(
        _ what: String, _ deadline: Deadline, transaction: Bool, settings: PostgresSettings
    ) -> StoreError {
        let changed = transaction ? "; it was abandoned and rolled back, nothing was changed" : ""
        return StoreError(
            .unavailable,
            "\(what) did not finish within \(deadline.within) (the state URL's \(deadline.name), counted from when it was asked for: the state answers too slowly, another writer holds a lock it needs, or writes ahead of it took that long)\(changed)",
            path: settings.redacted)
    }

    /// `run`'s attempts, on a connection slot already taken.
    private func attempts<T>(
        _ what: String, transaction: Bool, deadline: Deadline?, since began: UInt64,
        _ body: (PostgresSession) async throws -> T
    ) async throws(StoreError) -> T {
        var attempt = 0
        while true {
            attempt += 1
            let pooled = idle.withLock { $0.popLast() }
            let connection: PostgresConnection
            if let pooled, !pooled.isClosed {
                connection = pooled
            } else {
                connection = try await connect(
                    answersBefore: began,
                    cutShort: deadline.map {
                        ($0.at - .now, Self.pastDeadline(what, $0, transaction: transaction, settings: settings))
                    })
            }
            let session = PostgresSession(connection: connection, sessions: self, deadline: deadline)
            var committing = false
            do {
                if transaction { try await session.execute("BEGIN") }
                let result = try await body(session)
                if transaction {
                    committing = true
                    try await session.execute("COMMIT")
                }
                give(back: connection)
                answered()
                return result
            } catch let error as TransactionDeadline {
                // Abandoned: the connection is closed, so the server rolls back whatever was
                // sent. Not an outage: the state may answer, only too slowly for this call.
                drop(connection)
                if committing, error.sent {
                    throw StoreError(
                        .outcomeUnknown,
                        "\(what): the state did not confirm the commit within \(error.deadline.within) (the state URL's \(error.deadline.name)); it may have been committed",
                        path: settings.redacted)
                }
                throw Self.pastDeadline(what, error.deadline, transaction: transaction, settings: settings)
            } catch let error as StoreError {
                if transaction { await finish(connection, rollingBack: true) } else { give(back: connection) }
                if session.sentAnything { answered() }
                throw error
            } catch {
                if Self.isConnectionError(error) {
                    drop(connection)
                    if attempt == 1, unreachable == nil,
                        !session.sentAnything || (pooled != nil && session.statements <= 1)
                    {
                        logger.debug("a pooled connection to the state was lost; retrying on a new one")
                        continue
                    }
                    lost(Self.describe(error), answersBefore: began)
                    if committing {
                        // The server may have committed before the answer was lost.
                        throw StoreError(
                            .outcomeUnknown,
                            "\(what): the state did not confirm the commit (\(Self.describe(error))); it may have been committed",
                            path: settings.redacted)
                    }
                } else {
                    // The server answered (with an error of its own).
                    answered()
                    if transaction { await finish(connection, rollingBack: true) } else { give(back: connection) }
                }
                // A write the server stopped (a lock or statement timeout, a deadlock) was rolled
                // back: say so, as the transaction deadline's refusal does.
                let rolledBack =
                    transaction && !committing && Self.code(of: error) == .unavailable
                    ? "; the transaction was rolled back, nothing was changed" : ""
                throw StoreError(
                    Self.code(of: error), "\(what) failed: \(Self.describe(error))\(rolledBack)",
                    path: settings.redacted)
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

    private func finish(_ connection: PostgresConnection, rollingBack: Bool) async {
        do {
            try await PostgresSession(connection: connection, sessions: self).execute("ROLLBACK")
            give(back: connection)
        } catch {
            drop(connection)
        }
    }

    /// Closes `connection` without waiting.
    func drop(_ connection: PostgresConnection) {
        let closing: EventLoopFuture<Void> = connection.close()
        // Kept alive until closed: postgres-nio requires a connection closed before it is freed.
        closing.whenComplete { _ in withExtendedLifetime(connection) {} }
    }

    /// A new connection, made within the connect timeout (a server that accepts the socket but
    /// never completes the handshake counts as unreachable too).
    /// - Parameter answersBefore: `answerCount` when the call that needs it began.
    /// - Parameter cutShort: the time left to the call's own deadline, and its error: when
    ///   that is shorter than the connect timeout, a connection not made by then is that error,
    ///   not evidence of an outage (the state may answer, only too slowly for this call).
    func connect(answersBefore: UInt64, cutShort: (within: Duration, error: StoreError)? = nil)
        async throws(StoreError) -> PostgresConnection
    {
        let connectTimeout = settings.configuration.options.connectTimeout
        let shorter = cutShort.flatMap { $0.within < .nanoseconds(connectTimeout.nanoseconds) ? $0 : nil }
        // The call's deadline has passed already: no connection is begun for it.
        if let shorter, shorter.within <= .zero { throw shorter.error }
        let future: EventLoopFuture<PostgresConnection> = PostgresConnection.connect(
            on: Self.eventLoops.next(), configuration: settings.configuration, id: makeID(), logger: logger)
        do {
            return try await deadlined(future, within: shorter.map { TimeAmount($0.within) } ?? connectTimeout).get()
        } catch {
            // Given up on (a deadline, or the state found unreachable meanwhile), the attempt may
            // still succeed later: that connection is closed then, never freed open.
            future.whenSuccess { [self] connection in drop(connection) }
            if let shorter, error is PostgresTimeout, unreachable == nil { throw shorter.error }
            let reason = "cannot connect to the state: \(Self.describe(error))"
            lost(reason, answersBefore: answersBefore)
            throw StoreError(.unavailable, reason, path: settings.redacted)
        }
    }

    /// A new connection, for a caller in a task (the change listener).
    func connect(applicationName: String) async throws -> PostgresConnection {
        var configuration = settings.configuration
        configuration.options.additionalStartupParameters = configuration.options.additionalStartupParameters.map {
            $0.0 == "application_name" ? ($0.0, applicationName) : $0
        }
        let future: EventLoopFuture<PostgresConnection> = PostgresConnection.connect(
            on: Self.eventLoops.next(), configuration: configuration, id: makeID(), logger: logger)
        return try await future.get()
    }

    private func makeID() -> Int { nextID.add(1, ordering: .relaxed).oldValue }

    /// `future`'s value, waiting at most the statement deadline.
    func wait<T: Sendable>(_ future: EventLoopFuture<T>) async throws -> T {
        try await deadlined(future, within: deadline).get()
    }

    /// `future`, failed with `PostgresTimeout` if it has not completed within `timeout`, or
    /// when the state is found unreachable meanwhile (`lost`).
    func deadlined<T: Sendable>(_ future: EventLoopFuture<T>, within timeout: TimeAmount) -> EventLoopFuture<T> {
        let loop = future.eventLoop
        let promise = loop.makePromise(of: T.self)
        let timer = loop.scheduleTask(in: timeout) { promise.fail(PostgresTimeout()) }
        let id = waiting.withLock { waiting in
            defer { waiting.next += 1 }
            waiting.giveUp[waiting.next] = { promise.fail(PostgresTimeout()) }
            return waiting.next
        }
        future.cascade(to: promise)
        promise.futureResult.whenComplete { [weak self] _ in
            timer.cancel()
            _ = self?.waiting.withLock { $0.giveUp.removeValue(forKey: id) }
        }
        return promise.futureResult
    }

    // MARK: Outages

    /// Whether a call may go to the state: true when it is the one call let through to try an
    /// unreachable state again, false when the state answers.
    /// - Throws: `unavailable` at once while the state is known unreachable and another call
    ///   is trying, or tried less than `retryInterval` ago.
    private func admit(_ what: String) throws(StoreError) -> Bool {
        let now = ContinuousClock.now
        // A listener, when there is one, is what tries again: it reconnects, and its heartbeat
        // ends the outage. Calls then never wait for a state that is known not to answer.
        let probing = listeners.withLock { !$0.tasks.isEmpty }
        let admission: Result<Bool, Outage> = outage.withLock { outage in
            guard var current = outage else { return .success(false) }
            guard !probing, !current.trying, now >= current.nextTrial else { return .failure(current) }
            current.trying = true
            current.nextTrial = now + settings.retryInterval
            outage = current
            return .success(true)
        }
        switch admission {
        case .success(let trial):
            return trial
        case .failure(let outage):
            throw StoreError(
                .unavailable,
                "\(what) failed: the state has not answered since \(outage.since.formatted(.iso8601)) (\(outage.reason)); nothing was done (the connection is retried in the background, this call is not)",
                path: settings.redacted)
        }
    }

    /// The server answered: an outage, if any, is over.
    func answered() {
        answers.add(1, ordering: .releasing)
        guard
            let ended = outage.withLock({ outage -> Outage? in
                defer { outage = nil }
                return outage
            })
        else { return }
        logger.notice("the state answers again", metadata: ["since": "\(ended.since.formatted(.iso8601))"])
    }

    /// How many answers the server has given so far; taken when an attempt begins and passed
    /// to `lost` if it fails.
    var answerCount: UInt64 { answers.load(ordering: .acquiring) }

    /// The server did not answer: a connection could not be made, or a call or heartbeat
    /// timed out. Calls waiting for it give up, and later calls fail at once (see `admit`).
    ///
    /// Unless the server answered after the failed attempt began (`answersBefore` is the
    /// `answerCount` taken then): that failure is older news than the answer (a connection that a
    /// past outage closed, found closed only now), and taking it for a new outage would refuse
    /// every call at once while the state answers and the replica reports itself ready. A real
    /// outage is found by the next attempt that fails, or by the listener's heartbeat.
    func lost(_ reason: String, answersBefore: UInt64) {
        guard answerCount == answersBefore else {
            logger.debug(
                "a call to the state failed, but the state has answered since the call began: not an outage",
                metadata: ["reason": "\(reason)"])
            return
        }
        let began = outage.withLock { outage -> Bool in
            guard var current = outage else {
                outage = Outage(since: Date(), reason: reason, nextTrial: .now + settings.retryInterval, trying: false)
                return true
            }
            current.reason = reason
            current.trying = false
            current.nextTrial = .now + settings.retryInterval
            outage = current
            return false
        }
        guard began else { return }
        logger.warning("the state does not answer; calls fail at once until it does", metadata: ["reason": "\(reason)"])
        // Calls already waiting give up now rather than at their own deadlines.
        let giveUp = waiting.withLock { Array($0.giveUp.values) }
        for giveUp in giveUp { giveUp() }
    }

    /// Since when, and why, the state has not answered; nil while it answers.
    var unreachable: (since: Date, reason: String)? {
        outage.withLock { $0.map { ($0.since, $0.reason) } }
    }

    /// Runs `body` as a listener's task, which `close()` cancels; nil when the sessions are
    /// closed already.
    func listen(_ body: @escaping @Sendable () async -> Void) -> Task<Void, Never>? {
        listeners.withLock { listeners -> Task<Void, Never>? in
            guard !closed.load(ordering: .relaxed) else { return nil }
            let id = listeners.next
            listeners.next += 1
            let task = Task {
                await body()
                _ = self.listeners.withLock { $0.tasks.removeValue(forKey: id) }
            }
            listeners.tasks[id] = task
            return task
        }
    }

    /// Closes every idle connection and ends the listeners (each closes its own connection);
    /// later calls fail, and a connection in use when this is called is closed when given back.
    func close() {
        let tasks = listeners.withLock { listeners -> [Task<Void, Never>]? in
            guard !closed.exchange(true, ordering: .relaxed) else { return nil }
            defer { listeners.tasks = [:] }
            return Array(listeners.tasks.values)
        }
        guard let tasks else { return }
        let connections = idle.withLock { idle in
            defer { idle.removeAll() }
            return idle
        }
        // Nothing here waits: this may run in a deinit on any thread, an event loop's included.
        for connection in connections { drop(connection) }
        for task in tasks { task.cancel() }
    }

    static func isConnectionError(_ error: any Error) -> Bool {
        if error is PostgresTimeout { return true }
        guard let error = error as? PSQLError else { return error is ChannelError || error is IOError }
        return [.clientClosedConnection, .serverClosedConnection, .connectionError, .uncleanShutdown].contains(
            error.code)
            || (error.code == .server
                && error.serverInfo?[.sqlState].map { $0.hasPrefix("57P") || $0.hasPrefix("08") } == true)
    }

    static func code(of error: any Error) -> StoreError.Code {
        if isConnectionError(error) { return .unavailable }
        guard let error = error as? PSQLError, let state = error.serverInfo?[.sqlState] else { return .database }
        if state.hasPrefix("23") { return .conflict }
        // A statement, lock or idle-transaction timeout: the state did not answer in time, and
        // the transaction was rolled back.
        if ["57014", "55P03", "25P03", "40P01"].contains(state) { return .unavailable }
        if state == "XX001" || state == "XX002" { return .corrupt }
        return .database
    }

    static func describe(_ error: any Error) -> String {
        if error is PostgresTimeout { return "the database did not answer in time" }
        guard let error = error as? PSQLError else { return "\(error)" }
        if error.serverInfo?[.sqlState] == "55P03" {
            return "another writer held a lock this write needs for \(PostgresSettings.lockTimeout) (SQLSTATE 55P03)"
        }
        if let message = error.serverInfo?[.message] {
            return message + (error.serverInfo?[.sqlState].map { " (SQLSTATE \($0))" } ?? "")
        }
        switch error.code {
        case .serverClosedConnection, .uncleanShutdown: return "the database closed the connection"
        case .clientClosedConnection: return "the connection to the database was closed"
        case .connectionError:
            return "cannot reach the database (\(error.underlying.map { "\($0)" } ?? "connection error"))"
        default: return "\(error.code)"
        }
    }
}

struct PostgresTimeout: Error {}

/// A call ran past its own deadline (`PostgresSettings.transactionTimeout` or
/// `requestTimeout`).
struct TransactionDeadline: Error {
    /// Whether the statement it was at had been sent (false: the deadline had passed before).
    let sent: Bool
    /// The deadline it ran past.
    let deadline: PostgresSessions.Deadline
}

/// One connection lent to a call: statements run with the pool's deadline, and
/// in a write transaction, within the transaction's deadline too.
final class PostgresSession {
    let connection: PostgresConnection
    let sessions: PostgresSessions
    /// When the call must be done by (a write transaction, what a request waits on); nil:
    /// each statement has the statement deadline only.
    let deadline: PostgresSessions.Deadline?
    private(set) var statements = 0
    var sentAnything: Bool { statements > 0 }

    init(connection: PostgresConnection, sessions: PostgresSessions, deadline: PostgresSessions.Deadline? = nil) {
        self.connection = connection
        self.sessions = sessions
        self.deadline = deadline
    }

    /// The rows `query` returns.
    @discardableResult
    func query(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await run(query).rows
    }

    /// Runs `query`; returns how many rows it changed.
    @discardableResult
    func execute(_ query: PostgresQuery) async throws -> Int {
        try await run(query).metadata.rows ?? 0
    }

    /// Sends `query` and waits for its result: at most the statement deadline, and in a write
    /// transaction no later than the transaction's deadline (nothing is sent once it passed).
    private func run(_ query: PostgresQuery) async throws -> PostgresQueryResult {
        guard let deadline else {
            statements += 1
            let future: EventLoopFuture<PostgresQueryResult> = connection.query(query, logger: sessions.logger)
            return try await sessions.wait(future)
        }
        let remaining = deadline.at - .now
        guard remaining > .zero else { throw TransactionDeadline(sent: false, deadline: deadline) }
        statements += 1
        let future: EventLoopFuture<PostgresQueryResult> = connection.query(query, logger: sessions.logger)
        guard remaining < sessions.settings.statementTimeout + .seconds(5) else {
            return try await sessions.wait(future)
        }
        do {
            return try await sessions.deadlined(future, within: TimeAmount(remaining)).get()
        } catch is PostgresTimeout where sessions.unreachable == nil {
            // This call's own deadline (NIO's clock may fire a hair before ours), not the state
            // found unreachable meanwhile.
            throw TransactionDeadline(sent: true, deadline: deadline)
        }
    }

    /// The first column of the first row, if any.
    func value<T: PostgresDecodable>(_ query: PostgresQuery, as type: T.Type = T.self) async throws -> T?
    where T._DecodableType == T {
        guard let row = try await self.query(query).first else { return nil }
        return try row.decode(T?.self)
    }
}

/// A task executor of a few threads of its own (`PostgresSessions.executor`).
final class PostgresExecutor: TaskExecutor {
    private let pool: NIOThreadPool

    init(threads: Int) {
        pool = NIOThreadPool(numberOfThreads: threads)
        pool.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        pool.submit { _ in job.runSynchronously(on: executor) }
    }
}
