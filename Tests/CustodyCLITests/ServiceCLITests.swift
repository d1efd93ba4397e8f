import CustodyTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("custody tokens and custody serve", .serialized, .timeLimit(.minutes(2)))
struct ServiceCLITests {
    typealias Scratch = TemporaryDirectory

    @Test("tokens create prints the token alone on its last line, once; list never shows it; revoke takes its id")
    func tokens() async throws {
        let scratch = try Scratch()
        let created = try await scratch.run([
            "tokens", "create", "--scope", "decide", "--scope", "read", "--name", "mail gateway",
        ])
        #expect(created.status == 0)
        let token = try #require(created.stdoutLines.last)
        #expect(created.stdoutLines.count == 1)
        #expect(token.hasPrefix("custody_") && token.count == 8 + 16 + 1 + 64)
        let id = String(token.dropFirst(8).prefix(16))
        let list = try await scratch.run(["tokens", "list"])
        #expect(list.stdout.hasPrefix("\(id)\tdecide read\tmail gateway\tcreated "))
        #expect(!list.stdout.contains(String(token.suffix(64))))
        #expect(try await scratch.run(["tokens", "revoke", id]).stdout == "revoked \(id)\n")
        #expect(try await scratch.run(["tokens", "list"]).stdout.contains("\trevoked "))
        let again = try await scratch.run(["tokens", "revoke", id])
        #expect(again.status == 1)
        let bad = try await scratch.run(["tokens", "create", "--scope", "everything"])
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("unknown scope 'everything'"))
    }

    /// `--expires` values refused (exit 64), and what is said.
    static let badExpiries: [(value: String, message: String)] = [
        ("tomorrow", "--expires takes a lifetime (30d, 12h, 90m, 3600s, 2w) or a time with its offset"),
        ("0d", "--expires takes a lifetime"),
        ("-5m", "--expires takes a lifetime"),
        ("2020-01-01T00:00:00Z", "--expires 2020-01-01T00:00:00Z has passed"),
        ("2030-01-01", "--expires takes a lifetime"),
        ("3661d", "--expires 3661d is more than ten years"),
        ("99999999d", "is more than ten years"),
        ("9223372036854775807s", "is more than ten years"),
        ("2999-01-01T00:00:00Z", "--expires 2999-01-01T00:00:00Z is more than ten years away"),
    ]

    @Test("tokens create --expires refuses what is not a lifetime or a later time", arguments: badExpiries)
    func badExpiry(value: String, message: String) async throws {
        let result = try await Scratch().run(["tokens", "create", "--scope", "read", "--expires=\(value)"])
        #expect(result.status == 64, "\(value): \(result.stderr)")
        #expect(result.stderr.contains(message), "\(value): \(result.stderr)")
    }

    @Test(
        "a token that expires: listed with its expiry and last use; refused with 401 token-expired once past it; rotate issues a successor and ends the old one after the overlap"
    )
    func expiringTokens() async throws {
        let scratch = try Scratch()
        func create(_ arguments: [String]) async throws -> String {
            let created = try await scratch.run(["tokens", "create", "--scope", "read"] + arguments)
            #expect(created.status == 0, "\(created.stderr)")
            return try #require(created.stdoutLines.last)
        }
        let shortLived = try await create(["--expires", "3s", "--name", "short"])
        let lasting = try await create(["--expires", "2035-01-01T00:00:00Z", "--name", "lasting"])
        let id = { (token: String) in String(token.dropFirst(8).prefix(16)) }
        let listed = try await scratch.run(["tokens", "list"]).stdout
        #expect(listed.contains("\(id(lasting))\tread\tlasting\tcreated "), "\(listed)")
        #expect(listed.contains("\tvalid\texpires 2035-01-01T00:00:00Z\tnever used"), "\(listed)")

        let server = try await ServeProcess(
            ["--state", scratch.file("state"), "--platform", "ios", "--without-keys"], log: scratch.file("serve.log"))
        defer { server.stop() }
        func status(_ token: String) async throws -> (Int, String) {
            var request = URLRequest(url: URL(string: server.address + "/v1/bundle")!)
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            let (data, response) = try await URLSession.shared.data(for: request)
            let http = try #require(response as? HTTPURLResponse)
            let code = (try? JSONSerialization.jsonObject(with: data) as? [String: Any])?["code"] as? String ?? ""
            return (http.statusCode, code + " " + (http.value(forHTTPHeaderField: "WWW-Authenticate") ?? ""))
        }
        // Valid while it lasts (no bundle in force: 404 or 503, not 401), then refused as expired.
        #expect(try await status(shortLived).0 != 401)
        try await Task.sleep(for: .seconds(3.2))
        let (code, said) = try await status(shortLived)
        #expect(code == 401)
        #expect(said.hasPrefix("token-expired Bearer realm=\"custody\", error=\"invalid_token\""), "\(said)")
        #expect(try await scratch.run(["tokens", "list"]).stdout.contains("\(id(shortLived))\tread\tshort\tcreated "))
        #expect(try await scratch.run(["tokens", "list"]).stdout.contains("\texpired "))

        // Rotation: the successor works at once; the old token until the overlap ends (0s: now).
        let rotated = try await scratch.run(["tokens", "rotate", id(lasting), "--overlap", "0s"])
        #expect(rotated.status == 0, "\(rotated.stderr)")
        let successor = try #require(rotated.stdoutLines.last)
        #expect(rotated.stderr.contains("token \(id(lasting)) is valid until "), "\(rotated.stderr)")
        #expect(rotated.stderr.contains("its successor \(id(successor)) expires "), "\(rotated.stderr)")
        #expect(try await status(successor).0 != 401)
        // The service hears of the rotation through the change log within a second or two.
        var old = (0, "")
        for _ in 0..<50 {
            old = try await status(lasting)
            if old.0 == 401 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(old.0 == 401 && old.1.hasPrefix("token-expired"), "\(old)")
        let list = try await scratch.run(["tokens", "list"]).stdout
        #expect(list.contains("\(id(successor))\tread\tlasting\tcreated "), "\(list)")
        #expect(list.contains("last used "), "the successor's use is recorded: \(list)")
        let again = try await scratch.run(["tokens", "rotate", id(lasting)])
        #expect(again.status == 1 && again.stderr.contains("no valid token \(id(lasting))"), "\(again.stderr)")
        // A token in its overlap, rotated a second time: refused, its successor is the one.
        let overlapping = try await scratch.run(["tokens", "rotate", id(successor), "--overlap", "1h"])
        #expect(overlapping.status == 0, "\(overlapping.stderr)")
        let twice = try await scratch.run(["tokens", "rotate", id(successor), "--overlap", "1h"])
        #expect(twice.status == 1 && twice.stderr.contains("rotated already"), "\(twice.stderr)")
    }

    /// Where `tokens create` cannot deliver the token: a full device, and a pipe nobody reads
    /// (with SIGPIPE ignored, as some parents run commands); the reason `strerror` gives.
    static let lostTokens: [(output: String, reason: String)] = [
        ("/dev/full", "No space left on device"),
        ("a pipe whose reader closed", "Broken pipe"),
    ]

    @Test(
        "a token that could not be written out is revoked, and said: it is never left valid with nobody holding it",
        arguments: lostTokens)
    func lostToken(output: String, reason: String) async throws {
        let scratch = try Scratch()
        let standardOutput: FileHandle
        if output.hasPrefix("/") {
            standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        } else {
            // The reader is closed before the command starts: its write cannot reach anyone.
            var descriptors: [Int32] = [0, 0]
            #expect(pipe(&descriptors) == 0)
            close(descriptors[0])
            standardOutput = FileHandle(fileDescriptor: descriptors[1], closeOnDealloc: true)
        }
        let (status, said) = try await CLIRunner.run(
            [
                "-c", #"trap "" PIPE; exec "$0" "$@""#, CLIRunner.executable, "tokens", "create", "--scope", "read",
                "--state", scratch.file("state"),
            ], standardOutput: standardOutput, executable: "/bin/sh")
        #expect(status == 1, "\(said)")
        let id = try #require(said.firstMatch(of: /created token ([0-9a-f]{16})/)?.1)
        #expect(
            said.hasSuffix(
                "error: writing standard output failed: \(reason); token \(id) was revoked, since nobody received it\n"),
            "\(said)")
        let list = try await scratch.run(["tokens", "list"])
        #expect(list.stdout.hasPrefix("\(id)\tread\t"))
        #expect(list.stdout.contains("\trevoked "), "\(list.stdout)")
    }

    static let badListen: [(value: String, message: String)] = [
        ("8080", "--listen must be HOST:PORT"),
        ("127.0.0.1:", "--listen must be HOST:PORT"),
        ("127.0.0.1:65536", "--listen must be HOST:PORT"),
        ("127.0.0.1:-1", "--listen must be HOST:PORT"),
        (":8080", "--listen must name a host"),
        ("[]:8080", "--listen must name a host"),
    ]

    @Test(
        "serve --listen that is not HOST:PORT with a port in 0...65535 is a usage error naming the option",
        arguments: badListen)
    func listenValues(value: String, message: String) async throws {
        let result = try await TemporaryDirectory().run([
            "serve", "--listen", value, "--platform", "ios", "--without-keys",
        ])
        #expect(result.status == 64, "\(value): \(result.stderr)")
        #expect(result.stderr.contains(message), "\(value): \(result.stderr)")
    }

    @Test("serve --listen HOST:0 takes a free port and announces the one it bound")
    func listenAnyPort() async throws {
        let scratch = try Scratch()
        let server = try await ServeProcess(
            ["--state", scratch.file("state"), "--platform", "ios", "--without-keys"], log: scratch.file("serve.log"))
        let bound = server.port
        #expect(bound > 0)
        let (_, response) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(bound)/healthz")!)
        #expect((response as? HTTPURLResponse)?.statusCode == 200, "the announced port answers")
    }

    @Test("serve --print-openapi prints docs/openapi.json")
    func openAPI() async throws {
        let printed = try await CLIRunner.run(["serve", "--print-openapi"])
        #expect(printed.status == 0)
        let same =
            printed.stdout == (try String(contentsOfFile: TestPaths.package("docs/openapi.json"), encoding: .utf8))
        #expect(
            same,
            "the printed document and docs/openapi.json differ: docs/openapi.json must link to Sources/CustodyServer/Resources/openapi.json, which the build embeds"
        )
    }

    @Test(
        "serve --bundle that replaces the bundle in force says so, naming the revision it replaced, and announces its address once bound"
    )
    func bundleReplacesWarning() async throws {
        let scratch = try Scratch()
        let applied = try await scratch.run([
            "apply", "--bundle", CLIRunner.packageRoot + "/policies", "--platform", "ios",
        ])
        let before = try #require(
            applied.stdout.split(separator: " ").last?.trimmingCharacters(in: .whitespacesAndNewlines))
        let edited = scratch.file("edited")
        try FileManager.default.copyItem(atPath: CLIRunner.packageRoot + "/policies", toPath: edited)
        try scratch.write(
            "edited/tenant.json", try String(contentsOfFile: edited + "/tenant.json", encoding: .utf8) + " ")
        let server = try await ServeProcess(
            ["--state", scratch.file("state"), "--bundle", edited, "--platform", "ios", "--without-keys"],
            log: scratch.file("serve.log"))
        let text = server.output
        #expect(text.contains("warning: --bundle \(edited)"), "\(text)")
        #expect(text.contains("replaced the bundle in force on this state, revision \(before)"), "\(text)")
        #expect(
            text.range(of: "warning: --bundle")!.lowerBound < text.range(of: "custody serve: http on")!.lowerBound,
            "the warning comes before the address is announced: \(text)")
        server.stop()
    }

    @Test("serve answers, and stops cleanly on SIGTERM")
    func serve() async throws {
        let scratch = try Scratch()
        try await scratch.applyExampleBundle()
        let token = try #require(try await scratch.run(["tokens", "create", "--scope", "decide"]).stdoutLines.last)
        let server = try await ServeProcess(
            ["--state", scratch.file("state"), "--platform", "ios", "--without-keys"], log: scratch.file("serve.log"))
        var request = URLRequest(url: URL(string: server.address + "/v1/decisions")!)
        request.httpMethod = "POST"
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        request.httpBody = Data(#"{"action":"print","account":"alice@contoso.com"}"#.utf8)
        var answer: String?
        for _ in 0..<200 where answer == nil {
            if let (data, response) = try? await URLSession.shared.data(for: request),
                (response as? HTTPURLResponse)?.statusCode == 200
            {
                answer = String(decoding: data, as: UTF8.self)
            } else {
                try await Task.sleep(for: .milliseconds(50))
            }
        }
        #expect(answer?.hasPrefix(#"{"action":"print","allowed":false"#) == true, "\(answer ?? "no answer")")
        let status = server.stop()  // SIGTERM
        #expect(!server.process.terminatedBySignal, "it exits on SIGTERM rather than being killed by it")
        #expect(status == 0)
    }
}
