@testable import Custody
import CustodyPolicy
import CustodyProtection
import CustodyStore
import CustodyTestSupport
import Foundation
import GRDB
import Testing

/// An installation over a temporary directory: its state, its master key, bundles written there.
struct Installation {
    let directory: TemporaryDirectory
    let clock: TestClock

    init(at date: Date = EngineTests.t0) throws {
        directory = try TemporaryDirectory()
        clock = TestClock(date)
    }

    var state: String { directory.file("state.sqlite") }

    /// Opens an engine on the state (each call a new engine, as each process would).
    func open(
        bundle: String? = nil, keys: Bool = true, platform: Platform? = .ios, wipes: Bool = false,
        precedence: PolicyPrecedence.Rule? = nil
    ) async throws -> CustodyEngine {
        let clock = self.clock
        return try await CustodyEngine.open(
            CustodyConfiguration(
                state: .path(state), masterKey: keys ? .keyFile(path: directory.file("master.key")) : nil,
                context: EvaluationContext(platform: platform),
                precedence: precedence, bundleOverride: bundle, wipesWhenOfflineTooLong: wipes, now: { clock.now }))
    }

    /// Writes a test bundle into `name`; returns its path.
    @discardableResult
    func bundle(_ name: String, _ bundle: TestBundle = TestBundle()) throws -> String {
        let path = directory.file(name)
        try bundle.write(to: path)
        return path
    }
}

/// What a `CustodyError` says, or nil.
func custodyError(_ body: () async throws -> Void) async -> CustodyError? {
    do {
        try await body()
        return nil
    } catch let error as CustodyError {
        return error
    } catch {
        Issue.record("unexpected \(error)")
        return nil
    }
}

@Suite("The engine: one installation", .timeLimit(.minutes(2)))
struct EngineTests {
    static let t0 = Date(timeIntervalSince1970: 1_790_000_000)
    let a0 = TestBundle.account("A", 0)
    let b0 = TestBundle.account("B", 0)

    // MARK: The bundle in force

    @Test("no bundle in force and none given: everything that needs a policy says so")
    func noPolicy() async throws {
        let installation = try Installation()
        let engine = try await installation.open()
        #expect(engine.bundleInForce == nil)
        #expect(await custodyError { _ = try engine.policy() }?.code == .noPolicy)
        #expect(await custodyError { _ = try await engine.protect([1], owner: a0) }?.code == .noPolicy)
        #expect(
            await custodyError { _ = try await engine.protect([1], owner: a0, mode: .forceEncryption) }?.code
                == .noPolicy)
        #expect(
            await custodyError { _ = try await engine.decisionRunner(options: .init(currentTime: { .zero }), jobs: 1) }?
                .code
                == .noPolicy)
        let wipe = await custodyError { try await engine.wipe(account: a0) }
        #expect(wipe?.code == .account)
        #expect(wipe?.message.contains("no bundle is in force") == true)
    }

    @Test(
        "apply stores the bundle in force: a new engine on the state decides with it, an override does not replace it")
    func applyRestartOverride() async throws {
        let installation = try Installation()
        let printing = try installation.bundle("printing")
        let blocking = try installation.bundle("blocking", TestBundle(printBlockedA: true))

        let first = try await installation.open()
        let applied = try await first.apply(bundleDirectory: blocking)
        #expect(!applied.unchanged)
        #expect(applied.bundle.revision == (try BundleFiles.read(directory: blocking)).contentHash)
        #expect(!first.print(account: .account(a0)).isAllowed)

        let restarted = try await installation.open()
        #expect(restarted.bundleInForce?.revision == applied.bundle.revision)
        #expect(restarted.bundleInForce?.isOverride == false)
        #expect(!(try restarted.policy()).print(account: a0).isAllowed)

        let overridden = try await installation.open(bundle: printing)
        #expect(overridden.bundleInForce?.isOverride == true)
        #expect((try overridden.policy()).print(account: a0).isAllowed)
        #expect(
            try await installation.open().bundleInForce?.revision == applied.bundle.revision,
            "the override recorded nothing")

        #expect(try await restarted.apply(bundleDirectory: blocking).unchanged)
        try FileManager.default.removeItem(atPath: blocking)
        #expect(
            !(try await installation.open().policy()).print(account: a0).isAllowed,
            "the state keeps the files, not the path")
    }

    /// Which level names the account an app call decides for: the argument, else the task's
    /// scope, else the process default (Intune's identity precedence: thread identity over
    /// process identity). Print is blocked for A0 and allowed for B0 by the bundle.
    static let scopeCases: [(name: String, process: String?, task: String??, explicit: String?, decidesFor: String?)] =
        [
            ("the argument", nil, nil, "A0", "A0"),
            ("the argument over the task and the process", "B0", .some("B0"), "A0", "A0"),
            ("the task over the process", "A0", .some("B0"), nil, "B0"),
            ("the process default alone", "A0", nil, nil, "A0"),
            ("a task explicitly unmanaged over the process", "A0", .some(nil), nil, nil),
            ("none set", nil, nil, nil, nil),
        ]

    @Test(
        "the engine's app calls decide for the account named, else the task's, else the process default",
        arguments: scopeCases)
    func appCallScopes(
        _ scope: (name: String, process: String?, task: String??, explicit: String?, decidesFor: String?)
    ) async throws {
        let installation = try Installation()
        let engine = try await installation.open(bundle: try installation.bundle("b", TestBundle(printBlockedA: true)))
        let named = ["A0": a0, "B0": b0]
        engine.setProcessAccount(scope.process.map { .account(named[$0]!) })
        #expect(engine.processAccount == scope.process.map { .account(named[$0]!) })
        let explicit = scope.explicit.map { AccountScope.account(named[$0]!) }
        let decide = { (engine.account(explicit), engine.print(account: explicit)) }
        let (account, print) =
            if let task = scope.task { withAccount(task.map { named[$0]! }, operation: decide) } else { decide() }
        let expected = scope.decidesFor.map { named[$0]! }
        #expect(account == expected, "\(scope.name)")
        // Unmanaged (no account) prints; A0 is blocked by the bundle, B0 is not.
        #expect(print.isAllowed == (expected != a0), "\(scope.name)")
        engine.setProcessAccount(nil)
        #expect(engine.processAccount == nil)
    }

    /// A state whose check-in or first-seen time cannot be read: how long the account was
    /// offline is unknown, so it is an error, never "online" (Intune: "the app will block
    /// access to work or school data if the last sync is older than the offline grace
    /// period"; an unknown last sync is not a recent one).
    static let unreadableOfflineCases: [(table: String, damage: String, account: String)] = [
        ("check_ins", "UPDATE check_ins SET at = 'not a time'", "A0"),
        ("accounts", "UPDATE accounts SET first_seen = 'not a time'", "B0"),
    ]

    @Test(
        "offline time the state cannot read is an error from the engine, never counted as online",
        arguments: unreadableOfflineCases)
    func unreadableOffline(_ damaged: (table: String, damage: String, account: String)) async throws {
        let installation = try Installation()
        let engine = try await installation.open()
        try await engine.apply(bundleDirectory: try installation.bundle("b"))
        try await engine.checkIn(account: a0, at: Self.t0)
        let account = damaged.account == "A0" ? a0 : b0
        let later = Self.t0.addingTimeInterval(60)
        #expect(
            try await engine.offlineAccess(account: account, at: later).isAllowed, "readable: online a minute later")
        let queue = try DatabaseQueue(path: CustodyDatabase.path(forState: installation.state))
        try await queue.write { try $0.execute(sql: damaged.damage) }
        #expect(
            await custodyError { _ = try await engine.offlineDuration(of: account, at: later) }?.code == .state,
            "\(damaged.table)")
        #expect(
            await custodyError { _ = try await engine.offlineAccess(account: account, at: later) }?.code == .state,
            "\(damaged.table)")
    }

    /// Check-in times as damage (or a hand) may leave them in the state: text that is no
    /// date, nothing, bytes, and numbers out of any date's range (which once trapped the
    /// process when a launch counted seconds from them).
    static let damagedCheckIns = ["'garbage'", "''", "X'00'", "'21:10:00'", "1e300", "-1e300", "9.3e18"]

    @Test(
        "a launch's recorded check-in that the state holds damaged is a state failure, never 'no check-in', never a crash",
        arguments: damagedCheckIns)
    func damagedCheckIn(_ value: String) async throws {
        let installation = try Installation()
        let engine = try await installation.open()
        let level3 = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../fixtures/frameworks/level-3-ios").standardizedFileURL.path
        try await engine.apply(bundleDirectory: level3)
        let user = AccountID("user1@contoso.com")!
        try await engine.checkIn(account: user, at: Self.t0)
        #expect(try await engine.recordedLaunchFacts(user)?.lastCheckIn == .seconds(Self.t0.timeIntervalSince1970))
        let queue = try DatabaseQueue(path: CustodyDatabase.path(forState: installation.state))
        try await queue.write { try $0.execute(sql: "UPDATE check_ins SET at = \(value)") }
        do {
            _ = try await engine.recordedLaunchFacts(user)
            Issue.record("\(value): read as if nothing were wrong")
        } catch {
            #expect(error.isStateFailure, "\(value)")
            #expect(error.code == "state")
        }
        // The account's status reads the same row: an error, not a crash.
        #expect(await custodyError { _ = try await engine.accountStatus(for: user) }?.code == .state, "\(value)")
    }

    /// Damage to what the state keeps of the bundle in force: a file lost, a file's bytes
    /// changed, the newest history row's result unreadable. Each would otherwise put another
    /// policy in force under the same revision, or the revision before it.
    static let damagedBundleCases: [(damage: String, message: String)] = [
        (
            "DELETE FROM bundle_revision_files WHERE name = 'policies.json' AND content_hash = (SELECT content_hash FROM bundle_history ORDER BY id DESC LIMIT 1)",
            "do not hash"
        ),
        (
            "UPDATE bundle_revision_files SET bytes = X'5B5D' WHERE name = 'policies.json' AND content_hash = (SELECT content_hash FROM bundle_history ORDER BY id DESC LIMIT 1)",
            "do not hash"
        ),
        (
            "UPDATE bundle_history SET result = 'garbage' WHERE id = (SELECT max(id) FROM bundle_history)",
            "cannot be read"
        ),
    ]

    @Test(
        "what the state keeps of the bundle in force, damaged, is an error at open: never another policy, never the one before",
        arguments: damagedBundleCases)
    func damagedBundleInForce(_ example: (damage: String, message: String)) async throws {
        let installation = try Installation()
        let engine = try await installation.open()
        try await engine.apply(bundleDirectory: try installation.bundle("printing"))
        try await engine.apply(bundleDirectory: try installation.bundle("blocking", TestBundle(printBlockedA: true)))
        #expect(try await !installation.open().print(account: .account(a0)).isAllowed)
        let queue = try DatabaseQueue(path: CustodyDatabase.path(forState: installation.state))
        try await queue.write { try $0.execute(sql: example.damage) }
        let error = await custodyError { _ = try await installation.open() }
        #expect(error?.code == .bundle, "\(example.damage)")
        #expect(error?.message.contains(example.message) == true, "\(error.map { "\($0)" } ?? "opened")")
    }

    /// When each policy first reached each account decides precedence under `incumbent` only.
    static let reachPrecedenceCases: [(rule: PolicyPrecedence.Rule, refused: Bool)] = [
        (.incumbent, true), (.mostRestrictive, false),
    ]

    @Test(
        "a reach history the state holds damaged refuses bundles under incumbent precedence, never merges instead; other rules never read it",
        arguments: reachPrecedenceCases)
    func damagedReach(_ example: (rule: PolicyPrecedence.Rule, refused: Bool)) async throws {
        let installation = try Installation()
        let engine = try await installation.open(precedence: example.rule)
        try await engine.apply(bundleDirectory: try installation.bundle("printing"))
        let queue = try DatabaseQueue(path: CustodyDatabase.path(forState: installation.state))
        try await queue.write { try $0.execute(sql: "UPDATE policy_reach SET first_reached = 'not a time'") }
        let reopened = await custodyError { _ = try await installation.open(precedence: example.rule) }
        let applied = await custodyError {
            try await engine.apply(
                bundleDirectory: try installation.bundle("blocking", TestBundle(printBlockedA: true)))
        }
        if example.refused {
            #expect(reopened?.message.contains("first reached") == true, "\(reopened.map { "\($0)" } ?? "opened")")
            #expect(applied?.message.contains("first reached") == true, "\(applied.map { "\($0)" } ?? "applied")")
            #expect(engine.print(account: .account(a0)).isAllowed, "the policy in force stays")
        } else {
            #expect(reopened == nil && applied == nil)
        }
    }

    /// Times recorded with an account, damaged: resolving the account reads only its aliases,
    /// so a selective wipe still shreds its keys.
    static let damagedAccountTimes = [
        "UPDATE accounts SET first_seen = 'not a time'", "UPDATE account_aliases SET since = 'not a time'",
    ]

    @Test("a time recorded with an account that cannot be read does not stop its wipe", arguments: damagedAccountTimes)
    func wipeThroughDamagedTimes(_ damage: String) async throws {
        let installation = try Installation()
        let engine = try await installation.open()
        try await engine.apply(bundleDirectory: try installation.bundle("b"))
        let protected = try await engine.protect([1, 2, 3], owner: a0, mode: .forceEncryption)
        let queue = try DatabaseQueue(path: CustodyDatabase.path(forState: installation.state))
        try await queue.write { try $0.execute(sql: damage) }
        let report = try await engine.wipe(account: a0)
        #expect(report.keyVersions > 0, "\(damage)")
        #expect(await custodyError { _ = try await engine.unprotect(protected.envelope) }?.code == .protection)
    }

    @Test(
        "one check-in the state cannot read stops offline grace for its account only: every other account is still evaluated"
    )
    func offlineEvaluationPastDamage() async throws {
        let installation = try Installation()
        let engine = try await installation.open()
        try await engine.apply(bundleDirectory: try installation.bundle("b"))
        try await engine.checkIn(account: a0, at: Self.t0)
        try await engine.checkIn(account: b0, at: Self.t0)
        let damaged = try await engine.resolve(a0).owner.rawValue
        let queue = try DatabaseQueue(path: CustodyDatabase.path(forState: installation.state))
        try await queue.write {
            try $0.execute(sql: "UPDATE check_ins SET at = 'garbage' WHERE account = ?", arguments: [damaged])
        }
        let events = await engine.evaluateOffline(at: Self.t0.addingTimeInterval(91 * 86_400))
        let required = events.compactMap { event -> AccountID? in
            if case .wipeRequired(let account, _) = event { return account }
            return nil
        }
        var owners = Set<String>()
        for account in required {
            if let owner = try? await engine.resolve(account).owner.rawValue { owners.insert(owner) }
        }
        #expect(!owners.contains(damaged), "\(events)")
        #expect(owners.contains(try await engine.resolve(b0).owner.rawValue), "\(events)")
        #expect(owners.count == required.count && owners.count >= 2)
    }

    @Test("a bundle that does not load is rejected with located errors and recorded; the policy in force stays")
    func rejected() async throws {
        let installation = try Installation()
        let path = try installation.bundle("bundle", TestBundle(printBlockedA: true))
        let engine = try await installation.open()
        try await engine.apply(bundleDirectory: path)
        try installation.directory.write("bundle/policies.json", "{")
        let error = await custodyError { try await engine.apply(bundleDirectory: path) }
        #expect(error?.code == .bundle)
        #expect(
            error?.diagnostics.first?.description.hasPrefix(
                installation.directory.file("bundle/policies.json") + ":1:2: error:") == true)
        #expect(!engine.print(account: .account(a0)).isAllowed)
        let history = try await engine.database.bundleHistory()
        #expect(history.map(\.result) == [.rejected, .applied])
        #expect(try await engine.database.auditEntries().map(\.action) == ["apply", "reject"])
    }

    // MARK: Accounts and wipes

    /// The ways of naming a0 a wipe must accept, each with the keys it must find.
    static let names: [(label: String, account: AccountID)] = [
        ("UPN", AccountID(upn: "a0@contoso.com")!),
        ("UPN in other case", AccountID(upn: "A0@CONTOSO.com")!),
        ("OID", AccountID(oid: TestBundle.account("A", 0).oid!)!),
        ("OID in upper case", AccountID(TestBundle.account("A", 0).oid!.uppercased())!),
        ("both forms", TestBundle.account("A", 0)),
    ]

    @Test(
        "a wipe by any name of the account deletes its keys under every alias, legacy UPN-keyed keys included",
        arguments: names)
    func wipeEveryAlias(label: String, account: AccountID) async throws {
        let installation = try Installation()
        let engine = try await installation.open()
        try await engine.apply(bundleDirectory: try installation.bundle("bundle"))
        let current = try await engine.protect([1, 2, 3], owner: a0).envelope
        // Keys made before accounts were resolved: under the UPN itself.
        let legacy = try await DataProtector(keyRing: try #require(engine.keyRing)).protect(
            [4], owner: AccountID(upn: "a0@contoso.com")!, encrypt: true)
        let others = try await engine.protect([5], owner: b0).envelope
        #expect(try DataProtector.protectionInfo(legacy)?.owner.rawValue == "upn:a0@contoso.com")

        let report = try await engine.wipe(account: account, reason: label)
        #expect(report.owner.rawValue == "oid:" + a0.oid!)
        #expect(report.keyVersions == 2, "\(label)")
        #expect(
            report.keyVersionsByIdentifier.keys.map(\.rawValue).sorted() == ["oid:" + a0.oid!, "upn:a0@contoso.com"])
        for envelope in [current, legacy] {
            let error = await custodyError { _ = try await engine.unprotect(envelope) }
            #expect(
                error?.message.contains("whose keys were wiped at") == true, "\(label): \(error?.message ?? "opened")")
        }
        #expect(try await engine.unprotect(others) == [5], "other accounts keep their data")
        // A new engine, as another process, cannot open them either.
        #expect(await custodyError { _ = try await installation.open().unprotect(current) }?.code == .protection)
    }

    /// After a wipe and a new key: which envelopes are said to be wiped, and which damaged.
    enum AfterWipe: String, CaseIterable, Sendable {
        /// Sealed before the wipe: its key is gone (a new key of the same version is not it).
        case sealedBefore = "sealed before the wipe"
        /// Sealed after, under the new key, then a byte of its data flipped.
        case flippedAfter = "sealed after, a data byte flipped"
        /// Sealed after, then cut short.
        case cutAfter = "sealed after, cut short"
        /// Sealed after, untouched.
        case intactAfter = "sealed after, untouched"
    }

    @Test(
        "after a wipe and a new key, an envelope sealed before is said to be wiped, one sealed after and damaged is said to be damaged",
        arguments: AfterWipe.allCases)
    func damagedAfterWipe(kind: AfterWipe) async throws {
        let installation = try Installation()
        let engine = try await installation.open()
        try await engine.apply(bundleDirectory: try installation.bundle("bundle"))
        let data = [UInt8](repeating: 7, count: 3_000)
        let before = try await engine.protect(data, owner: a0).envelope
        try await engine.wipe(account: a0, reason: "test")
        var after = try await engine.protect(data, owner: a0).envelope
        #expect(try DataProtector.protectionInfo(after)?.keyVersion == 1, "the new key restarts at version 1")
        let envelope: [UInt8]
        switch kind {
        case .sealedBefore: envelope = before
        case .flippedAfter:
            after[after.count - 100] ^= 0x01
            envelope = after
        case .cutAfter: envelope = Array(after.dropLast(40))
        case .intactAfter: envelope = after
        }
        let error = await custodyError { _ = try await engine.unprotect(envelope) }
        switch kind {
        case .sealedBefore:
            #expect(error?.message.contains("whose keys were wiped at") == true, "\(String(describing: error))")
        case .flippedAfter, .cutAfter:
            #expect(error?.code == .protection)
            #expect(error?.message.contains("wiped") == false, "\(String(describing: error))")
            #expect(
                error?.message.contains("does not authenticate") == true || error?.message.contains("cut off") == true,
                "\(String(describing: error))")
        case .intactAfter:
            #expect(error == nil, "\(String(describing: error))")
        }
    }

    @Test(
        "accounts the installation cannot resolve are errors for a wipe, a check-in and a rotation, never a silent success",
        arguments: [
            AccountID(upn: "nobody@fabrikam.com")!,
            AccountID(oid: "00000000-0000-0000-0000-000000000000", upn: "a0@contoso.com")!,
            AccountID(oid: TestBundle.account("A", 0).oid!, upn: "b0@contoso.com")!,
        ])
    func unresolvable(account: AccountID) async throws {
        let installation = try Installation()
        let engine = try await installation.open()
        try await engine.apply(bundleDirectory: try installation.bundle("bundle"))
        _ = try await engine.protect([1], owner: a0)
        let wipe = await custodyError { try await engine.wipe(account: account) }
        #expect(wipe?.code == .account)
        #expect(wipe?.message.contains(account.description) == true)
        #expect(await custodyError { try await engine.checkIn(account: account) }?.code == .account)
        #expect(await custodyError { _ = try await engine.rotateKey(account: account) }?.code == .account)
        #expect(try await engine.keyOwners().map(\.versions) == [[1]], "a0's key is untouched")
    }

    /// Issue 47, found from outside: a bundle that reaches accounts only on another platform,
    /// or only for another app, manages no account under the installation's own context; put in
    /// force, every decision there would allow.
    @Test(
        "a bundle that reaches no account in the installation's context is refused as empty-bundle, unless on purpose",
        arguments: [
            ("windows only", ##""@odata.type": "#microsoft.graph.windowsManagedAppProtection""##),
            (
                "android only",
                ##""@odata.type": "#microsoft.graph.androidManagedAppProtection""##
            ),
        ])
    func emptyInContext(label: String, members: String) async throws {
        let installation = try Installation()
        let engine = try await installation.open(platform: .ios)
        try await engine.apply(bundleDirectory: try installation.bundle("bundle"))
        let before = engine.bundleInForce?.revision
        let directory = installation.directory.file(label.replacingOccurrences(of: " ", with: "-"))
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Data(#"{"accounts": [{"upn": "a@contoso.com", "groups": ["g"]}]}"#.utf8).write(
            to: URL(fileURLWithPath: directory + "/tenant.json"))
        try Data(
            ##"{\##(members), "id": "P", "printBlocked": true, "assignments": [{"target": {"@odata.type": "#microsoft.graph.groupAssignmentTarget", "groupId": "g"}}]}"##
                .utf8
        ).write(to: URL(fileURLWithPath: directory + "/policy.json"))
        let error = try #require(await custodyError { try await engine.apply(bundleDirectory: directory) })
        #expect(error.diagnostics.first?.code == .emptyBundle, "\(label): \(error)")
        #expect(error.diagnostics.first?.message.contains("in this installation's context") == true, "\(error)")
        #expect(engine.bundleInForce?.revision == before, "the policy in force stays")
        try await engine.apply(bundleDirectory: directory, allowingEmpty: true)
        #expect(engine.bundleInForce?.revision != before)
    }

    @Test("an account removed from the tenant is still resolved through the state, and its wipe finds its keys")
    func removedFromTenant() async throws {
        let installation = try Installation()
        let engine = try await installation.open()
        try await engine.apply(bundleDirectory: try installation.bundle("bundle"))
        let envelope = try await engine.protect([9], owner: a0).envelope
        try await engine.apply(
            bundleDirectory: try installation.bundle("smaller", TestBundle(perGroup: 0)), allowingEmpty: true)
        #expect(engine.manager.snapshot.tenantAccount(for: a0) == nil)
        for name in [AccountID(upn: "a0@contoso.com")!, AccountID(oid: a0.oid!)!] {
            #expect(try await engine.resolve(name).owner.rawValue == "oid:" + a0.oid!)
        }
        #expect(try await engine.wipe(account: AccountID(upn: "a0@contoso.com")!).keyVersions == 1)
        #expect(await custodyError { _ = try await engine.unprotect(envelope) } != nil)
    }

    // MARK: Protection fails closed

    /// Each mode for each kind of owner: encrypted, tagged only, or the error code.
    static let protectCases: [(owner: AccountID, mode: ProtectionMode, outcome: String)] = [
        (TestBundle.account("A", 0), .policy, "encrypted"),
        (AccountID(upn: "a0@contoso.com")!, .policy, "encrypted"),
        (TestBundle.account("B", 0), .policy, "tagged"),  // policy B: useDeviceSettings
        (TestBundle.account("A", 0), .unmanaged, "refused"),
        (TestBundle.account("B", 0), .unmanaged, "tagged"),
        (TestBundle.account("B", 0), .forceEncryption, "encrypted"),
        (AccountID(upn: "guest@fabrikam.com")!, .policy, "account"),
        (AccountID(upn: "guest@fabrikam.com")!, .unmanaged, "tagged"),
        (AccountID(upn: "guest@fabrikam.com")!, .forceEncryption, "encrypted"),
        (AccountID(oid: "00000000-0000-0000-0000-000000000000", upn: "a0@contoso.com")!, .policy, "account"),
        (AccountID(oid: "00000000-0000-0000-0000-000000000000", upn: "a0@contoso.com")!, .unmanaged, "account"),
        (AccountID(oid: "00000000-0000-0000-0000-000000000000", upn: "a0@contoso.com")!, .forceEncryption, "account"),
    ]

    @Test(
        "protect encrypts unless the owner's policy says it need not; unknown owners need a mode; nothing managed is left in plaintext",
        arguments: protectCases)
    func protectFailsClosed(owner: AccountID, mode: ProtectionMode, outcome: String) async throws {
        let installation = try Installation()
        let engine = try await installation.open()
        try await engine.apply(
            bundleDirectory: try installation.bundle("bundle", TestBundle(encryptionB: "useDeviceSettings")))
        do {
            let protected = try await engine.protect(Array("payload".utf8), owner: owner, mode: mode)
            let plan = protected.plan
            let info = try #require(try DataProtector.protectionInfo(protected.envelope))
            #expect(info.isEncrypted == plan.encrypted)
            #expect((plan.encrypted ? "encrypted" : "tagged") == outcome, "\(plan.reason)")
            #expect(info.owner == plan.owner)
            if case .tenant(let account) = engine.manager.snapshot.resolveAccount(owner) {
                #expect(info.owner == OwnerIdentifier(account.id), "kept under the tenant's OID")
            }
            #expect(try await engine.unprotect(protected.envelope) == Array("payload".utf8))
        } catch let error as CustodyError {
            #expect(error.code.rawValue == outcome, "\(error)")
        }
    }

    @Test("a key made for an owner the policy does not know is recorded, so a later wipe finds it")
    func forcedOwnerIsRecorded() async throws {
        let installation = try Installation()
        let engine = try await installation.open()
        try await engine.apply(bundleDirectory: try installation.bundle("bundle"))
        let guest = AccountID(upn: "guest@fabrikam.com")!
        let envelope = try await engine.protect([1], owner: guest, mode: .forceEncryption).envelope
        let restarted = try await installation.open()
        #expect(try await restarted.wipe(account: guest).keyVersions == 1)
        #expect(await custodyError { _ = try await restarted.unprotect(envelope) }?.message.contains("wiped") == true)
    }

    // MARK: Offline grace and the audit log

    @Test("offline grace counts from a check-in under any alias, else from when the installation first saw the account")
    func offlineGrace() async throws {
        let installation = try Installation()
        let engine = try await installation.open(wipes: true)
        try await engine.apply(bundleDirectory: try installation.bundle("bundle", TestBundle(perGroup: 1)))
        let day: TimeInterval = 86_400
        // A check-in kept under the UPN, as earlier versions did.
        try await engine.database.checkIn(account: "upn:a0@contoso.com", at: Self.t0.addingTimeInterval(30 * day))
        let envelope = try await engine.protect([1], owner: b0).envelope
        #expect(try await engine.offlineDuration(of: b0, at: Self.t0.addingTimeInterval(day)) == .seconds(day))
        #expect(try await engine.offlineDuration(of: a0, at: Self.t0.addingTimeInterval(31 * day)) == .seconds(day))

        let events = await engine.evaluateOffline(at: Self.t0.addingTimeInterval(91 * day))
        #expect(events.count == 1)
        #expect(
            events.first.map { if case .wipeRequired(let account, _) = $0 { account == b0 } else { false } } == true)
        #expect(
            await custodyError { _ = try await engine.unprotect(envelope) }?.message.contains("wiped") == true,
            "wiped as configured")
    }

    @Test("key rotations, secret changes and wipes are audited; decisions only when decision auditing is on")
    func audited() async throws {
        let installation = try Installation()
        let engine = try await installation.open()
        try await engine.apply(bundleDirectory: try installation.bundle("bundle"))
        let rotated = try await engine.rotateKey(account: a0)
        // Issue 47, item 26: a key rotation is an event too, in the log every replica streams.
        let logged = try await engine.events(after: 0).events.last
        #expect(logged?.name == "keyRotated")
        #expect(
            logged.map { String(decoding: $0.body, as: UTF8.self).contains(#""version":\#(rotated.version)"#) } == true)
        try await engine.secrets().storePassword("hunter2", identifier: "vpn", for: a0)
        try await engine.wipe(account: a0)
        #expect(try await engine.auditEntries().map(\.kind) == [.bundle, .key, .secret, .wipe])
        #expect(try await engine.auditEntries().allSatisfy { !($0.detail ?? "").contains("hunter2") })

        let query = Array((#"{"action":"print","account":"b0@contoso.com"}"# + "\n").utf8)
        func decide() async throws -> [UInt8] {
            let pipe = Pipe()
            try pipe.fileHandleForWriting.write(contentsOf: query)
            try pipe.fileHandleForWriting.close()
            var output: [UInt8] = []
            let summary = try await engine.decisionRunner(options: .init(currentTime: { .zero }), jobs: 1)
                .run(descriptor: pipe.fileHandleForReading.fileDescriptor) { output += $0 }
            #expect(summary.lines == 1 && summary.errors == 0)
            return output
        }
        _ = try await decide()
        #expect(try await engine.auditEntries().filter { $0.kind == .decision }.isEmpty)
        try await engine.setAuditing(decisions: true)
        _ = try await decide()
        let decisions = try await engine.auditEntries().filter { $0.kind == .decision }
        #expect(decisions.count == 1)
        #expect(
            decisions.first?.account == "b0@contoso.com" && decisions.first?.action == "print"
                && decisions.first?.allowed == true)
    }

    @Test("a report session (the console's what-if) is never audited; a decision session is, when auditing is on")
    func reportSessionsAreNotAudited() async throws {
        let (engine, installation) = try await Self.auditedEngine()
        defer { withExtendedLifetime(installation) {} }
        for (report, audited) in [(false, true), (true, false)] {
            var session = try await engine.decisionSession(options: .init(currentTime: { .zero }), report: report)
            let output = Self.answerPrint(&session)
            #expect(session.isAuditing == audited)
            #expect(output.contains(#""decisionId":"#) == audited)
            #expect(try await session.commit() == (audited ? 1 : 0))
        }
        #expect(try await engine.auditEntries().filter { $0.kind == .decision }.count == 1)
    }

    /// An engine on the test bundle with decision auditing on (and its installation, which
    /// must outlive it).
    static func auditedEngine() async throws -> (CustodyEngine, Installation) {
        let installation = try Installation()
        let engine = try await installation.open()
        try await engine.apply(bundleDirectory: try installation.bundle("bundle"))
        try await engine.setAuditing(decisions: true)
        return (engine, installation)
    }

    /// The session's answer to a print query for b0@contoso.com.
    static func answerPrint(_ session: inout DecisionSession) -> String {
        var output: [UInt8] = []
        Array(#"{"action":"print","account":"b0@contoso.com"}"#.utf8).withUnsafeBytes {
            session.answer(line: $0, into: &output)
        }
        return String(decoding: output, as: UTF8.self)
    }

    @Test("answers made while the audit log is switched off under them are not given: the commit fails and says why")
    func auditSwitchedOffMidSession() async throws {
        let (engine, installation) = try await Self.auditedEngine()
        defer { withExtendedLifetime(installation) {} }
        var session = try await engine.decisionSession(options: .init(currentTime: { .zero }))
        #expect(Self.answerPrint(&session).contains(#""decisionId":"#))
        try await engine.setAuditing(false)
        await #expect {
            try await session.commit()
        } throws: { error in
            (error as? CustodyError)?.message.contains("the audit log was switched off") == true
        }
        // Nothing is left to be stored later, whatever the log says by then.
        try await engine.setAuditing(true)
        #expect(try await session.commit() == 0)
        #expect(try await engine.auditEntries().filter { $0.kind == .decision }.isEmpty)
    }

    @Test(
        "pruning the audit log deletes what is older than the age, a batch at a time, each batch an entry; the rest stays"
    )
    func pruneAuditLog() async throws {
        let (engine, installation) = try await Self.auditedEngine()
        defer { withExtendedLifetime(installation) {} }
        let now = Date()
        let old = CustodyEngine.pruneBatch * 2 + 1
        let records =
            (0..<old).map { index in
                AuditRecord(
                    .decision, account: "oid:a", action: "print", allowed: true, detail: "old",
                    at: now - 3 * 86_400 - Double(index))
            }
            + (0..<3).map { _ in
                AuditRecord(.decision, account: "oid:a", action: "print", allowed: true, detail: "recent", at: now - 60)
            }
        // The installation's own entries older than a day too (its apply is dated by its clock).
        let older = try await engine.auditEntries(since: nil, limit: 1_000).count { $0.at < now - 86_400 }
        #expect(try await engine.database.audit(records) == old + 3)
        #expect(try await engine.pruneAuditLog(olderThan: .seconds(86_400), now: now) == old + older)
        let entries = try await engine.auditEntries(since: nil, limit: 1_000)
        #expect(entries.filter { $0.kind == .decision }.map(\.detail) == ["recent", "recent", "recent"])
        let prunes = entries.filter { $0.action == "prune" }.map { $0.detail?.prefix { $0 != " " } ?? "" }
        #expect(prunes == ["\(CustodyEngine.pruneBatch)", "\(CustodyEngine.pruneBatch)", "\(1 + older)"], "\(prunes)")
        #expect(try await engine.pruneAuditLog(olderThan: .seconds(86_400), now: now) == 0)
        await #expect(throws: CustodyError.self) { try await engine.pruneAuditLog(olderThan: .zero) }
    }

    /// Share targets as a query may name them (JSON escapes), and how the audit entry writes
    /// them: whole, with control characters escaped.
    static let hostileTargets: [(json: String, audited: String)] = [
        (#"com.a\u0000b"#, #"com.a\u{0}b"#),
        (#"\u001b[2Jcom.b"#, #"\u{1B}[2Jcom.b"#),
        (#"com.c\u202Eevil"#, #"com.c\u{202E}evil"#),
        (#"com.d\nline"#, #"com.d\u{A}line"#),
        ("com.plain", "com.plain"),
    ]

    @Test(
        "an audited decision quoting a target with control characters is stored whole, escaped",
        arguments: hostileTargets)
    func auditedTargetsEscaped(target: (json: String, audited: String)) async throws {
        let installation = try Installation()
        let engine = try await installation.open()
        try await engine.apply(bundleDirectory: try installation.bundle("bundle"))
        try await engine.setAuditing(decisions: true)
        let pipe = Pipe()
        let line = #"{"action":"share","owner":"b0@contoso.com","targets":[""# + target.json + #"","com.after"]}"#
        try pipe.fileHandleForWriting.write(contentsOf: Array((line + "\n").utf8))
        try pipe.fileHandleForWriting.close()
        var output: [UInt8] = []
        let summary = try await engine.decisionRunner(options: .init(currentTime: { .zero }), jobs: 1)
            .run(descriptor: pipe.fileHandleForReading.fileDescriptor) { output += $0 }
        #expect(summary.lines == 1 && summary.errors == 0 && summary.auditFailure == nil)
        let detail = try #require(try await engine.auditEntries().last { $0.kind == .decision }?.detail)
        #expect(detail.hasPrefix(target.audited + ": "), "\(detail)")
        #expect(detail.contains("; com.after: "), "the entry goes on past the target: \(detail)")
        #expect(detail == detail.escapingControlCharacters)
    }
}

extension EngineTests {
    /// Batches of 87 or 88 lines, each split into blocks of about 43 and 44: 88 limits in a
    /// row put the failure on every line of a batch, the block boundary inside it among them
    /// (where a commit per block would keep the first block's entries without its answers).
    @Test(
        "custody decide's runner: when the audit log fails mid-stream, the answers given are exactly the ones audited, in order",
        arguments: 1_000..<1_088)
    func runnerStopsWhereTheAuditLogFails(limit: Int) async throws {
        let installation = try Installation()
        let engine = try await installation.open()
        try await engine.apply(bundleDirectory: try installation.bundle("bundle"))
        try await engine.setAuditing(decisions: true)
        // The log refuses decisions past the limit, as a full disk would: the batch that
        // crosses it fails as a whole (one transaction).
        let database = try DatabaseQueue(path: installation.state)
        try await database.write { db in
            try db.execute(
                sql: """
                    CREATE TRIGGER full_disk BEFORE INSERT ON audit_log
                    WHEN NEW.kind = 'decision' AND (SELECT count(*) FROM audit_log WHERE kind = 'decision') >= \(limit)
                    BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END
                    """)
        }
        // 1,200 queries from a file, in batches of about 4 KiB split between two workers: the
        // runner reads each batch ahead while the workers answer the one before.
        let line = #"{"action":"print","account":"b0@contoso.com"}"# + "\n"
        let path = installation.directory.file("queries.jsonl")
        try String(repeating: line, count: 1_200).write(toFile: path, atomically: true, encoding: .utf8)
        let input = try #require(FileHandle(forReadingAtPath: path))
        defer { try? input.close() }

        var output: [UInt8] = []
        let summary = try await engine.decisionRunner(
            options: .init(currentTime: { .zero }), jobs: 2, blockBytes: 2_048
        )
        .run(descriptor: input.fileDescriptor) { output += $0 }

        let failure = try #require(summary.auditFailure, "the failing audit log stops the answers")
        #expect(failure.contains("the audit log cannot be written") && failure.contains("disk is full"))
        let answers = output.split(separator: UInt8(ascii: "\n")).map { String(decoding: $0, as: UTF8.self) }
        let given = answers.compactMap { answer in
            answer.firstRange(of: #""decisionId":""#).map { String(answer[$0.upperBound...].prefix { $0 != "\"" }) }
        }
        let audited = try await database.read { db in
            try String.fetchAll(db, sql: "SELECT decision_id FROM audit_log WHERE kind = 'decision' ORDER BY id")
        }
        #expect(given.count == answers.count, "every answer carries its decision id")
        #expect(summary.lines == answers.count && answers.count > limit - 100 && answers.count <= limit)
        // The answers given are the decisions audited, in the same order.
        let difference = zip(given, audited).enumerated().first { $0.element.0 != $0.element.1 }?.offset
        #expect(given.count == audited.count, "\(given.count) answers given, \(audited.count) decisions audited")
        #expect(difference == nil, "the answer at \(difference ?? 0) is not the decision audited there")
    }
}

@Suite("Watching a bundle directory: when to read")
struct BundleWatchTests {
    /// Probes of a directory as it changes: each step takes one, at a time in milliseconds,
    /// and says whether the watcher reads the files then.
    static let timelines: [(label: String, steps: [(probe: Int?, at: Int, reads: Bool)])] = [
        (
            "first look waits for the debounce, then reads once",
            [(1, 0, false), (1, 100, false), (1, 250, true), (1, 1_250, false), (1, 2_250, false)]
        ),
        (
            "an edit settles before it is read",
            [(1, 0, false), (1, 250, true), (2, 1_250, false), (2, 1_500, true), (2, 2_500, false)]
        ),
        (
            "edits in a burst become one read",
            [(1, 0, false), (1, 250, true), (2, 1_000, false), (3, 1_100, false), (4, 1_200, false), (4, 1_450, true)]
        ),
        (
            "a change undone before it settles is not read",
            [(1, 0, false), (1, 250, true), (2, 1_000, false), (1, 1_100, false), (1, 2_000, false)]
        ),
        (
            "a directory that cannot be listed is read once (to reject it), then again when it returns",
            [(nil, 0, false), (nil, 250, true), (nil, 1_250, false), (1, 2_250, false), (1, 2_500, true)]
        ),
    ]

    /// Watches started on a directory whose content is the policy in force (settled on the
    /// probe numbered first): only a later change is read.
    static let settledStarts: [(label: String, settled: Int, steps: [(probe: Int?, at: Int, reads: Bool)])] = [
        ("the directory as it was at the start is never read", 1, [(1, 0, false), (1, 250, false), (1, 1_250, false)]),
        (
            "a later edit is read once it settles", 1,
            [(1, 0, false), (2, 1_000, false), (2, 1_250, true), (2, 2_250, false)]
        ),
        ("an edit made since the probe was taken is read", 1, [(2, 0, false), (2, 250, true)]),
    ]

    @Test("a watch started on the policy in force reads only later changes", arguments: settledStarts)
    func settledStart(label: String, settled: Int, steps: [(probe: Int?, at: Int, reads: Bool)]) throws {
        let directory = try TemporaryDirectory()
        var probes: [Int: BundleProbe] = [:]
        for state in Set(steps.compactMap(\.probe) + [settled]).sorted() {
            try directory.write("policies.json", String(repeating: "x", count: state))
            probes[state] = BundleProbe.take(directory: directory.path)
        }
        var watch = BundleWatch(debounce: .milliseconds(250))
        watch.settle(probes[settled])
        for (index, step) in steps.enumerated() {
            let reads = watch.shouldRead(step.probe.flatMap { probes[$0] }, at: .milliseconds(step.at))
            #expect(reads == step.reads, "\(label): step \(index)")
        }
    }

    @Test("files the state could not record are read again at the next look, unchanged, after the debounce")
    func retryAfterStateFailure() throws {
        let directory = try TemporaryDirectory()
        try directory.write("policies.json", "x")
        let probe = BundleProbe.take(directory: directory.path)
        var watch = BundleWatch(debounce: .milliseconds(250))
        watch.settle(probe)
        let settled = watch.shouldRead(probe, at: .milliseconds(0))
        watch.retry()
        let early = watch.shouldRead(probe, at: .milliseconds(1_000))
        let due = watch.shouldRead(probe, at: .milliseconds(1_250))
        let after = watch.shouldRead(probe, at: .milliseconds(2_250))
        #expect(!settled, "settled: not read")
        #expect(!early, "waits for the debounce")
        #expect(due, "then reads the same files again")
        #expect(!after, "once")
    }

    @Test(
        "a bundle put in force after a watch started is not overridden by the watch's first look at the unchanged directory"
    )
    func watchDoesNotOverride() async throws {
        let installation = try Installation()
        let engine = try await installation.open()
        let watched = try installation.bundle("watched")
        try await engine.apply(bundleDirectory: watched)
        let watch = engine.manager.watch(
            bundleDirectory: watched, interval: .milliseconds(10), debounce: .milliseconds(100))
        defer { watch.cancel() }
        var other = TestBundle()
        other.printBlockedA = true
        let put = try await engine.apply(bundleDirectory: try installation.bundle("other", other))
        try await Task.sleep(for: .milliseconds(400))
        #expect(
            engine.bundleInForce?.revision == put.bundle.revision,
            "the watch re-applied a directory that had not changed")
    }

    @Test(
        "a watched directory that cannot be read for a moment, then reads as it was, is not applied again over a bundle put in force meanwhile"
    )
    func watchSurvivesUnreadableDirectory() async throws {
        let installation = try Installation()
        let engine = try await installation.open()
        let watched = try installation.bundle("watched")
        try await engine.apply(bundleDirectory: watched)
        let watch = engine.manager.watch(
            bundleDirectory: watched, interval: .milliseconds(10), debounce: .milliseconds(50))
        defer { watch.cancel() }
        var other = TestBundle()
        other.printBlockedA = true
        let put = try await engine.apply(bundleDirectory: try installation.bundle("other", other))
        // Gone a moment (as when the process runs out of file descriptors, or a sync tool swaps
        // the directory), then back with the same files.
        try FileManager.default.moveItem(atPath: watched, toPath: watched + ".away")
        #expect(
            await eventually(within: .seconds(30)) { engine.lastBundleRejection?.source.hasSuffix("watched") == true })
        try FileManager.default.moveItem(atPath: watched + ".away", toPath: watched)
        // The watch looks every 10 ms and reads after 50 ms of quiet: a second is twenty looks.
        try await Task.sleep(for: .seconds(1))
        #expect(
            engine.bundleInForce?.revision == put.bundle.revision,
            "the watch re-applied a directory whose files had not changed")
        // A real edit still goes in.
        var edited = TestBundle()
        edited.printBlockedA = true
        edited.printBlockedB = true
        _ = try installation.bundle("watched", edited)
        #expect(await eventually(within: .seconds(30)) { engine.bundleInForce?.revision != put.bundle.revision })
    }

    @Test("reads only on a settled change, without sleeping", arguments: timelines)
    func timeline(label: String, steps: [(probe: Int?, at: Int, reads: Bool)]) throws {
        let directory = try TemporaryDirectory()
        // Real probes of real states of a directory: the number names the content.
        var probes: [Int: BundleProbe] = [:]
        for state in Set(steps.compactMap(\.probe)).sorted() {
            try directory.write("policies.json", String(repeating: "x", count: state))
            probes[state] = BundleProbe.take(directory: directory.path)
        }
        var watch = BundleWatch(debounce: .milliseconds(250))
        for (index, step) in steps.enumerated() {
            let reads = watch.shouldRead(step.probe.flatMap { probes[$0] }, at: .milliseconds(step.at))
            #expect(reads == step.reads, "\(label): step \(index)")
        }
    }
}

@Suite("Applying a bundle the state has moved past")
struct StaleApplyTests {
    @Test(
        "re-applying the bundle this engine has in force, after another writer put another in force, is a change, not 'unchanged'"
    )
    func lostUpdate() async throws {
        let directory = try TemporaryDirectory()
        let state = directory.file("state.sqlite")
        let first = directory.file("first"), second = directory.file("second")
        try TestBundle().write(to: first)
        try TestBundle(printBlockedA: true).write(to: second)
        let a = try await CustodyEngine.open(
            CustodyConfiguration(state: .path(state), context: EvaluationContext(platform: .ios)))
        let b = try await CustodyEngine.open(
            CustodyConfiguration(state: .path(state), context: EvaluationContext(platform: .ios)))
        let p1 = try await a.apply(bundleDirectory: first)
        let p2 = try await b.apply(bundleDirectory: second)
        #expect(!p2.unchanged)
        // a has not heard of b's bundle yet (it does not follow the log here).
        #expect(a.bundleInForce?.revision == p1.bundle.revision)
        let again = try await a.apply(bundleDirectory: first)
        #expect(!again.unchanged, "the state had another bundle in force")
        #expect(try await a.database.lastAppliedBundle()?.contentHash == p1.bundle.revision, "and now has this one")
        let repeated = try await a.apply(bundleDirectory: first)
        #expect(repeated.unchanged, "applying it once more changes nothing")
    }

    /// From the outside run of issue 49: on two replicas, a protect sent to one at the moment
    /// the other answered a wipe sealed under the wiped key (answered 200, never openable),
    /// and an unprotect there still opened the wiped account's data, until the wipe's notice
    /// came. Here the second engine hears of nothing (SQLite, no follower): only its own look
    /// at the state can tell it.
    @Test(
        "a wipe another engine on the state acknowledged is in force here at the next call: nothing opened under the wiped key, nothing sealed under it"
    )
    func wipeElsewhereAtOnce() async throws {
        let directory = try TemporaryDirectory()
        try TestBundle().write(to: directory.file("bundle"))
        func open() async throws -> CustodyEngine {
            try await CustodyEngine.open(
                CustodyConfiguration(
                    state: .path(directory.file("state.sqlite")),
                    masterKey: .keyFile(path: directory.file("master.key")), context: EvaluationContext(platform: .ios))
            )
        }
        let account = TestBundle.account("A", 0)
        let here = try await open()
        try await here.apply(bundleDirectory: directory.file("bundle"))
        let elsewhere = try await open()
        let data = Array("quarterly figures".utf8)
        let before = try await here.protect(data, owner: account, mode: .forceEncryption).envelope
        #expect(try await here.unprotect(before) == data, "its key is in memory here now")
        try await elsewhere.wipe(account: account)
        let opened = await custodyError { _ = try await here.unprotect(before) }
        #expect(opened?.code == .protection, "\(String(describing: opened))")
        // Whatever a protect now answers, the state can open it (or it is refused).
        do throws(CustodyError) {
            let after = try await here.protect(data, owner: account, mode: .forceEncryption).envelope
            #expect(try await elsewhere.unprotect(after) == data, "sealed under a key the state has")
        } catch {
            #expect(!error.message.isEmpty, "refused, saying why")
        }
    }

    /// Issue 47, item 4: `custody apply` racing the service's watch on one SQLite state applied
    /// one edit twice (two history rows, two sets of events). The writer that comes second finds
    /// the edit in force as it records, and its apply is the unchanged one.
    @Test(
        "an edit another writer applied first, while this engine had not heard of it, is unchanged: one history row, one bundleApplied"
    )
    func appliedByAnotherFirst() async throws {
        let directory = try TemporaryDirectory()
        let state = directory.file("state.sqlite")
        let first = directory.file("first"), second = directory.file("second")
        try TestBundle().write(to: first)
        try TestBundle(printBlockedA: true).write(to: second)
        let a = try await CustodyEngine.open(
            CustodyConfiguration(state: .path(state), context: EvaluationContext(platform: .ios)))
        try await a.apply(bundleDirectory: first)
        let b = try await CustodyEngine.open(
            CustodyConfiguration(state: .path(state), context: EvaluationContext(platform: .ios)))
        let applied = try await a.apply(bundleDirectory: second)
        #expect(!applied.unchanged)
        // b still has the first bundle in force: it has not heard of a's.
        let raced = try await b.apply(bundleDirectory: second)
        #expect(raced.unchanged, "the state had it in force already")
        #expect(raced.events.isEmpty)
        #expect(b.bundleInForce?.revision == applied.bundle.revision, "and it is in force here now")
        let stored = try #require(try await a.database.lastAppliedBundle())
        #expect(b.bundleInForce?.appliedAt == stored.appliedAt, "as the state records it")
        #expect(b.bundleInForce?.source == stored.source)
        let history = try await a.bundleHistory().filter { $0.contentHash == applied.bundle.revision }
        #expect(history.count == 1, "\(history)")
        let logged = try await a.events(after: 0).events.filter { $0.name == "bundleApplied" }
        #expect(logged.count == 2, "one for each bundle, none twice: \(logged.map(\.name))")
    }

    /// From the outside run of issue 47: a service restarted after a rollback watched the
    /// directory the rolled-back-to revision was first applied from, which held the newer
    /// bundle, and put it back in force without a word.
    @Test("after a rollback, a restarted engine does not watch the directory the rollback moved away from")
    func rollbackSurvivesRestart() async throws {
        let directory = try TemporaryDirectory()
        let state = directory.file("state.sqlite")
        try TestBundle().write(to: directory.file("bundle"))
        let engine = try await CustodyEngine.open(
            CustodyConfiguration(state: .path(state), context: EvaluationContext(platform: .ios)))
        let first = try await engine.apply(bundleDirectory: directory.file("bundle")).bundle.revision
        try TestBundle(printBlockedA: true).write(to: directory.file("bundle"))
        try await engine.apply(bundleDirectory: directory.file("bundle"))
        try await engine.rollback(to: first, reason: "printing broke", by: "test")
        let restarted = try await CustodyEngine.open(
            CustodyConfiguration(state: .path(state), context: EvaluationContext(platform: .ios)))
        #expect(restarted.bundleInForce?.revision == first)
        let watch = restarted.watch(interval: .milliseconds(20))
        defer { watch.cancel() }
        #expect(watch.directory == nil, "the rolled-back directory is not watched")
        try await Task.sleep(for: .milliseconds(200))
        #expect(restarted.bundleInForce?.revision == first, "the rollback stays")
    }

    @Test("a bundle directory given as a relative path is recorded as the absolute path it names")
    func relativeSource() async throws {
        let directory = try TemporaryDirectory()
        try TestBundle().write(to: directory.file("bundle"))
        let here = FileManager.default.currentDirectoryPath.split(separator: "/")
        let relative = String(repeating: "../", count: here.count) + String(directory.file("bundle").dropFirst())
        let manager = await PolicyManager(context: EvaluationContext(platform: .ios), database: try CustodyDatabase())
        try await manager.apply(bundleDirectory: relative)
        #expect(manager.bundleInForce?.source == directory.file("bundle"))
        #expect(manager.bundleInForce?.source.hasPrefix("/") == true)
    }
}

@Suite("An apply from a process that did not restore the bundle in force")
struct ApplyWithoutRestoreTests {
    /// The events an apply of the example bundle edited (printing blocked in all-staff) records,
    /// after the unedited bundle was applied by another engine; `restoring` as `custody apply`
    /// opens (without) and whether it restores before applying.
    static func eventsOfEdit(restoresFirst: Bool) async throws -> [PolicyEvent] {
        let directory = try TemporaryDirectory()
        try FileManager.default.copyItem(atPath: TestPaths.package("policies"), toPath: directory.file("bundle"))
        let state = directory.file("state.sqlite")
        let context = EvaluationContext(platform: .ios)
        try await CustodyEngine.open(CustodyConfiguration(state: .path(state), context: context))
            .apply(bundleDirectory: directory.file("bundle"))
        try directory.edit("bundle/all-staff.json") {
            $0.replacingOccurrences(of: #""printBlocked": false"#, with: #""printBlocked": true"#)
        }
        let writer = try await CustodyEngine.open(
            CustodyConfiguration(state: .path(state), context: context, restoresBundleInForce: false))
        if restoresFirst { #expect(await writer.restoreBundleInForceIfItLoads()) }
        return try await writer.apply(bundleDirectory: directory.file("bundle")).events
    }

    @Test("it records the change from the bundle in force, as a running service's apply would, not every account")
    func recordsTheChange() async throws {
        // What a service with the bundle in force announces for the same edit.
        let directory = try TemporaryDirectory()
        try FileManager.default.copyItem(atPath: TestPaths.package("policies"), toPath: directory.file("bundle"))
        let service = try await CustodyEngine.open(
            CustodyConfiguration(
                state: .path(directory.file("state.sqlite")), context: EvaluationContext(platform: .ios)))
        try await service.apply(bundleDirectory: directory.file("bundle"))
        try directory.edit("bundle/all-staff.json") {
            $0.replacingOccurrences(of: #""printBlocked": false"#, with: #""printBlocked": true"#)
        }
        let expected = try await service.apply(bundleDirectory: directory.file("bundle")).events
        #expect(expected.contains { $0.name == "policyChanged" })

        let restored = try await Self.eventsOfEdit(restoresFirst: true)
        #expect(restored.filter { $0.name != "bundleApplied" } == expected.filter { $0.name != "bundleApplied" })
        // Without it, the change is reported from no policy at all: every account, and
        // configuration changes that did not happen.
        let fromNothing = try await Self.eventsOfEdit(restoresFirst: false)
        #expect(fromNothing.count > restored.count)
    }
}

@Suite("Decision ids")
struct DecisionIDTests {
    @Test(
        "an id is the prefix, a dash and the counter in lower-case hexadecimal",
        arguments: [0, 1, 9, 10, 15, 16, 255, 256, 0xABCDEF, 1 << 32, UInt64.max - 1, UInt64.max])
    func format(counter: UInt64) {
        let prefix = "5f1c0e7a93b2d4e8"
        #expect(DecisionIDs.format(prefix: prefix, counter: counter) == prefix + "-" + String(counter, radix: 16))
    }

    @Test("ids drawn one after another differ and share the process's prefix")
    func distinct() {
        let ids = (0..<1_000).map { _ in DecisionIDs.next() }
        #expect(Set(ids).count == ids.count)
        #expect(Set(ids.map { $0.prefix { $0 != "-" } }).count == 1)
    }
}
