import AsyncAlgorithms
import Custody
import CustodyPolicy
import Foundation
import CustodyStore
import HTTPTypes
import Hummingbird
import NIOCore
import ServiceLifecycle

/// `GET /v1/events`: every engine event as Server-Sent Events, each with its id in the state's
/// event log.
///
/// A stream is a cursor into the log, not a queue: it is woken (only the newest id is kept for
/// it) whenever events are recorded, then reads what it has not sent yet, from the newest
/// events kept in memory or else from the log, 500 at a time. So a client's memory never grows
/// whatever it falls behind by, and a burst (a bundle touching 10,000 accounts) is streamed at
/// the client's pace. `Last-Event-ID` (or `?lastEventId=`) resumes after that event; when the log
/// no longer holds every event after it (the client fell behind its retention), a `reset` event
/// says so (read the state afresh). A `ready` event marks the switch to live events; a comment
/// line is sent as a heartbeat. On shutdown every stream ends with a `shutdown` event.
struct EventsController {
    let engine: CustodyEngine
    let configuration: CustodyServerConfiguration
    let metrics: ServerMetrics

    func addRoutes(to group: RouterGroup<CustodyRequestContext>) {
        group.get("events", use: events)
    }

    private enum Wake: Sendable {
        case events
        case heartbeat
        case credentials
    }

    /// How often a stream checks that the token it was opened with is still valid: a revoked
    /// token's streams end within this.
    static let credentialCheckInterval: Duration = .milliseconds(500)

    /// Streams may hold at most nine in ten of the connections the service keeps: a token that
    /// may follow events cannot take every place from the requests (`/readyz` among them).
    var streamLimit: Int {
        max(1, (configuration.limits.maxConnections ?? ConnectionGate.defaultLimit) * 9 / 10)
    }

    @Sendable func events(_ request: Request, context: CustodyRequestContext) async throws -> Response {
        let resume = try Self.resumePoint(request)
        let limit = streamLimit
        guard engine.eventStreamCount < limit else {
            throw ServiceError(
                .serviceUnavailable, .tooManyConnections,
                "event streams may hold \(limit) of the connections this service keeps (nine in ten of --max-connections), and hold them all; close one, or try again shortly",
                headers: [.retryAfter: "1"])
        }
        let bearer = TokenAuthenticator.bearer(request.headers)
        // Subscribe before reading the position, so that nothing recorded after it goes unnoticed.
        let notifications = engine.eventNotifications()
        // A resuming client may have seen events this replica has not heard of yet (another
        // replica or process recorded them a moment ago): the state is asked for its newest
        // (one read per resume), so that they are read from the log, never taken as missing
        // (a false reset) nor left out of the replay.
        let known = engine.lastEventID
        let start = resume == nil ? known : max(known, try await engine.newestEventID())
        // An unreadable log is an error now, not mid-stream.
        if let resume { _ = try await engine.eventPage(after: resume, limit: 1) }
        let engine = self.engine
        let metrics = self.metrics
        let heartbeat = configuration.heartbeat
        return Response(
            status: .ok,
            headers: [.contentType: "text/event-stream", .cacheControl: "no-store"],
            body: ResponseBody { writer in
                var last = resume ?? start
                /// Sends every event after `last`; false when the log cannot be read.
                func catchUp() async throws -> Bool {
                    while true {
                        let page: EventPage
                        do {
                            page = try await engine.eventPage(after: last, limit: 500)
                        } catch {
                            try await writer.write(
                                Self.frame(
                                    name: "error", data: Array(#"{"error":"the event log cannot be read"}"#.utf8)))
                            return false
                        }
                        if page.reset {
                            let newest = engine.lastEventID
                            metrics.streamReset()
                            try await writer.write(
                                Self.frame(
                                    id: newest, name: "reset",
                                    data: Self.position(
                                        engine, eventID: newest,
                                        note: "events after \(last) are no longer in the log: read the state afresh")))
                            last = newest
                            return true
                        }
                        for event in page.events {
                            try await writer.write(
                                Self.frame(id: event.id, name: event.name, data: event.body, at: event.at))
                            metrics.eventDelivered()
                            last = event.id
                        }
                        if page.events.count < 500 { return true }
                    }
                }
                if let resume, resume > start {
                    // A client that outlived a restored or replaced state: the events it has
                    // seen are not this state's. It must read the state afresh.
                    metrics.streamReset()
                    try await writer.write(
                        Self.frame(
                            id: start, name: "reset",
                            data: Self.position(
                                engine, eventID: start,
                                note:
                                    "event \(resume) is newer than this state's newest, \(start): read the state afresh"
                            )))
                    last = start
                } else if resume != nil, try await !catchUp() {
                    return try await writer.finish(nil)
                }
                try await writer.write(Self.frame(name: "ready", data: Self.position(engine, eventID: last, note: nil)))
                let wakes = merge(
                    notifications.map { _ in Wake.events },
                    AsyncTimerSequence(interval: heartbeat, clock: .continuous).map { _ in Wake.heartbeat },
                    AsyncTimerSequence(interval: Self.credentialCheckInterval, clock: .continuous).map { _ in
                        Wake.credentials
                    }
                ).cancelOnGracefulShutdown()
                reading: for await wake in wakes {
                    switch wake {
                    case .heartbeat: try await writer.write(ByteBuffer(string: ": heartbeat\n\n"))
                    case .events: if try await !catchUp() { break reading }
                    case .credentials:
                        // A token revoked since the stream opened ends it, as it refuses new
                        // requests. One this replica cannot check now (the state out of reach)
                        // is not remembered as verified, so it is not revoked as far as it knows.
                        guard let bearer, await Self.isRevoked(bearer, engine: engine) else { continue }
                        try await writer.write(
                            Self.frame(
                                name: "unauthorized",
                                data: Array(
                                    #"{"reason":"the token this stream was opened with is no longer valid"}"#.utf8)))
                        return try await writer.finish(nil)
                    }
                }
                try await writer.write(
                    Self.frame(
                        name: "shutdown",
                        data: Array(
                            #"{"reason":"the service is shutting down; reconnect with Last-Event-ID to resume","lastEventId":\#(last)}"#
                                .utf8)))
                try await writer.finish(nil)
            })
    }

    /// The event id a client resumes after (`Last-Event-ID`, or `?lastEventId=`); nil for a new
    /// client.
    static func resumePoint(_ request: Request) throws -> Int64? {
        let parameters = try QueryParameters(request.uri, accepting: ["lastEventId"])
        // Both are checked, whichever is used: a bad value is an error, never ignored.
        var query: Int64?
        if let text = parameters["lastEventId"] { query = try eventID(text, "lastEventId") }
        if let header = request.headers[values: .lastEventID].first {
            guard request.headers[values: .lastEventID].count == 1 else {
                throw ServiceError.badParameter("Last-Event-ID", "given more than once; give it once")
            }
            return try eventID(header, "Last-Event-ID")
        }
        return query
    }

    /// Whether `bearer` is known to be invalid now; false when it cannot be checked.
    private static func isRevoked(_ bearer: String, engine: CustodyEngine) async -> Bool {
        do {
            return try await engine.authenticate(bearer: bearer) == nil
        } catch {
            return false
        }
    }

    private static func eventID(_ text: String, _ name: String) throws(ServiceError) -> Int64 {
        guard text.utf8.count <= 19, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let id = Int64(text) else {
            throw ServiceError.badParameter(name, "must be an event id: a whole number from 0 to 9223372036854775807")
        }
        return id
    }

    /// One Server-Sent Event; one from the log is preceded by a comment with the time it was
    /// logged (`: at 2026-11-29T14:30:25.253Z`), which clients that do not look for it ignore,
    /// as the SSE format says of every comment.
    static func frame(id: Int64? = nil, name: String, data: [UInt8], at: Date? = nil) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(data.count + 80)
        if let at { buffer.writeString(": at \(answerTime(at))\n") }
        if let id { buffer.writeString("id: \(id)\n") }
        buffer.writeString("event: \(name)\ndata: ")
        buffer.writeBytes(data)
        buffer.writeString("\n\n")
        return buffer
    }

    /// `{"revision": "...", "eventId": N}`, with a note.
    static func position(_ engine: CustodyEngine, eventID: Int64, note: String?) -> [UInt8] {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("revision")
        writer.value(engine.bundleInForce?.revision)
        writer.key("eventId")
        writer.value(Int(eventID))
        if let note {
            writer.key("note")
            writer.value(note)
        }
        writer.endObject()
        return writer.bytes
    }
}
