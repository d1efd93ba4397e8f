import Custody
import CustodyPolicy
import CustodyProtection
import CustodyTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Testing

@testable import CustodyServer

/// The service of a replica whose PostgreSQL state is out of reach (through a `NetworkProxy`).
@Suite("The service when its state is out of reach", TestPostgres.enabled, .timeLimit(.minutes(2)))
struct OutageTests {
    static let print = ByteBuffer(text: #"{"action":"print","account":"alice@contoso.com"}"#)

    @Test(
        "/readyz and decisions answer at once, marked stale; a token never verified here is a 503, not a 401; healed, the service is ready again",
        arguments: [NetworkProxy.Mode.blackhole, .cut])
    func unreachable(fault: NetworkProxy.Mode) async throws {
        let proxy = try TestPostgres.proxy()
        defer { try? proxy.close() }
        let directory = try TemporaryDirectory()
        let engine = try await CustodyEngine.open(
            CustodyConfiguration(
                state: .postgres(TestPostgres.url(TestPostgres.freshURL("service"), throughPort: proxy.port)),
                masterKey: .keyFile(path: directory.file("master.key")), context: EvaluationContext(platform: .ios)))
        try await engine.apply(bundleDirectory: TestPaths.package("policies"))
        let decide = try engine.createToken(scopes: [.decide]).bearer
        let unseen = try engine.createToken(scopes: [.decide]).bearer
        let follower = Task { await engine.follow(pollInterval: .milliseconds(200), staleAfter: .seconds(1)) }
        defer { follower.cancel() }
        // A precondition, not a timing claim: a loaded test run has taken more than 10 s.
        #expect(
            await eventually(within: .seconds(60)) {
                engine.replicaStatus.listening && engine.replicaStatus.revision == 3
            })
        let logs = LogCapture()
        let application = try buildApplication(
            configuration: CustodyServerConfiguration(bundleDirectory: nil), engine: engine,
            logger: logs.logger(label: "custody.server"))
        try await application.test(.router) { client in
            func post(_ token: String) async throws -> TestResponse {
                try await client.execute(
                    uri: "/v1/decisions", method: .post, headers: [.authorization: "Bearer \(token)"], body: Self.print)
            }
            #expect(try await post(decide).status == .ok)
            #expect(try await client.execute(uri: "/readyz", method: .get).status == .ok)

            if fault == .cut { proxy.cut() } else { proxy.blackhole() }
            var ready: TestResponse?
            var slowest = Duration.zero
            let notReady = try await eventually(within: .seconds(8)) {
                let start = ContinuousClock.now
                ready = try await client.execute(uri: "/readyz", method: .get)
                slowest = max(slowest, start.duration(to: .now))
                return ready?.status == .serviceUnavailable
            }
            #expect(notReady, "/readyz says the replica is not ready")
            #expect(
                slowest < .seconds(6),
                "/readyz never waits for the state (10 s to fail to connect, 35 s to time out; a loaded CI took 0.57 s)"
            )
            let body = try #require(ready)
            let state = try #require(try object(body)["state"] as? [String: Any])
            #expect(state["stale"] as? Bool == true)

            let start = ContinuousClock.now
            let decided = try await post(decide)
            #expect(decided.status == .ok, "decided from the policy in force")
            #expect(decided.headers[.custodyStale] == "true")
            #expect(start.duration(to: .now) < .seconds(6), "decided without waiting for the state (10 s, 35 s)")

            let refused = try await post(unseen)
            #expect(refused.status == .serviceUnavailable, "cannot verify is not invalid")
            #expect(try object(refused)["code"] as? String == "state")

            proxy.heal()
            let healed = try await eventually(within: .seconds(15)) {
                try await client.execute(uri: "/readyz", method: .get).status == .ok
            }
            #expect(healed, "ready again once healed")
            let verified = try await post(unseen)
            #expect(
                verified.status == .ok,
                "a ready replica verifies the token: \(verified.status) \(String(buffer: verified.body))")
        }
    }
}
