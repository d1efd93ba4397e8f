import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypesHTTP1

/// Hummingbird's HTTP/1 child channel with HTTP/1.x connection rules it leaves to its users:
/// a request that must not be kept alive (HTTP/1.0, or `Connection: close` in any spelling)
/// gets its connection closed after its answer, and an HTTP/1.0 client is answered in HTTP/1.0
/// (so a streamed answer is framed by closing, never chunked).
///
/// It also keeps the connection limits: at most `gate.limit` connections open (one more takes
/// the place of the one idle the longest, or is answered 503 when none is idle; see
/// `ConnectionGate`), and a request head due within `headerTimeout` (`HeadDeadline`).
struct CustodyHTTP1Channel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value
    let base: HTTP1Channel
    let gate: ConnectionGate
    let headerTimeout: TimeAmount

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let slot = gate.enter(channel)
        let (limit, headerTimeout) = (gate.limit, self.headerTimeout)
        return base.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let pipeline = channel.pipeline.syncOperations
            let codec = try pipeline.handler(type: HTTP1ToHTTPServerCodec.self)
            guard let slot else {
                try pipeline.addHandler(KeepAliveHandler(deadline: nil), position: .before(codec))
                try pipeline.addHandler(RefuseConnectionHandler(limit: limit), position: .after(codec))
                return value
            }
            try pipeline.addHandler(
                RawResponder(), position: .before(try pipeline.handler(type: HTTPResponseEncoder.self)))
            let deadline = HeadDeadline(limit: headerTimeout, slot: slot)
            try pipeline.addHandler(KeepAliveHandler(deadline: deadline), position: .before(codec))
            try pipeline.addHandler(HeadBytesObserver(deadline), position: .first)
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}

extension HTTPServerBuilder {
    /// HTTP/1.1 as `.http1(configuration:)`, with `CustodyHTTP1Channel`'s connection rules.
    static func custodyHTTP1(
        configuration: HTTP1Channel.Configuration, gate: ConnectionGate, headerTimeout: TimeAmount
    ) -> HTTPServerBuilder {
        .init { responder in
            CustodyHTTP1Channel(
                base: HTTP1Channel(responder: responder, configuration: configuration), gate: gate,
                headerTimeout: headerTimeout)
        }
    }
}

/// Sees each request's HTTP version and keep-alive (lost past the HTTP types codec): a request
/// not to be kept alive is marked exactly `Connection: close`, which Hummingbird honours; the
/// answer to it says `Connection: close`, and to HTTP/1.0 it is sent as HTTP/1.0.
final class KeepAliveHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// Requests read whose final response head has not been written.
    private var awaiting: [(isHTTP10: Bool, close: Bool)] = []
    /// Told when a head is complete and an answer has ended (see `HeadDeadline`).
    private let deadline: HeadDeadline?

    init(deadline: HeadDeadline?) {
        self.deadline = deadline
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(var head) = unwrapInboundIn(data) else { return context.fireChannelRead(data) }
        deadline?.complete()
        // RFC 9112 §3.2.2: with an absolute-form target (`GET http://name/path`) "the origin
        // server MUST ignore the received Host header field (if any) and instead use the host
        // information of the request-target". The HTTP types the routes see keep the path only,
        // so the target's authority becomes the Host they check (`HostCheck`).
        if let authority = Self.absoluteAuthority(head.uri) {
            head.headers.replaceOrAdd(name: "Host", value: authority)
        }
        let isHTTP10 = head.version == .http1_0
        let close = isHTTP10 || !head.isKeepAlive
        if close { head.headers.replaceOrAdd(name: "connection", value: "close") }
        awaiting.append((isHTTP10, close))
        context.fireChannelRead(wrapInboundOut(.head(head)))
    }

    /// The authority of an absolute-form request target (`http://name:port/path`), as sent;
    /// nil for any other form.
    static func absoluteAuthority(_ target: String) -> String? {
        let scheme = target.prefix(8).lowercased()
        let length = scheme.hasPrefix("http://") ? 7 : scheme.hasPrefix("https://") ? 8 : 0
        guard length > 0 else { return nil }
        return String(target.dropFirst(length).prefix { $0 != "/" && $0 != "?" && $0 != "#" })
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let part = unwrapOutboundIn(data)
        if case .end = part { deadline?.answered() }
        guard case .head(var head) = part, !(100..<200).contains(head.status.code), !awaiting.isEmpty else {
            return context.write(data, promise: promise)
        }
        let request = awaiting.removeFirst()
        if request.close { head.headers.replaceOrAdd(name: "connection", value: "close") }
        if request.isHTTP10 { head.version = .http1_0 }
        context.write(wrapOutboundOut(.head(head)), promise: promise)
    }
}
