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

@Suite("custody graph sync against a Graph-shaped tenant (scripts/graph/tenant-server.py)", .serialized, .timeLimit(.minutes(2)))
struct GraphCLISyncTests {
    typealias Scratch = ProtectionCLITests.Scratch

    /// Runs the Python tenant server for `body` (its base URL).
    static func serving(_ body: (String) throws -> Void) throws {
        let scratch = try Scratch()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", CLIRunner.packageRoot + "/scripts/graph/tenant-server.py", "200", "4", "2", CLIRunner.packageRoot]
        let portFile = scratch.file("port")
        _ = FileManager.default.createFile(atPath: portFile, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: portFile))
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { process.terminate() }
        var port: Int?
        for _ in 0..<100 where port == nil {
            usleep(50_000)
            port = (try? String(contentsOfFile: portFile, encoding: .utf8))?.split(separator: "\n").first.flatMap { Int($0) }
        }
        try body("http://127.0.0.1:\(try #require(port))")
    }

    @Test("--state applies the tenant's bundle (source graph:TENANT@HOST); --out refuses to replace a directory that is not a bundle")
    func stateAndOut() throws {
        let scratch = try Scratch()
        _ = try scratch.write("secret", "anything")
        chmod(scratch.file("secret"), 0o600)
        try Self.serving { base in
            let common = [
                "graph", "sync", "--tenant-id", "contoso", "--client-id", "app", "--client-secret-file", scratch.file("secret"), "--authority", base,
                "--graph-url", base + "/beta",
            ]
            let applied = try CLIRunner.run(common + ["--state", scratch.file("state")], environment: ["CUSTODY_MASTER_KEY_FILE": scratch.file("master.key")])
            #expect(applied.status == 0, "\(applied.stderr)")
            #expect(applied.stdout.hasPrefix("applied graph:contoso@127.0.0.1: "), "\(applied.stdout)")
            let again = try CLIRunner.run(common + ["--state", scratch.file("state")], environment: ["CUSTODY_MASTER_KEY_FILE": scratch.file("master.key")])
            #expect(again.stdout.hasPrefix("already in force"), "an unchanged tenant: \(again.stdout)")

            try FileManager.default.createDirectory(atPath: scratch.file("victim/sub"), withIntermediateDirectories: true)
            _ = try scratch.write("victim/notes.txt", "important")
            let refused = try CLIRunner.run(common + ["--out", scratch.file("victim")])
            #expect(refused.status == 1)
            #expect(refused.stderr.contains("not a bundle file"), "\(refused.stderr)")
            #expect(try scratch.read("victim/notes.txt") == "important")
            let written = try CLIRunner.run(common + ["--out", scratch.file("bundle")])
            #expect(written.status == 0, "\(written.stderr)")
            let replaced = try CLIRunner.run(common + ["--out", scratch.file("bundle")])
            #expect(replaced.status == 0, "a bundle directory is replaced: \(replaced.stderr)")
        }
    }
}
