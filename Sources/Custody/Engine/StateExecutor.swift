import CustodyStore
import NIOPosix

/// The threads on which work that may wait for the state runs, so that waiting never holds a
/// thread of Swift's cooperative pool.
///
/// Reading or writing the state is synchronous: a SQLite call waits for a lock, a PostgreSQL
/// call for its server, and a server that stops answering makes a call wait until its
/// deadline. On the cooperative pool (one thread per core) a few such waits would stall
/// everything else, decisions and `/readyz` included. Work run here (`run`) waits on a thread
/// of its own instead; a default actor called from it (the policy manager, the change
/// applier) runs here too, as task executor preference makes it.
///
/// Decisions do not come here: while the engine follows the change log they never read the
/// state (see `CustodyEngine.follow`).
public final class StateExecutor: TaskExecutor {
    /// The executor the engine and the decision service use: 64 threads, started on first
    /// use and kept for the life of the process. Each call waiting for an unreachable
    /// PostgreSQL holds one until its deadline (10 s to connect, 35 s for a statement): 16 were
    /// too few for a process with several engines, whose followers then waited behind another
    /// state's outage (the test suite's replicas hit it). An idle thread costs little.
    public static let shared = StateExecutor(threads: 64)

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
