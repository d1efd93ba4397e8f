import Custody
import CustodyPolicy
import CustodyProtection
import CustodyStore
import CustodyTestSupport
import Foundation
import Testing

@Suite("Selective wipe and offline grace", .timeLimit(.minutes(1)))
struct WipeTests {
    let a0 = TestBundle.account("A", 0)
    let b0 = TestBundle.account("B", 0)
    static let t0 = Date(timeIntervalSince1970: 1_790_000_000)

    /// A manager over an on-disk state database and key ring, with a bundle applied.
    private func manager(
        _ directory: TemporaryDirectory, wipes: Bool = false, now: @escaping @Sendable () -> Date = { WipeTests.t0 }
    ) async throws
        -> (PolicyManager, DataProtector, CustodyDatabase)
    {
        let database = try CustodyDatabase(path: directory.file("state.sqlite"))
        let ring = try await KeyRing(
            store: StateKeyStore(state: database), masterKey: .keyFile(path: directory.file("master.key")))
        let manager = await PolicyManager(
            context: EvaluationContext(platform: .ios), database: database, keyRing: ring,
            wipesWhenOfflineTooLong: wipes, now: now)
        await manager.apply(try TestBundle().bundle(), source: "test")
        return (manager, DataProtector(keyRing: ring), database)
    }

    @Test("a wipe deletes the account's keys and registered files, records it, and announces it; others keep theirs")
    func wipe() async throws {
        let directory = try TemporaryDirectory()
        let (manager, protector, database) = try await manager(directory)
        // Encrypted as the policy in force says (it requires it for both).
        let mine = try await protector.protect(
            [1, 2, 3], owner: a0, encrypt: manager.snapshot.encryptionRequired(account: a0).isAllowed)
        let theirs = try await protector.protect(
            [4, 5, 6], owner: b0, encrypt: manager.snapshot.encryptionRequired(account: b0).isAllowed)
        let root = directory.file("a0-files")
        try FileManager.default.createDirectory(atPath: root + "/nested", withIntermediateDirectories: true)
        try Data("x".utf8).write(to: URL(fileURLWithPath: root + "/nested/report.txt"))
        await manager.registerManagedRoot(root, for: a0)
        try await manager.checkIn(account: a0)
        let stream = manager.events()

        let report = try await manager.wipe(account: a0, reason: "user signed out")
        #expect(report.keyVersions >= 1)
        #expect(report.removedPaths == [root])
        #expect(!FileManager.default.fileExists(atPath: root))
        await #expect(throws: ProtectionError.self) { _ = try await protector.unprotect(mine) }
        #expect(try await protector.unprotect(theirs) == [4, 5, 6])
        #expect(try await database.lastCheckIn(account: manager.owner(of: a0).rawValue) == nil)
        #expect(
            try await database.auditEntries().contains {
                $0.kind == .wipe && $0.detail?.contains("user signed out") == true
            })
        var events = stream.makeAsyncIterator()
        #expect(await events.next() == .wipeCompleted(account: a0))
    }

    @Test("past the access check period access is blocked; past the wipe period a wipe is required, once per check-in")
    func offline() async throws {
        let directory = try TemporaryDirectory()
        let (manager, _, _) = try await manager(directory)
        try await manager.checkIn(account: a0, at: Self.t0)
        let day: TimeInterval = 86_400
        #expect(try await manager.offlineAccess(account: a0, at: Self.t0.addingTimeInterval(60)).isAllowed)
        #expect(
            try await manager.offlineAccess(account: a0, at: Self.t0.addingTimeInterval(day)).offlineState
                == .accessBlocked)
        // b0 never checked in: it counts from when the installation first saw it (the apply at t0).
        #expect(try await manager.offlineAccess(account: b0, at: Self.t0.addingTimeInterval(60)).isAllowed)
        #expect(
            try await manager.offlineAccess(account: b0, at: Self.t0.addingTimeInterval(day)).offlineState
                == .accessBlocked,
            "b0 never checked in")

        #expect(await manager.evaluateOffline(at: Self.t0.addingTimeInterval(day)).isEmpty)
        let late = Self.t0.addingTimeInterval(91 * day)
        let events = await manager.evaluateOffline(at: late)
        #expect(events.count == 6, "every managed account: a0 from its check-in, the others from the apply")
        let announced = events.compactMap { event -> AccountID? in
            guard case .wipeRequired(let account, let reason) = event,
                reason.contains("periodOfflineBeforeWipeIsEnforced")
            else { return nil }
            return account
        }
        #expect(announced.contains(a0) && announced.contains(b0))
        #expect(await manager.evaluateOffline(at: late).isEmpty, "announced once")
        try await manager.checkIn(account: a0, at: late)
        let again = await manager.evaluateOffline(at: late.addingTimeInterval(91 * day))
        #expect(
            again == [
                .wipeRequired(
                    account: a0,
                    reason: again.first.flatMap { if case .wipeRequired(_, let reason) = $0 { reason } else { nil } }
                        ?? "")
            ],
            "only a0, which checked in since, is announced again")
    }

    @Test("when configured, an account offline too long is wiped")
    func offlineWipe() async throws {
        let directory = try TemporaryDirectory()
        let (manager, protector, _) = try await manager(directory, wipes: true)
        let envelope = try await protector.protect([7], owner: a0, encrypt: true)
        try await manager.checkIn(account: a0, at: Self.t0)
        let stream = manager.events()
        await manager.evaluateOffline(at: Self.t0.addingTimeInterval(91 * 86_400))
        var events = stream.makeAsyncIterator()
        guard case .wipeRequired? = await events.next() else { Issue.record("expected wipeRequired first"); return }
        while let event = await events.next() {
            if event == .wipeCompleted(account: a0) { break }
        }
        await #expect(throws: ProtectionError.self) { _ = try await protector.unprotect(envelope) }
    }
}

@Suite("Restoring the policy in force", .timeLimit(.minutes(1)))
struct RestoreTests {
    @Test("a restarted manager resumes the last applied bundle, even after a rejected one and with the directory gone")
    func restart() async throws {
        let directory = try TemporaryDirectory()
        let bundle = directory.file("bundle")
        let path = directory.file("state.sqlite")
        let first = await PolicyManager(
            context: EvaluationContext(platform: .ios), database: try CustodyDatabase(path: path))
        #expect(try await !first.restore(), "nothing applied yet")
        try TestBundle(printBlockedA: true).write(to: bundle)
        try await first.apply(bundleDirectory: bundle)
        try Data("{".utf8).write(to: URL(fileURLWithPath: bundle + "/policies.json"))
        await #expect(throws: BundleRejection.self) { try await first.apply(bundleDirectory: bundle) }
        try FileManager.default.removeItem(atPath: bundle)

        let second = await PolicyManager(
            context: EvaluationContext(platform: .ios), database: try CustodyDatabase(path: path))
        #expect(!second.snapshot.isManaged(TestBundle.account("A", 0)))
        #expect(try await second.restore())
        #expect(!second.snapshot.print(account: TestBundle.account("A", 0)).isAllowed)
        #expect(second.snapshot.print(account: TestBundle.account("B", 0)).isAllowed)
    }
}
