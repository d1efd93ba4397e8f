import AsyncHTTPClient
@testable import Custody
import CustodyPolicy
import CustodyProtection
import CustodyStore
import CustodyTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import ServiceLifecycle
import Testing

@testable import CustodyServer

/// Every replica's event streams hear every event the state's log holds, whoever recorded it:
/// another replica, or another process (`custody wipe --state postgres://…`).
@Suite(
    "Fleet mode: every replica's streams hear every change", TestPostgres.enabled, .serialized, .timeLimit(.minutes(3)))
struct FleetStreamTests {
    /// A replica's service, live on a free port, with a token on the shared state.
    struct Replica {
        let engine: CustodyEngine
        let port: Int
    }

    static func open(_ url: String, _ name: String, master: String) async throws -> CustodyEngine {
        try await CustodyEngine.open(
            CustodyConfiguration(
                state: .postgres(url + "&application_name=\(name)"), masterKey: .keyFile(path: master),
                context: EvaluationContext(platform: .ios)))
    }

    /// Runs the services of `engines` (each following the log, as `custody serve` does) while
    /// `body` runs with their ports.
    static func serving(_ engines: [CustodyEngine], _ body: @escaping @Sendable ([Int]) async throws -> Void)
        async throws
    {
        let ports = try engines.map { _ in try EventStreamTests.freePort() }
        var services: [any Service] = []
        for (engine, port) in zip(engines, ports) {
            services.append(
                try buildApplication(
                    configuration: CustodyServerConfiguration(
                        listen: .tcp(host: "127.0.0.1", port: port), watchInterval: .seconds(60)), engine: engine,
                    logger: Logger(label: "test")))
        }
        let group = ServiceGroup(configuration: .init(services: services, logger: Logger(label: "test")))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            for port in ports {
                for _ in 0..<200 {
                    if (try? Socket.connectable(port: port)) == true { break }
                    try await Task.sleep(for: .milliseconds(25))
                }
            }
            do {
                try await body(ports)
            } catch {
                await group.triggerGracefulShutdown()
                throw error
            }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }

    @Test(
        "a replica cut off from the state still says which bundle it decides with, marked stale",
        arguments: [NetworkProxy.Mode.blackhole, .cut])
    func bundleWhileStale(fault: NetworkProxy.Mode) async throws {
        let directory = try TemporaryDirectory()
        let url = TestPostgres.freshURL("stale")
        let master = directory.file("master.key")
        let proxy = try TestPostgres.proxy()
        defer { try? proxy.close() }
        let a = try await Self.open(url, "a", master: master)
        let applied = try await a.apply(bundleDirectory: TestPaths.package("policies"))
        let token = try await a.createToken(scopes: [.read], name: "test").bearer
        let cutOff = try await Self.open(TestPostgres.url(url, throughPort: proxy.port), "c", master: master)
        var configuration = CustodyServerConfiguration(watchInterval: .seconds(60))
        configuration.statePollInterval = .milliseconds(200)
        configuration.staleAfter = .seconds(1)
        try await buildApplication(configuration: configuration, engine: cutOff).test(.router) { client in
            _ = try await client.execute(uri: "/v1/bundle", method: .get, headers: [.authorization: "Bearer \(token)"])
            if fault == .cut { proxy.cut() } else { proxy.blackhole() }
            #expect(await eventually(within: .seconds(8)) { cutOff.replicaStatus.isStale() })
            let response = try await client.execute(
                uri: "/v1/bundle", method: .get, headers: [.authorization: "Bearer \(token)"])
            #expect(response.status == .ok, "\(String(buffer: response.body))")
            #expect(response.headers[.custodyStale] == "true")
            #expect(response.headers[.custodyRevision] == applied.bundle.revision)
            let files = (try object(response)["files"] as? [[String: Any]])?.compactMap { $0["name"] as? String }
            #expect(files?.first == "all-staff.json", "\(String(buffer: response.body))")
            proxy.heal()
        }
    }

    /// The ids a stream delivers until `newest`, or what it delivered when `limit` passes first.
    static func ids(from reader: EventReader, through newest: Int64, within limit: Duration) async throws -> [Int64] {
        let seen = Locked<[Int64]>([])
        let box = UncheckedBox(reader)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask {
                while seen.withLock({ $0.last }) != newest, let event = try await box.value.next() {
                    if let id = event.id { seen.withLock { $0.append(id) } }
                }
            }
            tasks.addTask { try await Task.sleep(for: limit) }
            try await tasks.next()
            tasks.cancelAll()
        }
        return seen.withLock { $0 }
    }

    @Test(
        "a bundle PUT through one replica and a wipe by another process reach every replica's stream clients, in id order; resuming anywhere replays them from the log"
    )
    func everyStreamHearsEverything() async throws {
        let directory = try TemporaryDirectory()
        let url = TestPostgres.freshURL("streams")
        let master = directory.file("master.key")
        let a = try await Self.open(url, "a", master: master)
        try await a.apply(bundleDirectory: TestPaths.package("policies"))
        let token = try await a.createToken(scopes: [.admin], name: "test").bearer
        let b = try await Self.open(url, "b", master: master)
        let c = try await Self.open(url, "c", master: master)
        try FileManager.default.copyItem(atPath: TestPaths.package("policies"), toPath: directory.file("edited"))
        try directory.edit("edited/all-staff.json") {
            $0.replacingOccurrences(of: #""printBlocked": false"#, with: #""printBlocked": true"#)
        }
        let files = try BundleFiles.read(directory: directory.file("edited"))

        try await Self.serving([a, b, c]) { ports in
            var readers: [EventReader] = []
            for port in ports {
                var reader = try await EventStreamTests.connect(port: port, token: token)
                _ = try await reader.until("ready")
                readers.append(reader)
            }
            let start = try await a.database.eventBounds().newest

            // A bundle through replica a, then a wipe by another process (not a replica).
            try await a.apply(files: files, source: "PUT /v1/bundle (test)")
            let cli = try await Self.open(url, "cli", master: master)
            try await cli.wipe(account: AccountID("bob@contoso.com")!)
            let newest = try await a.database.eventBounds().newest
            #expect(newest > start + 2)

            for (index, reader) in readers.enumerated() {
                let ids = try await Self.ids(from: reader, through: newest, within: .seconds(5))
                #expect(ids == Array((start + 1)...newest), "replica \(["a", "b", "c"][index]) streamed \(ids)")
            }

            // Resuming after `start` on any replica replays the same events from the log.
            for port in ports {
                var resumed = try await EventStreamTests.connect(port: port, token: token, lastEventID: start)
                let replayed = try await resumed.until("ready")
                #expect(replayed.compactMap(\.id) == Array((start + 1)...newest), "port \(port)")
            }
        }
    }
}

/// A value handed to one child task at a time.
final class UncheckedBox<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}
