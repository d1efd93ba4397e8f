@testable import Custody
import CustodyGraph
import CustodyPolicy
import CustodyServer
import CustodyStore
import CustodyTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Synchronization
import Testing

/// `custody serve --graph`: the service syncs at start, on request and on a schedule, reports
/// each sync, keeps its policy when a sync fails, and syncs on one replica at a time.
@Suite("Graph connector in the decision service", .timeLimit(.minutes(3)))
struct GraphServiceTests {
    /// An engine on a SQLite state of its own, an admin token, and a runner for `base`.
    struct Service {
        let directory: TemporaryDirectory
        let engine: CustodyEngine
        let runner: GraphSyncRunner
        let admin: String

        init(base: String, state: String? = nil) async throws {
            directory = try TemporaryDirectory()
            engine = try await CustodyEngine.open(
                CustodyConfiguration(
                    state: .path(state ?? directory.file("state.sqlite")), context: EvaluationContext(platform: .ios)))
            admin = try await engine.createToken(scopes: [.admin], name: "graph test").bearer
            runner = GraphSyncRunner(sync: try GraphSync(settings: try settings(base)), engine: engine)
        }

        /// Runs the service (its Graph schedule included) while `body` runs.
        func serving(
            interval: Duration = .seconds(3_600),
            _ body: @escaping @Sendable (any TestClientProtocol) async throws -> Void
        ) async throws {
            var configuration = CustodyServerConfiguration(listen: .tcp(host: "127.0.0.1", port: 0))
            configuration.graphInterval = interval
            // The test client connects as the service starts and sends its first request when the
            // test is ready, which can be after the start sync on a loaded machine: the 10 s
            // header timeout would close that connection first ("I/O on closed channel").
            configuration.limits.headerTimeout = .seconds(600)
            let app = try buildApplication(configuration: configuration, engine: engine, graph: runner)
            try await app.test(.live, body)
        }

        func auth() -> HTTPFields { [.authorization: "Bearer \(admin)"] }

        /// What the policy in force decides about printing for each person (true: allowed).
        func printing() throws -> [String: Bool] {
            let policy = try engine.policy()
            var answers: [String: Bool] = [:]
            for person in [People.alice, People.bob, People.carol, People.dave] {
                answers[person.upn] = policy.print(account: People.account(person)).isAllowed
            }
            return answers
        }

        /// The `policySynced` events in the state's log, by status.
        func syncEvents() async throws -> [String] {
            try await engine.database.events(after: 0).filter { $0.name == "policySynced" }.map { event in
                let body = try JSONSerialization.jsonObject(with: Data(event.body)) as? [String: Any]
                return "\(body?["trigger"] ?? "?") \(body?["status"] ?? "?")"
            }
        }
    }

    static func json(_ response: TestResponse) async throws -> [String: Any] {
        try #require(
            try JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: Any],
            "\(String(buffer: response.body))")
    }

    @Test(
        "synced at start; POST /v1/graph/sync applies the tenant's change, then finds it unchanged; /readyz, /metrics and the event log report every sync"
    )
    func syncsAndReports() async throws {
        let server = GraphServer(tenant: try standardTenant())
        try await server.serving { base in
            let service = try await Service(base: base)
            try await service.serving { client in
                // The bundle is in force a moment before the sync has ended (its members are
                // kept after the apply): wait for the end.
                #expect(await eventually { service.runner.status.last != nil }, "the start sync ends")
                #expect(service.engine.bundleInForce?.source == service.runner.sync.source, "and applied the tenant")
                #expect(try service.printing() == expectedPrinting)
                let ready = try await client.execute(uri: "/readyz", method: .get)
                #expect(ready.status == .ok)
                let graph = try await #require(try Self.json(ready)["graph"] as? [String: Any])
                #expect(graph["status"] as? String == "ok")
                #expect((graph["last"] as? [String: Any])?["status"] as? String == "applied")
                #expect((graph["last"] as? [String: Any])?["trigger"] as? String == "start")
                #expect((graph["last"] as? [String: Any])?["warnings"] as? [String] == [])

                // The tenant changes: finance may print now.
                try server.state.withLock { state in
                    state.tenant.policies["iosManagedAppProtections"]?[0] = try financePolicy(
                        id: "T_finance", include: ["grp-finance"], exclude: ["grp-contractors"], print: false)
                    // And a draft: the sync says it reaches no one.
                    state.tenant.policies["iosManagedAppProtections"]?.append(
                        try financePolicy(id: "T_draft", include: []))
                }
                let before = service.engine.bundleInForce?.revision
                let applied = try await client.execute(uri: "/v1/graph/sync", method: .post, headers: service.auth())
                #expect(applied.status == .ok, "\(String(buffer: applied.body))")
                let body = try await Self.json(applied)
                #expect(body["status"] as? String == "applied")
                #expect(body["trigger"] as? String == "request")
                #expect(body["revision"] as? String == service.engine.bundleInForce?.revision)
                #expect(service.engine.bundleInForce?.revision != before)
                #expect((body["requests"] as? Int ?? 0) > 0 && (body["pages"] as? Int ?? 0) > 0)
                let warnings = body["warnings"] as? [String] ?? []
                #expect(warnings.count == 1 && warnings[0].contains("reaches no account"), "\(warnings)")
                let readyAfter = try await Self.json(try await client.execute(uri: "/readyz", method: .get))
                let last = (readyAfter["graph"] as? [String: Any])?["last"] as? [String: Any]
                #expect(last?["warnings"] as? [String] == warnings, "/readyz carries the last sync's warnings")
                #expect(try service.printing()[People.alice.upn] == true, "alice may print now")

                let again = try await client.execute(uri: "/v1/graph/sync", method: .post, headers: service.auth())
                await #expect(try Self.json(again)["status"] as? String == "unchanged")

                let metrics = String(buffer: try await client.execute(uri: "/metrics", method: .get).body)
                #expect(metrics.contains(#"custody_graph_syncs_total{status="applied"} 2"#), "\(metrics)")
                #expect(metrics.contains(#"custody_graph_syncs_total{status="unchanged"} 1"#))
                #expect(metrics.contains("custody_graph_requests_total "))
                #expect(metrics.contains("custody_graph_last_success_timestamp_seconds "))
                await #expect(try service.syncEvents() == ["start applied", "request applied", "request unchanged"])

                // Another token than admin may not sync.
                let reader = try await service.engine.createToken(scopes: [.read]).bearer
                let refused = try await client.execute(
                    uri: "/v1/graph/sync", method: .post, headers: [.authorization: "Bearer \(reader)"])
                #expect(refused.status == .forbidden)
            }
        }
    }

    @Test(
        "a sync that fails keeps the policy in force and says so: 502 with the request that failed, a warning in /readyz (still ready), a failed event; the next good sync clears it"
    )
    func failureKeepsPolicy() async throws {
        let server = GraphServer(tenant: try standardTenant())
        try await server.serving { base in
            let service = try await Service(base: base)
            try await service.serving { client in
                #expect(await eventually { service.engine.bundleInForce != nil })
                let revision = service.engine.bundleInForce?.revision
                server.state.withLock {
                    $0.faults = [
                        Fault(pathContains: "iosManagedAppProtections", answers: Array(repeating: (503, []), count: 10))
                    ]
                }
                let failed = try await client.execute(uri: "/v1/graph/sync", method: .post, headers: service.auth())
                #expect(failed.status == .badGateway)
                let body = try await Self.json(failed)
                #expect(body["code"] as? String == "graph-sync-failed")
                #expect(
                    (body["error"] as? String)?.contains("iosManagedAppProtections") == true,
                    "names the request: \(body)")
                #expect((body["sync"] as? [String: Any])?["status"] as? String == "failed")
                #expect(service.engine.bundleInForce?.revision == revision, "the policy in force stays")
                #expect(try service.printing() == expectedPrinting)

                let ready = try await client.execute(uri: "/readyz", method: .get)
                #expect(ready.status == .ok, "a failing sync leaves the service ready")
                let readiness = try await Self.json(ready)
                #expect((readiness["graph"] as? [String: Any])?["status"] as? String == "failing")
                #expect((readiness["graph"] as? [String: Any])?["consecutiveFailures"] as? Int == 1)
                #expect((readiness["warnings"] as? [String])?.first?.contains("the Graph sync fails") == true)
                await #expect(try service.syncEvents().last == "request failed")

                server.state.withLock { $0.faults = [] }
                let healed = try await client.execute(uri: "/v1/graph/sync", method: .post, headers: service.auth())
                await #expect(try Self.json(healed)["status"] as? String == "unchanged")
                let after = try await Self.json(try await client.execute(uri: "/readyz", method: .get))
                #expect((after["warnings"] as? [String]) == [])
                #expect((after["graph"] as? [String: Any])?["status"] as? String == "ok")
            }
        }
    }

    @Test("no policy yet and Graph refusing: not ready, saying why, and nothing is decided")
    func refusedAtStart() async throws {
        let server = GraphServer(tenant: try standardTenant())
        server.state.withLock {
            $0.faults = [Fault(pathContains: "deviceAppManagement", answers: Array(repeating: (403, []), count: 100))]
        }
        try await server.serving { base in
            let service = try await Service(base: base)
            try await service.serving { client in
                #expect(await eventually { service.runner.status.last != nil })
                let ready = try await client.execute(uri: "/readyz", method: .get)
                #expect(ready.status == .serviceUnavailable)
                let problems = try await Self.json(ready)["problems"] as? [String]
                #expect(
                    problems?.first?.contains("no bundle is in force (the Graph sync fails") == true,
                    "\(problems ?? [])")
                #expect(service.engine.bundleInForce == nil)
            }
        }
    }

    @Test(
        "one sync at a time on a state: while another process holds the lease, a sync is busy (409) and reads nothing; released, it runs"
    )
    func oneAtATime() async throws {
        let server = GraphServer(tenant: try standardTenant())
        try await server.serving { base in
            let service = try await Service(base: base)
            try await service.serving { client in
                #expect(await eventually { service.runner.status.last != nil })
                // Another process on the same state file holds the lease.
                let other = try CustodyDatabase(path: service.directory.file("state.sqlite"))
                let lease = try await #require(try other.lease(GraphSync.leaseName))
                let requests = server.graphRequests
                let busy = try await client.execute(uri: "/v1/graph/sync", method: .post, headers: service.auth())
                #expect(busy.status == .conflict)
                await #expect(try Self.json(busy)["code"] as? String == "graph-sync-busy")
                #expect(busy.headers[.retryAfter] == "5")
                #expect(server.graphRequests == requests, "nothing was read")
                await lease.release()
                let ran = try await client.execute(uri: "/v1/graph/sync", method: .post, headers: service.auth())
                #expect(ran.status == .ok)
            }
        }
    }

    @Test(
        "with --graph, the directory a bundle in force was applied from is not watched: the tenant's bundle is not overridden by an edit there"
    )
    func noDirectoryWatch() async throws {
        let server = GraphServer(tenant: try standardTenant())
        try await server.serving { base in
            let service = try await Service(base: base)
            let directory = service.directory.file("bundle")
            try FileManager.default.copyItem(atPath: TestPaths.package("policies"), toPath: directory)
            try await service.engine.apply(bundleDirectory: directory)
            var configuration = CustodyServerConfiguration(
                listen: .tcp(host: "127.0.0.1", port: 0), watchInterval: .milliseconds(20))
            configuration.graphInterval = .seconds(3_600)
            let app = try buildApplication(configuration: configuration, engine: service.engine, graph: service.runner)
            try await app.test(.live) { _ in
                #expect(await eventually { service.engine.bundleInForce?.source == service.runner.sync.source })
                let tenant = directory + "/tenant.json"
                try (String(contentsOfFile: tenant, encoding: .utf8) + " \n").write(
                    toFile: tenant, atomically: true, encoding: .utf8)
                try await Task.sleep(for: .milliseconds(800))
                #expect(
                    service.engine.bundleInForce?.source == service.runner.sync.source,
                    "the tenant's bundle stays in force")
            }
        }
    }

    @Test(
        "two replicas on one PostgreSQL state: while one syncs (its Graph reads stalled), the other's sync is busy and reads nothing; the first's bundle reaches it through the state",
        TestPostgres.enabled)
    func replicasOnPostgres() async throws {
        let server = GraphServer(tenant: try standardTenant())
        let url = TestPostgres.freshURL("graph")
        try await server.serving { base in
            let engines = [
                try await CustodyEngine.open(
                    CustodyConfiguration(
                        state: .postgres(url + "&application_name=a"), context: EvaluationContext(platform: .ios))),
                try await CustodyEngine.open(
                    CustodyConfiguration(
                        state: .postgres(url + "&application_name=b"), context: EvaluationContext(platform: .ios))),
            ]
            let runners = try engines.map {
                GraphSyncRunner(sync: try GraphSync(settings: try settings(base)), engine: $0)
            }
            let follower = Task { await engines[1].follow(pollInterval: .milliseconds(100)) }
            defer { follower.cancel() }
            server.state.withLock {
                $0.faults = [Fault(pathContains: "iosManagedAppProtections", answers: [], held: true)]
            }
            // Released on every path, so a failed expectation never leaves a's read held.
            defer { server.state.withLock { $0.faults = [] } }
            let first = Task { await runners[0].sync(.request) }
            #expect(await eventually { !server.requests.isEmpty }, "a is reading")
            let seen = server.requests.count
            guard case .busy = await runners[1].sync(.request) else {
                Issue.record("b synced while a held the lease")
                return
            }
            #expect(server.requests.count == seen, "b read nothing (a is held on its first read meanwhile)")
            server.state.withLock { $0.faults = [] }
            guard case .synced(let done) = await first.value else {
                Issue.record("a did not sync")
                return
            }
            #expect(done.status == .applied)
            #expect(
                await eventually { engines[1].bundleInForce?.revision == done.revision },
                "b has a's bundle through the state")
            guard case .synced(let after) = await runners[1].sync(.request) else {
                Issue.record("b still busy after a released the lease")
                return
            }
            #expect(after.status == .unchanged)
            #expect(after.requests < done.requests, "b reads by delta from what a kept in the state")
            for runner in runners { await runner.sync.shutdown() }
        }
    }

    @Test("requests made side by side run one after the other in the process, each a whole sync")
    func serialized() async throws {
        let server = GraphServer(tenant: try standardTenant())
        try await server.serving { base in
            let service = try await Service(base: base)
            async let first = service.runner.sync(.request)
            async let second = service.runner.sync(.request)
            let outcomes = await [first, second]
            var statuses: [String] = []
            for outcome in outcomes {
                guard case .synced(let done) = outcome else { Issue.record("busy within one process"); continue }
                statuses.append(done.status.rawValue)
            }
            #expect(statuses.sorted() == ["applied", "unchanged"])
            await service.runner.sync.shutdown()
        }
    }

    @Test("a service without --graph answers POST /v1/graph/sync with 404 graph-not-configured")
    func notConfigured() async throws {
        let directory = try TemporaryDirectory()
        let engine = try await CustodyEngine.open(
            CustodyConfiguration(
                state: .path(directory.file("state.sqlite")), context: EvaluationContext(platform: .ios)))
        let admin = try await engine.createToken(scopes: [.admin]).bearer
        let app = try buildApplication(configuration: CustodyServerConfiguration(), engine: engine)
        try await app.test(.router) { client in
            let response = try await client.execute(
                uri: "/v1/graph/sync", method: .post, headers: [.authorization: "Bearer \(admin)"])
            #expect(response.status == .notFound)
            await #expect(try Self.json(response)["code"] as? String == "graph-not-configured")
        }
    }
}

/// `custody serve --graph FILE`: what the file may hold.
@Suite("Graph configuration file")
struct GraphConfigurationTests {
    static let bad: [(label: String, json: String, message: String)] = [
        ("not an object", "[]", "not a JSON object"),
        (
            "a secret inline", #"{"tenantId":"t","clientId":"c","clientSecret":"x"}"#,
            "\"clientSecret\": a secret is not kept in the configuration"
        ),
        (
            "an unknown key", #"{"tenantId":"t","clientId":"c","clientSecretFile":"secret","tennantId":"x"}"#,
            "unknown key \"tennantId\""
        ),
        ("no tenant", #"{"clientId":"c","clientSecretFile":"secret"}"#, "\"tenantId\" is required"),
        (
            "a number for a string", #"{"tenantId":7,"clientId":"c","clientSecretFile":"secret"}"#,
            "\"tenantId\" has the wrong type"
        ),
        (
            "an unknown cloud", #"{"tenantId":"t","clientId":"c","clientSecretFile":"secret","cloud":"mars"}"#,
            "\"cloud\" \"mars\" is not one of"
        ),
        (
            "an interval too short",
            #"{"tenantId":"t","clientId":"c","clientSecretFile":"secret","intervalSeconds":1}"#,
            "\"intervalSeconds\" 1 is not between"
        ),
        (
            "a secret file others may read", #"{"tenantId":"t","clientId":"c","clientSecretFile":"open-secret"}"#,
            "may be read by others"
        ),
        ("no credential", #"{"tenantId":"t","clientId":"c"}"#, "no credential"),
        ("a certificate without its key", #"{"tenantId":"t","clientId":"c","certificate":"cert.pem"}"#, "go together"),
        (
            "plain http to another host",
            #"{"tenantId":"t","clientId":"c","clientSecretFile":"secret","graphUrl":"http://graph.example.com/beta"}"#,
            "\"graphUrl\" \"http://graph.example.com/beta\" must be https"
        ),
        (
            "plain http authority",
            #"{"tenantId":"t","clientId":"c","clientSecretFile":"secret","authority":"http://10.0.0.1"}"#,
            "\"authority\" \"http://10.0.0.1\" must be https"
        ),
        (
            "a key given twice",
            #"{"tenantId":"t","clientId":"c","clientSecretFile":"secret","clientSecretFile":"open-secret"}"#,
            "\"clientSecretFile\" is given twice"
        ),
        (
            "a null", #"{"tenantId":"t","clientId":"c","clientSecretFile":"secret","intervalSeconds":null}"#,
            "\"intervalSeconds\" is null"
        ),
        (
            "a fractional interval",
            #"{"tenantId":"t","clientId":"c","clientSecretFile":"secret","intervalSeconds":30.5}"#,
            "\"intervalSeconds\" has the wrong type"
        ),
        (
            "an interval past Int",
            #"{"tenantId":"t","clientId":"c","clientSecretFile":"secret","intervalSeconds":1e30}"#,
            "is not between 10 and 86400"
        ),
        ("not JSON", #"{"tenantId":"t","#, "not JSON"),
        (
            "a missing overlay",
            #"{"tenantId":"t","clientId":"c","clientSecretFile":"secret","tenantOverlay":"none.json"}"#,
            "cannot read the tenant overlay"
        ),
    ]

    @Test("a configuration that does not hold is a configuration error naming the file and the key", arguments: bad)
    func refused(label: String, json: String, message: String) throws {
        let directory = try TemporaryDirectory()
        try directory.write("secret", "s3cret\n")
        chmod(directory.file("secret"), 0o600)
        try directory.write("open-secret", "s3cret\n")
        chmod(directory.file("open-secret"), 0o644)
        try directory.write("graph.json", json)
        do {
            _ = try GraphConfiguration.load(file: directory.file("graph.json"), environment: [:])
            Issue.record("\(label): accepted")
        } catch {
            #expect(error.code == .configuration, "\(label)")
            #expect(error.description.contains(message), "\(label): \(error)")
            #expect(
                error.description.hasPrefix(directory.file("graph.json") + ": "), "\(label): names the file: \(error)")
            #expect(!error.description.contains("s3cret"), "\(label): the secret never shows")
        }
    }

    static let badOverlays: [(json: String, message: String)] = [
        ("[]", "not a JSON object"),
        (#"{"accounts":[]}"#, "\"accounts\": accounts come from Graph"),
        (#"{"allowedAccount":["a@contoso.com"]}"#, "unknown member \"allowedAccount\""),
        (#"{"managedApps":"com.contoso.app"}"#, "\"managedApps\" must be a list of non-empty strings"),
        (#"{"mdmManagedApps":[1]}"#, "\"mdmManagedApps\" must be a list of non-empty strings"),
        (
            #"{"allowedAccounts":[""]}"#,
            "\"allowedAccounts\" must be a list of non-empty strings (or null: every account)"
        ),
    ]

    @Test(
        "a tenant overlay that is not what tenant.json takes from it is refused when the configuration is read, naming the overlay file and the member",
        arguments: badOverlays)
    func badOverlay(json: String, message: String) throws {
        let directory = try TemporaryDirectory()
        try directory.write("secret", "s3cret")
        chmod(directory.file("secret"), 0o600)
        try directory.write("overlay.json", json)
        try directory.write(
            "graph.json", #"{"tenantId":"t","clientId":"c","clientSecretFile":"secret","tenantOverlay":"overlay.json"}"#
        )
        do {
            _ = try GraphConfiguration.load(file: directory.file("graph.json"), environment: [:])
            Issue.record("accepted \(json)")
        } catch {
            #expect(error.description.hasPrefix(directory.file("overlay.json") + ": "), "\(error)")
            #expect(error.description.contains(message), "\(error)")
        }
    }

    @Test(
        "paths are relative to the file; the interval, cloud and overlay are read; the secret may come from the environment"
    )
    func accepted() throws {
        let directory = try TemporaryDirectory()
        try directory.write("secret", "s3cret\n")
        chmod(directory.file("secret"), 0o600)
        try directory.write("overlay.json", #"{"allowedAccounts":["alice@contoso.com"]}"#)
        try directory.write(
            "graph.json",
            #"{"tenantId":"contoso.onmicrosoft.com","clientId":"c-1","clientSecretFile":"secret","cloud":"usgovhigh","tenantOverlay":"overlay.json","intervalSeconds":600}"#
        )
        let loaded = try GraphConfiguration.load(file: directory.file("graph.json"), environment: [:])
        #expect(loaded.interval == .seconds(600))
        #expect(loaded.settings.graphURL == "https://graph.microsoft.us/beta")
        #expect(loaded.overlay.map { String(decoding: $0, as: UTF8.self) }?.contains("allowedAccounts") == true)
        guard case .secret(let secret) = loaded.settings.credential else { Issue.record("not a secret"); return }
        #expect(secret == "s3cret")

        try directory.write("env.json", #"{"tenantId":"t","clientId":"c"}"#)
        let fromEnvironment = try GraphConfiguration.load(
            file: directory.file("env.json"), environment: ["CUSTODY_GRAPH_CLIENT_SECRET": "from-env"])
        guard case .secret(let environmentSecret) = fromEnvironment.settings.credential else {
            Issue.record("not a secret"); return
        }
        #expect(environmentSecret == "from-env")
        #expect(fromEnvironment.interval == nil)
    }
}
