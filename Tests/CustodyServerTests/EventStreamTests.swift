import AsyncHTTPClient
import CustodyPolicy
import CustodyProtection
import CustodyStore

@testable import Custody
import CustodyTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import NIOHTTP1
import Prometheus
import ServiceLifecycle
import Testing

@testable import CustodyServer

/// Reads a Server-Sent Events stream as it comes.
struct EventReader {
    struct Event: Equatable {
        var id: Int64?
        var name: String
        var data: String
        /// The time the event was logged, from the comment before it (`: at …`).
        var at: String? = nil
    }

    private var iterator: HTTPClientResponse.Body.AsyncIterator
    private var pending = ""

    init(_ response: HTTPClientResponse) {
        iterator = response.body.makeAsyncIterator()
    }

    /// The next event (heartbeats skipped); nil when the stream ends.
    mutating func next() async throws -> Event? {
        while true {
            if let end = pending.range(of: "\n\n") {
                let block = String(pending[..<end.lowerBound])
                pending.removeSubrange(..<end.upperBound)
                var event = Event(id: nil, name: "message", data: "")
                var isEvent = false
                for line in block.split(separator: "\n") {
                    if line.hasPrefix(": at ") { event.at = String(line.dropFirst(5)) }
                    if line.hasPrefix("id: ") { event.id = Int64(line.dropFirst(4)); isEvent = true }
                    if line.hasPrefix("event: ") { event.name = String(line.dropFirst(7)); isEvent = true }
                    if line.hasPrefix("data: ") { event.data = String(line.dropFirst(6)); isEvent = true }
                }
                if isEvent { return event }
                continue
            }
            guard let buffer = try await iterator.next() else { return nil }
            pending += String(buffer: buffer)
        }
    }

    /// Events until one named `name` (included).
    mutating func until(_ name: String) async throws -> [Event] {
        var events: [Event] = []
        while let event = try await next() {
            events.append(event)
            if event.name == name { return events }
        }
        return events
    }
}

@Suite("Changes pushed to callers", .serialized, .timeLimit(.minutes(2)))
struct EventStreamTests {
    /// Opens `/v1/events` on a live service.
    static func connect(port: Int, token: String, lastEventID: Int64? = nil) async throws -> EventReader {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/events")
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        if let lastEventID { request.headers.add(name: "Last-Event-ID", value: String(lastEventID)) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        #expect(response.status == .ok)
        #expect(response.headers.first(name: "Content-Type") == "text/event-stream")
        return EventReader(response)
    }

    static let printBlocked =
        ##"{"value": [{"@odata.type": "#microsoft.graph.iosManagedAppProtection", "id": "T_1", "displayName": "P", "printBlocked": true}]}"##

    @Test(
        "an edit of the watched bundle reaches a connected client; a client that reconnects with Last-Event-ID gets what it missed"
    )
    func editAndResume() async throws {
        let fixture = try await ServiceFixture.make()
        try await fixture.application().test(.live) { client in
            let port = try #require(client.port)
            var reader = try await Self.connect(port: port, token: fixture.tokens[.events]!)
            let ready = try await reader.until("ready")
            #expect(ready.last?.data.contains(#""eventId":\#(fixture.engine.lastEventID)"#) == true)
            let start = fixture.engine.lastEventID

            // Print becomes blocked for bob: the watcher applies the edit.
            try fixture.directory.edit("bundle/all-staff.json") {
                $0.replacingOccurrences(of: #""printBlocked": false"#, with: #""printBlocked": true"#)
            }
            let changed = try await reader.until("bundleApplied")
            #expect(changed.map(\.name) == ["policyChanged", "bundleApplied"])
            #expect(changed.first?.id == start + 1)
            #expect(changed.first?.data.contains("bob@contoso.com") == true)
            #expect(changed.last?.data.contains(fixture.engine.bundleInForce!.revision) == true)

            // Two more changes while nobody listens.
            try await fixture.engine.wipe(account: AccountID("bob@contoso.com")!)
            let newest = fixture.engine.lastEventID
            #expect(newest == start + 4)
            var resumed = try await Self.connect(port: port, token: fixture.tokens[.events]!, lastEventID: start + 2)
            let missed = try await resumed.until("ready")
            #expect(missed.map(\.name) == ["wipeCompleted", "secretsChanged", "ready"])
            #expect(missed.compactMap(\.id) == [start + 3, start + 4])
            // Issue 47, item 26: each event from the log says when it was logged, in a comment
            // clients that do not look for it skip; the stream's own frames (ready) have none.
            for event in changed + missed where event.id != nil && event.name != "ready" {
                let at = try #require(event.at, "\(event.name) says when")
                #expect(
                    (try? Date(at, strategy: .iso8601.year().month().day().time(includingFractionalSeconds: true)))
                        != nil, "\(at)")
            }
            #expect(missed.last?.at == nil)
        }
    }

    @Test("a client too far behind the log's retention gets a reset event")
    func reset() async throws {
        let fixture = try await ServiceFixture.make()
        try await fixture.engine.database.setEventRetention(2)
        for round in 0..<4 {
            try fixture.directory.edit("bundle/tenant.json") { $0 + String(repeating: " ", count: round + 1) }
            try fixture.directory.edit("bundle/all-staff.json") { text in
                round % 2 == 0
                    ? text.replacingOccurrences(of: #""printBlocked": false"#, with: #""printBlocked": true"#)
                    : text.replacingOccurrences(of: #""printBlocked": true"#, with: #""printBlocked": false"#)
            }
            try await fixture.engine.apply(bundleDirectory: fixture.bundle)
        }
        // A restarted service: what the log pruned is nowhere any more.
        let restarted = try await CustodyEngine.open(
            CustodyConfiguration(state: .path(fixture.directory.file("state.sqlite"))))
        try await buildApplication(configuration: fixture.configuration, engine: restarted).test(.live) { client in
            var reader = try await Self.connect(
                port: try #require(client.port), token: fixture.tokens[.events]!, lastEventID: 1)
            let first = try await reader.next()
            #expect(first?.name == "reset")
            #expect(first?.id == restarted.lastEventID)
        }
    }

    @Test(
        "a client resuming after an event this state never had (a restored or replaced state) is told to reset, then hears what comes next"
    )
    func resumeFromTheFuture() async throws {
        let fixture = try await ServiceFixture.make()
        try await fixture.application().test(.live) { client in
            let newest = fixture.engine.lastEventID
            var reader = try await Self.connect(
                port: try #require(client.port), token: fixture.tokens[.events]!, lastEventID: newest + 1_000)
            let first = try await reader.next()
            #expect(first?.name == "reset")
            #expect(first?.id == newest)
            #expect(try await reader.next()?.name == "ready")
            try await fixture.engine.wipe(account: AccountID("bob@contoso.com")!)
            #expect(try await reader.next()?.id == newest + 1, "live events follow")
        }
    }

    @Test(
        "the largest event id is a resume point like any other: reset, and the service goes on",
        arguments: [Int64.max, Int64.max - 1])
    func largestEventID(id: Int64) async throws {
        let fixture = try await ServiceFixture.make()
        try await fixture.application().test(.live) { client in
            let port = try #require(client.port)
            var reader = try await Self.connect(port: port, token: fixture.tokens[.events]!, lastEventID: id)
            #expect(try await reader.next()?.name == "reset")
            let health = try await HTTPClient.shared.execute(
                HTTPClientRequest(url: "http://127.0.0.1:\(port)/healthz"), timeout: .seconds(5))
            #expect(health.status == .ok)
        }
        let direct = try await fixture.engine.eventPage(after: .max)
        #expect(direct.events.isEmpty && !direct.reset)
    }

    @Test("a stream opened with a token that is then revoked ends within a second, saying why")
    func revokedTokenEndsStream() async throws {
        let fixture = try await ServiceFixture.make()
        try await fixture.application().test(.live) { client in
            var reader = try await Self.connect(port: try #require(client.port), token: fixture.tokens[.events]!)
            _ = try await reader.until("ready")
            let id = try await #require(try fixture.engine.tokens().first { $0.scopes == [.events] }?.id)
            let revoked = ContinuousClock.now
            await #expect(try fixture.engine.revokeToken(id: id))
            let rest = try await reader.until("unauthorized")
            #expect(rest.last?.name == "unauthorized")
            #expect(try await reader.next() == nil, "and the stream ends")
            #expect(revoked.duration(to: .now) < .milliseconds(2_500))
        }
    }

    @Test("a burst of thousands of events reaches a connected client in full, in order, at its pace")
    func burst() async throws {
        let fixture = try await ServiceFixture.make()
        try await fixture.application().test(.live) { client in
            var reader = try await Self.connect(port: try #require(client.port), token: fixture.tokens[.events]!)
            _ = try await reader.until("ready")
            let start = fixture.engine.lastEventID
            let count = 6_000  // more than the events kept in memory: the rest comes from the log
            for _ in 0..<count / 500 {
                await fixture.engine.manager.journal.publish(
                    (0..<500).map { _ in PolicyEvent.wipeCompleted(account: AccountID("bob@contoso.com")!) })
            }
            var ids: [Int64] = []
            while ids.count < count, let event = try await reader.next() {
                if event.name == "wipeCompleted", let id = event.id { ids.append(id) }
            }
            #expect(ids == Array(start + 1...start + Int64(count)))
        }
    }

    @Test(
        "resuming on a replica that has not heard of the event yet (another process recorded it a moment ago) replays from the log, never a false reset",
        arguments: [0, 1, 2])
    func resumeOnALaggingReplica(back: Int64) async throws {
        // The service hears of other processes' events at its next poll, a minute away here.
        let fixture = try await ServiceFixture.make {
            $0.statePollInterval = .seconds(60)
            $0.watchInterval = .seconds(60)
        }
        try await fixture.application().test(.live) { client in
            var first = try await Self.connect(port: try #require(client.port), token: fixture.tokens[.events]!)
            _ = try await first.until("ready")
            let other = try await CustodyEngine.open(
                CustodyConfiguration(
                    state: .path(fixture.directory.file("state.sqlite")), context: EvaluationContext(platform: .ios)))
            try await other.wipe(account: AccountID("bob@contoso.com")!)
            let newest = other.lastEventID
            #expect(fixture.engine.lastEventID < newest, "the service has not heard yet")
            var resumed = try await Self.connect(
                port: try #require(client.port), token: fixture.tokens[.events]!, lastEventID: newest - back)
            let replayed = try await resumed.until("ready")
            #expect(!replayed.contains { $0.name == "reset" }, "\(replayed)")
            #expect(replayed.compactMap(\.id) == Array(stride(from: newest - back + 1, through: newest, by: 1)))
            #expect(replayed.last?.data.contains("\"eventId\":\(newest)") == true, "\(replayed)")
        }
    }

    @Test(
        "event streams hold at most nine in ten of the connections the service keeps: one more is 503 too-many-connections, and requests still get through"
    )
    func streamShare() async throws {
        // 8 places, 7 for streams (the shared HTTP client keeps at most 8 connections a host).
        let fixture = try await ServiceFixture.make { $0.limits.maxConnections = 8 }
        try await fixture.application().test(.live) { client in
            let port = try #require(client.port)
            var readers: [EventReader] = []
            for _ in 0..<7 {
                var reader = try await Self.connect(port: port, token: fixture.tokens[.events]!)
                _ = try await reader.until("ready")
                readers.append(reader)
            }
            let request =
                "GET /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(fixture.tokens[.events]!)\r\nConnection: close\r\n\r\n"
            let refused = try await RawHTTP.send(port: port, [request])
            #expect(refused.statuses == [503], "\(refused.text.prefix(300))")
            #expect(refused.lastBody.contains(#""code":"too-many-connections""#))
            let ready = try await RawHTTP.send(
                port: port, ["GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"])
            #expect(ready.statuses == [200], "a probe still gets a place: \(ready.text.prefix(300))")
            withExtendedLifetime(readers) {}
        }
    }

    @Test("events another process records in the state reach the stream, and its bundle is put in force")
    func otherProcess() async throws {
        let fixture = try await ServiceFixture.make()
        try await fixture.application().test(.live) { client in
            var reader = try await Self.connect(port: try #require(client.port), token: fixture.tokens[.events]!)
            _ = try await reader.until("ready")
            // Another process of the same installation (so with its context: the events it
            // records are what changed for iOS, as the service's are) on the same state: a
            // wipe, then a bundle. Without the context it would record no policyChanged, and
            // the stream would have heard one only when the service's own watcher re-applied
            // the edited directory before its follower adopted the bundle: a race.
            let other = try await CustodyEngine.open(
                CustodyConfiguration(
                    state: .path(fixture.directory.file("state.sqlite")), context: EvaluationContext(platform: .ios)))
            try await other.wipe(account: AccountID("bob@contoso.com")!)
            try fixture.directory.edit("bundle/all-staff.json") {
                $0.replacingOccurrences(of: #""printBlocked": false"#, with: #""printBlocked": true"#)
            }
            let before = other.lastEventID
            try await other.apply(bundleDirectory: fixture.bundle)
            await #expect(
                try other.events(after: before).events.map(\.name).contains("policyChanged"),
                "the other process records what changed with the bundle")
            let events = try await reader.until("policyChanged")
            #expect(events.map(\.name).prefix(2) == ["wipeCompleted", "secretsChanged"])
            #expect(fixture.engine.bundleInForce?.revision == other.bundleInForce?.revision)
        }
    }

    @Test("a subscriber of the library's bounded event stream that falls behind is dropped, not buffered without bound")
    func slowConsumer() async throws {
        let fixture = try await ServiceFixture.make()
        let (events, subscription) = fixture.engine.manager.loggedEvents(limit: 2)
        for index in 0..<5 {
            try await fixture.engine.checkIn(account: AccountID("alice@contoso.com")!)
            _ = try await fixture.engine.secrets().storePassword("p\(index)", identifier: "s\(index)", for: nil)
        }
        var received = 0
        for await _ in events { received += 1 }
        #expect(received == 2)
        #expect(subscription.wasDropped)
    }

    @Test("on shutdown, a connected stream ends with a shutdown event and a request in flight finishes")
    func gracefulShutdown() async throws {
        let port = try Self.freePort()
        let fixture = try await ServiceFixture.make { $0.listen = .tcp(host: "127.0.0.1", port: port) }
        let application = try fixture.application()
        let group = ServiceGroup(configuration: .init(services: [application], logger: Logger(label: "test")))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            try await Self.waitForListener(port: port)
            var reader = try await Self.connect(port: port, token: fixture.tokens[.events]!)
            _ = try await reader.until("ready")
            // A batch still being sent when the shutdown begins.
            let body = (0..<2_000).map { _ in #"{"action":"print","account":"alice@contoso.com"}"# }.joined(
                separator: "\n")
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/decisions/batch")
            request.method = .POST
            request.headers.add(name: "Authorization", value: "Bearer \(fixture.tokens[.decide]!)")
            request.body = .bytes(ByteBuffer(string: body))
            let batch = Task { try await HTTPClient.shared.execute(request, timeout: .seconds(30)) }
            try await Task.sleep(for: .milliseconds(50))
            await group.triggerGracefulShutdown()
            let last = try await reader.until("shutdown")
            #expect(last.last?.name == "shutdown")
            #expect(try await reader.next() == nil, "the stream ends after it")
            let response = try await batch.value
            #expect(response.status == .ok)
            let answers = String(buffer: try await response.body.collect(upTo: 1 << 22)).split(separator: "\n")
            #expect(answers.count == 2_000)
            try await tasks.waitForAll()
        }
    }

    /// A loopback port nothing listens on now.
    static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        #expect(bound)
        return Int(UInt16(bigEndian: address.sin_port))
    }

    static func waitForListener(port: Int) async throws {
        for _ in 0..<200 {
            if (try? await HTTPClient.shared.execute(
                HTTPClientRequest(url: "http://127.0.0.1:\(port)/healthz"), timeout: .seconds(1)))?.status == .ok
            {
                return
            }
            try await Task.sleep(for: .milliseconds(25))
        }
        Issue.record("the service never listened on \(port)")
    }
}

@Suite("The OpenAPI document")
struct OpenAPITests {
    @Test(
        "the service's error codes are a closed set: each in docs/openapi.json's Error schema and in docs/service.md's table, and nothing else; every protection code is one of them"
    )
    func errorCodes() throws {
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(CustodyServerConfiguration.openAPIDocument)) as? [String: Any])
        let schemas = try #require((document["components"] as? [String: Any])?["schemas"] as? [String: Any])
        let code = try #require(
            ((schemas["Error"] as? [String: Any])?["properties"] as? [String: Any])?["code"] as? [String: Any])
        let documented = Set(try #require(code["enum"] as? [String]))
        let codes = Set(ServiceError.Code.allCases.map(\.rawValue))
        #expect(
            codes == documented,
            "in the code, not documented: \(codes.subtracting(documented)); documented, not in the code: \(documented.subtracting(codes))"
        )
        let table = try String(contentsOfFile: TestPaths.package("docs/service.md"), encoding: .utf8)
        for code in codes.sorted() {
            #expect(table.contains("`\(code)`"), "docs/service.md's table does not list \(code)")
        }
        for protection in ProtectionError.Code.all {
            #expect(
                ServiceError.Code(rawValue: protection.rawValue) != nil,
                "the protection code \(protection) has no service code")
        }
    }

    @Test("docs/openapi.json is the document the service serves, and it describes every route, and only routes")
    func matchesRoutes() async throws {
        let served = CustodyServerConfiguration.openAPIDocument
        let kept = try [UInt8](Data(contentsOf: URL(fileURLWithPath: TestPaths.package("docs/openapi.json"))))
        let same = served == kept
        #expect(
            same,
            "the served document and docs/openapi.json differ: docs/openapi.json must link to Sources/CustodyServer/Resources/openapi.json, which the build embeds"
        )
        let document = try #require(try JSONSerialization.jsonObject(with: Data(served)) as? [String: Any])
        #expect(document["openapi"] as? String == "3.1.0")
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        let described = Set(paths.flatMap { path, operations in operations.keys.map { "\($0.uppercased()) \(path)" } })

        let fixture = try await ServiceFixture.make()
        let router = buildRouter(
            configuration: fixture.configuration, engine: fixture.engine, metrics: ServerMetrics(registry: .init()),
            refusingOtherMethods: false)
        // The console's page and views are HTML for a browser, not the API (docs/console.md).
        let routed = Set(
            router.routes.filter { !$0.path.description.hasPrefix("/console") }.map { route in
                let path = route.path.description.split(separator: "/").map {
                    $0.hasPrefix(":") ? "{\($0.dropFirst())}" : String($0)
                }.joined(separator: "/")
                return "\(route.method.rawValue) /\(path)"
            })
        #expect(
            routed == described,
            "routes without a description: \(routed.subtracting(described)); descriptions without a route: \(described.subtracting(routed))"
        )
    }
}
