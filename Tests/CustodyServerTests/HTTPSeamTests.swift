import Custody
import CustodyPolicy
import CustodyTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import ServiceLifecycle
import Testing

@testable import CustodyServer

/// HTTP that tells the truth, through live sockets: what arrives as bytes a client wrote by
/// hand gets a JSON answer with the status that fits, and connections end when they should.
@Suite("HTTP at the socket", .serialized, .timeLimit(.minutes(3)))
struct HTTPSeamTests {
    /// A request written as bytes, and the statuses it must get (in order; `100` included).
    struct Case: Sendable, CustomTestStringConvertible {
        let label: String
        /// The request; `TOKEN` is replaced by an admin token.
        let request: String
        let statuses: [Int]
        /// The error code of the last answer, when it is an error.
        var code: String? = nil
        /// Whether the server must have closed the connection after answering.
        var closes = false
        var testDescription: String { label }
    }

    static func head(_ method: String, _ path: String, _ fields: String = "") -> String {
        "\(method) \(path) HTTP/1.1\r\nHost: custody\r\nAuthorization: Bearer TOKEN\r\n\(fields)"
    }

    static let query = #"{"action":"print","account":"alice@contoso.com"}"#

    /// Every route that reads a body, with the malformed framings of the issue.
    static let bodyRoutes = [
        ("POST", "/v1/decisions"), ("POST", "/v1/decisions/batch"), ("POST", "/v1/protect?owner=alice@contoso.com"),
        ("POST", "/v1/unprotect"),
        ("POST", "/v1/decisions/receive?receiver=alice@contoso.com"), ("PUT", "/v1/bundle"),
    ]
    /// Each framing, with the status and code it gets: a broken chunk is malformed (400); a
    /// transfer coding the service does not implement is 501 (RFC 9112 §6.1).
    static let framings = [
        ("a chunk size that is not hex", "Transfer-Encoding: chunked\r\n\r\nzz\r\n", 400, "malformed-request"),
        (
            "a chunk size past 64 bits", "Transfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFF\r\n", 400,
            "malformed-request"
        ),
        ("an unknown transfer coding", "Transfer-Encoding: xchunked\r\n\r\nabc", 501, "not-implemented"),
    ]

    static let cases: [Case] =
        bodyRoutes.flatMap { method, path in
            framings.map { label, rest, status, code in
                Case(
                    label: "\(method) \(path): \(label)", request: head(method, path) + rest, statuses: [status],
                    code: code, closes: true)
            }
        } + [
            Case(
                label: "a gzip body without a length: refused, and its bytes are not read as another request",
                request: head("POST", "/v1/decisions", "Content-Encoding: gzip\r\n\r\n") + "\u{1F}\u{8B}\u{08}garbage",
                statuses: [415],
                code: "unsupported-content-encoding", closes: true),
            Case(
                label: "a header field over 16 KiB",
                request:
                    "GET /healthz HTTP/1.1\r\nHost: custody\r\nX-Padding: \(String(repeating: "x", count: 20_000))\r\n\r\n",
                statuses: [431], code: "headers-too-large", closes: true),
            Case(
                label: "more than 100 header fields",
                request: "GET /healthz HTTP/1.1\r\nHost: custody\r\n" + (0..<120).map { "X-\($0): y\r\n" }.joined()
                    + "\r\n", statuses: [431],
                code: "headers-too-large", closes: true),
            Case(
                label: "a wrong method",
                request: head("DELETE", "/v1/decisions", "Content-Length: 0\r\nConnection: close\r\n\r\n"),
                statuses: [405], code: "method-not-allowed"),
            Case(
                label: "GET on a POST route", request: head("GET", "/v1/protect", "Connection: close\r\n\r\n"),
                statuses: [405], code: "method-not-allowed"),
            Case(
                label: "an unknown method", request: head("PURGE", "/v1/bundle", "Connection: close\r\n\r\n"),
                statuses: [501], code: "not-implemented"),
            Case(
                label: "HEAD of a GET route",
                request: "HEAD /healthz HTTP/1.1\r\nHost: custody\r\nConnection: close\r\n\r\n", statuses: [200],
                closes: true),
            Case(
                label: "HTTP/1.0 without keep-alive is answered in HTTP/1.0, then closed",
                request: "GET /healthz HTTP/1.0\r\n\r\n", statuses: [200], closes: true),
            Case(
                label: "Connection: Close in any case closes",
                request: "GET /healthz HTTP/1.1\r\nHost: custody\r\nConnection: Close\r\n\r\n", statuses: [200],
                closes: true),
            Case(
                label: "a lowercase bearer scheme",
                request:
                    "GET /v1/bundle HTTP/1.1\r\nHost: custody\r\nAuthorization: bearer TOKEN\r\nConnection: close\r\n\r\n",
                statuses: [200]),
            Case(
                label: "Expect: 100-continue is answered, then the body is read",
                request: head(
                    "POST", "/v1/decisions",
                    "Expect: 100-continue\r\nContent-Length: \(query.utf8.count)\r\nConnection: close\r\n\r\n") + query,
                statuses: [100, 200]),
            Case(
                label: "Expect: 100-continue with a body over the limit is refused before it is sent",
                request: head("POST", "/v1/decisions", "Expect: 100-continue\r\nContent-Length: 999999999\r\n\r\n"),
                statuses: [413], code: "too-large",
                closes: true),
            // Issue 47, item 14: a declared length over the limit is refused at once, with or
            // without Expect, and the unprotect allowance is that route's alone.
            Case(
                label: "a declared Content-Length over the limit without Expect is refused at once",
                request: head("POST", "/v1/decisions", "Content-Length: 999999999\r\n\r\n"),
                statuses: [413], code: "too-large", closes: true),
            Case(
                label: "Expect: 100-continue with a body just over the limit on a route without an allowance",
                request: head("POST", "/v1/decisions", "Expect: 100-continue\r\nContent-Length: 1048600\r\n\r\n"),
                statuses: [413], code: "too-large", closes: true),
            // Item 12: RFC 9112 §6.1, a transfer coding the service does not implement is 501.
            Case(
                label: "a transfer coding before chunked (gzip, chunked) is not implemented",
                request: head("POST", "/v1/decisions", "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"),
                statuses: [501], code: "not-implemented", closes: true),
            Case(
                label: "an unknown transfer coding before chunked (x-custom, chunked) is not implemented",
                request: head(
                    "POST", "/v1/protect?owner=alice@contoso.com",
                    "Transfer-Encoding: x-custom, chunked\r\n\r\n0\r\n\r\n"),
                statuses: [501], code: "not-implemented", closes: true),
            // Item 15: CONNECT is answered, with its JSON body (NIO's encoder drops the body of
            // any answer to CONNECT), and the connection closed, not left hanging.
            Case(
                label: "CONNECT is not implemented and the connection is closed",
                request: "CONNECT example.com:443 HTTP/1.1\r\nHost: custody\r\n\r\n", statuses: [501],
                code: "not-implemented", closes: true),
        ]
        // Item 15: a method NIO's parser does not know, in a well-formed request line, is one
        // the service does not implement (RFC 9110 §9.1: "An origin server that receives a
        // request method that is unrecognized or not implemented SHOULD respond with the 501
        // (Not Implemented) status code"); a line that is no request line is malformed.
        + [
            ("FOO", "FOO / HTTP/1.1\r\nHost: custody\r\n\r\n", 501, "not-implemented"),
            ("BREW", "BREW /v1/bundle HTTP/1.1\r\nHost: custody\r\nContent-Length: 0\r\n\r\n", 501, "not-implemented"),
            ("X-CUSTOM", "X-CUSTOM /healthz HTTP/1.1\r\nHost: custody\r\n\r\n", 501, "not-implemented"),
            ("a control byte", "G\u{1}T /healthz HTTP/1.1\r\nHost: custody\r\n\r\n", 400, "malformed-request"),
            ("a TLS hello", "\u{16}\u{3}\u{1}\u{2}\u{0}\u{1}\u{0}\r\n\r\n", 400, "malformed-request"),
        ].map { name, request, status, code in
            Case(label: "method \(name)", request: request, statuses: [status], code: code, closes: true)
        } + [
            Case(
                label: "an unknown method after a request on the same connection",
                request: "GET /healthz HTTP/1.1\r\nHost: custody\r\n\r\nFOO / HTTP/1.1\r\nHost: custody\r\n\r\n",
                statuses: [200, 501], code: "not-implemented", closes: true),
            Case(
                label: "an expectation the service cannot meet",
                request: head("POST", "/v1/decisions", "Expect: teapot\r\nContent-Length: 2\r\n\r\n{}"),
                statuses: [417], code: "expectation-failed", closes: true),
            Case(
                label: "a body over the limit on the receive route",
                request: head(
                    "POST", "/v1/decisions/receive?receiver=alice@contoso.com",
                    "Content-Length: 2000000\r\nConnection: close\r\n\r\n"),
                statuses: [413], code: "too-large"),
        ]

    @Test(
        "each request written by hand gets the status that fits, a JSON error, and the connection ends when it should",
        arguments: cases)
    func answered(_ input: Case) async throws {
        let fixture = try await ServiceFixture.make { $0.limits.bodyBytes = 1 << 20 }
        try await fixture.application().test(.live) { client in
            let port = try #require(client.port)
            let request = input.request.replacingOccurrences(of: "TOKEN", with: fixture.tokens[.admin]!)
            // Every case but one closes the connection, which ends the read: the long quiet
            // costs nothing there, and a loaded machine may take seconds to answer.
            let exchange = try await RawHTTP.send(port: port, [request], quiet: .seconds(10))
            #expect(exchange.statuses == input.statuses, "\(exchange.text.prefix(600))")
            if let code = input.code {
                #expect(exchange.lastBody.contains(#""code":"\#(code)""#), "\(exchange.lastBody)")
                #expect(exchange.text.lowercased().contains("content-type: application/json"))
            }
            if input.closes { #expect(exchange.closed, "the connection is closed after the answer") }
            if input.label.hasPrefix("HTTP/1.0") { #expect(exchange.text.hasPrefix("HTTP/1.0 200")) }
            if input.label.hasPrefix("HEAD") { #expect(exchange.lastBody.isEmpty) }
            if input.label.hasPrefix("a wrong method") { #expect(exchange.text.contains("Allow: POST")) }
            let metrics = try await RawHTTP.send(
                port: port, ["GET /metrics HTTP/1.1\r\nHost: custody\r\nConnection: close\r\n\r\n"])
            #expect(!metrics.text.contains(#"status="500""#), "no request was counted as a server error")
        }
    }

    @Test("a body that trickles in is cut at the body deadline with 408, however often it sends a byte")
    func slowBody() async throws {
        let fixture = try await ServiceFixture.make { $0.limits.bodyTimeout = .seconds(1) }
        try await fixture.application().test(.live) { client in
            let port = try #require(client.port)
            let head = Self.head("POST", "/v1/decisions", "Content-Length: 48\r\n\r\n").replacingOccurrences(
                of: "TOKEN", with: fixture.tokens[.decide]!)
            let started = ContinuousClock.now
            let exchange = try await RawHTTP.send(
                port: port, [head] + Array(repeating: " ", count: 6), pause: .milliseconds(400), quiet: .seconds(15))
            #expect(exchange.statuses == [408], "\(exchange.text.prefix(400))")
            #expect(exchange.lastBody.contains(#""code":"body-timeout""#))
            // Cut at its 1 s deadline, not the 60 s default (the client sends for 2.4 s before it
            // reads; a loaded run has taken over 6 s in all).
            #expect(started.duration(to: .now) < .seconds(20))
        }
    }

    @Test("a body that stalls gets its 408, even when the idle timeout is set shorter than the body deadline")
    func stalledBody() async throws {
        let fixture = try await ServiceFixture.make {
            $0.limits.bodyTimeout = .seconds(2)
            $0.limits.idleTimeout = .seconds(1)
        }
        try await fixture.application().test(.live) { client in
            let port = try #require(client.port)
            let head = Self.head("PUT", "/v1/bundle", "Content-Length: 100\r\n\r\n").replacingOccurrences(
                of: "TOKEN", with: fixture.tokens[.admin]!)
            // The 408 closes the connection, which ends the read: the long quiet costs nothing
            // when it comes, and a loaded machine has sent it after more than 5 s.
            let exchange = try await RawHTTP.send(port: port, [head + #"{"files":"#], quiet: .seconds(20))
            #expect(exchange.statuses == [408], "\(exchange.text.prefix(400))")
            #expect(exchange.lastBody.contains(#""code":"body-timeout""#))
        }
    }

    @Test(
        "a head that does not arrive in time gets 408 header-timeout and the connection closes: sent a byte at a time, never sent, or a second request left unfinished",
        arguments: [
            (label: "a byte at a time", parts: ["G", "E", "T", " ", "/", "h"]),
            (label: "nothing", parts: [String]()),
            (label: "an unfinished second request", parts: ["GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", "GET /hea"]),
        ])
    func stalledHead(label: String, parts: [String]) async throws {
        let fixture = try await ServiceFixture.make { $0.limits.headerTimeout = .seconds(1) }
        try await fixture.application().test(.live) { client in
            let port = try #require(client.port)
            let started = ContinuousClock.now
            let exchange = try await RawHTTP.send(port: port, parts, pause: .milliseconds(300), quiet: .seconds(15))
            let expected: [Int] = parts.count == 2 ? [200, 408] : [408]
            #expect(exchange.statuses == expected, "\(label): \(exchange.text.prefix(400))")
            #expect(exchange.lastBody.contains(#""code":"header-timeout""#), "\(label)")
            #expect(started.duration(to: .now) < .seconds(6), "\(label): closed, not held until the idle timeout")
        }
    }

    @Test(
        "a kept-alive connection waiting between requests is not cut by the head deadline (the idle timeout governs it)"
    )
    func idleBetweenRequests() async throws {
        let fixture = try await ServiceFixture.make { $0.limits.headerTimeout = .seconds(1) }
        try await fixture.application().test(.live) { client in
            let port = try #require(client.port)
            let request = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
            let exchange = try await RawHTTP.send(port: port, [request, request], pause: .milliseconds(1_800))
            #expect(exchange.statuses == [200, 200], "\(exchange.text.prefix(400))")
            // Request after request for longer than the deadline: each head is timed from its own
            // first byte, not the connection's.
            let steady = try await RawHTTP.send(
                port: port, Array(repeating: request, count: 8), pause: .milliseconds(300))
            #expect(steady.statuses == Array(repeating: 200, count: 8), "\(steady.text.prefix(400))")
        }
    }

    @Test(
        "at the connection limit a new connection takes the place of the one idle the longest, else of the one whose head has taken over a second; when every one is in a request, it is answered 503 too-many-connections"
    )
    func connectionLimit() async throws {
        let fixture = try await ServiceFixture.make {
            $0.limits.maxConnections = 3
            $0.limits.headerTimeout = .seconds(30)
        }
        try await fixture.application().test(.live) { client in
            let port = try #require(client.port)
            let healthz = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
            func send(_ socket: Int32, _ text: String) {
                let bytes = Array(text.utf8)
                #expect(write(socket, bytes, bytes.count) == bytes.count)
            }
            func closed(_ socket: Int32) -> Bool {
                var buffer = [UInt8](repeating: 0, count: 4_096)
                while true {
                    let read = recv(socket, &buffer, buffer.count, 0)
                    if read <= 0 { return read == 0 }
                }
            }
            var sockets: [Int32] = []
            defer { for socket in sockets { close(socket) } }

            // Three connections that send nothing: idle, the first the longest.
            for _ in 0..<3 {
                sockets.append(try RawHTTP.connected(port: port))
                try await Task.sleep(for: .milliseconds(50))
            }
            var served = try await RawHTTP.send(port: port, [healthz])
            #expect(served.statuses == [200], "a client with something to ask is served: \(served.text.prefix(300))")
            var byte: UInt8 = 0
            #expect(recv(sockets[0], &byte, 1, 0) == 0, "the connection idle the longest was closed")
            for socket in sockets { close(socket) }
            sockets = []
            try await Task.sleep(for: .milliseconds(200))

            // Three that asked once, then send their next head a byte at a time.
            for _ in 0..<3 {
                let socket = try RawHTTP.connected(port: port)
                send(socket, healthz)
                sockets.append(socket)
            }
            try await Task.sleep(for: .milliseconds(200))
            for socket in sockets {
                send(socket, "GET /hea")
                try await Task.sleep(for: .milliseconds(50))
            }
            try await Task.sleep(for: .milliseconds(1_200))
            served = try await RawHTTP.send(port: port, [healthz])
            #expect(served.statuses == [200], "a slow head gives way: \(served.text.prefix(300))")
            #expect(closed(sockets[0]), "the slowest head's connection was closed")
            for socket in sockets { close(socket) }
            sockets = []
            try await Task.sleep(for: .milliseconds(200))

            // Three in a request whose head is complete (a body still to come).
            let head = Self.head("POST", "/v1/decisions", "Content-Length: 100\r\n\r\n").replacingOccurrences(
                of: "TOKEN", with: fixture.tokens[.decide]!)
            for _ in 0..<3 {
                let socket = try RawHTTP.connected(port: port)
                send(socket, head)
                sockets.append(socket)
            }
            try await Task.sleep(for: .milliseconds(1_200))
            let refused = try await RawHTTP.send(port: port, [healthz])
            #expect(refused.statuses == [503], "\(refused.text.prefix(400))")
            #expect(refused.lastBody.contains(#""code":"too-many-connections""#))
            #expect(refused.text.lowercased().contains("retry-after: 1"))
            // One of them ends, and its place serves a new connection.
            close(sockets.removeFirst())
            #expect(
                await eventually(within: .seconds(5)) {
                    (try? await RawHTTP.send(port: port, [healthz]).statuses) == [200]
                })
        }
    }

    @Test("a client that goes away mid-body is counted apart, never as a server error")
    func clientAbort() async throws {
        let fixture = try await ServiceFixture.make()
        try await fixture.application().test(.live) { client in
            let port = try #require(client.port)
            let head = Self.head("POST", "/v1/decisions", "Content-Length: 100\r\n\r\n").replacingOccurrences(
                of: "TOKEN", with: fixture.tokens[.decide]!)
            for _ in 0..<3 { _ = try await RawHTTP.send(port: port, [head + #"{"act"#], closeAfterSending: true) }
            var metrics = ""
            #expect(
                await eventually {
                    metrics =
                        (try? await RawHTTP.send(
                            port: port, ["GET /metrics HTTP/1.1\r\nHost: custody\r\nConnection: close\r\n\r\n"]
                        ).text) ?? ""
                    return metrics.contains("custody_client_aborts_total 3")
                }, "\(metrics.split(separator: "\n").filter { $0.contains("abort") })")
            #expect(!metrics.contains(#"status="500""#))
        }
        #expect(
            !fixture.logs.records.contains { $0.level >= .error },
            "a client's going away is not an error of the service")
    }

    @Test(
        "a client that sends part of a body and half-closes gets a 400 saying so, never a 500",
        arguments: [
            "/v1/decisions", "/v1/protect?owner=alice@contoso.com", "/v1/unprotect",
            "/v1/decisions/receive?receiver=alice@contoso.com",
        ])
    func halfClosed(path: String) async throws {
        let fixture = try await ServiceFixture.make()
        try await fixture.application().test(.live) { client in
            let port = try #require(client.port)
            let head = Self.head("POST", path, "Content-Length: 100\r\n\r\n").replacingOccurrences(
                of: "TOKEN", with: fixture.tokens[.admin]!)
            let exchange = try await RawHTTP.send(port: port, [head + "{\"act"], halfCloseAfterSending: true)
            #expect(exchange.statuses == [400], "\(exchange.text.prefix(300))")
            #expect(exchange.lastBody.contains(#""code":"aborted""#))
            let metrics = try await RawHTTP.send(
                port: port, ["GET /metrics HTTP/1.1\r\nHost: custody\r\nConnection: close\r\n\r\n"])
            #expect(!metrics.text.contains(#"status="500""#))
            #expect(metrics.text.contains("custody_client_aborts_total 1"))
        }
    }

    @Test("a pretty-printed query's error names the line and column where it is")
    func prettyPrintedQuery() async throws {
        let fixture = try await ServiceFixture.make()
        try await fixture.application().test(.router) { client in
            let body = "{\n  \"action\": \"print\",\n  \"account\": tru\n}\n"
            let response = try await client.execute(
                uri: "/v1/decisions", method: .post, headers: fixture.auth(.decide), body: ByteBuffer(string: body))
            #expect(response.status == .badRequest)
            let answer = try object(response)
            #expect(answer["line"] as? Int == 3)
            #expect(answer["column"] as? Int == 14)
        }
    }

    @Test("a taken address is named when the service cannot listen, and nothing says it listens")
    func addressInUse() async throws {
        let fixture = try await ServiceFixture.make { $0.listen = .tcp(host: "127.0.0.1", port: 0) }
        try await fixture.application().test(.live) { client in
            let port = try #require(client.port)
            var second = fixture.configuration
            second.listen = .tcp(host: "127.0.0.1", port: port)
            let announced = Locked<[String]>([])
            let error = await #expect(throws: ListenError.self) {
                try await runService(configuration: second, engine: fixture.engine) { address in
                    announced.withLock { $0.append(address) }
                }
            }
            #expect(
                error?.description
                    == "cannot listen on 127.0.0.1:\(port): the address is already in use (another service listens there)"
            )
            #expect(announced.withLock { $0 }.isEmpty)
        }
    }

    /// Issue 47 item 10: a second service on a live service's Unix socket would take it away
    /// (the first keeps running, unreachable); a path that is not a socket gets a sentence.
    @Test("a Unix socket something answers on is refused, and so is a path that is not a socket; nothing is removed")
    func unixSocketTaken() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("custody.sock")
        // Something listening on the path, as a running service does.
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        #expect(listener >= 0)
        defer { close(listener) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: Array(path.utf8))
            raw[path.utf8.count] = 0
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        #expect(bound == 0 && listen(listener, 4) == 0)
        let fixture = try await ServiceFixture.make()
        var second = fixture.configuration
        second.listen = .unixSocket(path: path)
        let error = await #expect(throws: ListenError.self) {
            try await runService(configuration: second, engine: fixture.engine)
        }
        #expect(error?.description.contains("another service listens there") == true, "\(String(describing: error))")
        #expect(FileManager.default.fileExists(atPath: path), "the socket stays")

        let file = try directory.write("plain", "not a socket")
        var third = fixture.configuration
        third.listen = .unixSocket(path: file)
        let refused = await #expect(throws: ListenError.self) {
            try await runService(configuration: third, engine: fixture.engine)
        }
        #expect(
            refused?.description.contains("exists and is a regular file, not a socket") == true,
            "\(String(describing: refused))")
        #expect(try String(contentsOfFile: file, encoding: .utf8) == "not a socket", "nothing is removed")
    }
}

/// Issue 47, item 17: the `Host` a request names (DNS rebinding), and `nosniff` on every answer.
@Suite("Service: the Host a request names")
struct HostCheckTests {
    @Test(
        "loopback names and the listen address are allowed; a wildcard address or a Unix socket allows any name unless names are given; * allows any",
        arguments: [
            (CustodyServerConfiguration.Listen.tcp(host: "127.0.0.1", port: 8080), [String](), "localhost:8080", true),
            (.tcp(host: "127.0.0.1", port: 8080), [], "127.0.0.1", true),
            (.tcp(host: "127.0.0.1", port: 8080), [], "[::1]:8080", true),
            (.tcp(host: "127.0.0.1", port: 8080), [], "LOCALHOST.", true),
            (.tcp(host: "127.0.0.1", port: 8080), [], "attacker.example", false),
            (.tcp(host: "127.0.0.1", port: 8080), [], "attacker.example:8080", false),
            (.tcp(host: "127.0.0.1", port: 8080), ["custody.internal"], "custody.internal:8080", true),
            (.tcp(host: "10.0.0.5", port: 8080), [], "10.0.0.5:8080", true),
            (.tcp(host: "10.0.0.5", port: 8080), [], "rebind.example", false),
            (.tcp(host: "::1", port: 8080), [], "[::1]:8080", true),
            (.tcp(host: "0.0.0.0", port: 8080), [], "anything.example", true),
            (.tcp(host: "0.0.0.0", port: 8080), ["custody.example.com"], "anything.example", false),
            (.tcp(host: "0.0.0.0", port: 8080), ["custody.example.com"], "Custody.Example.com:443", true),
            (.unixSocket(path: "/run/custody.sock"), [], "localhost", true),
            (.tcp(host: "127.0.0.1", port: 8080), ["*"], "attacker.example", true),
        ] as [(CustodyServerConfiguration.Listen, [String], String, Bool)])
    func names(listen: CustodyServerConfiguration.Listen, extra: [String], host: String, allowed: Bool) {
        #expect(HostCheck(listen: listen, allowing: extra).allows(host) == allowed)
    }

    @Test(
        "a live service refuses a request without Host (400) and one naming another host (421), on every route, and marks every answer nosniff",
        arguments: [
            (
                "GET /readyz HTTP/1.1\r\nHost: attacker.example\r\nConnection: close\r\n\r\n", [421],
                "misdirected-request"
            ),
            (
                "GET /openapi.json HTTP/1.1\r\nHost: attacker.example:8080\r\nConnection: close\r\n\r\n", [421],
                "misdirected-request"
            ),
            ("GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n", [400], "malformed-request"),
            ("GET /readyz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", [200], nil),
            ("GET /v1/nothing HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", [404], "not-found"),
            // RFC 9112 §3.2: two Hosts, or one that is not host[:port], are a 400.
            (
                "GET /readyz HTTP/1.1\r\nHost: localhost\r\nHost: attacker.example\r\nConnection: close\r\n\r\n",
                [400], "malformed-request"
            ),
            ("GET /readyz HTTP/1.1\r\nHost: localhost:abc\r\nConnection: close\r\n\r\n", [400], "malformed-request"),
            ("GET /readyz HTTP/1.1\r\nHost: localhost:99999\r\nConnection: close\r\n\r\n", [400], "malformed-request"),
            // RFC 9112 §3.2.2: an absolute-form target's host is the one named, whatever Host says
            // (found from outside: Host: 127.0.0.1 let http://evil/ through).
            (
                "GET http://attacker.example/readyz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
                [421], "misdirected-request"
            ),
            (
                "GET HTTP://ATTACKER.EXAMPLE:8080/readyz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
                [421], "misdirected-request"
            ),
            ("GET http://localhost/readyz HTTP/1.1\r\nHost: attacker.example\r\nConnection: close\r\n\r\n", [200], nil),
            (
                "GET http://user@localhost/readyz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", [400],
                "malformed-request"
            ),
            // Answers from below the routes are nosniff too.
            ("CONNECT x:1 HTTP/1.1\r\nHost: localhost\r\n\r\n", [501], "not-implemented"),
            ("FOO / HTTP/1.1\r\nHost: localhost\r\n\r\n", [501], "not-implemented"),
            ("POST /v1/decisions HTTP/1.1\r\nHost: localhost\r\nContent-Length: 99999999\r\n\r\n", [413], "too-large"),
        ] as [(String, [Int], String?)])
    func live(request: String, statuses: [Int], code: String?) async throws {
        let fixture = try await ServiceFixture.make {
            $0.hostCheck = HostCheck(listen: .tcp(host: "127.0.0.1", port: 0))
        }
        try await fixture.application().test(.live) { client in
            let port = try #require(client.port)
            let exchange = try await RawHTTP.send(port: port, [request], quiet: .seconds(15))
            #expect(exchange.statuses == statuses, "\(exchange.text.prefix(400))")
            if let code { #expect(exchange.lastBody.contains(#""code":"\#(code)""#), "\(exchange.lastBody)") }
            #expect(
                exchange.text.lowercased().contains("x-content-type-options: nosniff"), "\(exchange.text.prefix(400))")
        }
    }
}

/// Issue 47, item 13: a batch whose framing breaks after its answer began ends with an error
/// line that carries a code and a sentence, as every error line does.
@Suite("HTTP at the socket: a batch cut short")
struct BatchCutShortTests {
    @Test("a chunk that cannot be read after the first answers ends the batch with a coded error line")
    func brokenLater() async throws {
        let fixture = try await ServiceFixture.make()
        try await fixture.application().test(.live) { client in
            let port = try #require(client.port)
            let query = HTTPSeamTests.query + "\n"
            let head =
                "POST /v1/decisions/batch HTTP/1.1\r\nHost: custody\r\nAuthorization: Bearer \(fixture.tokens[.admin]!)\r\nTransfer-Encoding: chunked\r\n\r\n"
            let first = head + String(query.utf8.count, radix: 16) + "\r\n" + query + "\r\n"
            // The server ends the connection after the error line: the read ends there, and the
            // quiet time only bounds a server that never answers (a loaded machine is slow).
            let exchange = try await RawHTTP.send(
                port: port, [first, "zz\r\n"], pause: .milliseconds(500), quiet: .seconds(20))
            #expect(exchange.statuses == [200], "closed: \(exchange.closed); \(exchange.text.prefix(600))")
            #expect(exchange.text.contains(#""action":"print""#), "the first line was answered")
            #expect(exchange.text.contains(#""code":"malformed-request""#), "\(exchange.text)")
            #expect(!exchange.text.contains("strict mode"), "a sentence, not NIO's words: \(exchange.text)")
        }
    }
}
