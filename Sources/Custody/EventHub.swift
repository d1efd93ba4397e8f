import CustodyPolicy
import CustodyProtection

/// Whether a subscriber's stream was ended because it fell too far behind.
public final class EventSubscription: Sendable {
    private let state = Locked(false)

    /// True once the stream was finished because its buffer was full: the subscriber was too
    /// slow, and missed events from then on.
    public var wasDropped: Bool { state.withLock { $0 } }

    func markDropped() {
        state.withLock { $0 = true }
    }
}

/// Fans events out to any number of subscribers, each with its own `AsyncStream`.
///
/// A subscriber's stream finishes when its task is cancelled or it stops iterating (the
/// stream's termination handler unsubscribes it, so nothing is kept for it), or when the hub
/// finishes. A subscriber with a limit that falls that many events behind is dropped: its
/// stream ends and its `EventSubscription` says so (it never grows memory without bound).
/// Events are yielded outside the hub's lock, in the order `publish` was called, which the
/// caller serializes.
final class EventHub<Event: Sendable>: Sendable {
    private struct Subscriber {
        let continuation: AsyncStream<Event>.Continuation
        let subscription: EventSubscription?
    }

    private struct State {
        var nextID = 0
        var subscribers: [Int: Subscriber] = [:]
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
    func subscribe(initial: () -> [Event] = { [] }) -> AsyncStream<Event> {
        subscribe(initial: initial, limit: nil).stream
    }

    /// A new subscriber's stream that holds at most `limit` undelivered events (nil: no limit);
    /// one more, and the subscriber is dropped.
    func subscribe(initial: () -> [Event] = { [] }, limit: Int?) -> (
        stream: AsyncStream<Event>, subscription: EventSubscription
    ) {
        subscribe(
            initial: initial, policy: limit.map { .bufferingOldest(max(1, $0)) } ?? .unbounded,
            dropsWhenFull: limit != nil)
    }

    /// A new subscriber's stream that keeps only the newest undelivered event: for
    /// notifications where only the latest one matters (it never overflows, never drops).
    func subscribeNewest() -> AsyncStream<Event> {
        subscribe(initial: { [] }, policy: .bufferingNewest(1), dropsWhenFull: false).stream
    }

    private func subscribe(
        initial: () -> [Event], policy: AsyncStream<Event>.Continuation.BufferingPolicy, dropsWhenFull: Bool
    ) -> (stream: AsyncStream<Event>, subscription: EventSubscription) {
        let (stream, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: policy)
        let subscription = EventSubscription()
        let registered = state.withLock { state -> Bool in
            guard !state.finished else { return false }
            let id = state.nextID
            state.nextID += 1
            state.subscribers[id] = Subscriber(
                continuation: continuation, subscription: dropsWhenFull ? subscription : nil)
            for event in initial() { continuation.yield(event) }
            continuation.onTermination = { [weak self] _ in
                self?.state.withLock { _ = $0.subscribers.removeValue(forKey: id) }
            }
            return true
        }
        if !registered { continuation.finish() }
        return (stream, subscription)
    }

    /// Sends `events` to every subscriber, in order; drops subscribers whose buffers are full.
    func publish(_ events: [Event]) {
        guard !events.isEmpty else { return }
        let subscribers = state.withLock { Array($0.subscribers.values) }
        for subscriber in subscribers {
            for event in events {
                if case .dropped = subscriber.continuation.yield(event), let subscription = subscriber.subscription {
                    subscription.markDropped()
                    subscriber.continuation.finish()
                    break
                }
            }
        }
    }

    /// Finishes every stream; later subscribers get a finished stream.
    func finish() {
        let subscribers = state.withLock { state -> [Subscriber] in
            state.finished = true
            defer { state.subscribers = [:] }
            return Array(state.subscribers.values)
        }
        for subscriber in subscribers { subscriber.continuation.finish() }
    }
}
