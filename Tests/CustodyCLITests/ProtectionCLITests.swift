import CustodyTestSupport
import Foundation
import Testing

@Suite("custody protect, unprotect, info, keys, wipe")
struct ProtectionCLITests {
    /// A scratch directory with a master key and a state; every command runs against them.
    typealias Scratch = TemporaryDirectory

    @Test("protect and unprotect in place, file to file, and info in text and JSON")
    func roundTrip() throws {
        let scratch = try Scratch()
        try scratch.write("a.txt", "payroll figures\n")
        #expect(try scratch.run(["protect", "--owner", "alice@contoso.com", "--force-encrypt", scratch.file("a.txt")]).status == 0)
        #expect(try scratch.read("a.txt") != "payroll figures\n")
        let info = try CLIRunner.run(["info", scratch.file("a.txt")])
        #expect(info.stdout.contains("owned by upn:alice@contoso.com, encrypted with"))
        #expect(info.stdout.contains("key version 1, 64 KiB chunks"))
        let json = try CLIRunner.run(["info", "--json", scratch.file("a.txt")])
        #expect(json.stdout.contains(#""protected":true,"owner":"upn:alice@contoso.com","encrypted":true"#))
        #expect(try scratch.run(["unprotect", scratch.file("a.txt"), scratch.file("b.txt")]).status == 0)
        #expect(try scratch.read("b.txt") == "payroll figures\n")
        #expect(try scratch.run(["unprotect", scratch.file("a.txt")]).status == 0)
        #expect(try scratch.read("a.txt") == "payroll figures\n")
        #expect(try CLIRunner.run(["info", scratch.file("a.txt")]).stdout == "\(scratch.file("a.txt")): not protected\n")
    }

    @Test("standard input and output stream through")
    func streams() throws {
        let scratch = try Scratch()
        let protected = try scratch.run(["protect", "--owner", "bob@contoso.com", "--force-encrypt", "-", scratch.file("s.env")], stdin: "streamed text")
        #expect(protected.status == 0, "\(protected.stderr)")
        let plain = try scratch.run(["unprotect", scratch.file("s.env"), "-"])
        #expect(plain.stdout == "streamed text")
    }

    @Test("unprotect refuses what is not an envelope, and a damaged one, with exit 1")
    func refusals() throws {
        let scratch = try Scratch()
        try scratch.write("plain.txt", "plain")
        let plain = try scratch.run(["unprotect", scratch.file("plain.txt")])
        #expect(plain.status == 1)
        #expect(plain.stderr == "error: \(scratch.file("plain.txt")): not a protected file (no envelope header); nothing to unprotect\n")
        #expect(try scratch.read("plain.txt") == "plain")

        try scratch.write("d.txt", "secret")
        _ = try scratch.run(["protect", "--owner", "alice@contoso.com", "--force-encrypt", scratch.file("d.txt")])
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: scratch.file("d.txt"))))
        bytes[bytes.count - 3] ^= 1
        try Data(bytes).write(to: URL(fileURLWithPath: scratch.file("d.txt")))
        let damaged = try scratch.run(["unprotect", scratch.file("d.txt")])
        #expect(damaged.status == 1)
        #expect(damaged.stderr.contains("does not authenticate"))
        #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: scratch.file("d.txt")))) == bytes, "left as it was")
        bytes[5] = 77
        try Data(bytes).write(to: URL(fileURLWithPath: scratch.file("d.txt")))
        let header = try CLIRunner.run(["info", scratch.file("d.txt")])
        #expect(header.status == 1)
        #expect(header.stderr.contains("unknown algorithm 77 at byte 5"))
    }

    @Test("the bundle's policy decides encryption; unknown accounts are only tagged")
    func policyDecides() throws {
        let scratch = try Scratch()
        let bundle = CLIRunner.packageRoot + "/policies"
        for (name, owner) in [("alice.txt", "alice@contoso.com"), ("erin.txt", "erin@fabrikam.com")] {
            try scratch.write(name, "data")
            let result = try scratch.run(["protect", "--owner", owner, "--bundle", bundle, "--platform", "ios", scratch.file(name)])
            #expect(result.status == 0, "\(result.stderr)")
        }
        #expect(try CLIRunner.run(["info", scratch.file("alice.txt")]).stdout.contains("owned by oid:a1f0c7d2-5b1e-4c3a-9e8f-000000000001, encrypted"))
        #expect(try CLIRunner.run(["info", scratch.file("erin.txt")]).stdout.contains("owned by upn:erin@fabrikam.com, not encrypted"))
        let forced = try scratch.run(["protect", "--owner", "erin@fabrikam.com", "--bundle", bundle, "--force-encrypt", scratch.file("erin.txt")])
        #expect(forced.status == 1)
        #expect(forced.stderr.contains("is not an account of the policy's tenant"))
    }

    @Test("rotate, rewrap, list and wipe")
    func keys() throws {
        let scratch = try Scratch()
        try scratch.write("k.txt", "v1")
        _ = try scratch.run(["protect", "--owner", "alice@contoso.com", "--force-encrypt", scratch.file("k.txt")])
        #expect(try scratch.run(["keys", "rotate", "--account", "alice@contoso.com"]).stdout == "upn:alice@contoso.com: key version 2\n")
        #expect(try scratch.run(["keys", "rewrap", scratch.file("k.txt")]).stdout == "\(scratch.file("k.txt")): key version 1 → 2\n")
        #expect(try scratch.run(["keys", "list"]).stdout == "upn:alice@contoso.com: versions 1, 2\n")
        #expect(try scratch.run(["wipe", "--account", "alice@contoso.com"]).stdout == "upn:alice@contoso.com: wiped 2 key versions\n")
        let after = try scratch.run(["unprotect", scratch.file("k.txt")])
        #expect(after.status == 1)
        #expect(after.stderr.contains("is not in the key store (wiped"))
        #expect(try scratch.run(["wipe", "--account", "alice@contoso.com"]).stdout == "upn:alice@contoso.com: no keys to wipe\n")
    }

    @Test("a missing or group-readable master key is refused with a message")
    func masterKey() throws {
        let scratch = try Scratch()
        try scratch.write("m.txt", "x")
        let none = try CLIRunner.run(["protect", "--owner", "a@c.com", "--force-encrypt", "--state", scratch.file("state"), scratch.file("m.txt")], environment: ["CUSTODY_MASTER_KEY_FILE": "", "CUSTODY_PASSPHRASE": ""])
        #expect(none.status == 1)
        #expect(none.stderr.contains("no master key"))
        _ = try scratch.run(["keys", "list"])
        #expect(FileManager.default.fileExists(atPath: scratch.file("master.key")))
        try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: scratch.file("master.key"))
        let open = try scratch.run(["keys", "list"])
        #expect(open.status == 1)
        #expect(open.stderr.contains("may be read by its group or others (mode 640); run chmod 600"))
    }
}

extension TemporaryDirectory {
    /// Runs `custody` with this directory's state and master key.
    func run(_ arguments: [String], stdin: String = "") throws -> CLIRunner.Result {
        try CLIRunner.run(arguments + ["--state", file("state")], stdin: stdin, environment: ["CUSTODY_MASTER_KEY_FILE": file("master.key")])
    }
}
