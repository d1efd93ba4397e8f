@testable import CustodyPostgres
import CustodyPolicy
import CustodyTestSupport
import NIOCore
import NIOPosix
import Testing

/// `ConnectionSlots`: how PostgreSQL calls wait for a connection, suspended, in the order they
/// came, each until its own deadline. Needs no server.
@Suite("PostgreSQL connection slots: first come first served, each waiter with its deadline")
struct ConnectionSlotsTests {
    static let loop = MultiThreadedEventLoopGroup.singleton.next()

    static func later(_ duration: Duration) -> NIODeadline { .now() + TimeAmount(duration) }

    /// Waits until `condition` holds, looking every millisecond (sleeping, not spinning: a
    /// spinning task holds a thread of the cooperative pool that a loaded run needs), 10 s at
    /// most; whether it held.
    static func until(_ condition: () -> Bool) async -> Bool {
        let giveUp = ContinuousClock.now + .seconds(10)
        while !condition() {
            guard ContinuousClock.now < giveUp else { return false }
            try? await Task.sleep(for: .milliseconds(1))
        }
        return true
    }

    /// A signal a task waits for (`wait`) until another gives it (`open`).
    final class Signal: Sendable {
        private let stream = AsyncStream.makeStream(of: Void.self)
        func open() { stream.continuation.finish() }
        func wait() async { for await _ in stream.stream {} }
    }

    @Test(
        "calls that find every slot taken get them in the order they came, one for each slot given back",
        arguments: [(1, 1), (1, 8), (2, 8), (4, 32)])
    func order(slots count: Int, waiters: Int) async throws {
        let slots = ConnectionSlots(count)
        for _ in 0..<count { #expect(await slots.take(before: Self.later(.seconds(1)), on: Self.loop)) }
        let granted = Locked<[Int]>([])
        let releases = (0..<waiters).map { _ in Signal() }
        var tasks: [Task<Bool, Never>] = []
        for index in 0..<waiters {
            tasks.append(
                Task {
                    guard await slots.take(before: Self.later(.seconds(60)), on: Self.loop) else { return false }
                    granted.withLock { $0.append(index) }
                    // Holds its slot until the test lets it go.
                    await releases[index].wait()
                    slots.give()
                    return true
                })
            // Each waits before the next comes: their order is the order they asked.
            #expect(await Self.until { slots.waiting == index + 1 })
        }
        // One slot given back at a time (first the test's own, then those of the waiters let in
        // earliest): each goes to the next in line, and to no one else.
        for step in 0..<waiters {
            if step < count { slots.give() } else { releases[step - count].open() }
            _ = await Self.until { granted.withLock { $0.count } >= step + 1 }
            #expect(granted.withLock { $0 } == Array(0...step), "after \(step + 1) slots given back")
        }
        for release in releases { release.open() }
        for task in tasks { #expect(await task.value) }
        #expect(slots.waiting == 0)
        // Every slot is free again, and no more than there were.
        for _ in 0..<count { #expect(await slots.take(before: Self.later(.milliseconds(1)), on: Self.loop)) }
        #expect(await slots.take(before: Self.later(.milliseconds(20)), on: Self.loop) == false)
    }

    @Test(
        "a call that gets no slot by its deadline gives up then, and takes no slot given back later",
        arguments: [Duration.milliseconds(20), .milliseconds(200)])
    func deadline(after wait: Duration) async {
        let slots = ConnectionSlots(1)
        #expect(await slots.take(before: Self.later(.seconds(1)), on: Self.loop))
        // Timed on threads of the tests' own: the deadline, not the test pool's queue.
        let (taken, took) = await onTimingThreads {
            let began = ContinuousClock.now
            let taken = await slots.take(before: Self.later(wait), on: Self.loop)
            return (taken, ContinuousClock.now - began)
        }
        #expect(taken == false)
        #expect(took >= wait, "gave up at its deadline, not before: \(took)")
        #expect(took < wait + .seconds(2), "gave up at its deadline: \(took)")
        #expect(slots.waiting == 0)
        slots.give()
        #expect(await slots.take(before: Self.later(.milliseconds(1)), on: Self.loop), "the slot given back is free")
    }

    @Test("a slot given back before a waiter's deadline goes to it, and its deadline no longer applies")
    func givenInTime() async throws {
        let slots = ConnectionSlots(1)
        #expect(await slots.take(before: Self.later(.seconds(1)), on: Self.loop))
        let waiter = Task { await slots.take(before: Self.later(.seconds(3)), on: Self.loop) }
        try #require(await Self.until { slots.waiting == 1 })
        slots.give()
        #expect(await waiter.value)
        // Past the deadline it had: the slot is still its own (nothing gave it back on time-out).
        try await Task.sleep(for: .milliseconds(3_200))
        #expect(await slots.take(before: Self.later(.milliseconds(20)), on: Self.loop) == false)
        slots.give()
        #expect(await slots.take(before: Self.later(.milliseconds(1)), on: Self.loop))
    }
}
