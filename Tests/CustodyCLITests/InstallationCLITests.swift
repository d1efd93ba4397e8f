import CustodyTestSupport
import Foundation
import Testing

/// The installation's seams: the bundle in force lives in the state, every command uses it,
/// and an account is one account under every alias.
@Suite("One installation: the bundle in force and its accounts")
struct InstallationCLITests {
    typealias Scratch = TemporaryDirectory

    @Test(
        "the issue's four commands: a wipe by UPN makes OID-keyed data unreadable, and protect without a policy refuses"
    )
    func fourCommands() async throws {
        let scratch = try Scratch()
        try scratch.write("report.txt", "quarterly figures")
        try scratch.write("a", "more figures")
        let policies = CLIRunner.packageRoot + "/policies"
        let protect = try await scratch.run([
            "protect", "--bundle", policies, "--platform", "ios", "--owner", "alice@contoso.com",
            scratch.file("report.txt"), scratch.file("report.cst"),
        ])
        #expect(protect.status == 0, "\(protect.stderr)")
        #expect(
            try await CLIRunner.run(["info", scratch.file("report.cst")]).stdout.contains(
                "owned by \(ProtectionCLITests.alice), encrypted with AES-256-GCM"))

        let wipe = try await scratch.run(["wipe", "--account", "alice@contoso.com"])
        #expect(wipe.status == 0, "\(wipe.stderr)")
        #expect(
            wipe.stdout
                == "\(ProtectionCLITests.alice): wiped 1 key version (\(ProtectionCLITests.alice): 1) and 0 secrets\n")

        let unprotect = try await scratch.run(["unprotect", scratch.file("report.cst"), scratch.file("back.txt")])
        #expect(unprotect.status == 1)
        #expect(unprotect.stderr.contains("the data belongs to \(ProtectionCLITests.alice), whose keys were wiped at"))
        #expect(!FileManager.default.fileExists(atPath: scratch.file("back.txt")))

        let untagged = try await scratch.run([
            "protect", "--owner", "alice@contoso.com", scratch.file("a"), scratch.file("b"),
        ])
        #expect(untagged.status == 1)
        #expect(untagged.stderr.contains("no bundle is in force"))
        #expect(!FileManager.default.fileExists(atPath: scratch.file("b")), "nothing written, least of all plaintext")
        #expect(try scratch.read("a") == "more figures")
    }

    /// Two bundles that differ in one decision: printing a@contoso.com's data.
    private func writeBundles(_ scratch: Scratch) throws -> (blocking: String, allowing: String) {
        func policy(_ printBlocked: Bool) -> String {
            ##"{"value": [{"@odata.type": "#microsoft.graph.iosManagedAppProtection", "id": "T_1", "displayName": "P", "printBlocked": \##(printBlocked)}]}"##
        }
        let tenant =
            #"{"accounts": [{"oid": "a0000000-0000-4000-8000-000000000001", "upn": "a@contoso.com", "groups": []}], "allowedAccounts": null}"#
        for (name, blocked) in [("blocking", true), ("allowing", false)] {
            try FileManager.default.createDirectory(atPath: scratch.file(name), withIntermediateDirectories: true)
            try scratch.write("\(name)/tenant.json", tenant)
            try scratch.write("\(name)/policies.json", policy(blocked))
        }
        return (scratch.file("blocking"), scratch.file("allowing"))
    }

    private func printAllowed(_ scratch: Scratch, _ extra: [String] = []) async throws -> CLIRunner.Result {
        try await scratch.run(["decide"] + extra, stdin: #"{"action":"print","account":"a@contoso.com"}"# + "\n")
    }

    @Test(
        "the bundle in force: none, applied, kept across processes, overridden for one command, kept when a broken one is applied"
    )
    func bundleInForce() async throws {
        let scratch = try Scratch()
        let (blocking, allowing) = try writeBundles(scratch)
        let none = try await printAllowed(scratch)
        #expect(none.status == 1)
        #expect(
            none.stderr.contains("no bundle is in force") && none.stderr.contains("custody apply --bundle DIR")
                && none.stderr.contains("give --bundle DIR"))
        #expect(
            !FileManager.default.fileExists(atPath: scratch.file("state")), "a command that only reads creates no state"
        )

        let applied = try await scratch.run(["apply", "--bundle", blocking])
        #expect(applied.status == 0)
        #expect(applied.stdout.hasPrefix("applied \(blocking): ") && applied.stdout.count > 64)
        #expect(
            try await printAllowed(scratch).stdout.contains(#""allowed":false"#),
            "each command is its own process: the state keeps the bundle")
        #expect(
            try await printAllowed(scratch, ["--bundle", allowing]).stdout.contains(#""allowed":true"#),
            "--bundle overrides for one command")
        #expect(try await printAllowed(scratch).stdout.contains(#""allowed":false"#), "and records nothing")
        #expect(
            try await scratch.run(["policy", "show", "--account", "a@contoso.com"]).stdout.contains(#""printBlocked""#))
        #expect(try await scratch.run(["matrix", "table", "--account", "a@contoso.com"]).status == 0)
        #expect(try await scratch.run(["apply", "--bundle", blocking]).stdout.hasPrefix("already in force"))

        try scratch.write("allowing/policies.json", "{")
        let broken = try await scratch.run(["apply", "--bundle", allowing])
        #expect(broken.status == 1)
        #expect(broken.stderr.contains("policies.json:1:2: error:"))
        #expect(try await printAllowed(scratch).stdout.contains(#""allowed":false"#), "the policy in force stays")

        // matrix diff against the bundle in force: what applying a bundle would change.
        try scratch.write(
            "allowing/policies.json",
            ##"{"value": [{"@odata.type": "#microsoft.graph.iosManagedAppProtection", "id": "T_1", "displayName": "P", "printBlocked": false}]}"##
        )
        let diff = try await scratch.run(["matrix", "diff", "--bundle", allowing, "--fail-on-change"])
        #expect(diff.status == 1)
        #expect(diff.stdout.contains("print"))
    }

    @Test(
        "a policy file that cannot be read as a regular file fails the bundle instead of leaving its accounts unmanaged"
    )
    func unreadablePolicyFile() async throws {
        let scratch = try Scratch()
        let (blocking, _) = try writeBundles(scratch)
        try FileManager.default.removeItem(atPath: blocking + "/policies.json")
        try FileManager.default.createSymbolicLink(
            atPath: blocking + "/policies.json", withDestinationPath: blocking + "/gone.json")
        let result = try await scratch.run(["apply", "--bundle", blocking])
        #expect(result.status == 1)
        #expect(result.stderr.contains("policies.json:1:1: error: a symbolic link to nothing"))
        #expect(try await printAllowed(scratch, ["--bundle", blocking]).status == 1)
    }

    @Test(
        "decide refuses a contradictory account: an unknown OID beside a known UPN is an error, not an unmanaged account"
    )
    func contradictoryQuery() async throws {
        let scratch = try Scratch()
        try await scratch.applyExampleBundle()
        let queries = [
            #"{"action":"saveTo","owner":{"oid":"00000000-0000-0000-0000-000000000000","upn":"alice@contoso.com"},"location":"dropbox"}"#,
            #"{"action":"saveTo","owner":{"oid":"a1f0c7d2-5b1e-4c3a-9e8f-000000000001","upn":"bob@contoso.com"},"location":"dropbox"}"#,
            #"{"action":"saveTo","owner":{"oid":"a1f0c7d2-5b1e-4c3a-9e8f-000000000001","upn":"alice@contoso.com"},"location":"dropbox"}"#,
        ]
        let result = try await scratch.run(
            ["decide", "--platform", "ios"], stdin: queries.joined(separator: "\n") + "\n")
        #expect(result.status == 1)
        #expect(result.stdoutLines.count == 3)
        #expect(
            result.stdoutLines[0].hasPrefix(
                #"{"error":"line 1, column 1: contradictory account (the data's owner): the UPN alice@contoso.com is the tenant's account with OID"#
            ))
        #expect(
            result.stdoutLines[1].contains("contradictory account") && result.stdoutLines[1].contains("bob@contoso.com")
        )
        #expect(result.stdoutLines[0].hasSuffix(#","code":"ambiguous-account"}"#), "\(result.stdoutLines[0])")
        #expect(
            result.stdoutLines[2].hasPrefix(#"{"action":"saveTo","allowed":false"#),
            "both forms as the tenant records them: alice")
    }
}
