import CustodyTestSupport
import Foundation
import Testing

/// `custody checkin --facts` and `custody apply --act-on-launch`: what is recorded, what is
/// wiped, and what never is.
@Suite("Conditional launch on the command line")
struct LaunchCLITests {
    static let level3 = "fixtures/frameworks/level-3-ios"
    static let good =
        #"{"osVersion":"14.8","jailbroken":false,"threatLevel":"secured","accountState":"active","pinFailures":0}"#
    static let jailbroken =
        #"{"osVersion":"14.8","jailbroken":true,"threatLevel":"secured","accountState":"active","pinFailures":0}"#

    private func scratch(acting: Bool) async throws -> TemporaryDirectory {
        let directory = try TemporaryDirectory()
        let apply = try await directory.run(
            ["apply", "--bundle", CLIRunner.packageRoot + "/" + Self.level3, "--platform", "ios"]
                + (acting ? ["--act-on-launch"] : []))
        #expect(apply.status == 0, "\(apply.stderr)")
        return directory
    }

    @Test("acting on launch: switching it is audited and said; a jailbroken check-in wipes, with wiped true")
    func acting() async throws {
        let directory = try await scratch(acting: false)
        let on = try await directory.run([
            "apply", "--bundle", CLIRunner.packageRoot + "/" + Self.level3, "--act-on-launch",
        ])
        #expect(on.status == 0)
        #expect(on.stderr.contains("acting on launch: a check-in whose reported facts call for a wipe"))
        let again = try await directory.run([
            "apply", "--bundle", CLIRunner.packageRoot + "/" + Self.level3, "--act-on-launch",
        ])
        #expect(!again.stderr.contains("acting on launch"))
        let facts = try directory.write("facts.json", Self.jailbroken)
        let checkIn = try await directory.run(["checkin", "--account", "user1@contoso.com", "--facts", facts])
        #expect(checkIn.status == 0, "\(checkIn.stderr)")
        #expect(checkIn.stdout.contains(#""outcome":"wipe""#))
        #expect(checkIn.stdout.contains(#""wipeConfirmed":true"#))
        #expect(checkIn.stdout.contains(#""wiped":true"#))
        // As every answer: the deciding check's setting and policy at the top.
        let answer = try #require(
            try JSONSerialization.jsonObject(with: Data(checkIn.stdout.utf8)) as? [String: Any], "\(checkIn.stdout)")
        #expect(answer["setting"] as? String == "deviceComplianceRequired")
        let checks = answer["checks"] as? [[String: Any]] ?? []
        #expect(answer["policies"] as? [String] == [checks.first?["policy"] as? String].compactMap { $0 })
        #expect((answer["policies"] as? [String])?.count == 1)
        let audit = try await directory.run(["audit"])
        #expect(audit.stdout.contains("act-on-launch"))
        #expect(audit.stdout.contains("conditional launch: jailbroken true fails deviceComplianceRequired"))
    }

    @Test(
        "with decision auditing on, a check-in's launch decision is audited before it is given, ahead of the wipe it calls for",
        arguments: [(good, false), (jailbroken, true)])
    func auditedLaunch(facts: String, wipes: Bool) async throws {
        let directory = try await scratch(acting: true)
        #expect(try await directory.run(["audit", "--decisions", "on"]).status == 0)
        let file = try directory.write("facts.json", facts)
        let checkIn = try await directory.run(["checkin", "--account", "user1@contoso.com", "--facts", file])
        #expect(checkIn.status == 0, "\(checkIn.stderr)")
        let answer = try #require(
            try JSONSerialization.jsonObject(with: Data(checkIn.stdout.utf8)) as? [String: Any], "\(checkIn.stdout)")
        let id = try #require(answer["decisionId"] as? String)
        #expect(answer["wiped"] as? Bool == wipes)
        let entries = try await directory.run(["audit", "--json"]).stdoutLines.compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let decision = try #require(entries.firstIndex { $0["decisionId"] as? String == id })
        #expect(entries[decision]["action"] as? String == "launch")
        #expect(entries[decision]["allowed"] as? Bool == !wipes)
        #expect(entries.lastIndex { $0["kind"] as? String == "wipe" }.map { $0 > decision } ?? !wipes)
    }

    @Test(
        "no wipe: with acting off, with facts that do not call for it, under a --bundle override, or for an old lastCheckIn among the facts of a check-in",
        arguments: [
            (false, jailbroken, false), (true, #"{"osVersion":"14.8"}"#, false), (true, jailbroken, true),
            (true, #"{"osVersion":"14.9","jailbroken":false,"lastCheckIn":"2021-01-01T00:00:00Z"}"#, false),
        ])
    func noWipe(acting: Bool, facts: String, override: Bool) async throws {
        let directory = try await scratch(acting: acting)
        let file = try directory.write("facts.json", facts)
        let checkIn = try await directory.run(
            ["checkin", "--account", "user1@contoso.com", "--facts", file]
                + (override ? ["--bundle", CLIRunner.packageRoot + "/" + Self.level3, "--platform", "ios"] : []))
        #expect(checkIn.status == 0, "\(checkIn.stderr)")
        #expect(checkIn.stdout.contains(#""wiped":false"#), "\(checkIn.stdout)")
        #expect(!(try await directory.run(["audit"]).stdout.contains("conditional launch")))
    }

    /// Level 3 wipes a jailbroken device (`appActionIfDeviceComplianceRequired: wipe`); a
    /// check-in that does not say whether the device is jailbroken is blocked, not wiped.
    @Test(
        "acting on launch, a check-in that leaves out a wipe check's fact blocks, marks it missing, and wipes nothing")
    func missingFactBlocks() async throws {
        let directory = try await scratch(acting: true)
        let file = try directory.write("facts.json", #"{"osVersion":"14.8","threatLevel":"secured"}"#)
        let checkIn = try await directory.run(["checkin", "--account", "user1@contoso.com", "--facts", file])
        #expect(checkIn.status == 0, "\(checkIn.stderr)")
        let answer = try #require(
            try JSONSerialization.jsonObject(with: Data(checkIn.stdout.utf8)) as? [String: Any], "\(checkIn.stdout)")
        #expect(answer["outcome"] as? String == "block")
        #expect(answer["wiped"] as? Bool == false)
        let checks = answer["checks"] as? [[String: Any]] ?? []
        let jailbreak = try #require(checks.first { $0["fact"] as? String == "jailbroken" })
        #expect(jailbreak["missing"] as? Bool == true)
        #expect(jailbreak["outcome"] as? String == "block")
        #expect(!checks.contains { $0["outcome"] as? String == "wipe" })
        #expect(!(try await directory.run(["audit"]).stdout.contains("conditional launch")), "no wipe was audited")
    }

    @Test(
        "bad facts are an error (exit 1) that records nothing",
        arguments: [
            "garbage", #"{"osVersion":17}"#, #"{"colour":"red"}"#, "[]", #"{"rooted":true,"jailbroken":false}"#,
        ])
    func badFacts(text: String) async throws {
        let directory = try await scratch(acting: true)
        let file = try directory.write("facts.json", text)
        let checkIn = try await directory.run(["checkin", "--account", "user1@contoso.com", "--facts", file])
        #expect(checkIn.status == 1)
        #expect(checkIn.stderr.hasPrefix("error: --facts \(file)"), "\(checkIn.stderr)")
        let decide = try await directory.run(
            ["decide"], stdin: #"{"action":"launch","account":"user1@contoso.com","facts":{}}"# + "\n")
        // Nothing was recorded: the check-in is still missing.
        let answer = try #require(
            try JSONSerialization.jsonObject(with: Data(decide.stdout.utf8)) as? [String: Any], "\(decide.stdout)")
        #expect((answer["missingFacts"] as? [String])?.contains("lastCheckIn") == true, "\(decide.stdout)")
    }

    @Test("a directory or a missing file as --facts is an error (exit 1), not a crash")
    func unreadableFacts() async throws {
        let directory = try await scratch(acting: true)
        for path in [directory.path, directory.file("absent.json")] {
            let checkIn = try await directory.run(["checkin", "--account", "user1@contoso.com", "--facts", path])
            #expect(checkIn.status == 1, "\(checkIn.stderr)")
            #expect(checkIn.stderr.hasPrefix("error: --facts \(path): cannot be read"), "\(checkIn.stderr)")
        }
    }

    @Test("a check-in in the future is refused; recorded facts fill a later launch query")
    func futureAndRecorded() async throws {
        let directory = try await scratch(acting: false)
        let future = try await directory.run([
            "checkin", "--account", "user1@contoso.com", "--at", "2099-01-01T00:00:00Z",
        ])
        #expect(future.status == 1)
        #expect(future.stderr.contains("a check-in cannot be in the future"))
        let file = try directory.write("facts.json", Self.good)
        #expect(try await directory.run(["checkin", "--account", "user1@contoso.com", "--facts", file]).status == 0)
        let decide = try await directory.run(
            ["decide"], stdin: #"{"action":"launch","account":"user1@contoso.com","facts":{}}"# + "\n")
        #expect(decide.stdout.contains(#""outcome":"allow""#), "\(decide.stdout)")
        // Given facts win over recorded ones.
        let given = try await directory.run(
            ["decide"], stdin: #"{"action":"launch","account":"user1@contoso.com","facts":{"osVersion":"14.0"}}"# + "\n"
        )
        #expect(given.stdout.contains(#""outcome":"block""#), "\(given.stdout)")
    }
}
