import AsyncAlgorithms
import Custody
import CustodyPolicy
import CustodyStore
import HTTPTypes
import Hummingbird
import NIOCore
import ServiceLifecycle

/// `GET /v1/events`: every engine event as Server-Sent Events, each with its id in the state's
/// event log.
///
/// `Last-Event-ID` (or `?lastEventId=`) resumes: the events after it are replayed from the log
/// first; when the log no longer holds them all, a `reset` event says so (read the state
/// afresh). Then live events follow, with a comment line as heartbeat every few seconds. A
/// client that falls too far behind is dropped with a `dropped` event (it resumes from the log);
/// on shutdown every stream ends with a `shutdown` event.
struct EventsController {
    let engine: CustodyEngine
    let configuration: CustodyServerConfiguration
    let metrics: ServerMetrics

    func addRoutes(to group: RouterGroup<CustodyRequestContext>) {
        group.get("events", use: events)
    }

    private enum Item: Sendable {
        case event(LoggedEvent)
        case heartbeat
    }

    @Sendable func events(_ request: Request, context: CustodyRequestContext) async throws -> Response {
        let resume = try Self.resumePoint(request)
        // Subscribe before replaying, so that no event falls between the log and the stream.
        let (live, subscription) = engine.manager.loggedEvents(limit: configuration.eventBuffer)
        let start = engine.manager.lastEventID
        if let resume { _ = try engine.events(after: resume, limit: 1) }  // an unreadable log is an error now, not mid-stream
        let engine = self.engine
        let metrics = self.metrics
        let heartbeat = configuration.heartbeat
        return Response(
            status: .ok,
            headers: [.contentType: "text/event-stream", .cacheControl: "no-store"],
            body: ResponseBody { writer in
                var last = resume ?? start
                if resume != nil {
                    // Replay what the log holds after the client's last event.
                    while true {
                        let page: (events: [StoredEvent], reset: Bool)
                        do {
                            page = try engine.events(after: last, limit: 500)
                        } catch {
                            try await writer.write(Self.frame(name: "error", data: Array(#"{"error":"the event log cannot be read"}"#.utf8)))
                            return try await writer.finish(nil)
                        }
                        if page.reset {
                            let newest = engine.manager.lastEventID
                            try await writer.write(Self.frame(id: newest, name: "reset", data: Self.position(engine, eventID: newest, note: "events after \(last) are no longer in the log: read the state afresh")))
                            last = newest
                            break
                        }
                        for event in page.events {
                            try await writer.write(Self.frame(id: event.id, name: event.name, data: event.body))
                            metrics.eventDelivered()
                            last = event.id
                        }
                        if page.events.count < 500 { break }
                    }
                }
                try await writer.write(Self.frame(name: "ready", data: Self.position(engine, eventID: last, note: nil)))
                let items = merge(
                    live.map { Item.event($0) },
                    AsyncTimerSequence(interval: heartbeat, clock: .continuous).map { _ in Item.heartbeat }
                ).cancelOnGracefulShutdown()
                for await item in items {
                    switch item {
                    case .heartbeat:
                        try await writer.write(ByteBuffer(string: ": heartbeat\n\n"))
                    case .event(let logged) where logged.id > last:
                        try await writer.write(Self.frame(id: logged.id, name: logged.event.name, data: logged.event.json))
                        metrics.eventDelivered()
                        last = logged.id
                    case .event:
                        continue  // replayed already
                    }
                }
                if subscription.wasDropped, !Task.isShuttingDownGracefully {
                    metrics.streamDropped()
                    try await writer.write(Self.frame(
                        name: "dropped",
                        data: Array(#"{"reason":"this client fell more than the service's event buffer behind; reconnect with Last-Event-ID to resume from the log","lastEventId":\#(last)}"#.utf8)))
                } else {
                    try await writer.write(Self.frame(name: "shutdown", data: Array(#"{"reason":"the service is shutting down; reconnect with Last-Event-ID to resume","lastEventId":\#(last)}"#.utf8)))
                }
                try await writer.finish(nil)
            })
    }

    /// The event id a client resumes after (`Last-Event-ID`, or `?lastEventId=`); nil for a new
    /// client.
    static func resumePoint(_ request: Request) throws -> Int64? {
        guard let text = request.headers[.lastEventID] ?? request.uri.queryParameters["lastEventId"].map(String.init) else { return nil }
        guard let id = Int64(text), id >= 0 else {
            throw ServiceError.badParameter("Last-Event-ID", "must be an event id: a whole number, zero or more")
        }
        return id
    }

    /// One Server-Sent Event.
    static func frame(id: Int64? = nil, name: String, data: [UInt8]) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(data.count + 48)
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
