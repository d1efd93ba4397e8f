import CustodyProtection
import CustodyTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import CoreFoundation
    import Glibc
#endif

/// Issue 13's reproducers, run as an attacker or a careless user would: with the built tool.
@Suite("Hardening: the CLI under bad input")
struct HardeningCLITests {
    typealias Scratch = TemporaryDirectory

    /// Foundation's `deletingLastPathComponent` traps on a relative path of one character: each
    /// command that takes the directory part of a path it was given, with such a path.
    @Test("a one-character relative path is a path like any other, never a crash", arguments: ["state", "matrix"])
    func oneCharacterPaths(kind: String) async throws {
        let scratch = try Scratch()
        switch kind {
        case "state":
            let applied = try await CLIRunner.run(
                ["apply", "--state", "s", "--bundle", TestPaths.package("policies"), "--platform", "ios"],
                currentDirectory: scratch.path)
            #expect(applied.status == 0, "\(applied.stderr)")
            #expect(FileManager.default.fileExists(atPath: scratch.file("s")))
            let decided = try await CLIRunner.run(
                ["decide", "--state", "s"], stdin: #"{"action":"print","account":"alice@contoso.com"}"# + "\n",
                currentDirectory: scratch.path)
            #expect(decided.status == 0 && decided.stdout.hasPrefix(#"{"action":"print","allowed":"#), "\(decided)")
        default:
            var matrix = try String(
                contentsOfFile: TestPaths.package("policies/matrices/finance.matrix.json"), encoding: .utf8)
            matrix = matrix.replacingOccurrences(
                of: #""bundle": "..""#, with: #""bundle": "\#(TestPaths.package("policies"))""#)
            try scratch.write("m", matrix)
            let run = try await CLIRunner.run(["matrix", "run", "m"], currentDirectory: scratch.path)
            #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        }
    }

    /// An empty path is no path: refused as a usage error naming the option, never read as the
    /// current directory or handed to SQLite; an output path that cannot be written says why in
    /// the system's words.
    @Test(
        "an empty path is a usage error naming its option; an unwritable --junit says why",
        arguments: [
            (["checkin", "--state", "", "--account", "alice@contoso.com"], 64, "--state is empty"),
            (["keys", "list", "--state", ""], 64, "--state is empty"),
            (["apply", "--bundle", ""], 64, "--bundle is empty"),
            (["decide", "--bundle", ""], 64, "--bundle is empty"),
            (["matrix", "run", "--junit", "", "MATRIX"], 64, "--junit is empty"),
            (["matrix", "run", ""], 64, "a matrix path is empty"),
            (["bundle", "sign", "", "--key", "signer.key"], 64, "<dir> is empty"),
            (["bundle", "sign", "MATRIX", "--key", ""], 64, "--key is empty"),
            (["checkin", "--account", "alice@contoso.com", "--facts", ""], 64, "--facts is empty"),
            (["matrix", "run", "--junit", ".", "MATRIX"], 1, "cannot write .: Is a directory"),
            (["matrix", "run", "--junit", "missing/report.xml", "MATRIX"], 1, "No such file or directory"),
        ])
    func emptyAndUnwritablePaths(arguments: [String], status: Int32, message: String) async throws {
        let scratch = try Scratch()
        let matrix = TestPaths.package("policies/matrices/finance.matrix.json")
        let result = try await CLIRunner.run(
            arguments.map { $0 == "MATRIX" ? matrix : $0 }, stdin: "", currentDirectory: scratch.path)
        #expect(result.status == status && result.stderr.contains(message), "\(result.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path).isEmpty, "nothing was created")
    }

    /// Bytes that are not UTF-8 would reach the command with each bad byte replaced by U+FFFD,
    /// so that different bytes named one account: refused before anything runs.
    @Test(
        "an argument that is not UTF-8 is a usage error naming it, and nothing is touched",
        arguments: [
            (#"protect --owner "$(printf '\377')@fabrikam.com" --force-encrypt a.txt a.cst"#, 3),
            (#"wipe --account "$(printf 'caf\303')@fabrikam.com""#, 3),
            (#"protect --owner bob@fabrikam.com --force-encrypt "$(printf '\300\251').txt" a.cst"#, 5),
        ])
    func undecodableArguments(command: String, index: Int) async throws {
        let scratch = try Scratch()
        try scratch.write("a.txt", "payroll")
        let result = try await CLIRunner.run(
            ["-c", "exec \"$0\" " + command, CLIRunner.executable], stdin: "", executable: "/bin/sh",
            currentDirectory: scratch.path)
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.contains("argument \(index) is not valid UTF-8 text"), "\(result.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path) == ["a.txt"], "nothing was created")
    }

    @Test("an owner longer than an envelope can name is refused before the file or the state is touched")
    func longOwner() async throws {
        let scratch = try Scratch()
        try await scratch.applyExampleBundle()
        try scratch.write("a.txt", "payroll")
        let owner = String(repeating: "a", count: 1_100) + "@contoso.com"
        let result = try await scratch.run(["protect", "--unmanaged", "--owner", owner, scratch.file("a.txt")])
        #expect(result.status == 64)
        #expect(result.stderr.contains("is 1112 bytes long; at most 1020 are allowed"), "\(result.stderr)")
        #expect(try scratch.read("a.txt") == "payroll")
        let keys = try await scratch.run(["keys", "list"])
        #expect(keys.status == 0, "\(keys.stderr)")
    }

    @Test(
        "unprotect never replaces a FIFO, a device or a symbolic link with a plaintext file",
        arguments: ["fifo", "/dev/null", "symlink"])
    func nonRegularDestinations(kind: String) async throws {
        let scratch = try Scratch()
        try await scratch.applyExampleBundle()
        try scratch.write("a.txt", "payroll")
        #expect(
            try await scratch.run([
                "protect", "--owner", "alice@contoso.com", scratch.file("a.txt"), scratch.file("a.cst"),
            ])
            .status == 0)
        let destination: String
        switch kind {
        case "fifo":
            destination = scratch.file("pipe")
            #expect(mkfifo(destination, 0o600) == 0)
        case "symlink":
            try scratch.write("target.txt", "target")
            destination = scratch.file("link")
            #expect(symlink(scratch.file("target.txt"), destination) == 0)
        default:
            destination = kind
        }
        var before = stat()
        #expect(lstat(destination, &before) == 0)
        let result = try await scratch.run(["unprotect", scratch.file("a.cst"), destination])
        #expect(result.status == 1)
        #expect(
            result.stderr.contains("Custody writes only regular files (use - for standard output)"), "\(result.stderr)")
        var after = stat()
        #expect(lstat(destination, &after) == 0)
        #expect(after.st_mode == before.st_mode && after.st_ino == before.st_ino && after.st_rdev == before.st_rdev)
        // Standard output is still how to stream plaintext out.
        #expect(try await scratch.run(["unprotect", scratch.file("a.cst"), "-"]).stdout == "payroll")
    }

    @Test("in-place protect of a symbolic link is refused and says so; the target stays as it was")
    func symlinkInPlace() async throws {
        let scratch = try Scratch()
        try await scratch.applyExampleBundle()
        try scratch.write("real.txt", "plaintext")
        #expect(symlink(scratch.file("real.txt"), scratch.file("link.txt")) == 0)
        let result = try await scratch.run(["protect", "--owner", "alice@contoso.com", scratch.file("link.txt")])
        #expect(result.status == 1)
        #expect(result.stderr.contains("is a symbolic link (to \(scratch.file("real.txt")))"), "\(result.stderr)")
        #expect(try scratch.read("real.txt") == "plaintext")
        #expect(
            try FileManager.default.destinationOfSymbolicLink(atPath: scratch.file("link.txt"))
                == scratch.file("real.txt"))
    }

    @Test(
        "info, unprotect and receive on a FIFO answer at once with an error",
        arguments: [
            ["info"], ["unprotect"], ["receive", "--receiver", "alice@contoso.com"],
            ["protect", "--owner", "alice@contoso.com"],
        ])
    func fifoInput(command: [String]) async throws {
        let scratch = try Scratch()
        try await scratch.applyExampleBundle()
        #expect(mkfifo(scratch.file("pipe"), 0o600) == 0)
        let result =
            await command == ["info"]
            ? try await CLIRunner.run(command + [scratch.file("pipe")])
            : try scratch.run(command + [scratch.file("pipe")])
        #expect(result.status == 1)
        #expect(result.stderr.contains("is a FIFO, not a regular file"), "\(result.stderr)")
    }

    @Test(
        "decide answers a line over the limit with an error in its place, without reading it into memory, and goes on")
    func longLine() async throws {
        let scratch = try Scratch()
        try await scratch.applyExampleBundle()
        let query = #"{"action":"print","account":"alice@contoso.com"}"#
        let long = #"{"action":"print","account":""# + String(repeating: "a", count: 3 << 20) + #""}"#
        let overLimit = String(repeating: " ", count: 200) + query
        let result = try await scratch.run(
            ["decide", "--max-line-bytes", "100"],
            stdin: [query, long, query, overLimit, query].joined(separator: "\n") + "\n")
        #expect(result.status == 1)
        #expect(result.stdoutLines.count == 5)
        #expect(result.stdoutLines[0].hasPrefix(#"{"action":"print","allowed":"#))
        #expect(
            result.stdoutLines[1]
                == #"{"error":"line 2, column 1: the line is longer than 100 bytes; not read (raise the limit with --max-line-bytes)","line":2,"code":"invalid-query"}"#
        )
        #expect(result.stdoutLines[2] == result.stdoutLines[0])
        #expect(result.stdoutLines[3].contains(#""line":4"#))
        #expect(result.stdoutLines[4] == result.stdoutLines[0])
        // The default (1 MiB) takes the 3 MiB line as too long too, and the next line is answered.
        let byDefault = try await scratch.run(["decide"], stdin: long + "\n" + query + "\n")
        #expect(byDefault.stdoutLines.count == 2)
        #expect(byDefault.stdoutLines[0].contains("longer than 1048576 bytes"))
        #expect(byDefault.stdoutLines[1] == result.stdoutLines[0])
    }

    @Test(
        "control characters from input never reach the terminal raw",
        arguments: [
            (
                ["decide", "--format", "text", "--log-level", "trace"],
                #"{"action":"share","owner":"alice@contoso.com","targets":["evil\u001b[2J\rALLOW"]}"#
            ),
            (["decide", "--format", "text"], #"{"action":"print","account":"a\u001b]0;pwned\u0007@contoso.com"}"#),
            (["decide"], #"{"action":"print","account":"a\u001b[2J@contoso.com"}"#),
        ])
    func terminalInjection(command: [String], line: String) async throws {
        let scratch = try Scratch()
        try await scratch.applyExampleBundle()
        let result = try await scratch.run(command, stdin: line + "\n")
        let printed = result.stdout + result.stderr
        #expect(!printed.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" }, "\(printed.debugDescription)")
        #expect(result.stdoutLines.count == 1)
    }

    @Test("an owner with control characters is refused by protect, with the character named")
    func controlOwner() async throws {
        let scratch = try Scratch()
        try await scratch.applyExampleBundle()
        try scratch.write("a.txt", "x")
        let result = try await scratch.run([
            "protect", "--unmanaged", "--owner", "evil\u{1B}[2Jx@contoso.com", scratch.file("a.txt"),
            scratch.file("a.cst"),
        ])
        #expect(result.status == 64)
        #expect(result.stderr.contains("holds the control character U+001B at character 5"))
        #expect(!result.stderr.contains("\u{1B}"))
        #expect(!FileManager.default.fileExists(atPath: scratch.file("a.cst")))
    }

    @Test("a mistyped master key file on a keyed state fails and creates no key file; the state database is mode 0600")
    func masterKeyTypoAndMode() async throws {
        let scratch = try Scratch()
        try await scratch.applyExampleBundle()
        try scratch.write("a.txt", "x")
        #expect(
            try await scratch.run([
                "protect", "--owner", "alice@contoso.com", scratch.file("a.txt"), scratch.file("a.cst"),
            ])
            .status == 0)
        let typo = try await CLIRunner.run(
            [
                "unprotect", "--state", scratch.file("state"), "--master-key-file", scratch.file("typo.key"),
                scratch.file("a.cst"), "-",
            ])
        #expect(typo.status == 1)
        #expect(typo.stderr.contains("there is no master key file here"), "\(typo.stderr)")
        #expect(!FileManager.default.fileExists(atPath: scratch.file("typo.key")))
        for name in ["state", "state-wal"] where FileManager.default.fileExists(atPath: scratch.file(name)) {
            let attributes = try FileManager.default.attributesOfItem(atPath: scratch.file(name))
            #expect((attributes[.posixPermissions] as? Int) == 0o600, "\(name)")
        }
    }

    @Test("a bundle larger than the limit is refused, naming the file that crossed it")
    func bundleLimit() async throws {
        let scratch = try Scratch()
        try FileManager.default.copyItem(atPath: CLIRunner.packageRoot + "/policies", toPath: scratch.file("bundle"))
        let result = try await CLIRunner.run(
            ["policy", "validate", scratch.file("bundle")], environment: ["CUSTODY_MAX_BUNDLE_BYTES": "2000"])
        #expect(result.status == 1)
        #expect(
            result.stderr.contains(
                "the bundle is larger than 2000 bytes with this file; raise CUSTODY_MAX_BUNDLE_BYTES"),
            "\(result.stderr)")
        #expect(try await CLIRunner.run(["policy", "validate", scratch.file("bundle")]).status == 0)
    }

    @Test(
        "commands that only read, or are refused before they act, leave the state database byte for byte as it was",
        arguments: [
            ["keys", "list"], ["unprotect", "@a.cst", "-"], ["audit"], ["unprotect", "@plain.txt", "@out.txt"],
            ["unprotect", "@a.cst", "/dev/null"],
            // Commands that write, refused before they do: the state is opened for writing only
            // on the first write.
            ["protect", "--owner", "nobody@unknown.example", "@plain.txt", "@out.txt"],
            ["protect", "--owner", "alice@contoso.com", "@plain.txt", "/dev/null"],
            ["wipe", "--account", "nobody@fabrikam.com"], ["keys", "rotate", "--account", "nobody@fabrikam.com"],
            ["decide", "--platform", "android"],
        ])
    func readersLeaveTheStateAlone(command: [String]) async throws {
        let scratch = try Scratch()
        try await scratch.applyExampleBundle()
        try scratch.write("plain.txt", "plain")
        #expect(
            try await scratch.run([
                "protect", "--owner", "alice@contoso.com", scratch.file("plain.txt"), scratch.file("a.cst"),
            ]).status == 0)
        let before = try Data(contentsOf: URL(fileURLWithPath: scratch.file("state")))
        _ = try await scratch.run(command.map { $0.hasPrefix("@") ? scratch.file(String($0.dropFirst())) : $0 })
        let after = try Data(contentsOf: URL(fileURLWithPath: scratch.file("state")))
        #expect(before == after)
        #expect(!FileManager.default.fileExists(atPath: scratch.file("out.txt")))
    }

    static let canDropPrivileges = getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")

    @Test(
        "a state this user cannot write (read-only storage) still serves keys list and unprotect",
        .enabled(
            if: canDropPrivileges, "needs root and setpriv, to run the tool as nobody over a state it cannot write"))
    func readOnlyStorage() async throws {
        let scratch = try Scratch()
        try await scratch.applyExampleBundle()
        try scratch.write("a.txt", "payroll")
        #expect(
            try await scratch.run([
                "protect", "--owner", "alice@contoso.com", scratch.file("a.txt"), scratch.file("a.cst"),
            ])
            .status == 0)
        // Everything readable by nobody, nothing writable by it; the key file is nobody's own.
        #expect(chmod(scratch.path, 0o755) == 0)
        for name in ["state", "a.cst"] { #expect(chmod(scratch.file(name), 0o644) == 0) }
        #expect(chown(scratch.file("master.key"), 65_534, 65_534) == 0)
        let before = try Data(contentsOf: URL(fileURLWithPath: scratch.file("state")))
        func asNobody(_ arguments: [String]) async throws -> CLIRunner.Result {
            try await CLIRunner.run(
                ["--reuid=65534", "--regid=65534", "--clear-groups", CLIRunner.executable] + arguments + [
                    "--state", scratch.file("state"),
                ],
                executable: "/usr/bin/setpriv", environment: ["CUSTODY_MASTER_KEY_FILE": scratch.file("master.key")])
        }
        let keys = try await asNobody(["keys", "list"])
        #expect(keys.status == 0, "\(keys.stderr)")
        #expect(keys.stdout.contains("(alice@contoso.com): versions 1"))
        let plain = try await asNobody(["unprotect", scratch.file("a.cst"), "-"])
        #expect(plain.status == 0, "\(plain.stderr)")
        #expect(plain.stdout == "payroll")
        // A command that writes says why it cannot, and changes nothing.
        let wipe = try await asNobody(["wipe", "--account", "alice@contoso.com"])
        #expect(wipe.status == 1)
        #expect(try Data(contentsOf: URL(fileURLWithPath: scratch.file("state"))) == before)
    }
}
