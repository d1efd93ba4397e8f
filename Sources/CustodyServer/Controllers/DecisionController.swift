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
    let spans: DecisionSpans

    func addRoutes(to group: RouterGroup<CustodyRequestContext>) {
        group.post("decisions", use: decide)
        group.post("decisions/batch", use: batch)
        group.post("decisions/receive", use: receive)
        group.post("launch", use: launch)
    }

    /// Conditional launch: `{"account": ..., "facts": {...}, "missingFacts": ..., "now": ...}`
    /// in (a launch query; its `action` may be left out), the launch decision out, with the
    /// revision and event id it was decided at. The facts it does not give are taken from those
    /// the account last reported (`custody checkin --facts`) and its last check-in: that read
    /// runs on the state's threads.
    @Sendable func launch(_ request: Request, context: CustodyRequestContext) async throws -> Response {
        try await Freshness.require(request, engine: engine)
        let (evaluation, options) = try QueryParameters.decision(request.uri, engine: engine)
        let body = Array(buffer: try await request.body.collect(upTo: limits.bodyBytes))
        let line = try Self.launchLine(body)
        var recording = options
        recording.recordedFacts = engine.recordedLaunchFactsWaiting
        let began = spans.begin()
        let answer = try await engine.decide(line: line, context: evaluation, options: recording, readsState: true)
        spans.decided(
            "decide launch", since: began, revision: answer.revision, tallies: answer.tallies,
            refused: answer.error != nil, audited: answer.audited)
        metrics.decided(answer.tallies)
        if let error = answer.error { throw ServiceError.badQuery(error, in: line) }
        metrics.audited(answer.audited)
        return Self.answer(answer)
    }

    /// One decision's answer, with the revision and event id it was decided at.
    static func answer(_ answer: DecidedLine) -> Response {
        Response(
            status: .ok,
            headers: [
                .contentType: "application/json", .custodyRevision: answer.revision,
                .custodyEventID: String(answer.eventID),
            ],
            body: .init(byteBuffer: ByteBuffer(bytes: answer.output)))
    }

    /// The body as a launch query line: `"action":"launch"` added to an object that names no
    /// action. A body that is not a JSON object is left for the query reader to refuse.
    /// - Throws: `ServiceError` `invalid-query` for a body that names another action.
    static func launchLine(_ body: [UInt8]) throws(ServiceError) -> [UInt8] {
        guard let document = try? JSONDocument(parsing: body), document.root.kind == .object else { return body }
        if let action = document.root["action"] {
            guard action.string == "launch" else {
                throw ServiceError.badQuery(
                    QueryError(
                        message:
                            "POST /v1/launch answers launch queries only (leave \"action\" out); other actions go to /v1/decisions",
                        column: JSONText.lineAndColumn(ofOffset: action.offset, in: body).column, offset: action.offset),
                    in: body)
            }
            return body
        }
        // The object's opening brace, then its members (if any) after the added one.
        let open = body.firstIndex(of: UInt8(ascii: "{"))!
        let hasMembers = document.root.members.contains { _ in true }
        return Array(body[..<open]) + Array("{\"action\":\"launch\"".utf8) + (hasMembers ? Array(",".utf8) : [])
            + Array(body[(open + 1)...])
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
        if let length = request.headers[.contentLength].flatMap(Int.init), length > limits.bodyBytes {
            throw ServiceError.tooLarge(limits)
        }
        var head: [UInt8] = []
        var total = 0
        for try await chunk in request.body {
            total += chunk.readableBytes
            if total > limits.bodyBytes { throw ServiceError.tooLarge(limits) }
            if head.count < 4_096 { head += chunk.readableBytesView.prefix(4_096 - head.count) }
        }
        // An encrypted item's owner is verified with its key: the state may be read.
        let result = try await StateExecutor.run {
            try await engine.receive(receiver: receiver, item: head, context: context)
        }
        metrics.decided(action: .receive, allowed: result.decision.isAllowed)
        return json(result.json(includingRevision: true), headers: [.custodyRevision: result.revision])
    }

    /// One query in, one decision out: the JSON of a `custody decide` line, with the revision
    /// and event id it was decided at.
    @Sendable func decide(_ request: Request, context: CustodyRequestContext) async throws -> Response {
        let start = ContinuousClock.now
        try await Freshness.require(request, engine: engine)
        let (evaluation, options) = try QueryParameters.decision(request.uri, engine: engine)
        let body = try await request.body.collect(upTo: limits.bodyBytes)
        var line = Array(buffer: body)
        while let last = line.last, last == UInt8(ascii: "\n") || last == UInt8(ascii: "\r") { line.removeLast() }
        let began = spans.begin()
        let answer = try await engine.decide(line: line, context: evaluation, options: options)
        spans.decided(
            "decide", since: began, revision: answer.revision, tallies: answer.tallies, refused: answer.error != nil,
            audited: answer.audited)
        metrics.decided(answer.tallies)
        if let error = answer.error { throw ServiceError.badQuery(error, in: Array(buffer: body)) }
        metrics.audited(answer.audited)
        metrics.decisionTook(start.duration(to: .now))
        return Self.answer(answer)
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
        let box = await SessionBox(
            try engine.decisionSession(context: evaluation, options: options), body: body, first: first)
        let limits = self.limits
        let metrics = self.metrics
        let logger = context.logger
        let (spans, began) = (self.spans, self.spans.begin())
        let headers: HTTPFields = [
            .contentType: "application/x-ndjson", .custodyRevision: box.session.revision,
            .custodyEventID: String(box.session.eventID),
        ]
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody { [engine] writer in
                if box.session.isAuditing {
                    // Every block's audit entries are written before the block is sent: on the
                    // state's threads.
                    try await StateExecutor.run {
                        try await box.answer(limits: limits, metrics: metrics, logger: logger, writer: &writer)
                    }
                } else {
                    try await box.answer(limits: limits, metrics: metrics, logger: logger, writer: &writer)
                }
                spans.decidedBatch(since: began, revision: box.session.revision, tallies: box.session.tallies)
                engine.end(box.session)
                try await writer.finish(nil)
            })
    }
}
