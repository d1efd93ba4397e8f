import CustodyPolicy
import CustodyStore
import CustodyProtection
import Foundation
import Logging
import Synchronization

/// An event with its id in the state's event log.
public struct LoggedEvent: Sendable, Hashable {
    /// Increasing, never reused; the event's id in Server-Sent Events.
    public let id: Int64
    public let event: PolicyEvent
}

/// Records every event a manager publishes in the state's event log, then hands it to
/// subscribers, in one order: the order of the ids.
///
/// A gate (`order`, one publisher at a time, across the wait for the state) is held from
/// recording to delivery, so two publishers can never deliver out of the order their ids were
/// given in. The newest id is readable without it (`lastID`):
/// a decision or `/readyz` reading it never waits for a recording that waits for the state (a
/// PostgreSQL row lock held by another replica's write kept every decision of this replica
/// waiting when the id was read under that lock). (Delivery only yields to `AsyncStream` continuations, which
/// run no subscriber code in place, and takes only the hubs' own locks, which never wait for
/// this one: the exception to `Locked`'s rule of not calling out under the lock is safe here.) Events that change the state are recorded in the same
/// transaction as the change (`publish(_:recording:)`): a crash keeps both or neither.
final class EventJournal: Sendable {
    let database: (any StateStore)?
    /// Subscribers of the events alone.
    let hub = EventHub<PolicyEvent>()
    /// Subscribers of the events with their ids.
    let logged = EventHub<LoggedEvent>()
    /// Subscribers told the newest id whenever events are delivered (only the newest is kept
    /// for a subscriber that has not looked yet): readers of `recent(after:limit:)`.
    let notifications = EventHub<Int64>()
    /// Serialises recording and delivery; holds nothing readers need.
    private let order = SerialGate()
    /// The newest id recorded or delivered; written under `order`, read without it.
    private let last: Atomic<Int64>
    /// The newest id other processes recorded that `advance(to:)` was told of while `order`
    /// was held (a publisher recording its own events): applied by that publisher, or the next
    /// caller, so that hearing of others' events never waits for a write.
    private let pendingAdvance = Atomic<Int64>(0)
    /// The newest events, encoded once, for readers that follow the log by id.
    private let recentEvents: Locked<RecentEvents>
    private let clock: @Sendable () -> Date
    private let logger: Logger

    /// How many of the newest events are kept in memory.
    static let recentCapacity = 4_096

    init(database: (any StateStore)?, clock: @escaping @Sendable () -> Date, logger: Logger) async {
        self.database = database
        self.clock = clock
        self.logger = logger
        let newest = (try? await database?.eventBounds().newest) ?? 0
        last = Atomic(newest)
        recentEvents = Locked(RecentEvents(capacity: Self.recentCapacity, newest: newest))
    }

    /// The id of the newest event this journal recorded or delivered (0 before any).
    var lastID: Int64 { last.load(ordering: .acquiring) }

    /// Records `events` through `recording` (which appends them in the caller's transaction
    /// and returns their ids, with its own result), then delivers them. When `recording`
    /// throws, nothing is delivered.
    func publish<Result, Failure: Error>(
        _ events: [PolicyEvent], isolation: isolated (any Actor)? = #isolation,
        recording: ([EventRecord]) async throws(Failure) -> (Result, [Int64])
    ) async throws(Failure) -> Result {
        try await order.run { () async throws(Failure) -> Result in
            let records = events.map(Self.record)
            let (result, ids) = try await recording(records)
            deliver(events, records: records, ids: ids.count == events.count ? ids : nil)
            return result
        }
    }

    /// Records `events` in a transaction of their own and delivers them. An event log that
    /// cannot be written is logged; the events are still delivered to `hub` subscribers.
    func publish(_ events: [PolicyEvent]) async {
        guard !events.isEmpty else { return }
        await order.run {
            let records = events.map(Self.record)
            var ids: [Int64]?
            if let database {
                do {
                    ids = try await database.appendEvents(records, at: clock())
                } catch {
                    logger.error("cannot append to the event log", metadata: ["error": "\(error)"])
                }
            } else {
                let newest = last.load(ordering: .relaxed)
                ids = (1...Int64(events.count)).map { newest + $0 }
            }
            deliver(events, records: records, ids: ids)
        }
    }

    /// Called under `order`.
    private func deliver(_ events: [PolicyEvent], records: [EventRecord], ids: [Int64]?) {
        defer { applyPendingAdvance() }
        hub.publish(events)
        guard let ids else { return }
        logged.publish(zip(ids, events).map { LoggedEvent(id: $0, event: $1) })
        let now = clock()
        recentEvents.withLock { recent in
            for (id, record) in zip(ids, records) {
                recent.append(StoredEvent(id: id, at: now, name: record.name, body: record.body))
            }
        }
        let newest = max(last.load(ordering: .relaxed), ids.max() ?? 0)
        last.store(newest, ordering: .releasing)
        notifications.publish([newest])
    }

    /// Runs `change` (which swaps in a policy another process put in force) and hands `events`
    /// to this process's subscribers of the events alone, in order with everything this journal
    /// delivers. They are not recorded: the other process recorded its own, which readers of the
    /// log get through `advance(to:)`.
    func announce(_ events: [PolicyEvent], isolation: isolated (any Actor)? = #isolation, change: () -> Void) async {
        await order.run {
            change()
            hub.publish(events)
        }
    }

    /// Notes that the state's log holds events up to `newest` that other processes recorded:
    /// readers are woken to read them from the log.
    ///
    /// Never waits: when a publisher holds `order` (its write may be waiting for the state),
    /// the id is left for it to apply once it has delivered its own.
    func advance(to newest: Int64) {
        var pending = pendingAdvance.load(ordering: .relaxed)
        while newest > pending {
            let (exchanged, original) = pendingAdvance.compareExchange(
                expected: pending, desired: newest, ordering: .acquiringAndReleasing)
            if exchanged { break }
            pending = original
        }
        _ = order.runIfFree { applyPendingAdvance() }
    }

    /// Called under `order`: the events other processes recorded up to the pending id are in
    /// the log only; readers after an older id are woken to read it.
    private func applyPendingAdvance() {
        let newest = pendingAdvance.load(ordering: .acquiring)
        guard newest > last.load(ordering: .relaxed) else { return }
        last.store(newest, ordering: .releasing)
        recentEvents.withLock { $0.skip(to: newest) }
        notifications.publish([newest])
    }

    /// The events after `id` among the newest ones kept in memory, oldest first, at most
    /// `limit`; nil when events after `id` are older than those kept (read the log).
    func recent(after id: Int64, limit: Int) -> [StoredEvent]? {
        recentEvents.withLock { $0.events(after: id, limit: limit) }
    }

    /// Ends every subscriber's stream.
    func finish() {
        hub.finish()
        logged.finish()
        notifications.finish()
    }

    static func record(_ event: PolicyEvent) -> EventRecord {
        EventRecord(name: event.name, body: event.json)
    }
}

/// The newest events, in id order, up to a capacity.
struct RecentEvents {
    let capacity: Int
    private var events: [StoredEvent] = []
    private var start = 0
    /// Every event with an id above this one that was delivered is kept (until the capacity
    /// pushes it out).
    private var floor: Int64

    init(capacity: Int, newest: Int64) {
        self.capacity = capacity
        floor = newest
        events.reserveCapacity(capacity)
    }

    mutating func append(_ event: StoredEvent) {
        if events.count < capacity {
            events.append(event)
        } else {
            floor = events[start].id
            events[start] = event
            start = (start + 1) % capacity
        }
    }

    /// Notes that events up to `newest` exist that are not kept here (another process recorded
    /// them): only readers after `newest` or later can be answered from memory.
    mutating func skip(to newest: Int64) {
        floor = max(floor, newest)
    }

    /// Kept events after `id`; nil when some event after `id` may not be kept (pushed out,
    /// or recorded by another process: the ids then have a gap, or lie below the floor).
    func events(after id: Int64, limit: Int) -> [StoredEvent]? {
        guard id >= floor else { return nil }
        // No id comes after the largest one (and `id + 1` would overflow).
        guard id < .max else { return [] }
        var result: [StoredEvent] = []
        var expected = id + 1
        for offset in 0..<events.count {
            let event = events[(start + offset) % events.count]
            guard event.id > id else { continue }
            guard event.id == expected else { return nil }
            result.append(event)
            expected += 1
            if result.count == limit { break }
        }
        return result
    }
}
