@testable import Custody
import CustodyPolicy
import CustodyStore
import CustodyTestSupport
import Foundation
import GRDB
import Testing

/// Replay (issue 51): the audited decisions of a window decided again under a candidate.
///
/// The oracle is never the replay's own code: each query is also decided directly, by a second
/// installation that has the candidate in force (with the same clock and the same recorded
/// facts), and the replay must report exactly the differences between the two answers.
@Suite("Replay: audited decisions decided again under a candidate", .timeLimit(.minutes(3)))
struct ReplayTests {
    static let t0 = EngineTests.t0

    /// The example bundle (`policies/`), with `edits` made to its files: (file, text, replacement).
    static func exampleBundle(in installation: Installation, _ name: String, edits: [(String, String, String)])
        throws -> String
    {
        let directory = installation.directory.file(name)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let source = TestPaths.package("policies")
        for file in try FileManager.default.contentsOfDirectory(atPath: source) where file.hasSuffix(".json") {
            var text = try String(contentsOfFile: source + "/" + file, encoding: .utf8)
            for (target, old, new) in edits where target == file {
                #expect(text.contains(old), "\(file) holds \(old)")
                text = text.replacingOccurrences(of: old, with: new)
            }
            try Data(text.utf8).write(to: URL(fileURLWithPath: directory + "/" + file))
        }
        return directory
    }

    /// The bundle in force before: the example, with a warning below iOS 17.
    static let baseEdits = [
        ("finance-ios.json", #""printBlocked": true,"#, #""printBlocked": true, "minimumWarningOsVersion": "17.0","#)
    ]

    /// The candidate: Finance may print again (loosens), blocks below iOS 17 instead of warning
    /// (tightens a launch), All Staff keeps org data in managed apps and blocks saving to other
    /// locations (tightens), the default policy blocks printing (tightens).
    static let candidateEdits = [
        (
            "finance-ios.json", #""printBlocked": true,"#,
            #""printBlocked": false, "minimumRequiredOsVersion": "17.0","#
        ),
        ("all-staff.json", #""saveAsBlocked": false,"#, #""saveAsBlocked": true,"#),
        (
            "all-staff.json", #""allowedOutboundDataTransferDestinations": "allApps","#,
            #""allowedOutboundDataTransferDestinations": "managedApps","#
        ),
        ("default.json", #""printBlocked": false,"#, #""printBlocked": true,"#),
    ]

    static let accounts = [
        "alice@contoso.com", "bob@contoso.com", "carol@contoso.com", "dave@contoso.com", "eve@fabrikam.com",
        "a1f0c7d2-5b1e-4c3a-9e8f-000000000001",
    ]

    /// Queries of many actions over the example tenant's accounts, some launches leaving out
    /// their facts (taken from those recorded), drawn from `seed`.
    static func queries(count: Int, seed: UInt64) -> [String] {
        var random = SeededGenerator(seed: seed)
        func pick<T>(_ values: [T]) -> T { values[Int(random.next() % UInt64(values.count))] }
        func account() -> String { "\"\(pick(accounts))\"" }
        func orNull(_ value: String) -> String { random.next() % 4 == 0 ? "null" : value }
        return (0..<count).map { _ in
            switch random.next() % 12 {
            case 0, 1:
                let location = pick(["oneDriveForBusiness", "sharePoint", "box", "dropbox", "localDrive", "other"])
                return
                    #"{"action":"saveTo","owner":\#(account()),"location":"\#(location)","locationAccount":\#(orNull(account()))}"#
            case 2:
                let location = pick(["oneDriveForBusiness", "camera", "localStorage", "photos", "box"])
                return #"{"action":"openFrom","receiver":\#(account()),"location":"\#(location)"}"#
            case 3: return #"{"action":"print","account":\#(account())}"#
            case 4:
                return
                    #"{"action":"\#(pick(["backup", "contactSync", "notifications", "screenCapture"]))","account":\#(account())}"#
            case 5: return #"{"action":"encryptionRequired","account":\#(account())}"#
            case 6:
                return
                    #"{"action":"copyOut","owner":\#(account()),"destinationManaged":\#(pick(["true", "false"])),"length":\#(pick(["5", "40", "null"]))}"#
            case 7:
                return
                    #"{"action":"share","owner":\#(account()),"targets":["com.contoso.expenses","com.example.chat"]}"#
            case 8: return #"{"action":"print","accounts":[\#(account()),\#(account())]}"#
            case 9:
                return
                    #"{"action":"offlineAccess","account":\#(account()),"offlineFor":"\#(pick(["PT1H", "P2D", "P70D"]))"}"#
            case 10:
                let os = pick(["16.4", "17.2", "18.0"])
                return
                    #"{"action":"launch","account":\#(account()),"facts":{"osVersion":"\#(os)","pinFailures":0},"missingFacts":"ignore"}"#
            default:
                // No facts: those recorded for the account are used.
                return #"{"action":"launch","account":\#(account())}"#
            }
        }
    }

    /// Facts the launch accounts check in with: first below iOS 17, later above.
    static let factsBefore = #"{"osVersion":"16.4","pinFailures":0}"#
    static let factsAfter = #"{"osVersion":"18.1","pinFailures":0}"#

    /// Checks the launch accounts in with `facts` at `date` (the installation's clock moved
    /// there, where each check-in's audited launch is), then puts the clock back at t0.
    static func checkIn(
        _ engine: CustodyEngine, _ installation: Installation, facts: String, at date: Date
    ) async throws {
        let parsed = try LaunchFacts(json: JSONDocument(parsing: Array(facts.utf8)).root)
        installation.clock.set(date)
        defer { installation.clock.set(t0) }
        for account in ["alice@contoso.com", "bob@contoso.com", "dave@contoso.com"] {
            _ = try await engine.checkIn(account: AccountID(account)!, at: date, facts: parsed)
        }
    }

    /// Decides `line` with the engine's policy in force, as the decision service does; returns
    /// the answer's outcome in the replay's words (a launch's outcome; `required` or
    /// `optional` for encryption; `allow` or `block`).
    static func outcome(_ engine: CustodyEngine, _ line: String, clock: TestClock) async throws -> String {
        var options = DecisionStream.Options(currentTime: { .seconds(clock.now.timeIntervalSince1970) })
        options.recordedFacts = engine.recordedLaunchFactsWaiting
        let decided = try await engine.decide(line: Array(line.utf8), options: options, readsState: true)
        #expect(decided.error == nil, "\(line): \(String(decoding: decided.output, as: UTF8.self))")
        let answer = try #require(
            try JSONSerialization.jsonObject(with: Data(decided.output)) as? [String: Any])
        if let outcome = answer["outcome"] as? String { return outcome }
        let allowed = try #require(answer["allowed"] as? Bool, "\(answer)")
        if line.contains(#""encryptionRequired""#) { return allowed ? "required" : "optional" }
        return allowed ? "allow" : "block"
    }

    /// Whether going from `before` to `after` lets through more (docs/impact.md).
    static func loosens(_ line: String, _ before: String, _ after: String) -> Bool {
        if line.contains(#""launch""#) {
            let order = ["allow", "warn", "block", "wipe"]
            return order.firstIndex(of: after)! < order.firstIndex(of: before)!
        }
        if line.contains(#""encryptionRequired""#) { return before == "required" }
        return before == "block"
    }

    @Test(
        "a replay reports exactly what deciding the same queries under the candidate directly changes",
        arguments: [1, 2, 3] as [UInt64])
    func replayEqualsDirectDecisions(seed: UInt64) async throws {
        let recorded = try Installation()
        let direct = try Installation()
        let live = try await recorded.open()
        try await live.apply(bundleDirectory: try Self.exampleBundle(in: recorded, "base", edits: Self.baseEdits))
        try await live.setAuditing(decisions: true)
        let candidateDirectory = try Self.exampleBundle(in: recorded, "candidate", edits: Self.candidateEdits)
        let oracle = try await direct.open()
        try await oracle.apply(bundleDirectory: candidateDirectory)
        try await Self.checkIn(live, recorded, facts: Self.factsBefore, at: Self.t0 - 60)
        try await Self.checkIn(oracle, direct, facts: Self.factsBefore, at: Self.t0 - 60)

        let lines = Self.queries(count: 250, seed: seed)
        var before: [String] = []
        var after: [String] = []
        for line in lines {
            before.append(try await Self.outcome(live, line, clock: recorded.clock))
            after.append(try await Self.outcome(oracle, line, clock: direct.clock))
        }
        // What is recorded now is not what those decisions used.
        try await Self.checkIn(live, recorded, facts: Self.factsAfter, at: Self.t0 + 60)

        // The window holds the queries' decisions (at t0), not the check-ins' launches.
        let report = try await live.replay(
            candidate: try BundleFiles.read(directory: candidateDirectory),
            scope: ReplayScope(from: Self.t0, to: Self.t0 + 1))
        let audited = try await live.auditEntries(since: nil, after: 0, limit: 10_000)
            .filter { $0.kind == .decision && $0.at == Self.t0 }
        #expect(audited.count == lines.count)
        var loosened = 0
        var tightened = 0
        var byAction: [String: (flipped: Int, loosened: Int)] = [:]
        var byAccount: [String: Int] = [:]
        for (index, line) in lines.enumerated() where before[index] != after[index] {
            let loosens = Self.loosens(line, before[index], after[index])
            if loosens { loosened += 1 } else { tightened += 1 }
            let action = try #require(
                (try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["action"] as? String)
            byAction[action, default: (0, 0)].flipped += 1
            byAction[action, default: (0, 0)].loosened += loosens ? 1 : 0
            byAccount[audited[index].account ?? "-", default: 0] += 1
        }
        #expect(report.decided == lines.count && report.refused == 0 && report.notReplayable == 0)
        #expect(report.unreadable == 0)
        #expect(report.loosened == loosened && report.tightened == tightened, "\(report)")
        #expect(report.unchanged == lines.count - loosened - tightened)
        #expect(loosened > 0 && tightened > 0, "the candidate both loosens and tightens these queries")
        #expect(
            Dictionary(uniqueKeysWithValues: report.byAction.map { ($0.key, "\($0.flipped)/\($0.loosened)") })
                == byAction.mapValues { "\($0.flipped)/\($0.loosened)" })
        // The candidate changes each of these for some query.
        #expect(Set(report.byAction.map(\.key)).isSuperset(of: ["print", "saveTo", "launch"]), "\(report.byAction)")
        #expect(Dictionary(uniqueKeysWithValues: report.byAccount.map { ($0.key, $0.flipped) }) == byAccount)
        #expect(report.flips.map(\.count).reduce(0, +) == loosened + tightened)
        // Loosening flips first.
        #expect(report.flips.map(\.loosens) == report.flips.map(\.loosens).sorted { $0 && !$1 })
        #expect(report.revisions.map(\.decisions) == [lines.count])
    }

    /// An installation with the base bundle in force, decisions audited, the launch accounts
    /// checked in before t0, and `lines` decided at t0.
    static func audited(_ lines: [String]) async throws -> (Installation, CustodyEngine) {
        let installation = try Installation()
        let engine = try await installation.open()
        try await engine.apply(bundleDirectory: try exampleBundle(in: installation, "base", edits: baseEdits))
        try await engine.setAuditing(decisions: true)
        try await checkIn(engine, installation, facts: factsBefore, at: t0 - 120)
        for line in lines { _ = try await outcome(engine, line, clock: installation.clock) }
        return (installation, engine)
    }

    @Test("a loosening flip is reported as such, first, with both reasons; a launch made stricter is a tightening one")
    func looseningFlip() async throws {
        let (installation, engine) = try await Self.audited([
            #"{"action":"print","account":"alice@contoso.com"}"#,
            #"{"action":"launch","account":"alice@contoso.com"}"#,
            #"{"action":"launch","account":"alice@contoso.com"}"#,
        ])
        let candidate = try BundleFiles.read(
            directory: try Self.exampleBundle(in: installation, "candidate", edits: Self.candidateEdits))
        let report = try await engine.replay(
            candidate: candidate, scope: ReplayScope(from: Self.t0 - 60, to: Self.t0 + 60))
        #expect(report.decided == 3 && report.flipped == 3 && report.loosened == 1 && report.tightened == 2)
        let print = try #require(report.flips.first)
        #expect(print.loosens && print.action == "print" && print.before == "block" && print.after == "allow")
        #expect(print.count == 1 && print.setting == "printBlocked")
        #expect(print.sample.reasonBefore?.contains("printBlocked is true") == true, "\(print.sample)")
        #expect(print.sample.reasonAfter.contains("printBlocked is false"), "\(print.sample)")
        let launch = try #require(report.flips.last)
        // Microsoft: "minimumRequiredOsVersion ... Block access" and "minimumWarningOsVersion ...
        // Warn" (the iOS app protection settings page): warn becomes block.
        #expect(!launch.loosens && launch.before == "warn" && launch.after == "block" && launch.count == 2)
        #expect(report.bySetting.first?.key == "printBlocked" && report.bySetting.first?.loosened == 1)
    }

    @Test(
        "the scope: the window (its end excluded), an account by any of its forms, a group, an action; entries without their query are counted, not decided"
    )
    func scope() async throws {
        let installation = try Installation()
        let engine = try await installation.open()
        try await engine.apply(bundleDirectory: try Self.exampleBundle(in: installation, "base", edits: []))
        try await engine.setAuditing(decisions: true)
        let lines = [
            #"{"action":"print","account":"alice@contoso.com"}"#,
            #"{"action":"print","account":"bob@contoso.com"}"#,
            #"{"action":"backup","account":"a1f0c7d2-5b1e-4c3a-9e8f-000000000001"}"#,
            #"{"action":"print","account":"dave@contoso.com"}"#,
        ]
        for line in lines { _ = try await Self.outcome(engine, line, clock: installation.clock) }
        // An entry that keeps no query (audited before the log kept them).
        try await engine.database.audit([
            AuditRecord(.decision, account: "alice@contoso.com", action: "print", allowed: true, at: Self.t0)
        ])
        // A later one, outside the window.
        installation.clock.set(Self.t0 + 3_600)
        _ = try await Self.outcome(engine, lines[0], clock: installation.clock)
        let candidate = try BundleFiles.read(
            directory: try Self.exampleBundle(in: installation, "candidate", edits: Self.candidateEdits))
        func replay(_ scope: ReplayScope) async throws -> ImpactReport {
            try await engine.replay(candidate: candidate, scope: scope)
        }
        let window = ReplayScope(from: Self.t0, to: Self.t0 + 3_600)
        let cases: [(String, ReplayScope, decided: Int, notReplayable: Int)] = [
            ("the window", window, 4, 1),
            ("the window's end is excluded, its start included", ReplayScope(from: Self.t0, to: Self.t0 + 3_601), 5, 1),
            ("after the window", ReplayScope(from: Self.t0 + 1, to: Self.t0 + 7_200), 1, 0),
            ("alice by UPN, matching her OID's entry", with(window) { $0.account = "ALICE@contoso.com" }, 2, 1),
            ("alice by OID", with(window) { $0.account = "a1f0c7d2-5b1e-4c3a-9e8f-000000000001" }, 2, 1),
            ("grp-sales: bob", with(window) { $0.group = "grp-sales" }, 1, 0),
            (
                "grp-finance and the action print",
                with(window) {
                    $0.group = "grp-finance"; $0.action = .print
                }, 1, 1
            ),
            ("an account nobody audited", with(window) { $0.account = "zed@contoso.com" }, 0, 0),
        ]
        for (name, scope, decided, notReplayable) in cases {
            let report = try await replay(scope)
            #expect(report.decided == decided && report.notReplayable == notReplayable, "\(name): \(report)")
        }
        let unknownGroup = await custodyError { _ = try await replay(with(window) { $0.group = "grp-nobody" }) }
        #expect(unknownGroup?.code == .notFound)
        let badCandidate = installation.directory.file("bad")
        try FileManager.default.createDirectory(atPath: badCandidate, withIntermediateDirectories: true)
        try Data("{".utf8).write(to: URL(fileURLWithPath: badCandidate + "/tenant.json"))
        let bundleError = await custodyError {
            _ = try await engine.replay(candidate: try BundleFiles.read(directory: badCandidate), scope: window)
        }
        #expect(bundleError?.code == .bundle && bundleError?.diagnostics.isEmpty == false)
    }

    @Test("a check-in's launch is replayed with the facts it reported, at its time")
    func checkInLaunch() async throws {
        let installation = try Installation()
        let engine = try await installation.open()
        try await engine.apply(bundleDirectory: try Self.exampleBundle(in: installation, "base", edits: Self.baseEdits))
        try await engine.setAuditing(decisions: true)
        try await Self.checkIn(engine, installation, facts: Self.factsBefore, at: Self.t0)
        let entries = try await engine.auditEntries(since: nil, after: 0, limit: 100).filter { $0.kind == .decision }
        #expect(entries.count == 3 && entries.allSatisfy { $0.asked?.line.contains(#""osVersion":"16.4""#) == true })
        let candidate = try BundleFiles.read(
            directory: try Self.exampleBundle(in: installation, "candidate", edits: Self.candidateEdits))
        let report = try await engine.replay(candidate: candidate, scope: ReplayScope(from: Self.t0, to: Self.t0 + 1))
        // alice (Finance) warned below iOS 17, blocked under the candidate; bob and dave unchanged.
        #expect(report.decided == 3 && report.notReplayable == 0 && report.unchanged == 2, "\(report)")
        #expect(
            report.flips.map { "\($0.before)>\($0.after) \($0.sample.account ?? "")" } == [
                "warn>block alice@contoso.com"
            ])
    }

    @Test(
        "refused, changing nothing: a candidate that manages no account (as applying it is), and a log whose row does not say what was decided",
        arguments: ["empty candidate", "allowed = NULL", "outcome = 'explode'", "outcome on a print"])
    func refusals(case name: String) async throws {
        let (installation, engine) = try await Self.audited([
            #"{"action":"print","account":"alice@contoso.com"}"#, #"{"action":"launch","account":"alice@contoso.com"}"#,
        ])
        var candidate = try BundleFiles.read(
            directory: try Self.exampleBundle(in: installation, "candidate", edits: Self.candidateEdits))
        let damage: String? =
            switch name {
            case "allowed = NULL": "UPDATE audit_log SET allowed = NULL WHERE action = 'print'"
            case "outcome = 'explode'": "UPDATE audit_log SET outcome = 'explode' WHERE action = 'launch'"
            case "outcome on a print": "UPDATE audit_log SET outcome = 'allow' WHERE action = 'print'"
            default: nil
            }
        if let damage {
            try await DatabaseQueue(path: installation.state).write { try $0.execute(sql: damage) }
        } else {
            let empty = installation.directory.file("empty")
            try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
            candidate = try BundleFiles.read(directory: empty)
        }
        let error = await custodyError {
            _ = try await engine.replay(candidate: candidate, scope: ReplayScope(from: Self.t0 - 60, to: Self.t0 + 60))
        }
        #expect(error?.code == (damage == nil ? .bundle : .state), "\(name): \(String(describing: error))")
        if damage != nil { #expect(error?.message.contains("entries") == true, "\(String(describing: error))") }
    }

    @Test("a cancelled replay stops with .cancelled")
    func cancelled() async throws {
        let installation = try Installation()
        let engine = try await installation.open()
        try await engine.apply(bundleDirectory: try Self.exampleBundle(in: installation, "base", edits: []))
        try await engine.setAuditing(decisions: true)
        _ = try await Self.outcome(
            engine, #"{"action":"print","account":"alice@contoso.com"}"#, clock: installation.clock)
        let candidate = try BundleFiles.read(
            directory: try Self.exampleBundle(in: installation, "candidate", edits: Self.candidateEdits))
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await engine.replay(candidate: candidate, scope: ReplayScope(from: Self.t0, to: Self.t0 + 1))
        }
        let error = await custodyError { _ = try await task.value }
        #expect(error?.code == .cancelled)
    }

    @Test(
        "the report's groups and flips stay bounded whatever the window: past the capacity they count in the totals only"
    )
    func bounded() throws {
        var tally = ReplayTally()
        let context = DecisionContext(revision: "feed", context: EvaluationContext(platform: .ios))
        let snapshot = PolicySnapshot(bundle: try TestBundle(printBlockedA: true).bundle(), context: context.context)
        let query = DecisionQuery.print(account: TestBundle.account("A", 0))
        let answer = snapshot.answer(query)
        #expect(!answer.isAllowed)
        for index in 0..<(ReplayTally.capacity + 5) {
            let entry = AuditEntry(
                id: Int64(index), at: Self.t0, kind: .decision, account: "user\(index)@contoso.com", action: "print",
                allowed: true, detail: "allowed", decisionID: nil)
            let asked = AuditedQuery(line: "{}", context: context.json, recordedFacts: nil, outcome: nil)
            tally.count(
                AuditedDecision(entry: entry, asked: asked), app: context.context.appID ?? "-", query: query,
                answer: answer)
        }
        let report = tally.report(candidate: "c", scope: ReplayScope(from: Self.t0, to: Self.t0))
        #expect(report.tightened == ReplayTally.capacity + 5 && report.truncated)
        #expect(tally.byAccount.count == ReplayTally.capacity)
        #expect(report.byAccount.count == ImpactReport.listed && report.flips.count == 1)
    }

    @Test(
        "the window's options: an age, or from and to; refused with the option named",
        arguments: [
            (since: "7d", from: nil, to: nil, error: nil),
            (since: nil, from: "2026-11-01T00:00:00Z", to: nil, error: nil),
            (since: "0d", from: nil, to: nil, error: "--since takes an age"),
            (since: "7x", from: nil, to: nil, error: "--since takes an age"),
            (since: "7d", from: "2026-11-01T00:00:00Z", to: nil, error: "--since and --from/--to"),
            (since: nil, from: nil, to: "2026-11-01T00:00:00Z", error: "--to needs --from"),
            (since: nil, from: "yesterday", to: nil, error: "--from must be an RFC 3339"),
            (since: nil, from: "2026-11-02T00:00:00Z", to: "2026-11-01T00:00:00Z", error: "--from must be before --to"),
        ] as [(since: String?, from: String?, to: String?, error: String?)])
    func window(since: String?, from: String?, to: String?, error expected: String?) {
        let now = Date(timeIntervalSince1970: 1_795_000_000)
        do {
            let window = try ReplayScope.window(since: since, from: from, to: to, now: now, prefix: "--")
            #expect(expected == nil, "\(window)")
            if since == "7d" { #expect(window.from == now - 7 * 86_400 && window.to == now) }
        } catch {
            #expect(expected.map { error.message.hasPrefix($0) } == true, "\(error.message)")
            #expect(error.code == .invalidArgument)
        }
    }
}

/// `value` changed by `change`.
private func with<T>(_ value: T, _ change: (inout T) -> Void) -> T {
    var copy = value
    change(&copy)
    return copy
}

/// A reproducible generator (SplitMix64).
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
