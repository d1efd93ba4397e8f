import Custody
import CustodyPolicy
import CustodyProtection
import CustodyStore
import CustodyTestSupport
import Foundation
import Synchronization
import Testing

/// Run under the thread sanitizer by `make test` (`swift test --sanitize=thread --filter Concurrency`).
@Suite("Concurrency", .timeLimit(.minutes(5)))
struct ConcurrencyTests {
    @Test("64 tasks decide, protect and read streams while bundles are swapped 1,000 times")
    func swapsUnderLoad() async throws {
        let directory = try TemporaryDirectory()
        let database = try CustodyDatabase(path: directory.file("state.sqlite"))
        let ring = try await KeyRing(
            store: StateKeyStore(state: database), masterKey: .keyFile(path: directory.file("master.key")))
        let manager = await PolicyManager(context: EvaluationContext(platform: .ios), database: nil, keyRing: ring)
        let bundles = try (0..<4).map {
            try TestBundle(printBlockedA: $0 & 1 == 0, printBlockedB: $0 & 2 == 0).bundle()
        }
        await manager.apply(bundles[0], source: "test")
        let swaps = 1_000
        let done = Flag()
        let started = Count()

        try await withThrowingTaskGroup(of: Int.self) { group in
            group.addTask {
                // Swap only once every worker runs, and let them run between swaps.
                while started.value < 64 { await Task.yield() }
                for index in 1...swaps {
                    await manager.apply(bundles[index % bundles.count], source: "test")
                    await Task.yield()
                }
                done.set()
                // Wake subscribers waiting for an event that will not come.
                manager.finish()
                return swaps
            }
            for worker in 0..<64 {
                group.addTask {
                    let account = TestBundle.account(worker % 2 == 0 ? "A" : "B", worker % 3)
                    started.increment()
                    var work = 0
                    switch worker % 4 {
                    case 0, 1:  // decisions, in the task's account scope
                        await withAccount(account) {
                            while !done.isSet {
                                _ = manager.print()
                                _ = manager.saveTo(.box, locationAccount: account)
                                work += 1
                                if work % 64 == 0 { await Task.yield() }
                            }
                        }
                    case 2:  // protection, with the policy in force at the time
                        while !done.isSet {
                            let protector = DataProtector(keyRing: ring)
                            let data = [UInt8](repeating: UInt8(worker), count: 100)
                            let owner = manager.snapshot.tenantAccount(for: account)?.id ?? account
                            let back = try await protector.unprotect(
                                try protector.protect(data, owner: owner, encrypt: true))
                            #expect(back == data)
                            work += 1
                            await Task.yield()
                        }
                    default:  // a subscriber that comes and goes
                        while !done.isSet {
                            var events = manager.events().makeAsyncIterator()
                            _ = await events.next()
                            var policies = manager.effectivePolicy(for: account).makeAsyncIterator()
                            _ = await policies.next()
                            work += 1
                        }
                    }
                    return work
                }
            }
            var total = 0
            for try await count in group { total += count }
            #expect(total > swaps, "the workers worked while bundles were swapped")
        }
        #expect(manager.version == swaps + 1)
        // Let the last subscribers' termination handlers run.
        for _ in 0..<100 where manager.subscriberCount > 0 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(manager.subscriberCount == 0)
    }

    @Test("custody decide's runner hands blocks to its worker threads and answers back, audited, in order")
    func runnerHandOvers() async throws {
        let installation = try Installation()
        let engine = try await installation.open()
        try await engine.apply(bundleDirectory: try installation.bundle("bundle"))
        try await engine.setAuditing(decisions: true)
        // Decisions and errors interleaved, in small blocks for three workers: hundreds of
        // hand-overs, each batch read ahead while the one before is answered.
        let lines = (0..<3_000).map { index in
            index % 3 == 2 ? "not json" : #"{"action":"print","account":"b\#(index % 5)@contoso.com"}"#
        }
        let path = installation.directory.file("queries.jsonl")
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        let input = try #require(FileHandle(forReadingAtPath: path))
        defer { try? input.close() }

        var output: [UInt8] = []
        let summary = try await engine.decisionRunner(
            options: .init(currentTime: { .zero }), jobs: 3, blockBytes: 1_000
        )
        .run(descriptor: input.fileDescriptor) { output += $0 }

        let answers = output.split(separator: UInt8(ascii: "\n")).map { String(decoding: $0, as: UTF8.self) }
        #expect(summary.lines == 3_000 && summary.errors == 1_000 && summary.auditFailure == nil)
        #expect(answers.count == 3_000)
        let misplaced = answers.enumerated().filter { index, answer in
            index % 3 == 2
                ? !answer.contains(#""line":\#(index + 1),"code":"invalid-query"}"#)
                : !answer.hasPrefix(#"{"action":"print""#)
        }
        #expect(misplaced.isEmpty, "answers out of place: \(misplaced.prefix(3))")
        let audited = try await engine.auditEntries().filter { $0.kind == .decision }.compactMap(\.decisionID)
        let given = answers.compactMap { answer in
            answer.firstRange(of: #""decisionId":""#).map { String(answer[$0.upperBound...].prefix { $0 != "\"" }) }
        }
        #expect(given.count == 2_000 && given == audited, "every decision given is audited, in order")
    }
}

/// A flag one task raises and others read.
final class Flag: Sendable {
    private let raised = Atomic<Bool>(false)
    var isSet: Bool { raised.load(ordering: .acquiring) }
    func set() { raised.store(true, ordering: .releasing) }
}

/// A count several tasks add to.
final class Count: Sendable {
    private let count = Atomic<Int>(0)
    var value: Int { count.load(ordering: .acquiring) }
    func increment() { count.add(1, ordering: .acquiringAndReleasing) }
}
