import CustodyStore
import CustodyProtection
import Foundation
import Logging

/// An event with its id in the state's event log.
public struct LoggedEvent: Sendable, Hashable {
    /// Increasing, never reused; the event's id in Server-Sent Events.
    public let id: Int64
    public let event: PolicyEvent
}

/// Records every event a manager publishes in the state's event log, then hands it to
/// subscribers, in one order: the order of the ids.
///
/// A lock is held from recording to delivery, so two publishers can never deliver out of the
/// order their ids were given in. (Delivery only yields to `AsyncStream` continuations, which
/// run no subscriber code in place, and takes only the hubs' own locks, which never wait for
/// this one: the exception to `Locked`'s rule of not calling out under the lock is safe here.) Events that change the state are recorded in the same
/// transaction as the change (`publish(_:recording:)`): a crash keeps both or neither.
final class EventJournal: Sendable {
    let database: CustodyDatabase?
    /// Subscribers of the events alone.
    let hub = EventHub<PolicyEvent>()
    /// Subscribers of the events with their ids.
    let logged = EventHub<LoggedEvent>()
    private let last: Locked<Int64>
    private let clock: @Sendable () -> Date
    private let logger: Logger

    init(database: CustodyDatabase?, clock: @escaping @Sendable () -> Date, logger: Logger) {
        self.database = database
        self.clock = clock
        self.logger = logger
        last = Locked((try? database?.eventBounds().newest) ?? 0)
    }

    /// The id of the newest event this journal recorded or delivered (0 before any).
    var lastID: Int64 { last.withLock { $0 } }

    /// Records `events` through `recording` (which appends them in the caller's transaction
    /// and returns their ids, with its own result), then delivers them. When `recording`
    /// throws, nothing is delivered.
    func publish<Result>(_ events: [PolicyEvent], recording: ([EventRecord]) throws -> (Result, [Int64])) rethrows -> Result {
        try last.withLock { last in
            let (result, ids) = try recording(events.map(Self.record))
            deliver(events, ids: ids.count == events.count ? ids : nil, last: &last)
            return result
        }
    }

    /// Records `events` in a transaction of their own and delivers them. An event log that
    /// cannot be written is logged; the events are still delivered to `hub` subscribers.
    func publish(_ events: [PolicyEvent]) {
        guard !events.isEmpty else { return }
        last.withLock { last in
            var ids: [Int64]?
            if let database {
                do {
                    ids = try database.appendEvents(events.map(Self.record), at: clock())
                } catch {
                    logger.error("cannot append to the event log", metadata: ["error": "\(error)"])
                }
            } else {
                ids = (1...Int64(events.count)).map { last + $0 }
            }
            deliver(events, ids: ids, last: &last)
        }
    }

    /// Delivers events that another process recorded (found in the log), with their ids.
    func deliver(foreign events: [LoggedEvent]) {
        guard !events.isEmpty else { return }
        last.withLock { last in
            hub.publish(events.map(\.event))
            logged.publish(events)
            last = max(last, events.map(\.id).max() ?? last)
        }
    }

    private func deliver(_ events: [PolicyEvent], ids: [Int64]?, last: inout Int64) {
        hub.publish(events)
        guard let ids else { return }
        logged.publish(zip(ids, events).map { LoggedEvent(id: $0, event: $1) })
        last = max(last, ids.max() ?? last)
    }

    /// Ends every subscriber's stream.
    func finish() {
        hub.finish()
        logged.finish()
    }

    static func record(_ event: PolicyEvent) -> EventRecord {
        EventRecord(name: event.name, body: event.json)
    }
}
