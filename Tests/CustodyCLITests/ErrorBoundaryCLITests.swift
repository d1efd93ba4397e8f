import CustodyTestSupport
import Foundation
import Testing

/// What a command prints when it fails: every command's errors are printed at one place,
/// `custody`'s `main`, the same way.
@Suite("Errors a command lets go")
struct ErrorBoundaryCLITests {
    typealias Scratch = TemporaryDirectory

    /// Commands that need a bundle in force, run on a state that has none, and whether what
    /// they print names that state (a command that decides or protects is told where no bundle
    /// is in force; one that resolves an account is told the account is unknown).
    static let withoutPolicy: [(arguments: [String], namesState: Bool)] = [
        (["decide", "--platform", "ios"], true),
        (["policy", "show", "--account", "a@contoso.com", "--platform", "ios"], true),
        (["protect", "--owner", "a@contoso.com", "IN", "OUT"], true),
        (["checkin", "--account", "a@contoso.com"], false),
        (["config", "show", "--account", "a@contoso.com", "--platform", "ios"], true),
        (["matrix", "table", "--account", "a@contoso.com", "--platform", "ios"], true),
        (["keys", "rotate", "--account", "a@contoso.com"], false),
        (["wipe", "--account", "a@contoso.com"], false),
    ]

    @Test(
        "a command refused by the engine prints one `error:` line that says why (naming the state when no bundle is in force there), exits 1, and ArgumentParser prints nothing",
        arguments: withoutPolicy)
    func engineError(arguments: [String], namesState: Bool) async throws {
        let scratch = try Scratch()
        try scratch.write("IN", "figures")
        // A state that exists and has no bundle in force: made by creating a token in it.
        let made = try await scratch.run(["tokens", "create", "--scope", "decide", "--name", "t"])
        #expect(made.status == 0, "\(made.stderr)")
        let result = try await scratch.run(arguments.map { $0 == "IN" || $0 == "OUT" ? scratch.file($0) : $0 })
        #expect(result.status == 1, "\(arguments): \(result.stderr)")
        #expect(result.stderr.hasPrefix("error: "), "\(arguments): \(result.stderr)")
        #expect(result.stderr.contains("no bundle is in force"), "\(arguments): \(result.stderr)")
        #expect(
            result.stderr.contains("(\(scratch.file("state"))). Apply one with `custody apply --bundle DIR`")
                == namesState, "\(arguments): \(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1, "one line: \(result.stderr)")
        #expect(!result.stderr.contains("Error:"), "ArgumentParser's own report is not added: \(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: scratch.file("OUT")))
    }

    @Test(
        "a library error met outside the engine (a signing key, a public key, a bundle's files) is one `error:` line saying what and where, exit 1"
    )
    func libraryErrors() async throws {
        let scratch = try Scratch()
        try scratch.write("not-a-key", "nothing like a key")
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: scratch.file("not-a-key"))
        let notAKey = scratch.file("not-a-key")
        let cases: [(arguments: [String], says: String)] = [
            (["bundle", "sign", CLIRunner.packageRoot + "/policies", "--key", notAKey], notAKey),
            (
                ["bundle", "verify", scratch.file("no-such-directory"), "--state", scratch.file("state")],
                "no-such-directory"
            ),
            (["trust", "add", "--public-key", "not a public key", "--state", scratch.file("state")], "ed25519:"),
        ]
        for (arguments, says) in cases {
            let result = try await CLIRunner.run(arguments)
            #expect(result.status == 1, "\(arguments): \(result.stderr)")
            #expect(result.stderr.hasPrefix("error: "), "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains(says), "\(arguments): \(result.stderr)")
            #expect(!result.stderr.contains("Error:"), "\(arguments): \(result.stderr)")
        }
    }
}
