import CustodyTestSupport
import Foundation
import Testing

@Suite("custody protect, unprotect, info, keys, wipe")
struct ProtectionCLITests {
    /// A scratch directory with a master key and a state; every command runs against them.
    typealias Scratch = TemporaryDirectory

    static let alice = "oid:a1f0c7d2-5b1e-4c3a-9e8f-000000000001"

    @Test("protect and unprotect in place, file to file, and info in text and JSON")
    func roundTrip() async throws {
        let scratch = try Scratch()
        try await scratch.applyExampleBundle()
        try scratch.write("a.txt", "payroll figures\n")
        #expect(try await scratch.run(["protect", "--owner", "alice@contoso.com", scratch.file("a.txt")]).status == 0)
        #expect(try scratch.read("a.txt") != "payroll figures\n")
        let info = try await CLIRunner.run(["info", scratch.file("a.txt")])
        #expect(info.stdout.contains("owned by \(Self.alice), encrypted with"))
        #expect(info.stdout.contains("key version 1, 64 KiB chunks"))
        let json = try await CLIRunner.run(["info", "--json", scratch.file("a.txt")])
        let described = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        #expect(described?["protected"] as? Bool == true && described?["encrypted"] as? Bool == true)
        #expect(described?["owner"] as? String == Self.alice, "\(json.stdout)")
        #expect(try await scratch.run(["unprotect", scratch.file("a.txt"), scratch.file("b.txt")]).status == 0)
        #expect(try scratch.read("b.txt") == "payroll figures\n")
        #expect(try await scratch.run(["unprotect", scratch.file("a.txt")]).status == 0)
        #expect(try scratch.read("a.txt") == "payroll figures\n")
        #expect(
            try await CLIRunner.run(["info", scratch.file("a.txt")]).stdout
                == "\(scratch.file("a.txt")): not protected\n")
    }

    @Test("standard input and output stream through")
    func streams() async throws {
        let scratch = try Scratch()
        try await scratch.applyExampleBundle()
        let protected = try await scratch.run(
            ["protect", "--owner", "bob@contoso.com", "--force-encrypt", "-", scratch.file("s.env")],
            stdin: "streamed text")
        #expect(protected.status == 0, "\(protected.stderr)")
        let plain = try await scratch.run(["unprotect", scratch.file("s.env"), "-"])
        #expect(plain.stdout == "streamed text")
    }

    @Test("receive reads each file's owner from its envelope and decides; exit 1 when one may not be received")
    func receive() async throws {
        let scratch = try Scratch()
        try await scratch.applyExampleBundle()
        try scratch.write("minutes.txt", "minutes")
        try scratch.write("plain.txt", "plain")
        #expect(
            try await scratch.run([
                "protect", "--owner", "bob@contoso.com", scratch.file("minutes.txt"), scratch.file("minutes.cst"),
            ]).status == 0)
        // Alice takes data from policy-managed apps only (Contoso Finance): Bob's, yes; untagged, no.
        let accepted = try await scratch.run([
            "receive", "--receiver", "alice@contoso.com", scratch.file("minutes.cst"),
        ])
        #expect(accepted.status == 0, "\(accepted.stderr)")
        #expect(accepted.stdout.contains(#""action":"receive","allowed":true"#))
        #expect(accepted.stdout.contains(#""dataOwner":"bob@contoso.com","ownerVerified":true"#), "\(accepted.stdout)")
        let mixed = try await scratch.run([
            "receive", "--receiver", "alice@contoso.com", scratch.file("minutes.cst"), scratch.file("plain.txt"),
            scratch.file("gone"),
        ])
        #expect(mixed.status == 1)
        #expect(mixed.stdoutLines.count == 2)
        #expect(
            mixed.stdoutLines[1].contains(#""allowed":false"#) && mixed.stdoutLines[1].contains(#""dataOwner":null"#))
        #expect(mixed.stderr.contains("gone: opening failed: No such file or directory"))
        // Without a master key, an encrypted envelope's owner is read but not verified.
        let unverified = try await CLIRunner.run(
            [
                "receive", "--receiver", "alice@contoso.com", "--state", scratch.file("state"),
                scratch.file("minutes.cst"),
            ],
            environment: ["CUSTODY_MASTER_KEY_FILE": "", "CUSTODY_PASSPHRASE": ""])
        #expect(unverified.status == 0, "\(unverified.stderr)")
        #expect(unverified.stdout.contains(#""ownerVerified":false"#))
    }

    @Test(
        "a directory is protected and unprotected as a tree: skipped files and why on standard error, exit 1 when one fails"
    )
    func directories() async throws {
        let scratch = try Scratch()
        try await scratch.applyExampleBundle()
        try FileManager.default.createDirectory(atPath: scratch.file("tree/sub"), withIntermediateDirectories: true)
        try scratch.write("tree/a.txt", "first")
        try scratch.write("tree/sub/b.txt", "second")
        try scratch.write("tree/done.txt", "already")
        #expect(
            try await scratch.run(["protect", "--owner", "alice@contoso.com", scratch.file("tree/done.txt")]).status
                == 0)
        #expect(symlink(scratch.file("tree/a.txt"), scratch.file("tree/link")) == 0)

        let protected = try await scratch.run(["protect", "--owner", "alice@contoso.com", scratch.file("tree")])
        #expect(protected.status == 0, "\(protected.stderr)")
        #expect(protected.stderr.hasPrefix("2 files ("))
        #expect(protected.stderr.contains(") protected for \(Self.alice), encrypted; 2 skipped:\n"))
        #expect(
            protected.stderr.contains(
                "  \(scratch.file("tree/done.txt")): already protected for \(Self.alice) (encrypted, key version 1)\n"))
        #expect(
            protected.stderr.contains(
                "  \(scratch.file("tree/link")): a symbolic link: its target is not protected through it\n"))
        for name in ["a.txt", "sub/b.txt", "done.txt"] {
            #expect(
                try await CLIRunner.run(["info", scratch.file("tree/" + name)]).stdout.contains(
                    "owned by \(Self.alice), encrypted"), "\(name)")
        }
        #expect(FileManager.default.fileExists(atPath: scratch.file("tree/.custody-owner")))
        let withOutput = try await scratch.run([
            "protect", "--owner", "alice@contoso.com", scratch.file("tree"), scratch.file("elsewhere"),
        ])
        #expect(withOutput.status != 0)
        #expect(withOutput.stderr.contains("a directory is protected in place: give no OUT"))

        // Damage one file: the others are still unprotected, the damaged one is named and kept.
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: scratch.file("tree/sub/b.txt"))))
        bytes[bytes.count - 1] ^= 1
        try Data(bytes).write(to: URL(fileURLWithPath: scratch.file("tree/sub/b.txt")))
        let unprotected = try await scratch.run(["unprotect", scratch.file("tree")])
        #expect(unprotected.status == 1)
        #expect(unprotected.stderr.hasPrefix("2 files ("))
        #expect(unprotected.stderr.contains("error: \(scratch.file("tree/sub/b.txt")): chunk 0 does not authenticate"))
        #expect(unprotected.stderr.hasSuffix("error: 1 file could not be done and was left as it was\n"))
        #expect(try scratch.read("tree/a.txt") == "first")
        #expect(try scratch.read("tree/done.txt") == "already")
        #expect(try Data(contentsOf: URL(fileURLWithPath: scratch.file("tree/sub/b.txt"))) == Data(bytes))
    }

    @Test("--verify leaves a file already protected for the owner alone and says so; protects it otherwise")
    func verify() async throws {
        let scratch = try Scratch()
        try await scratch.applyExampleBundle()
        try scratch.write("v.txt", "figures")
        let first = try await scratch.run([
            "protect", "--verify", "--owner", "alice@contoso.com", scratch.file("v.txt"),
        ])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stderr.isEmpty)
        let sealed = try Data(contentsOf: URL(fileURLWithPath: scratch.file("v.txt")))
        let again = try await scratch.run([
            "protect", "--verify", "--owner", "alice@contoso.com", scratch.file("v.txt"),
        ])
        #expect(again.status == 0)
        #expect(
            again.stderr
                == "skipped: \(scratch.file("v.txt")): already protected for \(Self.alice) (encrypted, key version 1)\n"
        )
        #expect(try Data(contentsOf: URL(fileURLWithPath: scratch.file("v.txt"))) == sealed, "not rewritten")
        let bob = try await scratch.run(["protect", "--verify", "--owner", "bob@contoso.com", scratch.file("v.txt")])
        #expect(bob.status == 0, "\(bob.stderr)")
        #expect(
            try await CLIRunner.run(["info", scratch.file("v.txt")]).stdout.contains(
                "owned by oid:a1f0c7d2-5b1e-4c3a-9e8f-000000000002"))
        for arguments in [["-"], [scratch.file("v.txt"), scratch.file("w.txt")]] {
            let refused = try await scratch.run(["protect", "--verify", "--owner", "alice@contoso.com"] + arguments)
            #expect(refused.status != 0)
            #expect(refused.stderr.contains("--verify protects a file in place"))
        }
    }

    @Test("info and unprotect read standard input; --pass-through returns data that is not an envelope unchanged")
    func passThrough() async throws {
        let scratch = try Scratch()
        try await scratch.applyExampleBundle()
        #expect(try await CLIRunner.run(["info", "-"], stdin: "just text").stdout == "standard input: not protected\n")
        let refused = try await scratch.run(["unprotect", "-", "-"], stdin: "just text")
        #expect(refused.status == 1)
        #expect(refused.stdout.isEmpty)
        #expect(refused.stderr.contains("standard input: not a protected file (no envelope header)"))
        let passed = try await scratch.run(["unprotect", "--pass-through", "-", "-"], stdin: "just text")
        #expect(passed.status == 0)
        #expect(passed.stdout == "just text")
        #expect(passed.stderr == "note: standard input is not protected: passed through unchanged\n")
        // An envelope is opened as usual with --pass-through.
        try scratch.write("e.txt", "sealed text")
        #expect(try await scratch.run(["protect", "--owner", "alice@contoso.com", scratch.file("e.txt")]).status == 0)
        let fromFile = try await scratch.run(["unprotect", "--pass-through", scratch.file("e.txt"), "-"])
        #expect(fromFile.stdout == "sealed text")
        #expect(fromFile.stderr.isEmpty)
        // A plain file in place is left as it is; copied to OUT unchanged.
        try scratch.write("p.txt", "plain")
        let inPlace = try await scratch.run(["unprotect", "--pass-through", scratch.file("p.txt")])
        #expect(inPlace.status == 0)
        #expect(inPlace.stderr == "note: \(scratch.file("p.txt")) is not protected: left as it is\n")
        #expect(
            try await scratch.run(["unprotect", "--pass-through", scratch.file("p.txt"), scratch.file("q.txt")]).status
                == 0)
        #expect(try scratch.read("q.txt") == "plain")
    }

    @Test("unprotect refuses what is not an envelope, and a damaged one, with exit 1")
    func refusals() async throws {
        let scratch = try Scratch()
        try await scratch.applyExampleBundle()
        try scratch.write("plain.txt", "plain")
        let plain = try await scratch.run(["unprotect", scratch.file("plain.txt")])
        #expect(plain.status == 1)
        #expect(
            plain.stderr
                == "error: \(scratch.file("plain.txt")): not a protected file (no envelope header); nothing to unprotect\n"
        )
        #expect(try scratch.read("plain.txt") == "plain")

        try scratch.write("d.txt", "secret")
        #expect(try await scratch.run(["protect", "--owner", "alice@contoso.com", scratch.file("d.txt")]).status == 0)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: scratch.file("d.txt"))))
        bytes[bytes.count - 3] ^= 1
        try Data(bytes).write(to: URL(fileURLWithPath: scratch.file("d.txt")))
        let damaged = try await scratch.run(["unprotect", scratch.file("d.txt")])
        #expect(damaged.status == 1)
        #expect(damaged.stderr.contains("does not authenticate"))
        #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: scratch.file("d.txt")))) == bytes, "left as it was")
        bytes[5] = 77
        try Data(bytes).write(to: URL(fileURLWithPath: scratch.file("d.txt")))
        let header = try await CLIRunner.run(["info", scratch.file("d.txt")])
        #expect(header.status == 1)
        #expect(header.stderr.contains("unknown algorithm 77 at byte 5"))
    }

    /// How protect treats each kind of owner in each mode, with the example bundle in force:
    /// alice and bob are managed and their iOS policies require encryption.
    static let protectCases: [(owner: String, flags: [String], status: Int32, info: String, stderr: String)] = [
        ("alice@contoso.com", [], 0, "owned by \(alice), encrypted", ""),
        ("ALICE@contoso.com", [], 0, "owned by \(alice), encrypted", ""),
        ("a1f0c7d2-5b1e-4c3a-9e8f-000000000001", [], 0, "owned by \(alice), encrypted", ""),
        ("alice@contoso.com", ["--force-encrypt"], 0, "owned by \(alice), encrypted", ""),
        ("alice@contoso.com", ["--unmanaged"], 1, "not protected", "requires its data to be encrypted"),
        ("erin@fabrikam.com", [], 1, "not protected", "is not an account of the policy in force"),
        (
            "erin@fabrikam.com", ["--unmanaged"], 0, "owned by upn:erin@fabrikam.com, not encrypted",
            "is tagged for upn:erin@fabrikam.com but not encrypted"
        ),
        ("erin@fabrikam.com", ["--force-encrypt"], 0, "owned by upn:erin@fabrikam.com, encrypted", ""),
    ]

    @Test(
        "protect encrypts unless the owner's policy in force says it need not; an unknown owner needs --unmanaged or --force-encrypt",
        arguments: protectCases)
    func policyDecides(owner: String, flags: [String], status: Int32, info: String, stderr: String) async throws {
        let scratch = try Scratch()
        try await scratch.applyExampleBundle()
        try scratch.write("data.txt", "data")
        let result = try await scratch.run(
            ["protect", "--owner", owner, "--platform", "ios"] + flags + [scratch.file("data.txt")])
        #expect(result.status == status, "\(result.stderr)")
        #expect(stderr.isEmpty ? result.stderr.isEmpty : result.stderr.contains(stderr), "\(result.stderr)")
        #expect(try await CLIRunner.run(["info", scratch.file("data.txt")]).stdout.contains(info))
    }

    @Test("without a bundle in force or --bundle, protect writes nothing and names both ways to give one")
    func noPolicy() async throws {
        let scratch = try Scratch()
        try scratch.write("a", "plain")
        for flags in [[], ["--force-encrypt"], ["--unmanaged"]] {
            let result = try await scratch.run(
                ["protect", "--owner", "alice@contoso.com"] + flags + [scratch.file("a"), scratch.file("b")])
            #expect(result.status == 1)
            #expect(
                result.stderr.contains("no bundle is in force") && result.stderr.contains("custody apply --bundle DIR")
                    && result.stderr.contains("--bundle DIR"))
            #expect(!FileManager.default.fileExists(atPath: scratch.file("b")))
        }
        // --bundle is a one-off override: it protects, and records nothing as in force.
        #expect(
            try await scratch.run([
                "protect", "--owner", "alice@contoso.com", "--bundle", CLIRunner.packageRoot + "/policies",
                "--platform", "ios", scratch.file("a"), scratch.file("b"),
            ]).status == 0)
        #expect(
            try await CLIRunner.run(["info", scratch.file("b")]).stdout.contains("owned by \(Self.alice), encrypted"))
        #expect(
            try await scratch.run(["protect", "--owner", "alice@contoso.com", scratch.file("a"), scratch.file("c")])
                .status
                == 1)
    }

    @Test("rotate, rewrap, list and wipe, by either form of the account")
    func keys() async throws {
        let scratch = try Scratch()
        try await scratch.applyExampleBundle()
        try scratch.write("k.txt", "v1")
        #expect(try await scratch.run(["protect", "--owner", "alice@contoso.com", scratch.file("k.txt")]).status == 0)
        #expect(
            try await scratch.run(["keys", "rotate", "--account", "a1f0c7d2-5b1e-4c3a-9e8f-000000000001"]).stdout
                == "\(Self.alice): key version 2\n")
        #expect(
            try await scratch.run(["keys", "rewrap", scratch.file("k.txt")]).stdout
                == "\(scratch.file("k.txt")): key version 1 → 2\n")
        #expect(try await scratch.run(["keys", "list"]).stdout == "\(Self.alice) (alice@contoso.com): versions 1, 2\n")
        let unknown = try await scratch.run(["keys", "rotate", "--account", "erin@fabrikam.com"])
        #expect(unknown.status == 1)
        #expect(unknown.stderr.contains("erin@fabrikam.com is not an account of this installation"))
        #expect(
            try await scratch.run(["wipe", "--account", "Alice@Contoso.com"]).stdout
                == "\(Self.alice): wiped 2 key versions (\(Self.alice): 2) and 0 secrets\n")
        let after = try await scratch.run(["unprotect", scratch.file("k.txt")])
        #expect(after.status == 1)
        #expect(after.stderr.contains("whose keys were wiped at") && after.stderr.contains("can never be opened again"))
        #expect(
            try await scratch.run(["wipe", "--account", "alice@contoso.com"]).stdout.hasPrefix(
                "\(Self.alice): no keys to wipe under \(Self.alice), upn:alice@contoso.com"))
    }

    @Test("a missing or group-readable master key is refused with a message")
    func masterKey() async throws {
        let scratch = try Scratch()
        try await scratch.applyExampleBundle()
        try scratch.write("m.txt", "x")
        let none = try await CLIRunner.run(
            ["protect", "--owner", "alice@contoso.com", "--state", scratch.file("state"), scratch.file("m.txt")],
            environment: ["CUSTODY_MASTER_KEY_FILE": "", "CUSTODY_PASSPHRASE": ""])
        #expect(none.status == 1)
        #expect(none.stderr.contains("no master key"))
        _ = try await scratch.run(["protect", "--owner", "alice@contoso.com", scratch.file("m.txt")])
        #expect(FileManager.default.fileExists(atPath: scratch.file("master.key")))
        try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: scratch.file("master.key"))
        let open = try await scratch.run(["unprotect", scratch.file("m.txt")])
        #expect(open.status == 1)
        #expect(open.stderr.contains("may be read by its group or others (mode 640); run chmod 600"))
    }
}

extension TemporaryDirectory {
    /// Runs `custody` with this directory's state and master key.
    func run(_ arguments: [String], stdin: String = "") async throws -> CLIRunner.Result {
        try await CLIRunner.run(
            arguments + ["--state", file("state")], stdin: stdin,
            environment: ["CUSTODY_MASTER_KEY_FILE": file("master.key")])
    }

    /// `run`, waiting on the calling thread: for code already on a thread of its own.
    func runBlocking(_ arguments: [String], stdin: String = "") throws -> CLIRunner.Result {
        try CLIRunner.runBlocking(
            arguments + ["--state", file("state")], stdin: stdin,
            environment: ["CUSTODY_MASTER_KEY_FILE": file("master.key")])
    }

    /// Makes the example bundle (`policies/`) the policy in force of this directory's state.
    func applyExampleBundle() async throws {
        let result = try await run(["apply", "--bundle", CLIRunner.packageRoot + "/policies", "--platform", "ios"])
        #expect(result.status == 0, "\(result.stderr)")
    }
}
