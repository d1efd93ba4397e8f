import Custody
import CustodyPolicy
import Testing

@Suite("Task-scoped identity", .timeLimit(.minutes(1)))
struct AccountScopeTests {
    static let a0 = TestBundle.account("A", 0)
    static let b0 = TestBundle.account("B", 0)

    /// (process default, task scope, explicit argument) → the account in effect.
    static let levels: [(process: AccountScope?, task: AccountID??, explicit: AccountScope?, expected: AccountID?)] = [
        (nil, .none, nil, nil),  // nothing set
        (.account(a0), .none, nil, a0),  // process default
        (.account(a0), .some(b0), nil, b0),  // task overrides process
        (.account(a0), .some(nil), nil, nil),  // task explicitly unmanaged overrides process
        (.account(a0), .some(b0), .account(a0), a0),  // explicit overrides task
        (.account(a0), .some(b0), .unmanaged, nil),  // explicit unmanaged overrides both
        (.unmanaged, .none, nil, nil),  // process explicitly unmanaged
        (nil, .some(b0), nil, b0),  // task alone
    ]

    @Test(
        "an explicit argument overrides the task's scope, which overrides the process default",
        arguments: levels.indices)
    func precedence(index: Int) async throws {
        let level = Self.levels[index]
        let manager = await PolicyManager(context: EvaluationContext(platform: .ios))
        await manager.apply(try TestBundle(printBlockedA: true).bundle(), source: "test")
        manager.setProcessAccount(level.process)
        let check = {
            #expect(manager.account(level.explicit) == level.expected)
            // a0's policy blocks printing; b0's and unmanaged data's do not.
            #expect(manager.print(account: level.explicit).isAllowed == (level.expected != Self.a0))
        }
        if case .some(let task) = level.task {
            withAccount(task) { check() }
            await withAccount(task) {
                await Task.yield(); check()
            }
        } else {
            check()
        }
    }

    @Test("child tasks inherit the scope; detached work does not; the scope ends with the call")
    func inheritance() async {
        let manager = await PolicyManager()
        await withAccount(Self.a0) {
            async let child = manager.account()
            let grandchildren = await withTaskGroup(of: AccountID?.self) { group in
                for _ in 0..<4 { group.addTask { manager.account() } }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(await child == Self.a0)
            #expect(grandchildren == Array(repeating: Self.a0, count: 4))
            #expect(await Task.detached { manager.account() }.value == nil)
            withAccount(Self.b0) { #expect(manager.account() == Self.b0) }
            #expect(manager.account() == Self.a0)
        }
        #expect(manager.account() == nil)
    }
}
