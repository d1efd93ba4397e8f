import Foundation
import NIOPosix

/// Waits until `condition` holds, checking every 10 ms, for at most `limit`; returns whether it
/// held (checked once more at the end).
///
/// The default limit is generous on purpose: it says "it happens", not "it happens fast". A
/// test run keeps Swift's cooperative pool (one thread per core) busy with blocking work (the
/// command-line tests wait for their processes), and a loaded 2-core CI has taken more than
/// 10 s to run a follower's next round. A claim about speed names its own, shorter limit.
public func eventually(within limit: Duration = .seconds(60), _ condition: () async throws -> Bool) async rethrows
    -> Bool
{
    let deadline = ContinuousClock.now + limit
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return try await condition()
}

/// Runs `body`, which blocks (waits for a process, a semaphore, a synchronous call to a state),
/// on a thread of its own, and returns what it returns: a test that blocks one of Swift's few
/// cooperative threads (one per core) stalls every other test of the run meanwhile.
public func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

/// Threads of the tests' own, for a task whose timing a test measures: what it awaits resumes
/// here, not at the back of the cooperative pool's queue, which a loaded run (every suite at
/// once, beside the tool stages) can make a second long. The service does the same for
/// requests (`StateExecutor`); a test of a deadline measures the deadline, not the queue.
public final class TimingExecutor: TaskExecutor {
    public static let shared = TimingExecutor()

    private let pool: NIOThreadPool

    private init() {
        pool = NIOThreadPool(numberOfThreads: 4)
        pool.start()
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        pool.submit { _ in job.runSynchronously(on: executor) }
    }
}

/// Runs `body` with `TimingExecutor` as its task executor preference, returning what it returns.
public func onTimingThreads<T: Sendable>(_ body: () async -> T) async -> T {
    await withTaskExecutorPreference(TimingExecutor.shared, operation: body)
}
