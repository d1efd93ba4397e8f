public import CustodyPolicy
public import CustodyStore
import Foundation
import Logging

extension CustodyEngine {
    /// Puts `files` beside the bundle in force as the installation's shadow, for every replica:
    /// each live decision of a service (`runShadow`) is then decided under it too, off the
    /// answer's path, and the disagreements counted (`shadowStatus()`). It replaces any other
    /// shadow, whose counts go with it. Nothing is decided with it; its signature is not
    /// checked (promoting it is `apply`, which checks it). Audited.
    /// - Parameters:
    ///   - source: where the files came from (a directory, `http`).
    ///   - by: who set it (a token's name, `cli`).
    /// - Throws: `CustodyError` `.bundle` with the diagnostics when the files do not load;
    ///   `.invalidArgument` when they are the bundle in force (there is nothing to compare);
    ///   `.state` when the state cannot be written.
    @discardableResult
    public func setShadow(_ files: BundleFiles, source: String, by: String?) async throws(CustodyError) -> ShadowRecord
    {
        do {
            // As applying it would: a bundle that manages no account is no candidate.
            _ = try files.load()
        } catch {
            // How to apply an empty bundle anyway is no help here: a shadow takes none.
            let diagnostics = error.diagnostics.map { diagnostic in
                guard diagnostic.code == .emptyBundle else { return diagnostic }
                var said = diagnostic
                said.message =
                    "the bundle manages no account, so every decision would allow: it is no candidate for a shadow"
                return said
            }
            throw CustodyError(
                .bundle, "the shadow bundle does not load, so it is not set: \(error.errors.count) error(s)",
                diagnostics: diagnostics)
        }
        if files.contentHash == bundleInForce?.revision {
            throw CustodyError(
                .invalidArgument,
                "\(files.contentHash) is the bundle in force already: a shadow of it would never disagree")
        }
        let record = ShadowRecord(
            id: UUID().uuidString.lowercased(), revision: files.contentHash, source: source, by: by,
            since: configuration.now())
        try await CustodyError.fromState {
            try await database.setShadow(
                StoredShadow(record: record, files: files.entries.map { StoredFile(name: $0.name, bytes: $0.bytes) }),
                at: record.since)
        }
        // This process at once; the others when the change reaches them.
        await shadows.reload()
        return record
    }

    /// Ends the running shadow (`custody bundle shadow stop`): its counts stay readable until
    /// another is set. Audited. Returns false when none is running.
    @discardableResult
    public func stopShadow(by: String?) async throws(CustodyError) -> Bool {
        let stopped = try await CustodyError.fromState {
            try await database.endShadow(by: by, at: configuration.now())
        }
        await shadows.reload()
        return stopped
    }

    /// The shadow running, or the last one ended, and what every replica counted of it (this
    /// process's counts recorded first); nil when none was ever set.
    /// - Throws: `CustodyError` `.state` when the state cannot be read, or holds counts that
    ///   do not read.
    public func shadowStatus() async throws(CustodyError) -> ShadowStatus? {
        await shadows.record()
        guard let shadow = try await CustodyError.fromState({ try await database.shadow() }) else { return nil }
        let record = shadow.record
        let tallies = try await CustodyError.fromState { try await database.shadowTallies(shadow: record.id) }
        var merged = ShadowCounts()
        for tally in tallies {
            let counts = try ShadowCounts(json: tally.tally, replica: tally.replica)
            merged.tally.merge(counts.tally)
            merged.dropped += counts.dropped
        }
        let now = configuration.now()
        let report = merged.tally.report(
            candidate: record.revision, scope: ReplayScope(from: record.since, to: record.ended ?? now))
        return ShadowStatus(
            id: record.id, revision: record.revision, source: record.source, by: record.by,
            since: secondsTime(record.since), ended: record.ended.map(secondsTime), endedHow: record.endedHow,
            replicas: tallies.count, dropped: merged.dropped, problem: shadows.problem,
            decidingHere: shadows.current.withLock { $0?.record.id } == record.id, report: report)
    }

    /// Decides every live decision of this process under the state's shadow too, whenever
    /// there is one, until the task is cancelled (what `custody serve` runs): the shadow is
    /// read at start and again whenever the change log says it changed; what this process
    /// counted is recorded in the state every `recordInterval` and when it stops.
    /// - Parameter observer: told what each batch of decisions came to (the service's metrics).
    public func runShadow(
        recordInterval: Duration = .seconds(2), observer: @escaping @Sendable (ShadowObservation) -> Void = { _ in }
    ) async {
        await shadows.start(observer: observer)
        while !Task.isCancelled {
            try? await Task.sleep(for: recordInterval)
            // Cancelled while asleep: the state refuses a cancelled task's calls, and `stop`
            // records the counts (outside this task) once the queue is decided.
            guard !Task.isCancelled else { break }
            await shadows.record()
        }
        await shadows.stop()
    }

    /// Waits until every live decision offered to the shadow so far has been decided (or
    /// dropped), and records the counts in the state (tests, and a service shutting down).
    public func drainShadow() async {
        while shadows.current.withLock({ $0 })?.isDrained == false {
            try? await Task.sleep(for: .milliseconds(5))
        }
        await shadows.record()
    }
}

/// The shadow this process decides under, when it runs one (`CustodyEngine.runShadow`).
actor ShadowHost {
    /// The runner live decisions are offered to (read on the answer's path: no actor hop).
    nonisolated let current = Locked<ShadowRunner?>(nil)
    private nonisolated let problemText = Locked<String?>(nil)
    private let database: any StateStore
    private let replica: String
    private let precedence: @Sendable () -> PolicyPrecedence
    private let logger: Logger
    private var observer: (@Sendable (ShadowObservation) -> Void)?
    private var worker: Task<Void, Never>?
    /// The last reload or stop asked for: they run one after another (`inTurn`).
    private var reloading: Task<Void, Never>?
    /// The last recording of counts asked for: they run one after another, so that one
    /// asked for while another writes returns once what was taken before it is written.
    private var recording: Task<Void, Never>?

    init(
        database: any StateStore, replica: String, precedence: @escaping @Sendable () -> PolicyPrecedence,
        logger: Logger
    ) {
        self.database = database
        self.replica = replica
        self.precedence = precedence
        self.logger = logger
    }

    /// Why this process does not decide under the state's shadow, when it does not.
    nonisolated var problem: String? { problemText.withLock { $0 } }

    /// A tap for a session answering with `snapshot`, when a shadow runs here.
    nonisolated func tap(for snapshot: PolicySnapshot, clock: @escaping @Sendable () -> Duration) -> ShadowTap? {
        guard let runner = current.withLock({ $0 }) else { return nil }
        return ShadowTap(runner: runner, snapshot: snapshot, clock: clock)
    }

    func start(observer: @escaping @Sendable (ShadowObservation) -> Void) async {
        self.observer = observer
        await reload()
    }

    /// Stops the shadow running here, once what it holds is decided and recorded.
    func stop() async {
        observer = nil
        await inTurn { await $0.replace(with: nil, waiting: true) }
    }

    /// `reload()` in a task of its own: what the change applier calls, which must not wait
    /// for the old shadow's queue (on a machine busy with decisions, the background threads
    /// decide it last) before the changes after it (a wipe) are applied.
    nonisolated func reloadSoon() {
        Task { await self.reload() }
    }

    /// Reads the state's shadow and runs it here (or stops the one running) when it changed;
    /// nothing while no service runs shadows here.
    func reload() async {
        await inTurn { await $0.reloadNow() }
    }

    /// Runs `work` after the reloads and stops asked for before it, and waits for it.
    private func inTurn(_ work: @escaping @Sendable (isolated ShadowHost) async -> Void) async {
        let previous = reloading
        let task = Task {
            await previous?.value
            await work(self)
        }
        reloading = task
        await task.value
    }

    private func reloadNow() async {
        guard observer != nil else {
            await replace(with: nil, waiting: false)
            return
        }
        let stored: StoredShadow?
        do {
            stored = try await database.shadow()
        } catch {
            // The shadow running stays: the next change or start reads again.
            logger.warning("cannot read the shadow bundle", metadata: ["error": "\(error)"])
            return
        }
        guard let stored, stored.record.isRunning else {
            problemText.withLock { $0 = nil }
            if let ended = current.withLock({ $0?.record }) {
                logger.notice(
                    "no longer deciding under the shadow bundle: it ended",
                    metadata: ["shadow": "\(ended.revision)", "how": "\(stored?.record.endedHow ?? "removed")"])
            }
            await replace(with: nil, waiting: false)
            return
        }
        if current.withLock({ $0?.record.id }) == stored.record.id { return }
        let bundle: PolicyBundle
        do {
            guard
                let files = BundleFiles(
                    stored: stored.files.map { BundleFiles.Entry(name: $0.name, bytes: $0.bytes) },
                    contentHash: stored.record.revision)
            else { throw CustodyError(.state, "its files in the state do not hash to its revision") }
            bundle = try files.load()
        } catch {
            let reason = "the shadow bundle \(stored.record.revision) does not load here: \(error)"
            logger.error(
                "the shadow bundle does not load here; no decision is decided under it",
                metadata: [
                    "shadow": "\(stored.record.revision)", "error": "\(error)",
                ])
            problemText.withLock { $0 = reason }
            await replace(with: nil, waiting: false)
            return
        }
        problemText.withLock { $0 = nil }
        logger.notice(
            "deciding every live decision under the shadow bundle too",
            metadata: ["shadow": "\(stored.record.revision)", "by": "\(stored.record.by ?? "-")"])
        await replace(
            with: ShadowRunner(record: stored.record, bundle: bundle, precedence: precedence(), logger: logger),
            waiting: false)
    }

    /// Starts `runner` in place of the one there is, which decides what its queue holds and
    /// records its counts: in the background, or before this returns with `waiting`.
    private func replace(with runner: ShadowRunner?, waiting: Bool) async {
        let old = current.withLock { current in
            defer { current = runner }
            return current
        }
        let oldWorker = worker
        worker = nil
        if let runner, let observer {
            worker = Task { await runner.run(observer: observer) }
        }
        guard let old else { return }
        old.finish()
        let finishing = Task {
            await oldWorker?.value
            await self.record(old)
        }
        if waiting { await finishing.value }
    }

    /// Records what the running shadow counted, when it changed since last recorded.
    func record() async {
        guard let runner = current.withLock({ $0 }) else { return }
        await record(runner)
    }

    private func record(_ runner: ShadowRunner) async {
        let previous = recording
        let task = Task {
            await previous?.value
            await self.write(runner)
        }
        recording = task
        await task.value
    }

    private func write(_ runner: ShadowRunner) async {
        guard let counts = runner.takeChangedCounts() else { return }
        let (database, replica, shadow, tally) = (database, replica, runner.record.id, counts.json)
        do {
            _ = try await StateExecutor.run { () throws(StoreError) in
                try await database.recordShadowTally(shadow: shadow, replica: replica, tally: tally, at: Date())
            }
        } catch {
            runner.markDirty()
            logger.warning(
                "cannot record the shadow's counts; they are kept for the next try",
                metadata: [
                    "error": "\(error)"
                ])
        }
    }
}
