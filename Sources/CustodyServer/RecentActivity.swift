import CustodyPolicy
import Foundation
import ServiceLifecycle
import Synchronization

/// Decisions and refusals over the last minutes, from the same counts as `/metrics`
/// (`custody_decisions_total`, `custody_http_requests_total`): totals since the service started,
/// sampled every `interval` for the last `capacity` intervals (`GET /v1/activity`, the console's
/// overview). Counting is three relaxed atomic additions; nothing on the decision path waits.
final class RecentActivity: Sendable {
    /// The totals at one moment.
    struct Sample: Sendable, Hashable {
        var at: Date
        var decisions: Int
        var blocked: Int
        var refused: Int
    }

    static let interval: Duration = .seconds(10)
    /// Ten minutes of ten-second samples.
    static let capacity = 60

    private let decisions = Atomic<Int>(0)
    private let blocked = Atomic<Int>(0)
    private let refused = Atomic<Int>(0)
    private let samples: Locked<[Sample]>
    private let now: @Sendable () -> Date

    init(now: @escaping @Sendable () -> Date = { Date() }) {
        self.now = now
        samples = Locked([Sample(at: now(), decisions: 0, blocked: 0, refused: 0)])
    }

    /// Counts answered decisions, `blocked` of them blocked (errors count as decisions asked).
    func decided(_ count: Int, blocked: Int) {
        if count > 0 { decisions.add(count, ordering: .relaxed) }
        if blocked > 0 { self.blocked.add(blocked, ordering: .relaxed) }
    }

    /// Counts a request the service refused (answered 4xx or 5xx).
    func refusedRequest() {
        refused.add(1, ordering: .relaxed)
    }

    private func current() -> Sample {
        Sample(
            at: now(), decisions: decisions.load(ordering: .relaxed), blocked: blocked.load(ordering: .relaxed),
            refused: refused.load(ordering: .relaxed))
    }

    /// Keeps the totals now as a sample (the oldest beyond `capacity` is dropped).
    func sample() {
        let sample = current()
        samples.withLock { samples in
            samples.append(sample)
            if samples.count > Self.capacity + 1 { samples.removeFirst(samples.count - Self.capacity - 1) }
        }
    }

    /// The samples kept, oldest first, then the totals now.
    func recent() -> [Sample] {
        samples.withLock { $0 } + [current()]
    }
}

/// Samples `RecentActivity` every interval while the service runs.
struct ActivitySampler: Service {
    let activity: RecentActivity

    func run() async throws {
        let activity = activity
        let sampler = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: RecentActivity.interval)
                activity.sample()
            }
        }
        try? await gracefulShutdown()
        sampler.cancel()
    }
}
