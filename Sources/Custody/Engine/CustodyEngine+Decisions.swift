import Dispatch
public import CustodyPolicy
import Logging
import CustodyProtection
import CustodyStore
import Foundation

extension CustodyEngine {
    /// The policy in force resolved for `context`: the engine's own snapshot for its own
    /// context, else resolved once per context and kept until the bundle changes (at most
    /// 32 contexts at a time).
    /// - Throws: `CustodyError` `.noPolicy` with no policy in force; `.platform` when the
    ///   bundle holds policies for several platforms and `context` names none.
    public func policy(for context: EvaluationContext) throws(CustodyError) -> PolicySnapshot {
        try policyAndRevision(for: context).snapshot
    }

    /// The snapshot for `context` and the revision it was resolved from, read together.
    func policyAndRevision(for context: EvaluationContext?) throws(CustodyError) -> (
        snapshot: PolicySnapshot, revision: String
    ) {
        let box = manager.slot.current
        guard let bundle = box.bundle else {
            throw CustodyError(.noPolicy, "no policy: no bundle is in force in this state, and no bundle was given")
        }
        guard let context, context != box.snapshot.context else {
            return (try Self.deciding(box.snapshot), bundle.revision)
        }
        return (
            try Self.deciding(contexts.snapshot(for: context, of: box.snapshot, version: box.version, logger: logger)),
            bundle.revision
        )
    }

    /// A session answering JSON Lines queries for one caller with the policy in force for
    /// `context` (see `DecisionSession`). When decision auditing is on in the state, every
    /// answer carries a decision id and the session's `commit()` writes the audit entries.
    /// With `stamped`, every answer also carries the `revision` and `eventId` it was decided at.
    /// While a shadow runs here (`runShadow`), every decision is offered to it too.
    /// - Parameter report: the answers only show what would be decided, and nobody acts on
    ///   them (the console's what-if): they are not audited, carry no decision id, and are not
    ///   offered to a shadow.
    /// - Throws: `CustodyError` `.noPolicy` with no policy in force; `.state` when the audit
    ///   setting cannot be read (answers are never given unaudited by mistake).
    public func decisionSession(
        context: EvaluationContext? = nil, options: DecisionStream.Options, stamped: Bool = false,
        report: Bool = false
    ) async throws(CustodyError)
        -> DecisionSession
    {
        // The event id first: an answer may claim an older event than its snapshot saw, never a
        // newer one.
        let eventID = manager.lastEventID
        let (snapshot, revision) = try policyAndRevision(for: context)
        let auditing = report ? false : try await auditSetting.isOn(database, following: isFollowing)
        return DecisionSession(
            stream: streams.take(for: snapshot, options: options), revision: revision, eventID: eventID,
            stamped: stamped,
            audit: auditing
                ? AuditBuffer(
                    database: database, context: DecisionContext(revision: revision, context: snapshot.context),
                    now: configuration.now) : nil,
            // What a person asks (the console's what-if) is no live decision.
            shadow: report ? nil : shadows.tap(for: snapshot, clock: options.currentTime))
    }

    /// Decides one query line (JSON, no line break) and, when decision auditing is on, stores its
    /// audit entry before returning: what a front end that answers one query sends (the
    /// service's `POST /v1/decisions` and `POST /v1/launch`, the console's what-if). An answer
    /// is never returned without its audit entry; a line the query reader refuses is answered
    /// with its error line and not audited.
    /// - Parameters:
    ///   - stamped: the answer carries the revision and event id it was decided at.
    ///   - report: an answer for a person (the console), never audited.
    ///   - readsState: answering reads the state (a launch's recorded facts): the line is then
    ///     decided on the state's threads, as the audit entry is stored.
    /// - Throws: `CustodyError` `.noPolicy`, `.platform`; `.state` when the audit log cannot
    ///   be written (the answer must not be given).
    public func decide(
        line: [UInt8], context: EvaluationContext? = nil, options: DecisionStream.Options, stamped: Bool = true,
        report: Bool = false, readsState: Bool = false
    ) async throws(CustodyError) -> DecidedLine {
        var session = try await decisionSession(context: context, options: options, stamped: stamped, report: report)
        defer { end(session) }
        var output: [UInt8] = []
        output.reserveCapacity(512)
        if readsState {
            (session, output) = await StateExecutor.run {
                var session = session
                var output = output
                line.withUnsafeBytes { session.answer(line: $0, into: &output) }
                return (session, output)
            }
        } else {
            line.withUnsafeBytes { session.answer(line: $0, into: &output) }
        }
        var audited = 0
        if session.lastError == nil, session.isAuditing {
            // Audit entries are written before the answer is given: on the state's threads.
            audited = try await StateExecutor.run { () throws(CustodyError) in
                var session = session
                return try await session.commit()
            }
        }
        return DecidedLine(
            output: output, revision: session.revision, eventID: session.eventID, tallies: session.tallies,
            error: session.lastError, audited: audited)
    }

    /// Gives a finished session's stream back for the next session to reuse (its parse buffer
    /// and reason cache stay warm). Optional: a session not given back is simply freed.
    public func end(_ session: DecisionSession) {
        streams.put(session.stream)
    }

    /// A runner that answers JSON Lines queries with the policy in force on `jobs` cores, one
    /// session per core (see `decisionSession`).
    public func decisionRunner(
        options: DecisionStream.Options, jobs: Int, blockBytes: Int = 1 << 20,
        maximumLineBytes: Int = DecisionRunner.defaultMaximumLineBytes
    ) async throws(CustodyError) -> DecisionRunner {
        var sessions: [DecisionSession] = []
        for _ in 0..<max(1, jobs) { sessions.append(try await decisionSession(options: options)) }
        return DecisionRunner(sessions: sessions, blockBytes: blockBytes, maximumLineBytes: maximumLineBytes)
    }
}

/// Decision streams of finished sessions, for the next ones on the same snapshot: a request
/// then starts with a warm reason cache and parse buffer instead of fresh allocations. Only the
/// streams of one snapshot are kept (the newest one seen), at most 16.
final class StreamPool: Sendable {
    private struct Pooled: @unchecked Sendable {
        // @unchecked: a pooled stream belongs to no one until taken, then to one session.
        var stream: DecisionStream
    }

    private let pool = Locked<(key: ObjectIdentifier?, streams: [Pooled])>((nil, []))

    func take(for snapshot: PolicySnapshot, options: DecisionStream.Options) -> DecisionStream {
        let key = ObjectIdentifier(snapshot)
        let pooled = pool.withLock { pool -> Pooled? in
            guard pool.key == key else {
                pool = (key, [])
                return nil
            }
            return pool.streams.popLast()
        }
        guard var stream = pooled?.stream else { return DecisionStream(snapshot: snapshot, options: options) }
        stream.options = options
        return stream
    }

    func put(_ stream: DecisionStream) {
        var stream = stream
        stream.reset()
        let key = ObjectIdentifier(stream.snapshot)
        pool.withLock { pool in
            guard pool.key == key, pool.streams.count < 16 else { return }
            pool.streams.append(Pooled(stream: stream))
        }
    }
}

/// Whether decisions are audited. While the engine follows the change log, the value read is
/// kept until a setting change arrives (`reset()`): decisions never wait for the state. Otherwise
/// it is read at most once a second, so a service deciding thousands of times a second does not
/// read it each time, and a switch by any process takes effect within a second.
final class DecisionAuditSetting: Sendable {
    private struct State {
        var value: (on: Bool, until: ContinuousClock.Instant?)?
        /// Moves at every `reset()`: a value read before it must not be kept after it.
        var epoch: UInt64 = 0
    }

    private let state = Locked(State())

    func isOn(_ database: any StateStore, following: Bool) async throws(CustodyError) -> Bool {
        let now = ContinuousClock.now
        let (cached, epoch) = state.withLock { ($0.value, $0.epoch) }
        if let cached, cached.until.map({ $0 > now }) ?? true { return cached.on }
        let on = try await CustodyError.fromState { try await database.isDecisionAuditEnabled() }
        state.withLock { state in
            guard state.epoch == epoch else { return }
            state.value = (on, following ? nil : now + .seconds(1))
        }
        return on
    }

    /// Forgets the cached value (a process changed it).
    func reset() {
        state.withLock { state in
            state = State(value: nil, epoch: state.epoch &+ 1)
        }
    }
}

/// Snapshots of the policy in force for contexts other than the engine's own.
final class ContextSnapshots: Sendable {
    private struct Cache {
        var version = -1
        var snapshots: [EvaluationContext: PolicySnapshot] = [:]
    }

    private let cache = Locked(Cache())
    let capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
    }

    func snapshot(for context: EvaluationContext, of inForce: PolicySnapshot, version: Int, logger: Logger)
        -> PolicySnapshot
    {
        if let cached = cache.withLock({ $0.version == version ? $0.snapshots[context] : nil }) { return cached }
        let resolved = PolicySnapshot(
            bundle: inForce.bundle, context: context, precedence: inForce.precedence, logger: logger)
        cache.withLock { cache in
            if cache.version != version { cache = Cache(version: version) }
            if cache.snapshots.count >= capacity { cache.snapshots.removeAll() }
            cache.snapshots[context] = resolved
        }
        return resolved
    }
}

extension CustodyEngine {
    /// The launch facts this installation recorded for `account` (`checkIn(account:facts:)`)
    /// with its last check-in: what a launch query does not give is taken from them. Nil when
    /// the account is not one of this installation's: the facts stay missing, and a strict
    /// launch decision counts their checks as failed.
    /// - Throws: `QueryError` (`isStateFailure`) when the state cannot be read or what it holds
    ///   for the account is damaged: the query is an error, never decided as if nothing had
    ///   been recorded (a check-in that cannot be read is not a check-in that never happened).
    @Sendable public func recordedLaunchFacts(_ account: AccountID) async throws(QueryError) -> LaunchFacts? {
        try await readLaunchFacts(account)
    }

    /// `recordedLaunchFacts` for a decision stream (`DecisionStream.Options.recordedFacts`),
    /// which asks from inside its synchronous answer: waits for the state on the calling
    /// thread. For threads that may wait (a decision runner's, the state's: `StateExecutor`),
    /// never a thread of Swift's cooperative pool. Asked only for a launch query that left out
    /// a fact.
    @Sendable public func recordedLaunchFactsWaiting(_ account: AccountID) throws(QueryError) -> LaunchFacts? {
        let done = DispatchSemaphore(value: 0)
        let outcome = Locked<Result<LaunchFacts?, QueryError>?>(nil)
        // On the global executor, never the caller's (a `StateExecutor` thread waiting here must
        // not wait for another of its threads to read).
        Task(executorPreference: globalConcurrentExecutor) { [self] in
            let result: Result<LaunchFacts?, QueryError>
            do throws(QueryError) {
                result = .success(try await readLaunchFacts(account))
            } catch {
                result = .failure(error)
            }
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return try outcome.withLock { $0! }.get()
    }

    private func readLaunchFacts(_ account: AccountID) async throws(QueryError) -> LaunchFacts? {
        func failure(_ what: String, _ error: any Error) -> QueryError {
            var failure = QueryError(
                message:
                    "\(what) of \(account) cannot be read from the state, so the launch is not decided: \((error as? StoreError)?.message ?? "\(error)")",
                column: 1)
            failure.isStateFailure = true
            return failure
        }
        let resolved: ResolvedAccount
        do {
            resolved = try await manager.resolve(account)
        } catch  where error.code == .storage {
            throw failure("the account", error)
        } catch {
            return nil
        }
        let owner = resolved.owner.rawValue
        var facts = LaunchFacts()
        do {
            if let recorded = try await database.launchFacts(account: owner) {
                facts = try LaunchFacts(json: try JSONDocument(parsing: Array(recorded.facts.utf8)).root)
            }
        } catch {
            throw failure("the launch facts recorded", error)
        }
        do {
            if let checkedIn = try await database.lastCheckIn(account: owner) {
                facts.lastCheckIn = .seconds(checkedIn.timeIntervalSince1970)
            }
        } catch {
            throw failure("the last check-in", error)
        }
        return facts
    }
}
