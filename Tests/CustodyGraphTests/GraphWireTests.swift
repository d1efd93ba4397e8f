@testable import CustodyGraph
import CustodyTestSupport
import Foundation
import Logging
import Synchronization
import Testing

/// How the connector speaks to the token service and to Graph: retries, one token fetch at a
/// time, the identifiers Microsoft's support asks for, the client assertion Microsoft's
/// "certificate credentials" page describes, and which links stay on Graph's host.
@Suite("Graph on the wire", .timeLimit(.minutes(2)))
struct GraphWireTests {
    /// Microsoft's "throttling guidance": a client waits for `Retry-After` and tries again; the
    /// token service is a Microsoft service like Graph.
    @Test("the token endpoint is tried again on 503 and on 429 with Retry-After, and the sync goes on")
    func tokenRetried() async throws {
        let server = GraphServer(tenant: try standardTenant())
        server.state.withLock {
            $0.faults = [Fault(pathContains: "oauth2", answers: [(503, []), (429, [("Retry-After", "1")])])]
        }
        let directory = try TemporaryDirectory()
        try await server.serving { base in
            let report = try await sync(try settings(base), to: directory.file("bundle"))
            #expect(report.statistics.retryWaits.count == 2)
            #expect(report.statistics.retryWaits[1] >= .seconds(1), "Retry-After is honoured")
        }
        #expect(server.state.withLock { $0.tokenRequests } == 3)
    }

    @Test("a token endpoint that keeps failing fails the sync as authentication, naming both request ids")
    func tokenKeepsFailing() async throws {
        let server = GraphServer(tenant: try standardTenant())
        server.state.withLock {
            $0.faults = [Fault(pathContains: "oauth2", answers: Array(repeating: (503, []), count: 10))]
        }
        let directory = try TemporaryDirectory()
        try await server.serving { base in
            let error = await graphError { _ = try await sync(try settings(base), to: directory.file("bundle")) }
            #expect(error?.code == .authentication)
            #expect(error?.message.contains("HTTP 503 after 4 tries") == true, "\(String(describing: error))")
            #expect(error?.description.contains("request-id token-request-") == true)
            #expect(error?.description.contains("client-request-id ") == true)
        }
        #expect(server.state.withLock { $0.tokenRequests } == 4)
        #expect(!FileManager.default.fileExists(atPath: directory.file("bundle")))
    }

    @Test("callers that need a token while one is fetched wait for it: one fetch in flight")
    func oneTokenFetch() async throws {
        let server = GraphServer(tenant: try standardTenant())
        server.state.withLock {
            $0.faults = [Fault(pathContains: "oauth2", answers: [], stall: .milliseconds(300))]
        }
        try await server.serving { base in
            let client = try GraphClient(settings: try settings(base), logger: Logger(label: "test"))
            do {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<8 {
                        group.addTask {
                            _ = try await client.collect("/users?$select=id&$top=999", of: Member.self)
                        }
                    }
                    try await group.waitForAll()
                }
            } catch {
                await client.shutdown()
                throw error
            }
            await client.shutdown()
        }
        #expect(server.state.withLock { ($0.tokenRequests, $0.mostTokensInFlight) } == (1, 1))
    }

    @Test("every request carries its own client-request-id; a Graph error names Graph's request-id")
    func requestIdentifiers() async throws {
        let server = GraphServer(tenant: try standardTenant())
        let directory = try TemporaryDirectory()
        try await server.serving { base in
            _ = try await sync(try settings(base), to: directory.file("bundle"))
            let sent = server.state.withLock { $0.clientRequestIDs }
            #expect(sent.count > 5)
            #expect(sent.allSatisfy { $0.map { UUID(uuidString: $0) != nil } ?? false }, "\(sent)")
            #expect(Set(sent).count == sent.count, "one id per request")

            server.state.withLock { $0.faults = [Fault(pathContains: "/users?", answers: [(403, [])])] }
            let error = await graphError { _ = try await sync(try settings(base), to: directory.file("other")) }
            #expect(error?.status == 403)
            let identifiers = try #require(error?.identifiers)
            #expect(identifiers.service?.isEmpty == false, "Graph's request-id header")
            #expect(
                error?.description.hasSuffix(
                    "(request-id \(identifiers.service!), client-request-id \(identifiers.client))") == true)
        }
    }

    /// Microsoft identity platform, "certificate credentials": header `alg` "Should be PS256",
    /// `x5t#S256` "Base64url-encoded SHA-256 thumbprint of the X.509 certificate's DER
    /// encoding"; signature "Use PSS padding". Checked here by an implementation no one here
    /// wrote (python3-cryptography), on the assertion the connector sends.
    @Test(
        "the client assertion is PS256 with x5t#S256 by default, RS256 with x5t on request",
        arguments: AssertionAlgorithm.allCases)
    func clientAssertion(algorithm: AssertionAlgorithm) async throws {
        let (made, server) = try certificateServer()
        let directory = try TemporaryDirectory()
        try await server.serving { base in
            var settings = try settings(
                base, credential: .certificate(certificatePEM: made.certificatePEM, privateKeyPEM: made.keyPEM))
            settings.assertionAlgorithm = algorithm
            _ = try await sync(settings, to: directory.file("bundle"))
        }
        let header = try #require(server.state.withLock { $0.assertionHeaders.first })
        #expect(header["alg"]?.string == algorithm.rawValue)
        #expect(header["typ"]?.string == "JWT")
        #expect((header["x5t#S256"] != nil) == (algorithm == .ps256))
        #expect((header["x5t"] != nil) == (algorithm == .rs256))

        // An independent check of the assertion: its thumbprint and its signature.
        let assertions = try ClientAssertions(
            certificatePEM: made.certificatePEM, privateKeyPEM: made.keyPEM, clientID: "client-1",
            audience: "https://login.example/tenant/oauth2/v2.0/token", algorithm: algorithm)
        let token = try await assertions.make()
        try directory.write("cert.pem", made.certificatePEM)
        try directory.write("token", token)
        let script = """
            import base64, hashlib, json, sys
            from cryptography import x509
            from cryptography.hazmat.primitives import hashes, serialization
            from cryptography.hazmat.primitives.asymmetric import padding
            def unb64(s): return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))
            cert = x509.load_pem_x509_certificate(open(sys.argv[1], "rb").read())
            der = cert.public_bytes(serialization.Encoding.DER)
            head, body, sig = open(sys.argv[2]).read().split(".")
            header = json.loads(unb64(head))
            if header["alg"] == "PS256":
                assert unb64(header["x5t#S256"]) == hashlib.sha256(der).digest(), "x5t#S256"
                pad = padding.PSS(mgf=padding.MGF1(hashes.SHA256()), salt_length=32)
            else:
                assert unb64(header["x5t"]) == hashlib.sha1(der).digest(), "x5t"
                pad = padding.PKCS1v15()
            cert.public_key().verify(unb64(sig), (head + "." + body).encode(), pad, hashes.SHA256())
            print("verified", header["alg"])
            """
        try directory.write("check.py", script)
        let output = Pipe()
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", directory.file("check.py"), directory.file("cert.pem"), directory.file("token"),
        ]
        process.standardOutput = output
        try process.run()
        let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(printed == "verified \(algorithm.rawValue)\n")
    }

    /// A nextLink is followed only on Graph's own origin: compared parsed, the scheme and host
    /// case-insensitively (RFC 3986: both are case-insensitive), the port with its default.
    @Test(
        "links on Graph's origin, compared by scheme, host and effective port",
        arguments: [
            ("https://graph.microsoft.com/beta/users?$skiptoken=x", true),
            ("HTTPS://Graph.Microsoft.COM/beta/users", true),
            ("https://graph.microsoft.com:443/beta/users", true),
            ("https://graph.microsoft.com:8443/beta/users", false),
            ("http://graph.microsoft.com/beta/users", false),
            ("https://graph.microsoft.com.evil.example/beta", false),
            ("https://evil.example/graph.microsoft.com/beta", false),
            ("https://graph.microsoft.com@evil.example/beta", false),
            ("https://user@graph.microsoft.com/beta", false),
            ("/beta/users", false),
            ("not a url", false),
        ])
    func origin(link: String, on: Bool) throws {
        let origin = try #require(GraphOrigin("https://graph.microsoft.com/beta"))
        #expect(origin.contains(link) == on)
        #expect(origin.description == "https://graph.microsoft.com")
    }

    /// Found from outside: a server that sends a byte now and then held a request far past its
    /// timeout (an idle timer). The whole answer, head and body, has `requestTimeout`.
    @Test("a server that drips its body a byte at a time is cut off at the request timeout")
    func drippingServer() async throws {
        let server = GraphServer(tenant: try standardTenant())
        server.state.withLock {
            $0.faults = [Fault(pathContains: "androidManagedAppProtections", answers: [], drip: .milliseconds(500))]
        }
        let directory = try TemporaryDirectory()
        try await server.serving { base in
            var settings = try settings(base)
            settings.requestTimeout = .seconds(1)
            settings.maximumAttempts = 2
            let started = ContinuousClock.now
            let error = await graphError { _ = try await sync(settings, to: directory.file("bundle")) }
            let took = started.duration(to: .now)
            #expect(error?.code == .timeout, "\(String(describing: error))")
            #expect(
                took < .seconds(20),
                "two tries of a second each, not 64 bytes of half a second (32 s; a loaded run took 10.2 s): \(took)")
        }
        #expect(!FileManager.default.fileExists(atPath: directory.file("bundle")))
    }

    /// Graph lists a user once; a listing that repeats one (another UPN, another license, or
    /// the same page again and again) is not Graph's answer.
    @Test("a /users listing that names a user twice fails the sync; nothing is written")
    func duplicateUser() async throws {
        var tenant = try standardTenant()
        tenant.users = [People.bob, (id: People.bob.id, upn: "mallory@contoso.com")]
        let server = GraphServer(tenant: tenant)
        let directory = try TemporaryDirectory()
        try await server.serving { base in
            let error = await graphError { _ = try await sync(try settings(base), to: directory.file("bundle")) }
            #expect(error?.code == .invalidResponse)
            #expect(
                error?.message.contains("lists user \(People.bob.id) more than once") == true,
                "\(String(describing: error))")
        }
        #expect(!FileManager.default.fileExists(atPath: directory.file("bundle")))
    }
}
