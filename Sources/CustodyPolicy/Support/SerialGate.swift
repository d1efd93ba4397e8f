/// Lets one task at a time through, in the order they came, across suspension points: what a
/// lock is for work that awaits (a read, then a write that depends on it, of a store that may be
/// across the network). An actor does not give this: while its method awaits, another call may
/// run on it. Not reentrant: a task inside `run` that calls `run` on the same gate waits for
/// itself for ever.
package final class SerialGate: Sendable {
    private struct State {
        var busy = false
        var waiting: [CheckedContinuation<Void, Never>] = []
        var head = 0

        /// Takes the gate if it is free.
        mutating func take() -> Bool {
            guard !busy else { return false }
            busy = true
            return true
        }
    }

    private let state = Locked(State())

    package init() {}

    /// Runs `body` once every task that came before has finished its own.
    package func run<T, Failure: Error>(_ body: () async throws(Failure) -> T) async throws(Failure) -> T {
        await enter()
        defer { leave() }
        return try await body()
    }

    private func enter() async {
        if state.withLock({ $0.take() }) { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            // Between the look above and here, the gate may have been left: then go on at once.
            let resume = state.withLock { state in
                if state.take() { return true }
                state.waiting.append(continuation)
                return false
            }
            if resume { continuation.resume() }
        }
    }

    private func leave() {
        let next: CheckedContinuation<Void, Never>? = state.withLock { state in
            guard state.head < state.waiting.count else {
                state.waiting.removeAll(keepingCapacity: true)
                state.head = 0
                state.busy = false
                return nil
            }
            defer { state.head += 1 }
            // The gate stays busy: it passes straight to the next in line.
            return state.waiting[state.head]
        }
        next?.resume()
    }
}
