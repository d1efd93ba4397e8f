import Foundation

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
