import CustodyPolicy
import CustodyStore
import Foundation
import Logging
import Synchronization

/// What a shadow bundle has found: the live decisions decided again under it, and where the
/// two disagree, over every replica that counted (`CustodyEngine.shadowStatus()`).
public struct ShadowStatus: Sendable, Hashable, Codable {
    /// Unique per shadow set.
    public var id: String
    /// The shadow's content hash.
    public var revision: String
    /// Where its files came from.
    public var source: String
    public var by: String?
    /// When it was set, and when it ended (RFC 3339, to the second); `ended` nil while it runs.
    public var since: String
    public var ended: String?
    /// How it ended: `promoted` (a bundle of its revision was applied) or `stopped by …`.
    public var endedHow: String?
    /// Replicas that counted decisions under it.
    public var replicas: Int
    /// Live decisions not decided under the shadow: offered while its queue was full (the
    /// machine busy with decisions), dropped rather than slow an answer.
    public var dropped: Int
    /// Why this replica does not decide under the shadow, when it does not (its files do not
    /// load here); nil when it does, or when this process runs no service.
    public var problem: String?
    /// Whether this process decides its live decisions under the shadow now (a service does,
    /// once it has read the shadow; a command never does).
    public var decidingHere: Bool
    /// The live decisions decided again: `decided`, `unchanged` (agreed), `flipped`
    /// (disagreed: `loosened` where the shadow lets through what the bundle in force stops,
    /// `tightened` the other way), grouped, with samples giving both answers' reasons
    /// (`reasonBefore` the live one). `from` is `since`; `to` is `ended`, else now.
    public var report: ImpactReport

    public var isRunning: Bool { ended == nil }
}

/// What a shadow's decisions came to in one batch, for the service's metrics.
public struct ShadowObservation: Sendable {
    /// Live decisions decided under the shadow.
    public var decided: Int
    /// Live decisions dropped since the last observation (the shadow's queue was full).
    public var dropped: Int
    /// The disagreements, by the setting that decides and the action.
    public var disagreements: [(setting: String, action: String)]
}

/// One live decision as the shadow decides it again: the query line as asked, the facts it
/// was answered with, its time, and its outcome.
struct ShadowItem: Sendable {
    let line: [UInt8]
    let recordedFacts: LaunchFacts?
    /// When it was decided: the time a query's `now` defaults to.
    let at: Duration
    let allowed: Bool
    let launch: LaunchOutcome?
}

/// Live decisions of one session, answered with one snapshot.
struct ShadowBatch: Sendable {
    let snapshot: PolicySnapshot
    var items: [ShadowItem]
}

/// Collects one session's live decisions and hands them to the shadow in batches: on the
/// answer's path it copies the line (a few hundred bytes) and the outcome, and every
/// `ShadowRunner.batchSize` decisions it offers a batch (one lock, never a wait). What is left
/// when the session ends goes when the tap is freed.
final class ShadowTap: @unchecked Sendable {
    // @unchecked: used by one session, on one thread at a time.
    private let runner: ShadowRunner
    private let snapshot: PolicySnapshot
    private let clock: @Sendable () -> Duration
    private var items: [ShadowItem] = []
    /// Decisions not captured: the queue was full when they were made.
    private var skipped = 0

    init(runner: ShadowRunner, snapshot: PolicySnapshot, clock: @escaping @Sendable () -> Duration) {
        self.runner = runner
        self.snapshot = snapshot
        self.clock = clock
    }

    func capture(_ query: DecisionQuery, _ answer: DecisionAnswer, _ asked: AskedQuery) {
        // While the queue is full, what would be dropped is not copied first: counted only.
        if runner.isFull {
            skipped += 1
            if skipped >= ShadowRunner.batchSize { flush() }
            return
        }
        items.append(
            ShadowItem(
                line: asked.line, recordedFacts: asked.recordedFacts, at: clock(), allowed: answer.isAllowed,
                launch: answer.launchOutcome))
        if items.count >= ShadowRunner.batchSize { flush() }
    }

    func flush() {
        if skipped > 0 {
            runner.dropped(skipped)
            skipped = 0
        }
        guard !items.isEmpty else { return }
        runner.offer(ShadowBatch(snapshot: snapshot, items: items))
        items = []
    }

    deinit { flush() }
}

/// A shadow bundle at work in this process: decides the live decisions offered to it, on the
/// background executor's threads (which yield to every other thread), and counts what it
/// finds. Its queue holds at most `queueCapacity` decisions: a batch offered while it would
/// not fit is dropped and counted, so a machine busy with decisions sheds the shadow's work,
/// never the decisions'.
final class ShadowRunner: Sendable {
    static let batchSize = 256
    static let queueCapacity = 16_384
    static let contextCapacity = 32

    /// Batches offered and not yet taken, how many decisions they hold, and the worker waiting
    /// for one.
    private struct Queue {
        var batches: [ShadowBatch] = []
        var decisions = 0
        var waiter: CheckedContinuation<Void, Never>?
        var finished = false
    }

    let record: ShadowRecord
    let logger: Logger
    /// The shadow resolved for each context live decisions are made in.
    let snapshots: CandidateSnapshots
    private let queue = Locked(Queue())
    /// What this process counted: the tally and the decisions dropped, and whether either
    /// changed since it was last recorded in the state.
    private let counts: Locked<(counts: ShadowCounts, dirty: Bool)>
    /// Dropped since the last observation.
    private let droppedSinceObserved = Atomic<Int>(0)
    /// Decisions numbered in the order they are decided here (a sample's `entry`).
    private let numbers = Atomic<Int64>(0)
    /// Decisions offered and not yet decided or dropped (`isDrained`).
    private let pending = Atomic<Int>(0)
    /// Set when a batch did not fit, cleared when the worker takes the queue: what the
    /// answer's path reads to skip copying decisions that would be dropped.
    private let full = Atomic<Bool>(false)

    init(record: ShadowRecord, bundle: PolicyBundle, precedence: PolicyPrecedence, logger: Logger) {
        self.record = record
        self.logger = logger
        // What the policy says as it decides (an account refused for its domain, say) the live
        // decision has said already: the shadow's decisions log only their errors.
        var quiet = logger
        quiet.logLevel = max(logger.logLevel, .error)
        snapshots = CandidateSnapshots(
            bundle: bundle, precedence: precedence, logger: quiet, capacity: Self.contextCapacity)
        counts = Locked((ShadowCounts(), false))
    }

    /// Hands a batch to the worker, or drops and counts it when the queue cannot take it (full,
    /// or the shadow ended). Never waits but for the queue's lock.
    func offer(_ batch: ShadowBatch) {
        let count = batch.items.count
        pending.add(count, ordering: .relaxed)
        let (taken, waiter) = queue.withLock { queue -> (Bool, CheckedContinuation<Void, Never>?) in
            guard !queue.finished, queue.decisions + count <= Self.queueCapacity else { return (false, nil) }
            queue.batches.append(batch)
            queue.decisions += count
            defer { queue.waiter = nil }
            return (true, queue.waiter)
        }
        waiter?.resume()
        guard !taken else { return }
        full.store(true, ordering: .relaxed)
        pending.subtract(count, ordering: .relaxed)
        dropped(count)
    }

    /// Whether the queue was full when last offered to, and not taken since.
    var isFull: Bool { full.load(ordering: .relaxed) }

    /// Counts `count` live decisions dropped.
    func dropped(_ count: Int) {
        droppedSinceObserved.add(count, ordering: .relaxed)
        counts.withLock {
            $0.counts.dropped += count
            $0.dirty = true
        }
    }

    /// The batches queued, taken out; waits for one; nil once finished and empty.
    private func next() async -> [ShadowBatch]? {
        while true {
            let taken = queue.withLock { queue -> [ShadowBatch]? in
                guard !queue.batches.isEmpty else { return queue.finished ? nil : [] }
                defer {
                    queue.batches = []
                    queue.decisions = 0
                    full.store(false, ordering: .relaxed)
                }
                return queue.batches
            }
            guard let taken else { return nil }
            if !taken.isEmpty { return taken }
            await withCheckedContinuation { continuation in
                let ready = queue.withLock { queue in
                    guard queue.batches.isEmpty, !queue.finished else { return true }
                    queue.waiter = continuation
                    return false
                }
                if ready { continuation.resume() }
            }
        }
    }

    /// Decides the batches offered until `finish()`, reporting what each wake decided to
    /// `observer`. It wakes at most every `coalescing` (whatever was offered meanwhile decided
    /// together): a service answering thousands of single decisions a second does not wake it
    /// thousands of times.
    func run(
        coalescing: Duration = .milliseconds(2), observer: @escaping @Sendable (ShadowObservation) -> Void
    ) async {
        var worker = ShadowWorker(runner: self)
        await BackgroundExecutor.run {
            while let batches = await next() {
                var tally = ReplayTally()
                var disagreements: [(setting: String, action: String)] = []
                var decided = 0
                for batch in batches {
                    worker.decide(batch, into: &tally, disagreements: &disagreements)
                    decided += batch.items.count
                }
                tally.flushRun()
                counts.withLock {
                    $0.counts.tally.merge(tally)
                    $0.dirty = true
                }
                pending.subtract(decided, ordering: .relaxed)
                observer(
                    ShadowObservation(
                        decided: tally.decided, dropped: droppedSinceObserved.exchange(0, ordering: .relaxed),
                        disagreements: disagreements))
                try? await Task.sleep(for: coalescing)
            }
        }
    }

    /// Ends the queue: batches offered from now on are dropped; `run` returns once it has
    /// decided those already queued.
    func finish() {
        let waiter = queue.withLock { queue in
            queue.finished = true
            defer { queue.waiter = nil }
            return queue.waiter
        }
        waiter?.resume()
    }

    /// Whether every decision offered so far has been decided or dropped.
    var isDrained: Bool { pending.load(ordering: .relaxed) == 0 }

    /// The counts, when they changed since last taken (to record in the state).
    func takeChangedCounts() -> ShadowCounts? {
        counts.withLock { counts in
            guard counts.dirty else { return nil }
            counts.dirty = false
            return counts.counts
        }
    }

    /// Puts back the dirty mark of counts that could not be recorded.
    func markDirty() {
        counts.withLock { $0.dirty = true }
    }

    func nextNumber() -> Int64 { numbers.add(1, ordering: .relaxed).newValue }

}

/// What one process counted of a shadow's decisions, as it records it in the state.
struct ShadowCounts: Codable {
    var tally = ReplayTally()
    var dropped = 0

    var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    init() {}

    /// Reads what `json` wrote.
    /// - Throws: `CustodyError` `.state`: the text comes from the state.
    init(json text: String, replica: String) throws(CustodyError) {
        do {
            self = try JSONDecoder().decode(ShadowCounts.self, from: Data(text.utf8))
        } catch {
            throw CustodyError(
                .state, "the shadow counts recorded by the replica \(replica) are damaged: \(error)")
        }
    }
}

/// A live decision, as the shadow compares it with its own answer. What only a disagreement
/// needs (the account's name, the reasons) is worked out when asked for.
private struct LiveDecision: DecidedBefore {
    let number: Int64
    let query: DecisionQuery
    let before: String?
    let at: Duration
    let line: [UInt8]
    /// The live answer, decided again for a disagreement or a refusal only.
    let live: DecisionAnswer?

    var account: String? { query.firstAccount?.description }
    var action: String { query.action.rawValue }

    func sample(after answer: DecisionAnswer) -> ImpactReport.Sample {
        ImpactReport.Sample(
            entry: number, at: secondsTime(Date(timeIntervalSince1970: Double(at.components.seconds))),
            account: account, query: String(decoding: line, as: UTF8.self), reasonBefore: live?.reason,
            reasonAfter: answer.reason)
    }
}

/// Decides batches of live decisions under the shadow, one at a time.
struct ShadowWorker {
    /// Kinds of disagreement logged at warning at most, for the shadow's life.
    static let loggedKinds = 1_000

    let runner: ShadowRunner
    private var document = try! JSONDocument(parsing: Array("null".utf8))
    /// The kinds of disagreement logged at warning so far.
    private var logged = Set<ReplayTally.FlipKey>()

    init(runner: ShadowRunner) {
        self.runner = runner
    }

    /// Decides `batch` under the shadow, counting what it finds in `tally` and each
    /// disagreement's setting and action in `disagreements`.
    mutating func decide(
        _ batch: ShadowBatch, into tally: inout ReplayTally, disagreements: inout [(setting: String, action: String)]
    ) {
        let live = batch.snapshot
        let shadow = runner.snapshots.snapshot(for: live.context)
        let app = live.context.appID ?? "-"
        for item in batch.items {
            let number = runner.nextNumber()
            let at = item.at
            let parsed = item.line.withUnsafeBytes { (try? document.reparse($0)) != nil }
            guard parsed, let query = try? DecisionQuery(json: document.root, currentTime: { at }) else {
                // It was read to be answered: a line that does not read now is a fault here.
                tally.unreadable += 1
                continue
            }
            let facts = item.recordedFacts.map(ReplayWorker.always)
            guard let answer = try? shadow.answer(query, recordedFacts: facts).answer else {
                tally.unreadable += 1
                continue
            }
            let before = ReplayTally.outcome(
                action: query.action.rawValue, allowed: item.allowed, launch: item.launch?.rawValue)
            let after = ReplayTally.outcome(
                action: query.action.rawValue, allowed: answer.isAllowed, launch: answer.launchOutcome?.rawValue)
            // The live answer again (deterministic: the same snapshot, time and facts), for its
            // reason and the setting that decided it, only where the shadow differs.
            let liveAnswer =
                before != after || answer.isRefusal ? try? live.answer(query, recordedFacts: facts).answer : nil
            let decision = LiveDecision(
                number: number, query: query, before: before, at: at, line: item.line, live: liveAnswer)
            guard
                let (flip, _) = tally.count(
                    decision, app: app, query: query, answer: answer, original: { liveAnswer })
            else { continue }
            disagreements.append((flip.setting, flip.action))
            // The first of each kind for the shadow's life at warning (what an operator who set
            // a shadow looks for, shown at the service's default level; 1,000 kinds at most);
            // the rest, which may be many, at debug, their metadata made only when that level
            // is on.
            let first = logged.count < Self.loggedKinds && logged.insert(flip).inserted
            let level: Logger.Level = first ? .warning : .debug
            guard runner.logger.logLevel <= level else { continue }
            runner.logger.log(
                level: level, "the shadow bundle decides otherwise",
                metadata: [
                    "shadow": "\(runner.record.revision)", "action": "\(flip.action)", "setting": "\(flip.setting)",
                    "app": "\(flip.app)", "live": "\(flip.before)", "candidate": "\(flip.after)",
                    "account": "\(decision.account ?? "-")", "query": "\(String(decoding: item.line, as: UTF8.self))",
                    "liveReason": "\(liveAnswer?.reason ?? "-")", "shadowReason": "\(answer.reason)",
                ])
        }
    }
}
