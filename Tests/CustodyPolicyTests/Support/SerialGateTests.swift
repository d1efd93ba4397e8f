import CustodyPolicy
import CustodyTestSupport
import Testing

/// `SerialGate`: what `KeyRing`'s writer, `EventJournal`'s order and `PolicyManager`'s writes
/// rely on. Each test holds the gate with a task that waits for a signal (`Holder`), so what the
/// others do meanwhile is seen, not raced.
@Suite("SerialGate: one task at a time, in the order they came, across suspension points")
struct SerialGateTests {
    /// A signal a task waits for (`wait`) until another gives it (`open`).
    final class Signal: Sendable {
        private let stream = AsyncStream.makeStream(of: Void.self)
        func open() { stream.continuation.finish() }
        func wait() async { for await _ in stream.stream {} }
    }

    /// A task inside `gate` (through `runHolding` when `holding`, else `run`) until `leave()`;
    /// `enter` returns once it is inside.
    struct Holder {
        let release = Signal()
        let task: Task<Void, Never>

        init(_ gate: SerialGate, holding: Bool = false) async {
            let entered = Signal()
            let release = release
            task = Task {
                if holding {
                    await gate.runHolding {
                        entered.open(); await release.wait()
                    }
                } else {
                    await gate.run {
                        entered.open(); await release.wait()
                    }
                }
            }
            await entered.wait()
        }

        /// Lets the task leave the gate and waits for it to finish.
        func leave() async {
            release.open()
            await task.value
        }
    }

    @Test(
        "tasks that come while the gate is held go through one at a time, in the order they came, each awaiting inside",
        arguments: [1, 2, 16, 64])
    func order(tasks: Int) async {
        let gate = SerialGate()
        let holder = await Holder(gate)
        let log = Locked<[Int]>([])
        let inside = Locked((now: 0, most: 0))
        var queued: [Task<Void, Never>] = []
        for index in 0..<tasks {
            queued.append(
                Task {
                    await gate.run {
                        inside.withLock {
                            $0.now += 1; $0.most = max($0.most, $0.now)
                        }
                        // Suspends inside the gate: another task may run, none may enter.
                        for _ in 0..<3 { await Task.yield() }
                        log.withLock { $0.append(index) }
                        inside.withLock { $0.now -= 1 }
                    }
                })
            // The next task comes only once this one waits at the gate.
            #expect(await eventually(within: .seconds(30)) { gate.waiting == index + 1 })
        }
        #expect(log.withLock { $0 }.isEmpty, "nothing went through while the gate was held")
        await holder.leave()
        for task in queued { await task.value }
        #expect(log.withLock { $0 } == Array(0..<tasks))
        #expect(inside.withLock { $0.most } == 1)
        #expect(gate.waiting == 0)
    }

    enum Caller: String, CaseIterable, CustomTestStringConvertible {
        /// The task inside calls `runHolding` again.
        case sameTask = "the task inside"
        /// A child task of the task inside (`async let`) calls it.
        case childTask = "a child task of the task inside"
        /// Another task calls it while the gate is held.
        case otherTask = "another task"
        /// A task started inside that calls it after the gate was left and taken by a third.
        case startedInsideLater = "a task started inside, after the gate changed hands"
        var testDescription: String { rawValue }
        /// Whether the call goes on without waiting for the holder to leave.
        var goesOn: Bool { self == .sameTask || self == .childTask }
    }

    @Test(
        "runHolding lets the task inside (and its child tasks) through the gate it holds; any other waits its turn",
        .timeLimit(.minutes(1)), arguments: Caller.allCases)
    func holding(caller: Caller) async {
        let gate = SerialGate()
        let went = Locked(false)
        func call() async { await gate.runHolding { went.withLock { $0 = true } } }
        switch caller {
        case .sameTask:
            await gate.runHolding { await call() }
        case .childTask:
            await gate.runHolding {
                async let child: Void = call()
                await child
            }
        case .otherTask:
            let holder = await Holder(gate, holding: true)
            let other = Task { await call() }
            #expect(await eventually(within: .seconds(30)) { gate.waiting == 1 })
            #expect(!went.withLock { $0 }, "waited while the gate was held")
            await holder.leave()
            await other.value
        case .startedInsideLater:
            let go = Signal()
            var late: Task<Void, Never>?
            await gate.runHolding {
                late = Task {
                    await go.wait()
                    await call()
                }
            }
            // The gate was left; a third task takes it and holds it.
            let third = await Holder(gate)
            go.open()
            #expect(await eventually(within: .seconds(30)) { gate.waiting == 1 })
            #expect(!went.withLock { $0 }, "the task started inside waited for the third, as any other")
            await third.leave()
            await late?.value
        }
        #expect(went.withLock { $0 })
        #expect(gate.waiting == 0)
        if caller.goesOn {
            // And the gate is free again afterwards.
            #expect(gate.runIfFree { true } == true)
        }
    }

    @Test("runIfFree runs its body only when no task is inside: nil, without running it, while one is")
    func ifFree() async {
        let gate = SerialGate()
        #expect(gate.runIfFree { 1 } == 1)
        let holder = await Holder(gate)
        let ran = Locked(false)
        #expect(gate.runIfFree { ran.withLock { $0 = true } } == nil)
        #expect(!ran.withLock { $0 })
        await holder.leave()
        #expect(gate.runIfFree { 2 } == 2)
    }
}
