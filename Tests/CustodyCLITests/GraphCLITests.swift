import CustodyTestSupport
import Foundation
import Testing

@Suite("custody graph sync: arguments and secrets", .timeLimit(.minutes(1)))
struct GraphCLITests {
    typealias Scratch = ProtectionCLITests.Scratch

    @Test("refused before any request: a secret file others may read, no destination, both destinations, no credential, plain http to another host", arguments: [
        (["--client-secret-file", "open.secret", "--out", "b"], 1, "may be read by others"),
        (["--client-secret-file", "secret"], 64, "give one of --out DIR"),
        (["--client-secret-file", "secret", "--out", "b", "--state", "s"], 64, "give one of --out DIR"),
        (["--out", "b"], 64, "--client-secret-file FILE"),
        (["--client-secret-file", "secret", "--out", "b", "--graph-url", "http://graph.example.com/beta"], 1, "must be https"),
        (["--certificate", "c.pem", "--out", "b"], 64, "--certificate and --private-key go together"),
    ] as [([String], Int32, String)])
    func refused(arguments: [String], status: Int32, message: String) throws {
        let scratch = try Scratch()
        _ = try scratch.write("open.secret", "s3cret")
        _ = try scratch.write("secret", "s3cret")
        chmod(scratch.file("secret"), 0o600)
        chmod(scratch.file("open.secret"), 0o644)
        let resolved = arguments.map { ["open.secret", "secret", "b", "s", "c.pem"].contains($0) ? scratch.file($0) : $0 }
        let result = try CLIRunner.run(["graph", "sync", "--tenant-id", "contoso", "--client-id", "app"] + resolved, environment: ["CUSTODY_GRAPH_CLIENT_SECRET": ""])
        #expect(result.status == status, "\(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(!result.stderr.contains("s3cret"), "the secret is never shown")
        #expect(!FileManager.default.fileExists(atPath: scratch.file("b")))
    }
}
