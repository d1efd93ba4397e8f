import Custody
import CustodyPolicy
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Foundation
import NIOCore

/// `POST /v1/decisions` and `POST /v1/decisions/batch`.
struct DecisionController {
    let engine: CustodyEngine
    let limits: CustodyServerConfiguration.Limits
    let metrics: ServerMetrics

    func addRoutes(to group: RouterGroup<CustodyRequestContext>) {
        group.post("decisions", use: decide)
        group.post("decisions/batch", use: batch)
        group.post("decisions/receive", use: receive)
    }

    /// A shared item in (an envelope, its first bytes, or untagged data), its receive decision
    /// out: the owner is read from the item's own protection tag (`custody receive`).
    @Sendable func receive(_ request: Request, context: CustodyRequestContext) async throws -> Response {
        try await Freshness.require(request, engine: engine)
        let parameters = try QueryParameters(request.uri, accepting: ["receiver"] + QueryParameters.context)
        var receiver: AccountID?
        if let text = parameters["receiver"], !text.isEmpty {
            receiver = try ServiceError.account(text, parameter: "receiver", naming: "the receiving account")
        }
        let context = try parameters.evaluationContext(over: engine.context)
        // The header is all that is kept: at most 4 KiB of the body. The rest is read and
        // dropped, within the body limit like every route's.
        if let length = request.headers[.contentLength].flatMap(Int.init), length > limits.bodyBytes { throw ServiceError.tooLarge(limits) }
        var head: [UInt8] = []
        var total = 0
        for try await chunk in request.body {
            total += chunk.readableBytes
            if total > limits.bodyBytes { throw ServiceError.tooLarge(limits) }
            if head.count < 4_096 { head += chunk.readableBytesView.prefix(4_096 - head.count) }
        }
        // An encrypted item's owner is verified with its key: the state may be read.
        let result = try await StateExecutor.run { try engine.receive(receiver: receiver, item: head, context: context) }
        metrics.decided(action: .receive, allowed: result.decision.isAllowed)
        var writer = JSONWriter()
        DecisionEncoding.write(.single(result.decision), to: &writer, trailer: { writer in
            writer.key("dataOwner")
            writer.value(result.dataOwner?.description)
            writer.key("ownerVerified")
            writer.value(result.ownerVerified)
            writer.key("revision")
            writer.value(result.revision)
        })
        writer.newline()
        return json(writer.bytes, headers: [.custodyRevision: result.revision])
    }

    /// One query in, one decision out: the JSON of a `custody decide` line, with the revision
    /// and event id it was decided at.
    @Sendable func decide(_ request: Request, context: CustodyRequestContext) async throws -> Response {
        let start = ContinuousClock.now
        try await Freshness.require(request, engine: engine)
        let (evaluation, options) = try QueryParameters.decision(request.uri, engine: engine)
        let body = try await request.body.collect(upTo: limits.bodyBytes)
        var session = try engine.decisionSession(context: evaluation, options: options, stamped: true)
        var output: [UInt8] = []
        output.reserveCapacity(512)
        body.withUnsafeReadableBytes { bytes in
            var line = bytes[...]
            while let last = line.last, last == UInt8(ascii: "\n") || last == UInt8(ascii: "\r") { line = line.dropLast() }
            session.answer(line: UnsafeRawBufferPointer(rebasing: line), into: &output)
        }
        metrics.decided(session.tallies)
        defer { engine.end(session) }
        if let error = session.lastError { throw ServiceError.badQuery(error, in: Array(buffer: body)) }
        if session.isAuditing {
            // Audit entries are written before the answer is given: on the state's threads.
            metrics.audited(try await StateExecutor.run { () throws(CustodyError) in try session.commit() })
        }
        metrics.decisionTook(start.duration(to: .now))
        return Response(
            status: .ok,
            headers: [.contentType: "application/json", .custodyRevision: session.revision, .custodyEventID: String(session.eventID)],
            body: .init(byteBuffer: ByteBuffer(bytes: output)))
    }

    /// JSON Lines in, one answer per line out, in order, streamed: each line answered on its
    /// own (a bad line gets its error object in its place). The batch is decided on one
    /// snapshot: its revision and event id are in the response headers.
    @Sendable func batch(_ request: Request, context: CustodyRequestContext) async throws -> Response {
        try await Freshness.require(request, engine: engine)
        let (evaluation, options) = try QueryParameters.decision(request.uri, engine: engine)
        // The first part of the body is read before the answer starts, so that a body whose
        // framing is broken from the start is a 400, not a 200 cut short.
        var body = request.body.makeAsyncIterator()
        let first = try await body.next()
        let box = SessionBox(try engine.decisionSession(context: evaluation, options: options), body: body, first: first)
        let limits = self.limits
        let metrics = self.metrics
        let headers: HTTPFields = [
            .contentType: "application/x-ndjson", .custodyRevision: box.session.revision, .custodyEventID: String(box.session.eventID),
        ]
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody { [engine] writer in
                if box.session.isAuditing {
                    // Every block's audit entries are written before the block is sent: on the
                    // state's threads.
                    try await StateExecutor.run { try await box.answer(limits: limits, metrics: metrics, writer: &writer) }
                } else {
                    try await box.answer(limits: limits, metrics: metrics, writer: &writer)
                }
                engine.end(box.session)
                try await writer.finish(nil)
            })
    }
}

/// A session and the request body it answers, handed to a response body's writer (which runs
/// once, after the handler returns).
final class SessionBox: @unchecked Sendable {
    // @unchecked: the handler creates it, then only the response writer touches it.
    var session: DecisionSession
    private var body: RequestBody.AsyncIterator
    private var first: ByteBuffer?

    init(_ session: DecisionSession, body: RequestBody.AsyncIterator, first: ByteBuffer?) {
        self.session = session
        self.body = body
        self.first = first
    }

    /// The next part of the body: the one read before the answer started, then the rest.
    private func next() async throws -> ByteBuffer? {
        if let first {
            self.first = nil
            return first
        }
        return try await body.next()
    }

    /// Answers every line of the body, writing answers as they are committed. A body whose
    /// framing breaks after the answer started gets one last error line saying so (the status
    /// is sent already), then the answer ends.
    func answer(limits: CustodyServerConfiguration.Limits, metrics: ServerMetrics, writer: inout any ResponseBodyWriter) async throws {
        var splitter = LineSplitter(maximumLine: limits.lineBytes)
        var output: [UInt8] = []
        output.reserveCapacity(1 << 16)
        var queries = 0
        var received = 0
        var stopped = false

        /// Answers one line; false when the batch must stop.
        func answer(_ line: LineSplitter.Line) -> Bool {
            queries += 1
            guard queries <= limits.batchQueries else {
                session.refuseLine(
                    "the batch holds more than \(limits.batchQueries) queries; this line and those after it are not answered", into: &output)
                return false
            }
            switch line {
            case .complete(let bytes): session.answer(line: bytes, into: &output)
            case .tooLong(let length): session.refuseLine("the line is longer than \(limits.lineBytes) bytes (at least \(length)); not read", into: &output)
            }
            return true
        }

        /// Commits the audit entries of the answers in `output`; on failure, replaces them with
        /// one error line and returns false.
        func commit() -> Bool {
            do throws(CustodyError) {
                metrics.audited(try session.commit())
                return true
            } catch {
                var writer = JSONWriter()
                DecisionEncoding.writeError(error.message, line: nil, to: &writer)
                writer.newline()
                output = writer.bytes
                return false
            }
        }

        while true {
            let buffer: ByteBuffer
            do {
                guard let next = try await next() else { break }
                buffer = next
            } catch let error where TransportFailure(error) != nil {
                _ = commit()
                let failure = TransportFailure(error)!.serviceError
                var line = JSONWriter()
                DecisionEncoding.writeError(failure.message, line: nil, to: &line)
                line.newline()
                try await writer.write(ByteBuffer(bytes: output + line.bytes))
                metrics.decided(session.tallies)
                return
            }
            received += buffer.readableBytes
            guard received <= limits.bodyBytes else {
                session.refuseLine("the batch is larger than \(limits.bodyBytes) bytes; this line and those after it are not answered", into: &output)
                stopped = true
                break
            }
            let more = buffer.withUnsafeReadableBytes { splitter.feed($0, line: answer) }
            if !more { stopped = true }
            if stopped || output.count >= 1 << 15 {
                if !commit() { stopped = true }
                try await writer.write(ByteBuffer(bytes: output))
                output.removeAll(keepingCapacity: true)
            }
            if stopped { break }
        }
        if !stopped { _ = splitter.finish(line: answer) }
        _ = commit()
        if !output.isEmpty { try await writer.write(ByteBuffer(bytes: output)) }
        metrics.batch(queries: min(queries, limits.batchQueries))
        metrics.decided(session.tallies)
    }
}

/// Splits a byte stream into lines (without their breaks), however the stream is cut. A line
/// that lies whole in the bytes fed is handed over where it is, without a copy; only a line cut
/// by the stream's chunks is gathered. A line longer than `maximumLine` is reported, not kept.
struct LineSplitter {
    enum Line {
        /// The line's bytes, valid only during the call.
        case complete(UnsafeRawBufferPointer)
        case tooLong(Int)
    }

    let maximumLine: Int
    private var pending: [UInt8] = []
    private var overflow = 0

    init(maximumLine: Int) {
        self.maximumLine = maximumLine
    }

    /// Hands each complete line of what is fed so far to `line`; stops, returning false, when
    /// `line` does.
    mutating func feed(_ bytes: UnsafeRawBufferPointer, line: (Line) -> Bool) -> Bool {
        var start = 0
        while start < bytes.count {
            guard let newline = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) else {
                gather(UnsafeRawBufferPointer(rebasing: bytes[start...]))
                return true
            }
            let segment = UnsafeRawBufferPointer(rebasing: bytes[start..<newline])
            start = newline + 1
            if pending.isEmpty, overflow == 0, segment.count <= maximumLine {
                guard line(.complete(Self.trimmed(segment))) else { return false }
                continue
            }
            gather(segment)
            guard take(line) else { return false }
        }
        return true
    }

    /// The last line, when the stream did not end with a line break.
    mutating func finish(line: (Line) -> Bool) -> Bool {
        guard overflow > 0 || !pending.isEmpty else { return true }
        return take(line)
    }

    private mutating func gather(_ bytes: UnsafeRawBufferPointer) {
        if overflow > 0 || pending.count + bytes.count > maximumLine {
            overflow += pending.count + bytes.count
            pending.removeAll(keepingCapacity: true)
        } else {
            pending.append(contentsOf: bytes)
        }
    }

    private mutating func take(_ line: (Line) -> Bool) -> Bool {
        defer {
            pending.removeAll(keepingCapacity: true)
            overflow = 0
        }
        if overflow > 0 { return line(.tooLong(overflow)) }
        return pending.withUnsafeBytes { line(.complete(Self.trimmed($0))) }
    }

    /// Without a trailing carriage return.
    private static func trimmed(_ bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        bytes.last == UInt8(ascii: "\r") ? UnsafeRawBufferPointer(rebasing: bytes.dropLast()) : bytes
    }
}

/// `Custody-Min-Revision` and `Custody-Min-Event-Id`: a caller refuses an answer from a service
/// that is behind.
enum Freshness {
    static func require(_ request: Request, engine: CustodyEngine) async throws {
        if let text = request.headers[.custodyMinEventID] {
            guard let wanted = Int64(text), wanted >= 0 else {
                throw ServiceError.badParameter("Custody-Min-Event-Id", "must be a whole number, zero or more")
            }
            let current = engine.manager.lastEventID
            if current < wanted { throw stale(engine, "this service has seen events up to \(current), not \(wanted) yet") }
        }
        if let wanted = request.headers[.custodyMinRevision] {
            guard !wanted.isEmpty, wanted.utf8.count <= 128, wanted.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }) else {
                throw ServiceError.badParameter("Custody-Min-Revision", "must be a bundle revision (lower-case hex)")
            }
            let replica = engine.replicaStatus
            if wanted != engine.bundleInForce?.revision, replica.isStale() {
                throw stale(engine, "this replica cannot reach the shared state (\(replica.problem ?? "no contact recently")) and does not have revision \(wanted) in force")
            }
            guard try await engine.hasReached(revision: wanted) else {
                throw stale(engine, "this service has not applied revision \(wanted) (or anything after it) yet")
            }
        }
    }

    private static func stale(_ engine: CustodyEngine, _ message: String) -> ServiceError {
        let revision = engine.bundleInForce?.revision
        let eventID = engine.manager.lastEventID
        return ServiceError(
            .conflict, .stale, message,
            headers: [.custodyRevision: revision ?? "", .custodyEventID: String(eventID)]
        ) { writer in
            writer.key("revision")
            writer.value(revision)
            writer.key("eventId")
            writer.value(Int(eventID))
        }
    }
}

