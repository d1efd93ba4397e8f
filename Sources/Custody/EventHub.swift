import CustodyProtection

/// Fans events out to any number of subscribers, each with its own `AsyncStream`.
///
/// A subscriber's stream finishes when its task is cancelled or it stops iterating (the
/// stream's termination handler unsubscribes it, so nothing is kept for it), or when the hub
/// finishes. Events are yielded outside the lock, in the order `publish` was called, which the
/// caller serializes.
final class EventHub<Event: Sendable>: Sendable {
    private struct State {
        var nextID = 0
        var subscribers: [Int: AsyncStream<Event>.Continuation] = [:]
        var finished = false
    }

    private let state = Locked(State())

    /// How many streams are subscribed now.
    var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    /// A new subscriber's stream; the events `initial` returns (the current state) come first.
    ///
    /// `initial` runs under the hub's lock: a publisher that changes its state before it
    /// publishes the change can never slip a change between a subscriber's initial state and
    /// its first event (at worst the subscriber sees the new state twice).
    func subscribe(
        initial: () -> [Event] = { [] }, bufferingPolicy: AsyncStream<Event>.Continuation.BufferingPolicy = .unbounded
    ) -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: bufferingPolicy)
        let registered = state.withLock { state -> Bool in
            guard !state.finished else { return false }
            let id = state.nextID
            state.nextID += 1
            state.subscribers[id] = continuation
            for event in initial() { continuation.yield(event) }
            continuation.onTermination = { [weak self] _ in
                self?.state.withLock { _ = $0.subscribers.removeValue(forKey: id) }
            }
            return true
        }
        if !registered { continuation.finish() }
        return stream
    }

    /// Sends `events` to every subscriber, in order.
    func publish(_ events: [Event]) {
        guard !events.isEmpty else { return }
        let subscribers = state.withLock { Array($0.subscribers.values) }
        for continuation in subscribers {
            for event in events { continuation.yield(event) }
        }
    }

    /// Finishes every stream; later subscribers get a finished stream.
    func finish() {
        let subscribers = state.withLock { state -> [AsyncStream<Event>.Continuation] in
            state.finished = true
            defer { state.subscribers = [:] }
            return Array(state.subscribers.values)
        }
        for continuation in subscribers { continuation.finish() }
    }
}
