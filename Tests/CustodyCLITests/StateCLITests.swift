import CustodyTestSupport
import Foundation
import Testing

@Suite("custody checkin, audit, wipe, watch")
struct StateCLITests {
    typealias Scratch = ProtectionCLITests.Scratch

    @Test("checkin records a time under the account's OID; an unknown account is an error; a bad time is a usage error")
    func checkIn() async throws {
        let scratch = try Scratch()
        try await scratch.applyExampleBundle()
        let good = try await scratch.run(["checkin", "--account", "alice@contoso.com", "--at", "2026-11-21T09:30:00Z"])
        #expect(good.status == 0)
        #expect(good.stdout == "\(ProtectionCLITests.alice): checked in at 2026-11-21T09:30:00Z\n")
        let unknown = try await scratch.run(["checkin", "--account", "erin@fabrikam.com"])
        #expect(unknown.status == 1)
        #expect(unknown.stderr.contains("erin@fabrikam.com is not an account of this installation"))
        let bad = try await scratch.run(["checkin", "--account", "alice@contoso.com", "--at", "yesterday"])
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("--at must be an RFC 3339 time"))
    }

    @Test(
        "audit --prune-older-than and serve --audit-retention take an age from an hour to 36600 days; anything else is a usage error",
        arguments: [
            ("30s", "takes an age such as 30d"), ("59m", "is under an hour"), ("0d", "takes an age such as 30d"),
            ("-1d", "takes an age such as 30d"), ("30", "takes an age such as 30d"), ("1y", "takes an age such as 30d"),
            ("36601d", "takes an age such as 30d"), ("9999999999999999999d", "takes an age such as 30d"),
            ("٣d", "takes an age such as 30d"),
        ])
    func retentionAges(age: String, message: String) async throws {
        let scratch = try Scratch()
        for arguments in [
            ["audit", "--prune-older-than=\(age)"], ["serve", "--audit-retention=\(age)", "--without-keys"],
        ] {
            let result = try await scratch.run(arguments)
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains(message), "\(arguments): \(result.stderr)")
        }
    }

    @Test("audit --prune-older-than deletes what is older, says how many, and the log keeps a line saying so")
    func pruneAudit() async throws {
        let scratch = try Scratch()
        try await scratch.applyExampleBundle()
        let pruned = try await scratch.run(["audit", "--prune-older-than", "1h"])
        #expect(pruned.status == 0, "\(pruned.stderr)")
        #expect(pruned.stdout == "pruned 0 audit entries older than 1h\n", "nothing is an hour old yet")
        let log = try await scratch.run(["audit"])
        #expect(log.stdout.contains("bundle"), "the entries stay: \(log.stdout)")
        #expect(!log.stdout.contains("prune"), "a pruning that deleted nothing is no entry: \(log.stdout)")
    }

    @Test(
        "apply refuses a bundle that knows nothing and leaves the policy in force; --allow-empty applies it, and a later command decides with it"
    )
    func emptyBundle() async throws {
        let scratch = try Scratch()
        try await scratch.applyExampleBundle()
        let empty = scratch.file("empty")
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        let print = #"{"action":"print","account":"alice@contoso.com"}"# + "\n"
        let refused = try await scratch.run(["apply", "--bundle", empty])
        #expect(refused.status == 1)
        #expect(refused.stdout.isEmpty, "no 'applied' line for what was not applied")
        #expect(
            refused.stderr.contains("empty-bundle") || refused.stderr.contains("--allow-empty"), "\(refused.stderr)")
        #expect(
            try await scratch.run(["decide"], stdin: print).stdout.contains(#""allowed":false"#),
            "the policy in force stays")

        let applied = try await scratch.run(["apply", "--bundle", empty, "--allow-empty"])
        #expect(applied.status == 0, "\(applied.stderr)")
        #expect(
            applied.stdout == "applied \(empty): e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n")
        #expect(
            try await scratch.run(["decide"], stdin: print).stdout.contains(#""allowed":true"#),
            "every account is unmanaged now")
    }

    @Test("the audit log holds applied and rejected bundles, key rotations, wipes and, when switched on, decisions")
    func audit() async throws {
        let scratch = try Scratch()
        try await scratch.applyExampleBundle()
        let broken = scratch.file("broken")
        try FileManager.default.createDirectory(atPath: broken, withIntermediateDirectories: true)
        try scratch.write("broken/tenant.json", "{")
        #expect(try await scratch.run(["apply", "--bundle", broken]).status == 1)
        try scratch.write("a.txt", "secret")
        #expect(try await scratch.run(["protect", "--owner", "alice@contoso.com", scratch.file("a.txt")]).status == 0)
        #expect(try await scratch.run(["keys", "rotate", "--account", "alice@contoso.com"]).status == 0)
        let wipe = try await scratch.run(["wipe", "--account", "alice@contoso.com"])
        #expect(wipe.status == 0)
        #expect(wipe.stdout.contains("wiped 2 key versions"))
        let query = #"{"action":"print","account":"bob@contoso.com"}"# + "\n"
        #expect(try await scratch.run(["decide"], stdin: query).status == 0)
        #expect(try await scratch.run(["audit", "--decisions", "on"]).stdout == "decision auditing is on\n")
        let audited = try await scratch.run(["decide"], stdin: query + query)
        #expect(audited.status == 0)
        try scratch.write("shared.txt", "untagged")
        let received = try await scratch.run(["receive", "--receiver", "alice@contoso.com", scratch.file("shared.txt")])
        #expect(received.stdoutLines.count == 1, "\(received.stderr)")

        let log = try await scratch.run(["audit", "--json"])
        #expect(log.status == 0)
        let kinds = log.stdoutLines.compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["kind"] as? String
        }
        #expect(
            kinds == ["bundle", "bundle", "key", "wipe", "audit", "decision", "decision", "decision"], "\(log.stdout)")
        #expect(log.stdoutLines[4].contains(#""action":"decisionsOn""#))
        #expect(log.stdoutLines[0].contains(#""action":"apply""#) && log.stdoutLines[1].contains(#""action":"reject""#))
        #expect(log.stdoutLines[3].contains(ProtectionCLITests.alice))
        #expect(log.stdoutLines[5].contains(#""account":"bob@contoso.com","action":"print","allowed":"#))
        // Each decision's entry names the id its answer carried; other entries, null.
        func decisionID(_ line: String) -> String? {
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["decisionId"] as? String
        }
        #expect(
            log.stdoutLines.suffix(3).map(decisionID) == (audited.stdoutLines + received.stdoutLines).map(decisionID))
        #expect(
            audited.stdoutLines.compactMap(decisionID).count == 2
                && received.stdoutLines.compactMap(decisionID).count == 1)
        #expect(log.stdoutLines[7].contains(#""account":"alice@contoso.com","action":"receive","allowed":"#))
        #expect(log.stdoutLines[0].contains(#""decisionId":null"#))
        // At most --limit entries, and a warning when more follow.
        let limited = try await scratch.run(["audit", "--limit", "2"])
        #expect(limited.status == 0 && limited.stdoutLines.count == 2)
        #expect(limited.stderr.hasPrefix("warning: 2 entries printed; more follow"), "\(limited.stderr)")
        let whole = try await scratch.run(["audit", "--limit", "8"])
        #expect(whole.stdoutLines.count == 8 && whole.stderr.isEmpty, "\(whole.stderr)")
        #expect(try await scratch.run(["audit", "--limit", "0"]).status == 64)
        #expect(try await scratch.run(["audit", "--after", "-1"]).status == 64)
        // Paged by the id the warning names, the pages are the whole log, each entry once.
        for size in 1...3 {
            var pages: [String] = []
            var after = "0"
            while true {
                let page = try await scratch.run(["audit", "--json", "--limit", "\(size)", "--after", after])
                pages += page.stdoutLines
                guard let range = page.stderr.firstRange(of: "the next page is --after ") else { break }
                after = String(page.stderr[range.upperBound...].prefix { $0.isNumber })
                #expect(page.stdoutLines.count == size)
            }
            #expect(pages == log.stdoutLines, "pages of \(size)")
        }

        #expect(try await scratch.run(["audit", "--set", "off"]).stdout == "auditing is off\n")
        #expect(try await scratch.run(["wipe", "--account", "bob@contoso.com"]).status == 0)
        #expect(try await scratch.run(["decide"], stdin: query).status == 0)
        #expect(
            try await scratch.run(["receive", "--receiver", "alice@contoso.com", scratch.file("shared.txt")])
                .stdoutLines
                .count
                == 1)
        let after = try await scratch.run(["audit", "--json"]).stdoutLines
        #expect(after.count == 9, "nothing written while off but the switch itself")
        #expect(after.last?.contains(#""action":"off","allowed":null"#) == true, "\(after)")
        #expect(try await scratch.run(["audit", "--since", "2999-01-01T00:00:00Z"]).stdout.isEmpty)
    }

    @Test("an audited text answer ends with its decision id, as the JSON answer carries it", arguments: [1, 3])
    func auditedTextAnswers(count: Int) async throws {
        let scratch = try Scratch()
        try await scratch.applyExampleBundle()
        #expect(try await scratch.run(["audit", "--decisions", "on"]).status == 0)
        let query = #"{"action":"print","account":"bob@contoso.com"}"# + "\n"
        let decided = try await scratch.run(
            ["decide", "--format", "text"], stdin: String(repeating: query, count: count))
        #expect(decided.status == 0, "\(decided.stderr)")
        let given = decided.stdoutLines.compactMap { line in
            line.firstRange(of: " (decision ").map { String(line[$0.upperBound...].dropLast()) }
        }
        let audited = try await scratch.run(["audit", "--json"]).stdoutLines.compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["decisionId"] as? String
        }
        #expect(given.count == count && given == audited, "\(decided.stdout)")
        // Without auditing, a text answer names no decision.
        #expect(try await scratch.run(["audit", "--decisions", "off"]).status == 0)
        #expect(try await !scratch.run(["decide", "--format", "text"], stdin: query).stdout.contains("(decision "))
    }

    @Test("watch without --bundle watches where the bundle in force came from; with none it says how to give one")
    func watchInForce() async throws {
        let scratch = try Scratch()
        let none = try await scratch.run(["watch"])
        #expect(none.status == 1)
        #expect(none.stderr.contains("nothing to watch") && none.stderr.contains("custody apply --bundle DIR"))
        try await offThePool { try Self.watch(givingBundle: false) }
    }

    @Test("watch prints each change as one JSON line, and a broken edit as bundleRejected")
    func watch() async throws {
        try await offThePool { try Self.watch(givingBundle: true) }
    }

    /// Blocks while it reads the watcher's lines: run on a thread of its own (`offThePool`).
    private static func watch(givingBundle: Bool) throws {
        let scratch = try Scratch()
        let bundle = scratch.file("bundle")
        try FileManager.default.createDirectory(atPath: bundle, withIntermediateDirectories: true)
        let tenant =
            #"{"accounts": [{"oid": "a0000000-0000-4000-8000-000000000001", "upn": "a@contoso.com", "groups": []}], "allowedAccounts": null}"#
        func policy(_ printBlocked: Bool) -> String {
            ##"{"value": [{"@odata.type": "#microsoft.graph.iosManagedAppProtection", "id": "T_1", "displayName": "P", "printBlocked": \##(printBlocked)}]}"##
        }
        try Data(tenant.utf8).write(to: URL(fileURLWithPath: bundle + "/tenant.json"), options: .atomic)
        try Data(policy(false).utf8).write(to: URL(fileURLWithPath: bundle + "/policies.json"), options: .atomic)

        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: CLIRunner.executable)
        if !givingBundle { #expect(try scratch.runBlocking(["apply", "--bundle", bundle]).status == 0) }
        process.arguments =
            ["watch"] + (givingBundle ? ["--bundle", bundle] : []) + [
                "--interval", "20", "--state", scratch.file("state"),
            ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        // A watchdog: should a line never come, closing the pipe ends the reads below.
        DispatchQueue.global().asyncAfter(deadline: .now() + 60) { if process.isRunning { process.terminate() } }
        var buffer = Data()
        func nextLine() -> String? {
            while true {
                if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: buffer[..<newline], as: UTF8.self)
                    buffer.removeSubrange(...newline)
                    return line
                }
                let chunk = CLIRunner.readSome(output.fileHandleForReading.fileDescriptor)
                if chunk.isEmpty { return nil }
                buffer.append(chunk)
            }
        }
        if givingBundle {
            #expect(nextLine() == #"{"event":"policyChanged","accounts":["a@contoso.com"]}"#)
            #expect(nextLine()?.hasPrefix(#"{"event":"bundleApplied","revision":""#) == true)
        } else {
            Thread.sleep(forTimeInterval: 0.5)  // the watcher's first look finds the bundle in force: no event
        }
        try Data(policy(true).utf8).write(to: URL(fileURLWithPath: bundle + "/policies.json"), options: .atomic)
        #expect(nextLine() == #"{"event":"policyChanged","accounts":["a@contoso.com"]}"#)
        let applied = nextLine() ?? ""
        #expect(
            applied.hasPrefix(#"{"event":"bundleApplied","revision":""#)
                && applied.contains(#""source":"\#(bundle)"}"#), "\(applied)")
        try Data("{".utf8).write(to: URL(fileURLWithPath: bundle + "/policies.json"), options: .atomic)
        let rejected = nextLine() ?? ""
        #expect(rejected.hasPrefix(#"{"event":"bundleRejected","source":"#))
        #expect(rejected.contains("policies.json:1:2"))
    }
}
