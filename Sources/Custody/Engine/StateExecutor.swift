import CustodyStore
import NIOPosix

/// The threads on which the service's and the engine's work around the state runs, so that it
/// resumes after each state call on a thread of its own rather than at the back of Swift's
/// cooperative pool (one thread per core), where under load it would wait behind every other
/// task, decisions included. A default actor called from here (the policy manager, the change
/// applier) runs here too, as task executor preference makes it.
///
/// State calls themselves do not hold these threads: SQLite's run on GRDB's own queues and
/// PostgreSQL's are suspended while the server answers. What may still block one for a while:
/// opening a SQLite state (file I/O, migrations), and a launch query that left out a fact,
/// whose synchronous answer waits for the recorded facts (`recordedLaunchFactsWaiting`, one
/// state read within the request's deadline).
///
/// Decisions do not come here: while the engine follows the change log they never read the
/// state (see `CustodyEngine.follow`).
public final class StateExecutor: TaskExecutor {
    /// The executor the engine and the decision service use: 16 threads, started on first use
    /// and kept for the life of the process. It was 64 while a PostgreSQL call held its thread
    /// until the server answered (up to 35 s when it did not); now that none does, 16 covers the
    /// requests that may wait at once for recorded launch facts on a slow state.
    public static let shared = StateExecutor(threads: 16)

    private let pool: NIOThreadPool

    /// An executor with `threads` threads of its own, started now and never stopped.
    init(threads: Int) {
        pool = .started(threads: threads)
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        pool.run(job, as: asUnownedTaskExecutor())
    }

    /// Runs `body` on the state's threads (see `StateExecutor`) and returns its result; called
    /// from background work (`BackgroundExecutor.run`), on that work's threads, which may block
    /// too, at their lower priority.
    public static func run<T, Failure: Error>(_ body: () async throws(Failure) -> T) async throws(Failure) -> T {
        if let background = BackgroundExecutor.current {
            return try await withTaskExecutorPreference(background, operation: body)
        }
        return try await withTaskExecutorPreference(shared, operation: body)
    }
}

extension StateExecutor {
    /// `run` as one request to the service: the calls `body` makes that a request waits on
    /// share one deadline (`StateRequest`), so the request is answered, or refused `503`,
    /// within the state's request timeout however many calls it makes.
    public static func request<T, Failure: Error>(_ body: () async throws(Failure) -> T) async throws(Failure) -> T {
        let result: Result<T, Failure> = await StateRequest.$began.withValue(.now) {
            do throws(Failure) {
                return .success(try await run(body))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }
}

extension NIOThreadPool {
    /// A pool of `threads` threads, started now (an executor's: never stopped).
    static func started(threads: Int) -> NIOThreadPool {
        let pool = NIOThreadPool(numberOfThreads: threads)
        pool.start()
        return pool
    }

    /// Runs `job` on one of the pool's threads as `executor`'s job, after `prepare` (on that
    /// thread).
    func run(
        _ job: consuming ExecutorJob, as executor: UnownedTaskExecutor,
        preparing prepare: @escaping @Sendable () -> Void = {}
    ) {
        let job = UnownedJob(job)
        submit { _ in
            prepare()
            job.runSynchronously(on: executor)
        }
    }
}
