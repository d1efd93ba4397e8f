import CustodyPolicy
public import Custody
import CustodyStore
import Foundation
public import Logging
import Tracing

/// Keeps an engine's policy in force current from a tenant, for a long-running service: one
/// sync at a time in this process, and one at a time across every process and replica on the
/// same state (`GraphSync.sync(into:)` holds the state's `graph-sync` lease: a PostgreSQL
/// advisory lock, an `flock` beside a SQLite file). Each sync that runs ends in a `PolicySync`, announced to every event stream (through
/// the state's event log) and kept as `status`.
///
/// A failed sync changes nothing: the policy in force stays, and the failure is what
/// `status` and the event say.
public actor GraphSyncRunner {
    /// What a call to `sync(_:)` came to.
    public enum Outcome: Sendable {
        /// The sync ran (applied, unchanged or failed).
        case synced(PolicySync)
        /// Another process or replica holds the sync lease: it is syncing now, and its result
        /// reaches this one through the state's change log.
        case busy
    }

    /// What `/readyz` reports.
    public struct Status: Sendable {
        /// The last sync this process ran, and the last that did not fail.
        public var last: PolicySync?
        public var lastSuccess: PolicySync?
        /// Failed syncs since the last that did not.
        public var consecutiveFailures = 0
        /// Whether a sync is running in this process now.
        public var running = false
    }

    public nonisolated let sync: GraphSync
    public nonisolated let engine: CustodyEngine
    private let logger: Logger
    private nonisolated let current = Locked(Status())
    private var inFlight: Task<Outcome, Never>?

    public init(sync: GraphSync, engine: CustodyEngine, logger: Logger = Logger(label: "custody.graph")) {
        self.sync = sync
        self.engine = engine
        self.logger = logger
    }

    /// The last syncs' outcome, read without waiting for a sync in progress.
    public nonisolated var status: Status { current.withLock { $0 } }

    /// How long a sync yields the cores to decisions (as background work) before it runs as
    /// everything else does: on a machine saturated by decisions, a sync is delayed this much,
    /// never starved.
    static let yieldingAtMost = Duration.seconds(10)

    /// Runs a sync once the one in progress (if any) has ended, and returns what it came to.
    public func sync(_ trigger: PolicySync.Trigger) async -> Outcome {
        while let running = inFlight { _ = await running.value }
        let task = Task { await self.traced(trigger) }
        inFlight = task
        return await task.value
    }

    /// Syncs now and then every `interval` (after a failure, within a minute) until the task
    /// is cancelled.
    public func run(every interval: Duration, onSync: @Sendable (PolicySync) -> Void = { _ in }) async {
        var trigger = PolicySync.Trigger.start
        while !Task.isCancelled {
            var wait = interval
            if case .synced(let done) = await sync(trigger) {
                onSync(done)
                if done.status == .failed { wait = min(interval, .seconds(60)) }
            }
            trigger = .schedule
            do { try await Task.sleep(for: wait) } catch { return }
        }
    }

    /// `perform`, as a `graph sync` span when the process traces: the sync's Graph requests
    /// are its children (one trace a sync, not one a request), itself a child of the request
    /// that asked for it (`POST /v1/graph/sync`).
    private func traced(_ trigger: PolicySync.Trigger) async -> Outcome {
        guard !(InstrumentationSystem.tracer is NoOpTracer) else { return await perform(trigger) }
        let span = InstrumentationSystem.tracer.startSpan("graph sync")
        span.attributes["custody.sync.trigger"] = trigger.rawValue
        defer { span.end() }
        let outcome = await ServiceContext.$current.withValue(span.context) { await self.perform(trigger) }
        if case .synced(let done) = outcome {
            span.attributes["custody.sync.status"] = done.status.rawValue
            span.attributes["custody.sync.requests"] = done.requests
            span.attributes["custody.sync.pages"] = done.pages
            if let revision = done.revision { span.attributes["custody.revision"] = revision }
            if done.status == .failed { span.setStatus(SpanStatus(code: .error)) }
        }
        return outcome
    }

    private func perform(_ trigger: PolicySync.Trigger) async -> Outcome {
        defer { inFlight = nil }
        current.withLock { $0.running = true }
        defer { current.withLock { $0.running = false } }
        let started = ContinuousClock.now
        let before = sync.statistics
        func outcome(_ status: PolicySync.Status, revision: String?, error: String?, warnings: [String] = [])
            -> PolicySync
        {
            let statistics = sync.statistics.since(before)
            return PolicySync(
                status: status, trigger: trigger, source: sync.source, revision: revision, pages: statistics.pages,
                requests: statistics.requests,
                throttled: statistics.throttled, duration: started.duration(to: .now), finishedAt: Date(), error: error,
                warnings: warnings)
        }
        let done: PolicySync
        do {
            // As background work: a sync beside a decision load leaves the cores to it, for at
            // most `yieldingAtMost` (then it runs as everything else does, to finish).
            let (sync, engine) = (self.sync, self.engine)
            let (report, applied) = try await BackgroundExecutor.run(escalatingAfter: Self.yieldingAtMost) {
                try await sync.sync(into: engine)
            }
            for warning in report.warnings { logger.warning("\(warning)") }
            done = outcome(
                applied.unchanged ? .unchanged : .applied, revision: applied.bundle.revision, error: nil,
                warnings: report.warnings)
        } catch let error as GraphError where error.code == .busy {
            logger.info(
                "another process or replica is syncing from Graph; its result reaches this one through the state")
            return .busy
        } catch let error as GraphError {
            done = outcome(
                .failed, revision: nil, error: "graph sync failed, the policy in force is unchanged: \(error)")
        } catch let error as StoreError {
            done = outcome(
                .failed, revision: nil,
                error: "the state cannot be reached to take the sync lease, nothing was read: \(error)")
        } catch {
            done = outcome(
                .failed, revision: nil,
                error: "the tenant's bundle was not applied, the policy in force is unchanged: \(error)")
        }
        current.withLock { status in
            status.last = done
            if done.status == .failed {
                status.consecutiveFailures += 1
            } else {
                status.lastSuccess = done
                status.consecutiveFailures = 0
            }
        }
        let metadata: Logger.Metadata = [
            "status": "\(done.status.rawValue)", "trigger": "\(trigger.rawValue)", "requests": "\(done.requests)",
            "pages": "\(done.pages)",
            "throttled": "\(done.throttled)", "durationMs": "\(done.milliseconds)",
            "revision": "\(done.revision ?? "none")",
        ]
        if let error = done.error {
            logger.error("\(error)", metadata: metadata)
        } else {
            logger.info("graph sync \(done.status.rawValue)", metadata: metadata)
        }
        // Recorded in the state's event log: on the state's threads.
        let engine = engine
        await StateExecutor.run { await engine.announce(done) }
        return .synced(done)
    }
}
