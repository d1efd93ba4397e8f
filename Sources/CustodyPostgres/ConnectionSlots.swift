import CustodyPolicy
import NIOCore

/// How many calls may hold a connection at once: a counting semaphore whose waiters are
/// suspended tasks, not blocked threads, each giving up at its own deadline. A slot given back
/// goes to the call that has waited longest.
final class ConnectionSlots: Sendable {
    private struct Waiter {
        let continuation: CheckedContinuation<Bool, Never>
        /// Its deadline's timer, once scheduled (cancelled when a slot comes first).
        var timer: Scheduled<Void>?
    }

    private struct State {
        var free: Int
        var next = 0
        /// The waiting calls by arrival; one that gave up or was given a slot is removed.
        var waiting: [Int: Waiter] = [:]
        var order: [Int] = []
        var head = 0

        /// The call that has waited longest, removed from the line.
        mutating func first() -> Waiter? {
            while head < order.count {
                defer { head += 1 }
                if let waiter = waiting.removeValue(forKey: order[head]) { return waiter }
            }
            order.removeAll(keepingCapacity: true)
            head = 0
            return nil
        }
    }

    private let state: Locked<State>

    init(_ count: Int) {
        state = Locked(State(free: count))
    }

    /// How many calls wait for a slot now.
    var waiting: Int { state.withLock { $0.waiting.count } }

    /// Takes a slot, waiting until `deadline` at most (its timer on `loop`); false when none
    /// came free by then.
    func take(before deadline: NIODeadline, on loop: any EventLoop) async -> Bool {
        let taken = state.withLock { state in
            guard state.free > 0 else { return false }
            state.free -= 1
            return true
        }
        if taken { return true }
        return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let id: Int? = state.withLock { state in
                // A slot given back between the look above and here: take it at once.
                if state.free > 0 {
                    state.free -= 1
                    return nil
                }
                let id = state.next
                state.next += 1
                state.waiting[id] = Waiter(continuation: continuation)
                state.order.append(id)
                return id
            }
            guard let id else { return continuation.resume(returning: true) }
            let timer = loop.scheduleTask(deadline: deadline) { [self] () -> Void in
                let late = state.withLock { $0.waiting.removeValue(forKey: id) }
                late?.continuation.resume(returning: false)
            }
            // Kept to be cancelled, unless a slot came (or the deadline passed) meanwhile.
            let settled = state.withLock { state in
                guard state.waiting[id] != nil else { return true }
                state.waiting[id]?.timer = timer
                return false
            }
            if settled { timer.cancel() }
        }
    }

    /// Gives a slot back: to the call that has waited longest, if any.
    func give() {
        let next: Waiter? = state.withLock { state in
            if let waiter = state.first() { return waiter }
            state.free += 1
            return nil
        }
        guard let next else { return }
        next.timer?.cancel()
        next.continuation.resume(returning: true)
    }
}
