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
        /// Counts the times the gate was entered: which entry holds it now.
        var entry: UInt64 = 0

        /// Takes the gate if it is free, as a new entry.
        mutating func take() -> Bool {
            guard !busy else { return false }
            busy = true
            entry &+= 1
            return true
        }
    }

    private let state = Locked(State())

    /// The gates the current task holds, each with the entry it holds it under.
    @TaskLocal private static var held: [ObjectIdentifier: UInt64] = [:]

    package init() {}

    /// How many tasks wait to go through (not counting the one inside).
    package var waiting: Int { state.withLock { $0.waiting.count - $0.head } }

    /// Runs `body` once every task that came before has finished its own.
    /// `body` runs in the caller's isolation (on its actor, if it has one).
    package func run<T, Failure: Error>(
        isolation: isolated (any Actor)? = #isolation, _ body: () async throws(Failure) -> T
    ) async throws(Failure) -> T {
        await enter()
        defer { leave() }
        return try await body()
    }

    /// `run`, except that a task already inside this gate (through `runHolding`; a child task
    /// of such a task too) goes on without waiting for itself: for operations that call one
    /// another. A task started inside that runs after the gate was left waits as any other.
    package func runHolding<T, Failure: Error>(
        isolation: isolated (any Actor)? = #isolation, _ body: () async throws(Failure) -> T
    ) async throws(Failure) -> T {
        let id = ObjectIdentifier(self)
        if let entry = Self.held[id], state.withLock({ $0.busy && $0.entry == entry }) {
            return try await body()
        }
        await enter()
        defer { leave() }
        let entry = state.withLock { $0.entry }
        var held = Self.held
        held[id] = entry
        let result: Result<T, Failure> = await Self.$held.withValue(held) {
            do throws(Failure) {
                return .success(try await body())
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Runs `body` now if no task is inside (nor waiting); nil, without running it, otherwise.
    package func runIfFree<T>(_ body: () -> T) -> T? {
        guard state.withLock({ $0.take() }) else { return nil }
        defer { leave() }
        return body()
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
            // The gate stays busy: it passes straight to the next in line, a new entry.
            state.entry &+= 1
            return state.waiting[state.head]
        }
        next?.resume()
    }
}
