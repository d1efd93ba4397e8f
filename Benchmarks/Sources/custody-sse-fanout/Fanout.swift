import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore
import Synchronization

/// Change-to-receipt latency of the decision service's event streams: `--clients` streams of
/// `/v1/events` held open on each service given with `--url` (the replicas of a fleet, or one
/// service); `--rounds` times, a bundle is PUT (two bundles that differ in one decision,
/// alternately) through each service in turn, and each stream's receipt of its `bundleApplied`
/// event is recorded. Prints p50, p99 and the worst over streams × rounds, from sending the PUT;
/// and, per round, the time until every stream on every service had it, from the PUT's answer
/// (the commit) and from sending it.
@main
struct Fanout: AsyncParsableCommand {
    @Option(help: "A service's base URL; repeat it for every replica of a fleet.")
    var url: [String] = ["http://127.0.0.1:18080"]

    @Option(help: "A token with the events and admin scopes (admin grants both).")
    var token: String

    @Option(help: "Streams held open on each service.")
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
        let services = url
        let streamCount = clients * services.count
        let state = Shared(clients: streamCount)
        let token = self.token

        let streams = (0..<streamCount).map { index in
            Task {
                var request = HTTPClientRequest(url: services[index % services.count] + "/v1/events")
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
                        if name == "bundleApplied", let id { state.receipts.withLock { $0[index].append(Receipt(id: id, at: now)) } }
                        pending.removeSubrange(..<end.upperBound)
                    }
                }
            }
        }
        while state.ready.load(ordering: .relaxed) < streamCount { try await Task.sleep(for: .milliseconds(20)) }
        print("\(streamCount) streams open on \(services.count) service(s)")

        /// PUTs a bundle through service `index % services.count`; returns when it was sent, when
        /// its answer came (the commit), and the event id the service reports after it.
        func put(_ index: Int) async throws -> (sent: ContinuousClock.Instant, answered: ContinuousClock.Instant, eventID: Int64) {
            var request = HTTPClientRequest(url: services[index % services.count] + "/v1/bundle")
            request.method = .PUT
            request.headers.add(name: "Authorization", value: "Bearer \(token)")
            request.body = .bytes(ByteBuffer(bytes: payloads[index % 2]))
            let sent = ContinuousClock.now
            let response = try await client.execute(request, timeout: .seconds(30))
            let answer = try await response.body.collect(upTo: 1 << 20)
            let answered = ContinuousClock.now
            guard response.status == .ok, let object = try JSONSerialization.jsonObject(with: Data(answer.readableBytesView)) as? [String: Any],
                let eventID = (object["eventId"] as? NSNumber)?.int64Value
            else { throw ValidationError("PUT /v1/bundle failed: \(response.status) \(String(buffer: answer))") }
            return (sent, answered, eventID)
        }

        /// Waits until every stream has a bundleApplied event with an id in `ids` (or 10 s).
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
        var everyFromCommit: [Duration] = []
        var everyFromCall: [Duration] = []
        for round in 0..<rounds {
            let (sent, answered, eventID) = try await put(round + 1)
            let received = try await receipts(in: (previous + 1)...eventID)
            if received.count < streamCount { print("change \(round): only \(received.count) of \(streamCount) streams got it") }
            latencies += received.map { sent.duration(to: $0.at) }
            if let last = received.map(\.at).max(), received.count == streamCount {
                everyFromCommit.append(answered < last ? answered.duration(to: last) : .zero)
                everyFromCall.append(sent.duration(to: last))
            }
            previous = eventID
            try await Task.sleep(for: .milliseconds(20))
        }
        guard !latencies.isEmpty else { throw ValidationError("no stream received any change") }
        func percentile(_ samples: [Duration], _ p: Double) -> Double {
            let sorted = samples.sorted()
            let d = sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p))]
            return Double(d.components.seconds) * 1_000 + Double(d.components.attoseconds) / 1e15
        }
        print(String(
            format: "change to receipt, %d streams × %d changes, from the PUT sent: p50 %.1f ms, p99 %.1f ms, max %.1f ms", streamCount, rounds,
            percentile(latencies, 0.5), percentile(latencies, 0.99), percentile(latencies, 1)))
        if !everyFromCommit.isEmpty {
            print(String(
                format: "every stream on every service has it, %d changes: from the commit (PUT answered) p50 %.2f ms, p99 %.2f ms, max %.2f ms; from the PUT sent p50 %.2f ms, p99 %.2f ms",
                everyFromCommit.count, percentile(everyFromCommit, 0.5), percentile(everyFromCommit, 0.99), percentile(everyFromCommit, 1),
                percentile(everyFromCall, 0.5), percentile(everyFromCall, 0.99)))
        }
        if everyFromCommit.count < rounds { print("\(rounds - everyFromCommit.count) change(s) did not reach every stream within 10 s") }
        for stream in streams { stream.cancel() }
        try await client.shutdown()
    }
}
