import CSystemCalls
import CustodyPolicy
import NIOPosix

/// The threads on which work that no caller waits on at once runs behind decisions: a Graph
/// sync, the admin console's views.
///
/// On Linux its threads are in the `SCHED_IDLE` class: they run on a core that no other
/// thread wants, and a decision's thread that wakes takes the core back at once. On an idle
/// machine background work runs as fast as ever; on one busy with decisions it waits. It waits
/// a bounded time: work run with a deadline (`run(escalatingAfter:_:)`, a sync) that is still
/// running at its deadline puts every background thread back in the normal class until it
/// ends, so a machine saturated by decisions delays a sync, never starves it. (A thread that
/// cannot be moved, in a sandbox without the right, stays where it was: the work runs, only
/// without yielding.)
///
/// Work here may block, as on `StateExecutor`: a `StateExecutor.run` called from background
/// work stays on these threads instead of moving to the state's. What it costs: background
/// work that holds a lock (the state's write lock while a sync applies its bundle) holds it
/// longer on a busy machine, up to its deadline.
public final class BackgroundExecutor: TaskExecutor {
    /// The executor the engine and the service use: 8 threads, started on first use and kept.
    public static let shared = BackgroundExecutor(threads: 8)

    /// The executor whose background work the current task runs (`run`), if any.
    @TaskLocal static var current: BackgroundExecutor?

    private struct Threads {
        /// The ids of the threads that have run a job, each moved to the class in force.
        var ids: [Int32] = []
        /// Work past its deadline now: while there is any, the threads are in the normal class.
        var overdue = 0
    }

    private let pool: NIOThreadPool
    private let threads = Locked(Threads())

    /// An executor with `threads` threads of its own.
    init(threads: Int) {
        pool = .started(threads: threads)
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        pool.run(job, as: asUnownedTaskExecutor()) { [threads] in Self.register(in: threads) }
    }

    /// Whether this executor's threads yield to every other thread now (false while work is
    /// overdue, and off Linux).
    var isYielding: Bool {
        #if os(Linux)
            threads.withLock { $0.overdue == 0 }
        #else
            false
        #endif
    }

    /// Moves the calling thread to the class in force the first time it runs a job here (a
    /// thread-local flag: later jobs pay one read of it).
    private static func register(in threads: Locked<Threads>) {
        guard custody_first_time_on_thread() != 0 else { return }
        let id = custody_thread_id()
        threads.withLock { threads in
            threads.ids.append(id)
            _ = custody_set_thread_idle(id, threads.overdue == 0 ? 1 : 0)
        }
    }

    /// Counts overdue work, moving every thread when the count leaves or reaches zero.
    private func overdue(_ change: Int) {
        threads.withLock { threads in
            let before = threads.overdue
            threads.overdue += change
            guard (before == 0) != (threads.overdue == 0) else { return }
            let idle: Int32 = threads.overdue == 0 ? 1 : 0
            for id in threads.ids { _ = custody_set_thread_idle(id, idle) }
        }
    }

    /// Runs `body` as background work on the shared executor (see `BackgroundExecutor`) and
    /// returns its result.
    public static func run<T, Failure: Error>(_ body: () async throws(Failure) -> T) async throws(Failure) -> T {
        try await shared.run(body)
    }

    /// Runs `body` as background work on the shared executor; if it is still running after
    /// `deadline`, background threads run in the normal class until it ends, so that it
    /// finishes on a busy machine.
    public static func run<T, Failure: Error>(
        escalatingAfter deadline: Duration, _ body: () async throws(Failure) -> T
    ) async throws(Failure) -> T {
        try await shared.run(escalatingAfter: deadline, body)
    }

    /// Runs `body` as background work on this executor and returns its result.
    func run<T, Failure: Error>(_ body: () async throws(Failure) -> T) async throws(Failure) -> T {
        // The task-local value's scope rethrows untyped: the typed error crosses it in a Result.
        let result = await Self.$current.withValue(self) { () async -> Result<T, Failure> in
            await withTaskExecutorPreference(self) { () async -> Result<T, Failure> in
                do throws(Failure) { return .success(try await body()) } catch { return .failure(error) }
            }
        }
        return try result.get()
    }

    /// Runs `body` as background work on this executor; past `deadline`, its threads run in the
    /// normal class until `body` ends.
    func run<T, Failure: Error>(
        escalatingAfter deadline: Duration, _ body: () async throws(Failure) -> T
    ) async throws(Failure) -> T {
        let watch = Locked((escalated: false, finished: false))
        let watcher = Task { [self] in
            guard (try? await Task.sleep(for: deadline)) != nil else { return }
            watch.withLock { watch in
                guard !watch.finished else { return }
                watch.escalated = true
                overdue(1)
            }
        }
        defer {
            watcher.cancel()
            watch.withLock { watch in
                watch.finished = true
                if watch.escalated { overdue(-1) }
            }
        }
        return try await run(body)
    }
}
