import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore
import Synchronization

/// Change-to-receipt latency of the decision service's event streams: `--clients` streams of
/// `/v1/events` held open; `--rounds` times, a bundle is PUT (two bundles that differ in one
/// decision, alternately) and the time from sending the PUT to each stream's receipt of the
/// `policyChanged` event is recorded. Prints p50, p99 and the worst, over clients × rounds.
@main
struct Fanout: AsyncParsableCommand {
    @Option(help: "The service's base URL.")
    var url = "http://127.0.0.1:18080"

    @Option(help: "A token with the events and admin scopes (admin grants both).")
    var token: String

    @Option(help: "Streams held open.")
    var clients = 1_000

    @Option(help: "Bundle changes measured.")
    var rounds = 20

    @Option(help: "Two files holding PUT /v1/bundle bodies, changed between alternately.")
    var bodies: [String]

    struct Receipt: Sendable {
        var id: Int64
        var at: ContinuousClock.Instant
    }

    /// What the streams record, shared with the measuring loop.
    final class Shared: Sendable {
        let receipts: Mutex<[[Receipt]]>
        let ready = Atomic<Int>(0)

        init(clients: Int) {
            receipts = Mutex(Array(repeating: [], count: clients))
        }
    }

    func run() async throws {
        guard bodies.count == 2 else { throw ValidationError("give --bodies twice") }
        let payloads = try bodies.map { try Data(contentsOf: URL(fileURLWithPath: $0)) }
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = clients + 8
        configuration.timeout.read = .seconds(120)
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        let state = Shared(clients: clients)
        _ = 0
        let token = self.token
        let base = url

        let streams = (0..<clients).map { index in
            Task {
                var request = HTTPClientRequest(url: base + "/v1/events")
                request.headers.add(name: "Authorization", value: "Bearer \(token)")
                let response = try await client.execute(request, timeout: .seconds(3_600))
                var pending = ""
                for try await buffer in response.body {
                    let now = ContinuousClock.now
                    pending += String(buffer: buffer)
                    while let end = pending.range(of: "\n\n") {
                        let block = pending[..<end.lowerBound]
                        var id: Int64?
                        var name = ""
                        for line in block.split(separator: "\n") {
                            if line.hasPrefix("id: ") { id = Int64(line.dropFirst(4)) }
                            if line.hasPrefix("event: ") { name = String(line.dropFirst(7)) }
                        }
                        if name == "ready" { state.ready.add(1, ordering: .relaxed) }
                        if name == "policyChanged", let id { state.receipts.withLock { $0[index].append(Receipt(id: id, at: now)) } }
                        pending.removeSubrange(..<end.upperBound)
                    }
                }
            }
        }
        while state.ready.load(ordering: .relaxed) < clients { try await Task.sleep(for: .milliseconds(20)) }
        print("\(clients) streams open")

        /// PUTs a bundle; returns when it was sent and the event id the service reports after it.
        func put(_ index: Int) async throws -> (sent: ContinuousClock.Instant, eventID: Int64) {
            var request = HTTPClientRequest(url: base + "/v1/bundle")
            request.method = .PUT
            request.headers.add(name: "Authorization", value: "Bearer \(token)")
            request.body = .bytes(ByteBuffer(bytes: payloads[index % 2]))
            let sent = ContinuousClock.now
            let response = try await client.execute(request, timeout: .seconds(30))
            let answer = try await response.body.collect(upTo: 1 << 20)
            guard response.status == .ok, let object = try JSONSerialization.jsonObject(with: Data(answer.readableBytesView)) as? [String: Any],
                let eventID = (object["eventId"] as? NSNumber)?.int64Value
            else { throw ValidationError("PUT /v1/bundle failed: \(response.status) \(String(buffer: answer))") }
            return (sent, eventID)
        }

        /// Waits until every stream has a policyChanged event with an id in `ids` (or 10 s).
        func receipts(in ids: ClosedRange<Int64>) async throws -> [Receipt] {
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline {
                if state.receipts.withLock({ all in all.allSatisfy { $0.contains { ids.contains($0.id) } } }) { break }
                try await Task.sleep(for: .milliseconds(5))
            }
            return state.receipts.withLock { all in all.compactMap { $0.first { ids.contains($0.id) } } }
        }

        // A first change, not measured (the caller has put the second bundle in force).
        var previous = try await put(0).eventID
        _ = try await receipts(in: 1...previous)
        var latencies: [Duration] = []
        for round in 0..<rounds {
            let (sent, eventID) = try await put(round + 1)
            let received = try await receipts(in: (previous + 1)...eventID)
            if received.count < clients { print("change \(round): only \(received.count) of \(clients) streams got it") }
            latencies += received.map { sent.duration(to: $0.at) }
            previous = eventID
            try await Task.sleep(for: .milliseconds(100))
        }
        guard !latencies.isEmpty else { throw ValidationError("no stream received any change") }
        latencies.sort()
        func percentile(_ p: Double) -> Double {
            let d = latencies[min(latencies.count - 1, Int(Double(latencies.count - 1) * p))]
            return Double(d.components.seconds) * 1_000 + Double(d.components.attoseconds) / 1e15
        }
        print(String(format: "change to receipt, %d streams × %d changes: p50 %.1f ms, p99 %.1f ms, max %.1f ms", clients, rounds, percentile(0.5), percentile(0.99), percentile(1)))
        for stream in streams { stream.cancel() }
        try await client.shutdown()
    }
}
