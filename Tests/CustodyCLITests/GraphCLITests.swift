import CustodyStore
import CustodyTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("custody graph sync: arguments and secrets", .timeLimit(.minutes(1)))
struct GraphCLITests {
    typealias Scratch = ProtectionCLITests.Scratch

    @Test(
        "refused before any request: a secret file others may read, no destination, both destinations, no credential, plain http to another host",
        arguments: [
            (["--client-secret-file", "open.secret", "--out", "b"], 1, "may be read by others"),
            (["--client-secret-file", "secret"], 64, "give one of --out DIR"),
            (["--client-secret-file", "secret", "--out", "b", "--state", "s"], 64, "give one of --out DIR"),
            (["--out", "b"], 64, "--client-secret-file FILE"),
            (
                ["--client-secret-file", "secret", "--out", "b", "--graph-url", "http://graph.example.com/beta"], 1,
                "must be https"
            ),
            (["--certificate", "c.pem", "--out", "b"], 64, "--certificate and --private-key go together"),
        ] as [([String], Int32, String)])
    func refused(arguments: [String], status: Int32, message: String) async throws {
        let scratch = try Scratch()
        _ = try scratch.write("open.secret", "s3cret")
        _ = try scratch.write("secret", "s3cret")
        chmod(scratch.file("secret"), 0o600)
        chmod(scratch.file("open.secret"), 0o644)
        let resolved = arguments.map {
            ["open.secret", "secret", "b", "s", "c.pem"].contains($0) ? scratch.file($0) : $0
        }
        let result = try await CLIRunner.run(
            ["graph", "sync", "--tenant-id", "contoso", "--client-id", "app"] + resolved,
            environment: ["CUSTODY_GRAPH_CLIENT_SECRET": ""])
        #expect(result.status == status, "\(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(!result.stderr.contains("s3cret"), "the secret is never shown")
        #expect(!FileManager.default.fileExists(atPath: scratch.file("b")))
    }
}

@Suite(
    "custody graph sync against a Graph-shaped tenant (scripts/graph/tenant-server.py)", .serialized,
    .timeLimit(.minutes(2)))
struct GraphCLISyncTests {
    typealias Scratch = ProtectionCLITests.Scratch

    /// Runs the Python tenant server for `body` (its base URL).
    static func serving(_ body: @escaping @Sendable (String) async throws -> Void) async throws {
        let scratch = try Scratch()
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", CLIRunner.packageRoot + "/scripts/graph/tenant-server.py", "200", "4", "2",
            CLIRunner.packageRoot,
        ]
        let portFile = scratch.file("port")
        _ = FileManager.default.createFile(atPath: portFile, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: portFile))
        process.standardError = FileHandle.nullDevice
        try process.run()
        // The server's own process id (its second line): `python3` may be a shim that starts
        // the interpreter as a child, which stopping the shim would leave running.
        var server: (port: Int, pid: Int32)?
        defer {
            process.terminate()
            if let server { kill(server.pid, SIGKILL) }
        }
        for _ in 0..<100 where server == nil {
            try await Task.sleep(for: .milliseconds(50))
            let lines = ((try? String(contentsOfFile: portFile, encoding: .utf8)) ?? "").split(separator: "\n")
            if lines.count >= 2, let port = Int(lines[0]), let pid = Int32(lines[1]) { server = (port, pid) }
        }
        try await body("http://127.0.0.1:\(try #require(server).port)")
    }

    @Test(
        "--state applies the tenant's bundle (source graph:TENANT@HOST); --out refuses to replace a directory that is not a bundle"
    )
    func stateAndOut() async throws {
        let scratch = try Scratch()
        _ = try scratch.write("secret", "anything")
        chmod(scratch.file("secret"), 0o600)
        try await Self.serving { base in
            let common = [
                "graph", "sync", "--tenant-id", "contoso", "--client-id", "app", "--client-secret-file",
                scratch.file("secret"), "--authority", base,
                "--graph-url", base + "/beta",
            ]
            let applied = try await CLIRunner.run(
                common + ["--state", scratch.file("state")],
                environment: ["CUSTODY_MASTER_KEY_FILE": scratch.file("master.key")])
            #expect(applied.status == 0, "\(applied.stderr)")
            #expect(applied.stdout.hasPrefix("applied graph:contoso@127.0.0.1: "), "\(applied.stdout)")
            let again = try await CLIRunner.run(
                common + ["--state", scratch.file("state")],
                environment: ["CUSTODY_MASTER_KEY_FILE": scratch.file("master.key")])
            #expect(again.stdout.hasPrefix("already in force"), "an unchanged tenant: \(again.stdout)")
            #expect(again.stderr.contains("(0 member listings read, by delta)"), "by delta: \(again.stderr)")

            // While another process syncs (holds the lease), a sync is refused, nothing read.
            let other = try CustodyDatabase(path: scratch.file("state"))
            let lease = try await #require(try other.lease("graph-sync"))
            let busy = try await CLIRunner.run(
                common + ["--state", scratch.file("state")],
                environment: ["CUSTODY_MASTER_KEY_FILE": scratch.file("master.key")])
            #expect(busy.status == 1)
            #expect(
                busy.stderr.contains("another process or replica on this state is syncing from Graph now"),
                "\(busy.stderr)")
            await lease.release()

            try FileManager.default.createDirectory(
                atPath: scratch.file("victim/sub"), withIntermediateDirectories: true)
            _ = try scratch.write("victim/notes.txt", "important")
            let refused = try await CLIRunner.run(common + ["--out", scratch.file("victim")])
            #expect(refused.status == 1)
            #expect(refused.stderr.contains("not a bundle file"), "\(refused.stderr)")
            #expect(try scratch.read("victim/notes.txt") == "important")
            let written = try await CLIRunner.run(common + ["--out", scratch.file("bundle")])
            #expect(written.status == 0, "\(written.stderr)")
            let replaced = try await CLIRunner.run(common + ["--out", scratch.file("bundle")])
            #expect(replaced.status == 0, "a bundle directory is replaced: \(replaced.stderr)")
        }
    }
}

@Suite("custody serve --graph", .serialized, .timeLimit(.minutes(2)))
struct GraphServeCLITests {
    typealias Scratch = ProtectionCLITests.Scratch

    @Test(
        "refused before anything is opened: --graph with --bundle, --graph-interval alone or out of range, a configuration that does not hold",
        arguments: [
            (["--graph", "graph.json", "--bundle", "policies"], Int32(64), "--graph and --bundle exclude each other"),
            (["--graph-interval", "60"], 64, "--graph-interval needs --graph FILE"),
            (["--graph", "graph.json", "--graph-interval", "5"], 64, "--graph-interval must be between 10 and 86400"),
            (["--graph", "missing.json"], 1, "error: --graph: cannot read the Graph configuration"),
            (["--graph", "inline-secret.json"], 1, "a secret is not kept in the configuration"),
        ])
    func refused(arguments: [String], status: Int32, message: String) async throws {
        let scratch = try Scratch()
        _ = try scratch.write("inline-secret.json", #"{"tenantId":"t","clientId":"c","clientSecret":"x"}"#)
        let result = try await CLIRunner.run(
            ["serve", "--state", scratch.file("state"), "--listen", "127.0.0.1:0", "--without-keys"]
                + arguments.map { $0.hasSuffix(".json") ? scratch.file($0) : $0 })
        #expect(result.status == status, "\(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: scratch.file("state")), "nothing was opened")
    }

    @Test(
        "serve --graph syncs the tenant at start: /readyz reports the sync, the policy in force is the tenant's, and POST /v1/graph/sync finds it unchanged"
    )
    func serves() async throws {
        let scratch = try Scratch()
        _ = try scratch.write("secret", "anything")
        chmod(scratch.file("secret"), 0o600)
        let token = try #require(
            try await CLIRunner.run(["tokens", "create", "--scope", "admin", "--state", scratch.file("state")])
                .stdoutLines
                .last)
        try await GraphCLISyncTests.serving { base in
            _ = try scratch.write(
                "graph.json",
                #"{"tenantId":"contoso","clientId":"app","clientSecretFile":"secret","authority":"\#(base)","graphUrl":"\#(base)/beta"}"#
            )
            let server = try await ServeProcess(
                [
                    "--state", scratch.file("state"), "--graph", scratch.file("graph.json"), "--platform", "ios",
                    "--without-keys",
                ], log: scratch.file("serve.log"))
            let address = server.address
            var readiness: [String: Any] = [:]
            for _ in 0..<200 {
                let (data, _) = try await URLSession.shared.data(from: URL(string: address + "/readyz")!)
                readiness = (try JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
                if readiness["status"] as? String == "ready",
                    (readiness["graph"] as? [String: Any])?["status"] as? String != "pending"
                {
                    break
                }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(readiness["status"] as? String == "ready", "\(readiness)")
            let graph = readiness["graph"] as? [String: Any]
            #expect(graph?["status"] as? String == "ok")
            #expect((graph?["last"] as? [String: Any])?["source"] as? String == "graph:contoso@127.0.0.1")

            var request = URLRequest(url: URL(string: address + "/v1/graph/sync")!)
            request.httpMethod = "POST"
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            let (data, response) = try await URLSession.shared.data(for: request)
            #expect((response as? HTTPURLResponse)?.statusCode == 200, "\(String(decoding: data, as: UTF8.self))")
            #expect(
                (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["status"] as? String == "unchanged")
            #expect(server.stop() == 0, "stops cleanly, its Graph client shut down: \(server.output)")
        }
    }
}
