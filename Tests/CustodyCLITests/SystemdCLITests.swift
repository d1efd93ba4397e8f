import CustodyTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `custody serve` as systemd runs it: the listening socket passed by socket activation
/// (sd_listen_fds(3), through Debian's `systemd-socket-activate`, which passes sockets as
/// systemd does), readiness, reload and stop said over the notify socket (sd_notify(3), read
/// here from a socket of the test's own), and its options from `--config`.
@Suite("custody serve under systemd", .serialized, .timeLimit(.minutes(2)))
struct SystemdCLITests {
    static let activator = "/usr/bin/systemd-socket-activate"

    /// A datagram socket standing in for systemd's notify socket: what the service sends it.
    final class NotifySocket: @unchecked Sendable {
        let path: String
        private let descriptor: Int32
        private(set) var received: [String] = []

        init(path: String) throws {
            self.path = path
            descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                raw.copyBytes(from: Array(path.utf8))
            }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            guard bound == 0 else { throw POSIXError(.EADDRINUSE) }
        }

        deinit { close(descriptor) }

        /// Waits up to `seconds` for a message containing `text`; every message read is kept.
        func wait(for text: String, seconds: Double = 30) -> String? {
            if let seen = received.first(where: { $0.contains(text) }) { return seen }
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                guard poll(&poller, 1, 100) > 0 else { continue }
                var buffer = [UInt8](repeating: 0, count: 4_096)
                let count = recv(descriptor, &buffer, buffer.count, 0)
                guard count > 0 else { continue }
                let message = String(decoding: buffer[..<count], as: UTF8.self)
                received.append(message)
                if message.contains(text) { return message }
            }
            return nil
        }
    }

    /// `custody serve ARGUMENTS` started by `systemd-socket-activate` listening on `listen`
    /// (each a HOST:PORT or a socket path), its notifications sent to `notify`.
    static func activated(
        _ arguments: [String], listen: [String], notify: NotifySocket?, log: String, extra: [String] = []
    ) throws -> ChildProcess {
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: activator)
        process.arguments =
            listen.flatMap { ["-l", $0] } + extra + (notify.map { ["-E", "NOTIFY_SOCKET=\($0.path)"] } ?? [])
            + [CLIRunner.executable, "serve"] + arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        try process.run()
        // systemd-socket-activate says "Listening on … as N." once each socket is open.
        for _ in 0..<200 {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            if text.components(separatedBy: "Listening on ").count > listen.count || !process.isRunning { break }
            Thread.sleep(forTimeInterval: 0.025)
        }
        return process
    }

    static func freePort() -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                _ = bind(descriptor, $0, length)
                return getsockname(descriptor, $0, &length)
            }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// One HTTP/1.1 request over a Unix socket; the status line of the answer.
    static func statusLine(unixSocket path: String, target: String) -> String? {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else { return nil }
        let request = Array("GET \(target) HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".utf8)
        guard write(descriptor, request, request.count) == request.count else { return nil }
        let answer = String(decoding: CLIRunner.readToEnd(descriptor), as: UTF8.self)
        return answer.split(separator: "\r\n").first.map(String.init)
    }

    /// A connection to, or a datagram sent to, 127.0.0.1:`port`, and nothing else.
    static func poke(port: Int, datagram: Bool) {
        let descriptor = socket(AF_INET, Int32((datagram ? SOCK_DGRAM : SOCK_STREAM).rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if datagram { _ = send(descriptor, "x", 1, 0) }
    }

    static func httpStatus(_ url: String) async -> Int? {
        guard let (_, response) = try? await URLSession.shared.data(from: URL(string: url)!) else { return nil }
        return (response as? HTTPURLResponse)?.statusCode
    }

    static func readyRevision(_ port: Int) async -> String? {
        guard let (data, _) = try? await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/readyz")!),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return nil }
        return object["revision"] as? String
    }

    @Test(
        "socket-activated: serves the passed TCP and Unix sockets, READY=1 with the revision, SIGHUP reloads the bundle, SIGTERM stops with STOPPING=1",
        .enabled(
            if: FileManager.default.isExecutableFile(atPath: activator),
            "needs systemd-socket-activate (Debian's systemd)"))
    func socketActivated() async throws {
        let scratch = try TemporaryDirectory()
        let bundle = scratch.file("bundle")
        try FileManager.default.copyItem(atPath: CLIRunner.packageRoot + "/policies", toPath: bundle)
        let notify = try NotifySocket(path: scratch.file("notify"))
        let port = Self.freePort()
        let unixPath = scratch.file("custody.sock")
        let process = try Self.activated(
            ["--state", scratch.file("state"), "--bundle", bundle, "--platform", "ios", "--without-keys"],
            listen: ["127.0.0.1:\(port)", unixPath], notify: notify, log: scratch.file("serve.log"),
            extra: ["--fdname=http:local"])
        defer { if process.isRunning { process.terminate() } }
        let log = { (try? String(contentsOfFile: scratch.file("serve.log"), encoding: .utf8)) ?? "" }

        // The socket accepts before the service does: the request waits, then is answered.
        #expect(await Self.httpStatus("http://127.0.0.1:\(port)/readyz") == 200, "\(log())")
        let ready = try #require(notify.wait(for: "READY=1"), "no READY=1: \(notify.received) \(log())")
        let applied = try #require(await Self.readyRevision(port))
        #expect(ready == "READY=1\nSTATUS=serving revision \(applied) on 127.0.0.1:\(port), unix:\(unixPath)")
        #expect(Self.statusLine(unixSocket: unixPath, target: "/healthz") == "HTTP/1.1 200 OK")
        #expect(log().contains("custody serve: http on 127.0.0.1:\(port), unix:\(unixPath), revision \(applied)"))

        // A change to the directory, then SIGHUP: reloading, then ready with the new revision.
        try scratch.write(
            "bundle/tenant.json", try String(contentsOfFile: bundle + "/tenant.json", encoding: .utf8) + "\n")
        kill(process.processIdentifier, SIGHUP)
        let reloading = try #require(notify.wait(for: "RELOADING=1"), "\(notify.received)")
        #expect(reloading.hasPrefix("RELOADING=1\nMONOTONIC_USEC="))
        let reloaded = try #require(notify.wait(for: "STATUS=reload"), "\(notify.received) \(log())")
        let now = try #require(await Self.readyRevision(port))
        #expect(now != applied)
        // Applied by the reload, or (on a slow run) by the directory's watcher a moment before.
        #expect(
            reloaded == "READY=1\nSTATUS=reload: applied \(bundle); serving revision \(now)"
                || reloaded == "READY=1\nSTATUS=reload: \(bundle) unchanged; serving revision \(now)", "\(reloaded)")

        // A broken edit, then SIGHUP: refused, the policy in force stays, still ready.
        try scratch.write("bundle/tenant.json", "{")
        kill(process.processIdentifier, SIGHUP)
        let refused = try #require(notify.wait(for: "refused"), "\(notify.received)")
        #expect(refused.hasPrefix("READY=1\nSTATUS=reload: \(bundle) refused ("))
        #expect(refused.hasSuffix("; revision \(now) stays in force"))
        #expect(await Self.readyRevision(port) == now)

        let started = Date()
        process.terminate()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(log())")
        #expect(Date().timeIntervalSince(started) < 10)
        #expect(notify.wait(for: "STOPPING=1") != nil, "\(notify.received)")
    }

    /// Sockets `custody serve` cannot serve, passed as systemd would pass them; what it says.
    static let badSockets: [(flags: [String], arguments: [String], message: String)] = [
        (["--datagram"], [], "is not a stream socket"),
        ([], ["--listen", "127.0.0.1:0"], "remove --listen and --unix-socket"),
    ]

    @Test(
        "socket-activated with a socket it cannot serve, or with --listen beside it: refused at start, naming it",
        .enabled(
            if: FileManager.default.isExecutableFile(atPath: activator),
            "needs systemd-socket-activate (Debian's systemd)"),
        arguments: badSockets)
    func refusedSockets(flags: [String], arguments: [String], message: String) async throws {
        let scratch = try TemporaryDirectory()
        let port = Self.freePort()
        let process = try Self.activated(
            ["--state", scratch.file("state"), "--platform", "ios", "--without-keys"] + arguments,
            listen: ["127.0.0.1:\(port)"], notify: nil, log: scratch.file("serve.log"), extra: flags)
        // systemd-socket-activate starts the service at the first connection or datagram.
        let deadline = Date().addingTimeInterval(20)
        while process.isRunning && Date() < deadline {
            Self.poke(port: port, datagram: flags.contains("--datagram"))
            try await Task.sleep(for: .milliseconds(200))
        }
        let log = (try? String(contentsOfFile: scratch.file("serve.log"), encoding: .utf8)) ?? ""
        #expect(!process.isRunning, "\(log)")
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        #expect(process.terminationStatus == 1, "\(log)")
        #expect(log.contains(message), "\(log)")
    }

    /// Configuration files `serve --config` refuses, and what it says (the line, the key).
    static let badConfigurations: [(text: String, message: String)] = [
        (
            "{\n  \"state\": \"s\",\n  \"lisen\": \"127.0.0.1:1\"\n}",
            "serve.conf:3: \"lisen\": not an option of custody serve"
        ),
        ("{\n  \"bundle\": \"a\",\n  \"bundle\": \"b\"\n}", "serve.conf:3: \"bundle\": given twice (first on line 2)"),
        ("{\"config\": \"other.conf\"}", "serve.conf:1: \"config\": a configuration file cannot name another"),
        ("{\n\"listen\": {\"host\": \"x\"}}", "serve.conf:2: \"listen\": takes a string, a number or a list of them"),
        ("{\n\"allowed-host\": [true]}", "serve.conf:2: \"allowed-host\": a list takes strings and numbers only"),
        ("{\n  \"state\": \"s\",\n  oops\n}", "serve.conf:3: not JSON"),
        ("[\"--listen\"]", "serve.conf:1: the file must be one JSON object of options"),
        ("{\"max-body\": \"lots\"}", "serve.conf:1: \"max-body\": The value 'lots' is invalid"),
        ("{\n\"max-body\": -5}", "serve.conf:2: \"max-body\": --max-body and --max-batch must be positive"),
        ("{\"listen\": 19011}", "serve.conf:1: \"listen\": --listen must be HOST:PORT"),
        ("{\"graph-interval\": 60}", "serve.conf:1: \"graph-interval\": --graph-interval needs --graph FILE"),
        ("{\"without-keys\": \"yes\"}", "serve.conf:1: \"without-keys\": a flag: true or false"),
        ("{\"bundle\": true}", "serve.conf:1: \"bundle\": takes a string, a number or a list of them"),
        ("{\"help\": true}", "serve.conf:1: \"help\": a command, not a setting"),
        ("{\"print-openapi\": true}", "serve.conf:1: \"print-openapi\": a command, not a setting"),
        ("{\"max body\": 1}", "serve.conf:1: \"max body\": not an option of custody serve"),
    ]

    @Test("serve --config refuses what is not a configuration file: a directory, a device, one over 1 MiB")
    func notAConfigurationFile() async throws {
        let scratch = try TemporaryDirectory()
        try scratch.write("big.conf", "{\"state\": \"" + String(repeating: "a", count: 1 << 20) + "\"}")
        for (path, message) in [
            (scratch.path, "not a regular file"), ("/dev/zero", "not a regular file"),
            (scratch.file("big.conf"), "more than a configuration file holds (1 MiB)"),
            (scratch.file("missing.conf"), "cannot be read: No such file or directory"),
        ] {
            let result = try await scratch.run(["serve", "--config", path, "--without-keys"])
            #expect(
                result.status == 1 && result.stderr.contains("--config \(path): ") && result.stderr.contains(message),
                "\(result.stderr)")
        }
    }

    @Test("serve --config refuses a file it cannot use, naming the line and the key", arguments: badConfigurations)
    func badConfiguration(text: String, message: String) async throws {
        let scratch = try TemporaryDirectory()
        try scratch.write("serve.conf", text)
        let result = try await scratch.run(["serve", "--config", scratch.file("serve.conf"), "--without-keys"])
        #expect(result.status != 0, "\(text)")
        #expect(result.stderr.contains(message), "\(text): \(result.stderr)")
    }

    @Test("serve --config: the file's options apply, and one given on the command line wins over the file's")
    func configurationFile() async throws {
        let scratch = try TemporaryDirectory()
        // The file's --listen (a port no test can bind) loses to the command line's; its
        // --allowed-host and --state are used.
        try scratch.write(
            "serve.conf",
            """
            {
              "listen": "127.0.0.1:1",
              "state": "\(scratch.file("state"))",
              "allowed-host": ["custody.example"],
              "platform": "ios",
              "without-keys": true
            }
            """)
        let server = try await ServeProcess(
            ["--config", scratch.file("serve.conf")], log: scratch.file("serve.log"))
        defer { server.stop() }
        var request = URLRequest(url: URL(string: server.address + "/healthz")!)
        request.setValue("custody.example", forHTTPHeaderField: "Host")
        let (_, allowed) = try await URLSession.shared.data(for: request)
        #expect((allowed as? HTTPURLResponse)?.statusCode == 200, "the file's allowed-host: \(server.output)")
        request.setValue("elsewhere.example", forHTTPHeaderField: "Host")
        let (_, other) = try await URLSession.shared.data(for: request)
        #expect((other as? HTTPURLResponse)?.statusCode == 421)
        #expect(FileManager.default.fileExists(atPath: scratch.file("state")), "the file's --state")
    }
}
