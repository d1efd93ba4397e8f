import AsyncHTTPClient
import Custody
import CustodyTestSupport
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL
import ServiceLifecycle
import Testing

@testable import CustodyServer

@Suite("The listener: TLS, client certificates, header limits", .serialized, .timeLimit(.minutes(2)))
struct ListenerTests {
    /// Runs the service on `port` while `body` runs, then shuts it down.
    func serving(_ fixture: ServiceFixture, port: Int, _ body: () async throws -> Void) async throws {
        let group = ServiceGroup(
            configuration: .init(services: [try fixture.application()], logger: Logger(label: "test")))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            defer { Task { await group.triggerGracefulShutdown() } }
            for _ in 0..<200 {
                if (try? Socket.connectable(port: port)) == true { break }
                try await Task.sleep(for: .milliseconds(25))
            }
            try await body()
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }

    func client(trusting server: TestCertificates.Made, presenting identity: TestCertificates.Made? = nil) throws
        -> HTTPClient
    {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates([try NIOSSLCertificate(bytes: Array(server.certificatePEM.utf8), format: .pem)])
        tls.certificateVerification = .noHostnameVerification
        if let identity {
            tls.certificateChain = [
                .certificate(try NIOSSLCertificate(bytes: Array(identity.certificatePEM.utf8), format: .pem))
            ]
            tls.privateKey = .privateKey(try NIOSSLPrivateKey(bytes: Array(identity.keyPEM.utf8), format: .pem))
        }
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.timeout.connect = .seconds(5)
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }

    @Test("over TLS, and with client certificates required, only a caller with a signed certificate gets in")
    func tls() async throws {
        let now = Date()
        let server = try TestCertificates.make(
            .p256, commonName: "localhost", notBefore: now - 60, notAfter: now + 3_600)
        let caller = try TestCertificates.make(.p256, commonName: "gateway", notBefore: now - 60, notAfter: now + 3_600)
        let port = try EventStreamTests.freePort()
        var fixture = try await ServiceFixture.make()
        try fixture.directory.write("server.pem", server.certificatePEM)
        try fixture.directory.write("server.key", server.keyPEM)
        try fixture.directory.write("caller.pem", caller.certificatePEM)
        fixture.configuration.listen = .tcp(host: "127.0.0.1", port: port)
        fixture.configuration.tls = .init(
            certificateChain: fixture.directory.file("server.pem"), privateKey: fixture.directory.file("server.key"),
            clientCertificateAuthority: fixture.directory.file("caller.pem"))
        try await serving(fixture, port: port) {
            let admitted = try client(trusting: server, presenting: caller)
            let refused = try client(trusting: server)
            let url = "https://127.0.0.1:\(port)/healthz"
            let response = try await admitted.execute(HTTPClientRequest(url: url), timeout: .seconds(10))
            #expect(response.status == .ok)
            await #expect(throws: (any Error).self, "no client certificate: the handshake fails") {
                _ = try await refused.execute(HTTPClientRequest(url: url), timeout: .seconds(10))
            }
            try await admitted.shutdown()
            try await refused.shutdown()
        }
    }

    @Test("a request head over the limit is refused, and the service goes on answering")
    func headerLimit() async throws {
        let port = try EventStreamTests.freePort()
        let fixture = try await ServiceFixture.make { $0.listen = .tcp(host: "127.0.0.1", port: port) }
        try await serving(fixture, port: port) {
            var big = HTTPClientRequest(url: "http://127.0.0.1:\(port)/healthz")
            big.headers.add(name: "X-Padding", value: String(repeating: "x", count: 32 << 10))
            let refused = try? await HTTPClient.shared.execute(big, timeout: .seconds(10))
            #expect(refused == nil || refused!.status.code >= 400)
            let fine = try await HTTPClient.shared.execute(
                HTTPClientRequest(url: "http://127.0.0.1:\(port)/healthz"), timeout: .seconds(10))
            #expect(fine.status == .ok)
        }
    }
}

/// Whether something listens on a loopback port.
enum Socket {
    static func connectable(port: Int) throws -> Bool {
        guard let descriptor = try? RawHTTP.connected(port: port) else { return false }
        close(descriptor)
        return true
    }
}
