import Custody
import CustodyPolicy
import CustodyStore
import CustodyTestSupport
import Foundation
import Testing

@Suite("Policy manager", .timeLimit(.minutes(1)))
struct PolicyManagerTests {
    let a0 = TestBundle.account("A", 0)
    let b0 = TestBundle.account("B", 0)

    @Test("decisions follow the applied bundle, and before any bundle every account is unmanaged")
    func applying() async throws {
        let manager = await PolicyManager(context: EvaluationContext(platform: .ios))
        #expect(!manager.snapshot.isManaged(a0))
        await manager.apply(try TestBundle(printBlockedA: true).bundle(), source: "test")
        #expect(!manager.snapshot.print(account: a0).isAllowed)
        #expect(manager.snapshot.print(account: b0).isAllowed)
        #expect(manager.version == 1)
    }

    @Test("decisions on one thread see each new bundle at once, and two managers never see each other's")
    func snapshotsPerManager() async throws {
        let first = await PolicyManager(context: EvaluationContext(platform: .ios))
        let second = await PolicyManager(context: EvaluationContext(platform: .ios))
        await second.apply(try TestBundle(printBlockedA: true).bundle(), source: "test")
        // The same thread alternates between managers and across applies: each read must miss
        // the thread's cached snapshot when it belongs to the other manager or an older bundle.
        for round in 0..<6 {
            let blockedInFirst = round % 2 == 1
            await first.apply(try TestBundle(printBlockedA: blockedInFirst).bundle(), source: "test")
            let (viaFirst, viaSecond, viaFirstAgain) = await Task.detached {
                (
                    first.print(account: .account(a0)).isAllowed, second.print(account: .account(a0)).isAllowed,
                    first.print(account: .account(a0)).isAllowed
                )
            }.value
            #expect(viaFirst == !blockedInFirst, "round \(round)")
            #expect(viaSecond == false, "round \(round)")
            #expect(viaFirstAgain == !blockedInFirst, "round \(round)")
            #expect(first.version == round + 1)
        }
    }

    @Test("only accounts whose policy decides differently are in policyChanged; a rename changes nothing")
    func onlyChangedAccounts() async throws {
        let manager = await PolicyManager(context: EvaluationContext(platform: .ios))
        await manager.apply(try TestBundle().bundle(), source: "test")
        let events = await manager.apply(try TestBundle(printBlockedA: true).bundle(), source: "test")
        #expect(events == [.policyChanged(accounts: (0..<3).map { TestBundle.account("A", $0) })])
        #expect(
            await manager.apply(try TestBundle(printBlockedA: true, nameSuffix: " (renamed)").bundle(), source: "test")
                .isEmpty)
    }

    /// Issue 47, item 27: a manager with no platform, over a bundle of iOS and Android
    /// policies, announced a bundle edit but no account's policy change.
    @Test(
        "with no platform, over a bundle of several, policyChanged is announced per platform the change is on",
        arguments: [
            ("Contoso All Staff (Android)", Platform.android), ("Contoso All Staff (iOS)", .ios),
        ])
    func perPlatform(policy: String, platform: Platform) async throws {
        let directory = try TemporaryDirectory()
        try FileManager.default.copyItem(atPath: TestPaths.package("policies"), toPath: directory.file("bundle"))
        let manager = await PolicyManager(context: EvaluationContext(), database: try CustodyDatabase())
        try await manager.apply(bundleDirectory: directory.file("bundle"))
        try directory.edit("bundle/all-staff.json") { text in
            // printBlocked of the one policy named.
            let name = text.range(of: #""displayName": "\#(policy)""#)!
            let setting = text.range(of: #""printBlocked": false"#, range: name.upperBound..<text.endIndex)!
            return text.replacingCharacters(in: setting, with: #""printBlocked": true"#)
        }
        let events = try await manager.apply(bundleDirectory: directory.file("bundle"))
        let changes = events.compactMap { event -> Platform?? in
            if case .policyChanged(let accounts, let on) = event, !accounts.isEmpty { return on }
            return nil
        }
        #expect(changes == [platform], "\(events)")
        #expect(
            events.first { if case .policyChanged = $0 { true } else { false } }.map {
                String(decoding: $0.json, as: UTF8.self).contains(#""platform":"\#(platform.rawValue)""#)
            } == true)
    }

    @Test("an encryption requirement that flips is announced per account, and allowed accounts changes once")
    func protectionAndAllowed() async throws {
        let manager = await PolicyManager(context: EvaluationContext(platform: .ios))
        await manager.apply(try TestBundle().bundle(), source: "test")
        let events = await manager.apply(
            try TestBundle(encryptionB: "useDeviceSettings", allowedAccounts: ["a0@contoso.com"]).bundle(),
            source: "test")
        let bAccounts = (0..<3).map { TestBundle.account("B", $0) }
        #expect(events.first == .allowedAccountsChanged(old: nil, new: ["a0@contoso.com"]))
        #expect(events.contains(.policyChanged(accounts: bAccounts)))
        #expect(
            events.filter { if case .dataProtectionChanged = $0 { true } else { false } }
                == bAccounts.map { .dataProtectionChanged(account: $0, encryptionRequired: false) })
    }

    @Test("1,000 subscribers each receive every event of 100 rapid bundle changes, in order")
    func fanOut() async throws {
        let manager = await PolicyManager(context: EvaluationContext(platform: .ios))
        let bundles = try (0..<100).map {
            try TestBundle(printBlockedA: $0 % 2 == 0, printBlockedB: $0 % 3 == 0).bundle()
        }
        let streams = (0..<1_000).map { _ in manager.events() }
        #expect(manager.subscriberCount == 1_000)
        var published: [PolicyEvent] = []
        for bundle in bundles {
            published += await manager.apply(bundle, source: "test")
        }
        #expect(published.count >= 100)
        let expected = published
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for stream in streams {
                group.addTask {
                    var received: [PolicyEvent] = []
                    for await event in stream {
                        received.append(event)
                        if received.count == expected.count { break }
                    }
                    return received == expected
                }
            }
            var allInOrder = 0
            for try await inOrder in group where inOrder { allInOrder += 1 }
            #expect(allInOrder == 1_000)
        }
    }

    @Test("cancelled subscribers are released")
    func cancellation() async throws {
        let manager = await PolicyManager(context: EvaluationContext(platform: .ios))
        for round in 0..<3 {
            let tasks = (0..<200).map { _ in
                let stream = manager.events()
                return Task { for await _ in stream {} }
            }
            #expect(manager.subscriberCount == 200, "round \(round)")
            for task in tasks { task.cancel() }
            for task in tasks { await task.value }
            #expect(manager.subscriberCount == 0, "round \(round): nothing is kept for a cancelled subscriber")
            await manager.apply(try TestBundle(printBlockedA: round % 2 == 0).bundle(), source: "test")
        }
    }

    @Test("a malformed bundle written mid-run leaves decisions unchanged and is announced")
    func rejection() async throws {
        let directory = try TemporaryDirectory()
        let database = try CustodyDatabase()
        let manager = await PolicyManager(context: EvaluationContext(platform: .ios), database: database)
        try TestBundle(printBlockedA: true).write(to: directory.path)
        try await manager.apply(bundleDirectory: directory.path)
        let stream = manager.events()

        try Data(#"{"accounts": [ {"oid": 12} "#.utf8).write(to: URL(fileURLWithPath: directory.file("tenant.json")))
        await #expect(throws: BundleRejection.self) { try await manager.apply(bundleDirectory: directory.path) }
        #expect(!manager.snapshot.print(account: a0).isAllowed, "the old policy is still in force")
        #expect(manager.version == 1)

        var iterator = stream.makeAsyncIterator()
        guard case .bundleRejected(let rejection)? = await iterator.next() else {
            Issue.record("expected bundleRejected first")
            return
        }
        #expect(rejection.message.contains("tenant.json:1:"))
        let history = try await database.bundleHistory()
        #expect(history.map(\.result) == [.rejected, .applied])
        #expect(history.last?.contentHash.count == 64)
    }

    @Test("state streams yield the current value first, then each change")
    func stateStreams() async throws {
        let manager = await PolicyManager(context: EvaluationContext(platform: .ios))
        await manager.apply(try TestBundle().bundle(), source: "test")
        var allowed = manager.allowedAccounts().makeAsyncIterator()
        var policy = manager.effectivePolicy(for: a0).makeAsyncIterator()
        #expect(await allowed.next() == .some(nil))
        #expect(await policy.next()??.printBlocked.value == false)

        await manager.apply(try TestBundle(printBlockedB: true).bundle(), source: "test")  // a0 unchanged
        await manager.apply(
            try TestBundle(printBlockedA: true, allowedAccounts: ["a0@contoso.com"]).bundle(), source: "test")
        #expect(await allowed.next() == .some(["a0@contoso.com"]))
        #expect(await policy.next()??.printBlocked.value == true, "the B-only change was not a change for a0")
    }
}

@Suite("Watching a bundle directory", .timeLimit(.minutes(1)))
struct WatchTests {
    @Test("edits are applied once they settle; a broken edit is rejected once and the old policy stays")
    func watching() async throws {
        let directory = try TemporaryDirectory()
        try TestBundle().write(to: directory.path)
        let manager = await PolicyManager(context: EvaluationContext(platform: .ios))
        let stream = manager.events()
        let watcher = manager.watch(
            bundleDirectory: directory.path, interval: .milliseconds(10), debounce: .milliseconds(20))
        defer { watcher.cancel() }
        var events = stream.makeAsyncIterator()
        guard case .policyChanged? = await events.next() else {
            Issue.record("the first bundle was not applied"); return
        }
        guard case .bundleApplied(_, let source)? = await events.next() else {
            Issue.record("the first bundle was not announced"); return
        }
        #expect(source == directory.path)

        try TestBundle(printBlockedA: true).write(to: directory.path)
        #expect(await events.next() == .policyChanged(accounts: (0..<3).map { TestBundle.account("A", $0) }))
        #expect(
            await events.next() == .bundleApplied(revision: manager.bundleInForce!.revision, source: directory.path))
        #expect(!manager.snapshot.print(account: TestBundle.account("A", 0)).isAllowed)

        try Data("{".utf8).write(to: URL(fileURLWithPath: directory.file("policies.json")), options: .atomic)
        guard case .bundleRejected? = await events.next() else { Issue.record("expected bundleRejected"); return }
        #expect(!manager.snapshot.print(account: TestBundle.account("A", 0)).isAllowed, "the old policy stays in force")

        try TestBundle().write(to: directory.path)
        let repaired = await events.next()
        guard case .policyChanged? = repaired else {
            Issue.record("the repaired bundle was not applied: \(String(describing: repaired))"); return
        }
        #expect(manager.version == 3)
    }
}
