import CustodyPolicy
import CustodyTestSupport
import Foundation
import Testing

@Suite("The custody command line")
struct CLITests {
    /// What a clean exit prints (help, the version, a completion script): written like any other
    /// output, so a full disk or a closed pipe is an error, never a silent success.
    static let cleanExits: [[String]] = [
        ["--help"], ["--version"], ["help", "decide"], ["decide", "--help"], ["policy", "show", "-h"],
        ["--generate-completion-script", "bash"],
    ]

    @Test("help, the version and completion scripts that cannot be written exit 1 and say why", arguments: cleanExits)
    func cleanExitUnwritten(arguments: [String]) async throws {
        let full = try await CLIRunner.run(
            arguments, standardOutput: FileHandle(forWritingTo: URL(fileURLWithPath: "/dev/full")))
        #expect(full.status == 1, "\(full.stderr)")
        #expect(full.stderr == "error: writing standard output failed: No space left on device\n")

        let written = try await CLIRunner.run(arguments)
        #expect(written.status == 0)
        #expect(!written.stdout.isEmpty && written.stderr.isEmpty)
    }

    /// Help for a command that does not exist is an error naming it, never the root's help with
    /// exit 0; help for one that does exists, aliases included.
    static let helpTopics: [(arguments: [String], status: Int32, error: String?)] = [
        (["help", "nosuchcmd"], 64, "'custody' has no subcommand 'nosuchcmd'; it has policy, decide,"),
        (["help", "keys", "nosuch"], 64, "'custody keys' has no subcommand 'nosuch'; it has "),
        (["help", "decide", "extra"], 64, "'custody decide' has no subcommand 'extra'"),
        (["help", "no\u{1B}[2Jcmd"], 64, "'custody' has no subcommand 'no\\u{1B}[2Jcmd'"),
        (["help"], 0, nil), (["help", "keys"], 0, nil), (["help", "keys", "rotate"], 0, nil),
        (["help", "bundle", "sign"], 0, nil),
    ]

    @Test(
        "help names the command it was asked about, or refuses one that does not exist", arguments: helpTopics.indices)
    func helpTopic(index: Int) async throws {
        let (arguments, status, error) = Self.helpTopics[index]
        let result = try await CLIRunner.run(arguments)
        #expect(result.status == status, "\(result.stderr)")
        if let error {
            #expect(result.stderr.contains("Error: " + error), "\(result.stderr)")
            #expect(result.stdout.isEmpty)
        } else {
            let topic = arguments.dropFirst().joined(separator: " ")
            #expect(result.stdout.contains("USAGE: custody \(topic)"), "\(result.stdout)")
        }
    }

    /// Arguments that only a command's run can judge (an account, a directory given an OUT):
    /// refused like those parsing refuses, with the usage of the command that was run.
    static let runTimeRefusals: [(arguments: [String], error: String, command: String)] = [
        (["protect", "--owner", "", "/etc/hostname", "out"], "--owner must name an account", "protect"),
        (["protect", "--owner", "alice@contoso.com", "/", "out"], "a directory is protected in place", "protect"),
        (["keys", "rotate", "--account", " "], "--account must name an account", "keys rotate"),
        (["policy", "show", "--account", ""], "--account must name an account", "policy show"),
        (["serve", "--listen", "nonsense"], "--listen must be HOST:PORT", "serve"),
    ]

    @Test("an argument refused once the command runs names that command's usage", arguments: runTimeRefusals.indices)
    func refusedWhenRun(index: Int) async throws {
        let (arguments, error, command) = Self.runTimeRefusals[index]
        let result = try await CLIRunner.run(arguments)
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stdout.isEmpty)
        #expect(result.stderrLines.first?.hasPrefix("Error: \(error)") == true, "\(result.stderr)")
        #expect(
            result.stderrLines.dropFirst().first?.hasPrefix("Usage: custody \(command) ") == true, "\(result.stderr)")
        #expect(
            result.stderrLines.last == "  See 'custody \(command) --help' for more information.", "\(result.stderr)")
    }

    /// ArgumentParser derives a command's name from its type's name when none is configured,
    /// through `String(describing:)`: a scan of every protocol conformance in the binary per
    /// command, at every start (a third of `custody protect`'s start-up CPU before the names
    /// were written out; Benchmarks/README.md, target 5).
    @Test("every command names itself, so that starting custody derives no name from a type")
    func commandsNameThemselves() throws {
        let directory = CLIRunner.packageRoot + "/Sources/custody"
        let files = try FileManager.default.subpathsOfDirectory(atPath: directory).filter { $0.hasSuffix(".swift") }
        var configurations = 0
        for file in files {
            let text = try String(contentsOfFile: directory + "/" + file, encoding: .utf8)
            for part in text.components(separatedBy: "static let configuration = CommandConfiguration(").dropFirst() {
                configurations += 1
                #expect(
                    part.drop { $0 == " " || $0 == "\n" }.hasPrefix("commandName:"),
                    "\(file): a configuration without commandName: \(part.prefix(80))")
            }
        }
        #expect(configurations > 50)
    }

    @Test("policy validate reports exactly the INVALID export of the shared folder, and exits 1", .needsSharedCorpora)
    func validateSharedExamples() async throws {
        let result = try await CLIRunner.run(["policy", "validate", CLIRunner.sharedGraphExamples])
        #expect(result.status == 1)
        let errors = result.stderrLines.filter { $0.contains(": error: ") }
        #expect(
            errors == [
                "\(CLIRunner.sharedGraphExamples)/deploymenttheory-terraform-provider-microsoft365__android_managed_app_protection__maximal_response.INVALID.json:43:2: error: unexpected '`' after the end of the JSON value"
            ])
        #expect(
            result.stderrLines.allSatisfy {
                $0.contains(": error: ") || $0.contains(": warning: ") || $0.contains(": notice: ")
            })
        #expect(result.stderrLines.filter { $0.contains(": notice: Custody does not enforce") }.count == 15)
        #expect(result.stdout == "\(CLIRunner.sharedGraphExamples): failed: 1 error\n")
    }

    @Test("policy validate exits 0 for good bundles and files, with a summary line each")
    func validateGood() async throws {
        let result = try await CLIRunner.run([
            "policy", "validate", "policies", "fixtures/frameworks/level-3-ios",
            "fixtures/exit-criteria/bundle/tenant.json",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stdoutLines == [
                "policies: ok: 4 accounts, 4 protection policies, 2 app configurations, 0 warnings, 1 notice",
                "fixtures/frameworks/level-3-ios: ok: 2 accounts, 1 protection policy, 0 app configurations, 1 warning, 2 notices",
                "fixtures/exit-criteria/bundle/tenant.json: ok: 19 accounts, 0 protection policies, 0 app configurations, 0 warnings, 0 notices",
            ])
        #expect(result.stderrLines.count == 4)
        #expect(result.stderrLines.filter { $0.contains(": notice: Custody does not enforce") }.count == 2)
        // Microsoft's framework template is exported without assignments: it reaches every
        // account, and validation says so.
        #expect(
            result.stderrLines.filter {
                $0.contains("level-3-ios") && $0.contains(": warning: the policy has no \"assignments\"")
            }.count == 1)
        #expect(
            result.stderrLines.contains {
                $0.contains(": notice: 'replace_with_dialer_app_url_scheme' is a template's placeholder")
            })
    }

    @Test("warnings go to standard error and do not fail validation; --quiet keeps errors only", .needsSharedCorpora)
    func validateWarnings() async throws {
        let file =
            CLIRunner.sharedGraphExamples
            + "/deploymenttheory-terraform-provider-microsoft365__policy_set_reqs.md__managedAppPolicies_response.excerpt.json"
        let result = try await CLIRunner.run(["policy", "validate", file])
        #expect(result.status == 0)
        #expect(result.stderrLines.filter { $0.contains(": warning: ") }.count == 16)
        #expect(result.stderrLines.filter { $0.contains(": warning: the policy has no \"assignments\"") }.count == 8)
        #expect(result.stderrLines.filter { $0.contains(": notice: ") }.count == 4)
        let quiet = try await CLIRunner.run(["policy", "validate", "--quiet", file, "does/not/exist"])
        #expect(quiet.status == 1)
        #expect(quiet.stdout.isEmpty)
        #expect(quiet.stderrLines == ["does/not/exist:1:1: error: no such file or directory"])
    }

    @Test("decide answers every line in order, errors included, and exits 1 when a line was bad")
    func decide() async throws {
        let input =
            [
                #"{"action":"saveTo","owner":"alice@contoso.com","location":"box","locationAccount":"alice@contoso.com"}"#,
                #"{"action":"saveTo","owner":"alice@contoso.com","location":"box""#,
                #"{"action":"print","account":"bob@contoso.com"}"#,
            ].joined(separator: "\n") + "\n"
        let result = try await CLIRunner.run(["decide", "--bundle", "policies", "--platform", "ios"], stdin: input)
        #expect(result.status == 1)
        #expect(result.stdoutLines.count == 3)
        #expect(
            result.stdoutLines[0].hasPrefix(
                #"{"action":"saveTo","allowed":false,"reason":"saveAsBlocked is true and box is not in allowedDataStorageLocations"#
            ))
        #expect(
            result.stdoutLines[1]
                == #"{"error":"line 2, column 1: object is not closed: expected '}' before the end of the input","line":2,"code":"invalid-query"}"#
        )
        #expect(result.stdoutLines[2].hasPrefix(#"{"action":"print","allowed":true"#))
        for line in result.stdoutLines {
            #expect(throws: Never.self) { try JSONDocument(parsing: Array(line.utf8)) }
        }

        let good = try await CLIRunner.run(
            ["decide", "--bundle", "policies", "--platform", "ios"],
            stdin: #"{"action":"accountAllowed","account":"bob@contoso.com"}"#)
        #expect(good.status == 0)
        #expect(
            good.stdoutLines == [
                #"{"action":"accountAllowed","allowed":true,"reason":"the account matches 'Bob@Contoso.com' in allowedAccounts","setting":"allowedAccounts","policies":[]}"#
            ])
    }

    @Test("decide answers the example queries of make run")
    func examples() async throws {
        let queries = try String(contentsOfFile: CLIRunner.packageRoot + "/policies/examples.jsonl", encoding: .utf8)
        let result = try await CLIRunner.run(
            [
                "decide", "--bundle", "policies", "--platform", "ios", "--app", "com.microsoft.office.outlook",
                "--format", "text",
            ], stdin: queries)
        #expect(result.status == 0)
        #expect(result.stdoutLines.count == queries.split(separator: "\n").count)
        #expect(
            result.stdoutLines.allSatisfy {
                $0.hasPrefix("ALLOW ") || $0.hasPrefix("BLOCK ") || $0.hasPrefix("REQUIRED ")
                    || $0.hasPrefix("OPTIONAL ")
            })
        #expect(
            result.stderr.contains("Account not allowed: an allowed entry has the same local part at another domain"))
    }

    @Test("a bundle that does not load stops decide with its diagnostics", .needsSharedCorpora)
    func decideBadBundle() async throws {
        let result = try await CLIRunner.run(["decide", "--bundle", CLIRunner.sharedGraphExamples], stdin: "")
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.contains("INVALID.json:43:2: error:"))
    }

    @Test("policy show prints the effective policy with sources")
    func show() async throws {
        let result = try await CLIRunner.run([
            "policy", "show", "--bundle", "policies", "--account", "ALICE@contoso.com", "--platform", "ios",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let document = try JSONDocument(parsing: Array(result.stdout.utf8))
        let root = document.root
        #expect(root["managed"]?.bool == true)
        #expect(root["account"]?["oid"]?.string == "a1f0c7d2-5b1e-4c3a-9e8f-000000000001")
        #expect(
            root["policies"]?.elements.map { $0["name"]?.string } == [
                "Contoso All Staff (iOS)", "Contoso Finance (iOS)",
            ], "bundle order: files by name")
        let save = try #require(root["settings"]?["saveAsBlocked"])
        #expect(save["value"]?.bool == true)
        #expect(save["resolution"]?.string == "configured")
        #expect(save["sources"]?.elements.map(\.string) == ["Contoso Finance (iOS)"])
        let exception = try #require(root["settings"]?["allowedOutboundClipboardSharingExceptionLength"])
        #expect(exception["value"]?.int == 0)
        #expect(exception["resolution"]?.string == "conflictDefault")
        #expect(root["settings"]?["encryptAppData"] == nil, "Android settings are not shown for iOS")
        #expect(root["accountAllowed"]?["allowed"]?.bool == true)
    }

    @Test("policy show without a platform, for a bundle of both, reports per platform")
    func showPerPlatform() async throws {
        let result = try await CLIRunner.run([
            "policy", "show", "--bundle", "policies", "--account", "alice@contoso.com",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let root = try JSONDocument(parsing: Array(result.stdout.utf8)).root
        #expect(root.elements.map { $0["context"]?["platform"]?.string } == ["ios", "android"])
        #expect(root.elements.map { $0["settings"]?["encryptAppData"] == nil } == [true, false])
    }

    @Test("decide --explain names the rule and whether it is documented")
    func explain() async throws {
        let result = try await CLIRunner.run(
            ["decide", "--bundle", "policies", "--platform", "ios", "--explain"],
            stdin:
                #"{"action":"openFrom","receiver":"alice@contoso.com","location":"localStorage","locationAccount":"alice@contoso.com"}"#
                + "\n"
                + #"{"action":"print","accounts":["alice@contoso.com","bob@contoso.com"]}"# + "\n")
        #expect(result.status == 0, "\(result.stderr)")
        let lines = try result.stdoutLines.map { try JSONDocument(parsing: Array($0.utf8)).root }
        #expect(lines.count == 2)
        #expect(lines[0]["rule"]?.string?.hasPrefix("openFrom.") == true)
        #expect(["documented", "inferred"].contains(lines[0]["basis"]?.string ?? ""))
        #expect(lines[0]["source"]?.string?.isEmpty == false)
        #expect(lines[1]["accounts"].map { Array($0.elements).count } == 2)
        #expect(lines[1]["accounts"]?.elements.allSatisfy { $0["rule"]?.string == "print" } == true)
    }

    @Test("policy show refuses an account the tenant does not know")
    func showUnknown() async throws {
        let result = try await CLIRunner.run([
            "policy", "show", "--bundle", "policies", "--account", "erin@fabrikam.com",
        ])
        #expect(result.status == 1)
        // The bundle is named by its revision, not by where it lies (issue 47: the same text
        // reaches service clients, to whom a path lays out the server's disk).
        let said = result.stderr
        #expect(
            said.hasPrefix("error: erin@fabrikam.com is not in the tenant of the policy in force (revision "), "\(said)"
        )
        #expect(said.hasSuffix("); unknown accounts are unmanaged (no policy applies)\n"), "\(said)")
        #expect(!said.contains("policies"), "\(said)")
    }

    @Test(
        "bad arguments exit 64 with a usage message",
        arguments: [
            ["decide", "--jobs", "0"], ["decide", "--jobs", "1025"],
            ["decide", "--bundle", "policies", "--platform", "macos"],
            ["policy", "show", "--bundle", "policies", "--account", " "], ["frobnicate"],
        ])
    func badArguments(arguments: [String]) async throws {
        let result = try await CLIRunner.run(arguments)
        #expect(result.status == 64)
        #expect(result.stderr.contains("Error:") || result.stderr.contains("error:"))
    }

    @Test(
        "every command's help reads as prose: no source-code line continuations or escapes leak into it",
        arguments: [
            ["apply"], ["decide"], ["serve"], ["receive"], ["watch"], ["tokens", "create"], ["protect"], ["unprotect"],
            ["wipe"], ["policy", "show"],
            ["matrix", "run"], ["config", "show"], ["audit"], ["keys", "rotate"],
        ])
    func helpIsProse(command: [String]) async throws {
        let result = try await CLIRunner.run(command + ["--help"])
        #expect(result.status == 0, "\(result.stderr)")
        let continuation = result.stdout.split(separator: "\n").first { $0.hasSuffix("\\") || $0.contains(" \\ ") }
        #expect(continuation == nil, "\(command.joined(separator: " ")): \(continuation ?? "")")
    }

    @Test("help texts document the query contract")
    func help() async throws {
        let result = try await CLIRunner.run(["decide", "--help"])
        #expect(result.status == 0)
        for action in DecisionAction.allCases {
            #expect(result.stdout.contains(#""\#(action.rawValue)""#), "\(action)")
        }
        for location in SaveLocation.allCases { #expect(result.stdout.contains(location.rawValue)) }
        for location in OpenLocation.allCases { #expect(result.stdout.contains(location.rawValue)) }
    }
}
