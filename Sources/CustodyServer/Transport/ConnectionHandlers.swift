import CustodyPolicy
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOHTTPTypes

/// Writes a `ServiceError` as a whole JSON response from inside the pipeline, then closes the
/// connection: for what is refused before the router ever sees a request.
func writeAndClose(_ error: ServiceError, context: ChannelHandlerContext) {
    let body = ByteBuffer(bytes: error.body)
    context.write(
        NIOAny(HTTPResponsePart.head(HTTPResponse(status: error.status, headerFields: error.closingFields))),
        promise: nil)
    context.write(NIOAny(HTTPResponsePart.body(body)), promise: nil)
    context.writeAndFlush(NIOAny(HTTPResponsePart.end(nil))).assumeIsolated().whenComplete { _ in
        closeLingering(context)
    }
}

extension ServiceError {
    /// The header fields of this error answered from inside the pipeline, the connection
    /// closed after it: its own, and its JSON body's type and length.
    var closingFields: HTTPFields {
        var fields = headers
        fields[.contentType] = "application/json"
        fields[.contentLength] = String(body.count)
        fields[.connection] = "close"
        // As every answer the routes give (RequestMiddleware): never read as another type.
        fields[.contentTypeOptions] = "nosniff"
        return fields
    }
}

/// Closes the connection's output now, and the whole connection a little later, so that a
/// reset does not hide the answer just written from a client still sending.
func closeLingering(_ context: ChannelHandlerContext) {
    context.close(mode: .output, promise: nil)
    context.eventLoop.assumeIsolated().scheduleTask(in: .seconds(2)) { context.close(promise: nil) }
}

/// The bytes of a connection between TLS (if any) and NIO's HTTP codec: what the codec cannot
/// be asked to do. It answers in bytes it writes itself, past NIO's response encoder (which
/// drops the body of every answer to `CONNECT`), and it tells what method a request line the
/// codec could not read names (NIO's parser knows a fixed list of methods, and takes any other,
/// `FOO` as much as a line of noise, for a malformed request).
final class RawResponder: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// The bytes read last: the codec raises its errors while it parses them.
    private var lastRead: ByteBuffer?
    private var context: ChannelHandlerContext?

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        lastRead = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        lastRead = unwrapInboundIn(data)
        context.fireChannelRead(data)
    }

    /// The method of the last well-formed request line in the bytes read last whose method
    /// NIO's parser does not know (a token, RFC 9110 §9.1: one the service does not
    /// implement), or nil when there is none (the bytes are not a request line at all).
    var unknownMethod: String? {
        guard let bytes = lastRead?.readableBytesView else { return nil }
        var found: String?
        for line in bytes.split(separator: UInt8(ascii: "\n")) {
            let line = line.last == UInt8(ascii: "\r") ? line.dropLast() : line[...]
            let parts = line.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
            guard parts.count == 3, (1...32).contains(parts[0].count), parts[0].allSatisfy(Self.isTokenCharacter),
                !parts[1].isEmpty, parts[2].starts(with: Array("HTTP/1.".utf8))
            else { continue }
            let method = String(decoding: parts[0], as: UTF8.self)
            if case .RAW = HTTPMethod(rawValue: method) { found = method }
        }
        return found
    }

    /// `tchar` (RFC 9110 §5.6.2).
    private static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "a")...UInt8(ascii: "z"):
            true
        default: Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }

    /// Writes `error` as a whole HTTP/1.1 response, in bytes, and closes the connection.
    func answer(_ error: ServiceError) {
        guard let context else { return }
        let body = error.body
        var head = "HTTP/1.1 \(error.status.code) \(error.status.reasonPhrase)\r\n"
        for field in error.closingFields { head += "\(field.name.rawName): \(field.value)\r\n" }
        head += "\r\n"
        var buffer = context.channel.allocator.buffer(capacity: head.utf8.count + body.count)
        buffer.writeString(head)
        buffer.writeBytes(body)
        context.writeAndFlush(wrapOutboundOut(buffer)).assumeIsolated().whenComplete { _ in
            closeLingering(context)
        }
    }
}

extension HTTPResponse {
    /// A final answer that says `Connection: close`: nothing after it on the connection is read.
    var closesConnection: Bool {
        status.kind != .informational && headerFields[.connection]?.lowercased().contains("close") == true
    }
}

/// Answers the errors NIO's decoder raises between requests, before any request exists (a
/// request line or header fields over the limits, a head that cannot be read), with the
/// service's JSON error (431 or 400) rather than Hummingbird's empty 400, then closes. Errors
/// raised while a body is read go on to the route, which answers them (see `TransportFailure`).
final class HeadErrorHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private var readingBody = false
    /// Requests read whose response has not ended.
    private var unanswered = 0
    /// The answer waiting for the response in flight to end.
    private var held: ServiceError?
    private var failed = false
    /// A response said `Connection: close`: what comes after it is not read as a request, and
    /// not answered.
    private var closing = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            readingBody = true
            unanswered += 1
        case .body: break
        case .end: readingBody = false
        }
        context.fireChannelRead(data)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if failed || (closing && !readingBody) { return }
        guard !readingBody, var answer = Self.answer(error) else { return context.fireErrorCaught(error) }
        // A method NIO's parser does not know, in a well-formed request line, is one this
        // service does not implement (RFC 9110 §9.1: 501), not a malformed request.
        if let error = error as? HTTPParserError, error == .invalidMethod,
            let method = (try? context.pipeline.syncOperations.handler(type: RawResponder.self))?.unknownMethod
        {
            answer = ServiceError(
                .notImplemented, .notImplemented, "this service does not implement the method \(method)")
        }
        failed = true
        if unanswered == 0 { writeAndClose(answer, context: context) } else { held = answer }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        context.write(data, promise: promise)
        if case .head(let head) = unwrapOutboundIn(data), head.closesConnection { closing = true }
        guard case .end = unwrapOutboundIn(data) else { return }
        unanswered -= 1
        if unanswered == 0, let answer = held {
            held = nil
            // After an answer that closes the connection, what followed it was never a request.
            if !closing { writeAndClose(answer, context: context) }
        }
    }

    static func answer(_ error: any Error) -> ServiceError? {
        switch error {
        case let error as HTTPParserError where error == .headerOverflow:
            ServiceError(
                .requestHeaderFieldsTooLarge, .headersTooLarge,
                "the request line or header fields are larger than this service accepts (16 KiB in all, at most 100 fields)"
            )
        case let error as HTTPParserError:
            ServiceError(
                .badRequest, .malformedRequest, "the request is not valid HTTP/1.1: \(TransportFailure.describe(error))"
            )
        default:
            nil
        }
    }
}

/// What a request head says of its body, judged before any of it is read: a declared
/// `Content-Length` over the body limit is refused at once (413: with `Expect: 100-continue`,
/// before the body is sent; without, instead of waiting for a body that will be refused), a
/// transfer coding other than `chunked` is not implemented (501, RFC 9112 §6.1: its bytes
/// would otherwise be read as if unencoded), `CONNECT` is not implemented (501: the service is
/// no proxy), and an `Expect: 100-continue` body the service will read is asked for at once
/// (`100 Continue`); any other expectation is refused (417). Each refusal closes the
/// connection.
final class ExpectContinueHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// The body limit, as the routes apply it.
    let limit: Int
    /// What `/v1/unprotect` may take past it (an envelope of up to `limit` bytes of data, with
    /// its header): only a body over both is refused there.
    let allowance: Int
    private var unanswered = 0
    private var continueAfterResponse = false
    private var refused = false

    init(limit: Int, allowance: Int) {
        self.limit = limit
        self.allowance = allowance
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if refused { return }
        guard case .head(let head) = unwrapInboundIn(data) else { return context.fireChannelRead(data) }
        if let refusal = Self.refusal(of: head, limit: limit, allowance: allowance) {
            refused = true
            // NIO's encoder drops the body of any answer to CONNECT: it is written in bytes.
            if head.method == .connect, let raw = try? context.pipeline.syncOperations.handler(type: RawResponder.self)
            {
                return raw.answer(refusal)
            }
            return writeAndClose(refusal, context: context)
        }
        if head.headerFields[.expect] != nil {
            if unanswered == 0 { sendContinue(context) } else { continueAfterResponse = true }
        }
        unanswered += 1
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        context.write(data, promise: promise)
        guard case .end = unwrapOutboundIn(data) else { return }
        unanswered -= 1
        if continueAfterResponse, unanswered == 1 {
            continueAfterResponse = false
            sendContinue(context)
        }
    }

    /// Why a request with this head is refused before its body is read; nil to read it.
    static func refusal(of head: HTTPRequest, limit: Int, allowance: Int) -> ServiceError? {
        if head.method == .connect {
            return ServiceError(
                .notImplemented, .notImplemented, "this service does not implement CONNECT: it is not a proxy")
        }
        let codings = head.headerFields[values: .transferEncoding].flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        if let coding = codings.first(where: { $0 != "chunked" }) {
            return ServiceError(
                .notImplemented, .notImplemented,
                "the transfer coding '\(coding.escapingControlCharacters)' is not implemented: send the body with Content-Length, or chunked alone (RFC 9112 §6.1)"
            )
        }
        if let expectation = head.headerFields[.expect], expectation.lowercased() != "100-continue" {
            return ServiceError(.expectationFailed, .expectationFailed, "this service meets only Expect: 100-continue")
        }
        let allowed = limit + (head.path?.hasPrefix("/v1/unprotect") == true ? allowance : 0)
        if let length = head.headerFields[.contentLength].flatMap({ Int($0) }), length > allowed {
            return ServiceError.tooLarge(limit)
        }
        return nil
    }

    private func sendContinue(_ context: ChannelHandlerContext) {
        context.writeAndFlush(wrapOutboundOut(.head(HTTPResponse(status: .continue))), promise: nil)
    }
}

/// Raised into a request's body when it has not arrived within the body deadline.
struct RequestBodyTimeout: Error {}

/// A deadline for a whole request body, from its head to its end: a client that sends a byte
/// now and then (which keeps the idle timeout from firing) is cut with 408 when it passes.
final class BodyDeadlineHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    let limit: TimeAmount
    private var timer: Scheduled<Void>?
    private var expired = false

    init(limit: TimeAmount) {
        self.limit = limit
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if expired { return }
        switch unwrapInboundIn(data) {
        case .head:
            let loop = context.eventLoop.assumeIsolated()
            timer = loop.scheduleTask(in: limit) {
                self.timer = nil
                self.expired = true
                context.fireErrorCaught(RequestBodyTimeout())
            }
        case .end:
            timer?.cancel()
            timer = nil
        case .body: break
        }
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }
}

/// Closes the connection after a response that says `Connection: close` (Hummingbird reads
/// only the request's): its output first, then wholly a little later, so that a reset does not
/// hide the answer from a client still sending.
final class CloseAfterResponseHandler: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private var closeAfterEnd = false

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head):
            if head.closesConnection { closeAfterEnd = true }
            context.write(data, promise: promise)
        case .body:
            context.write(data, promise: promise)
        case .end:
            guard closeAfterEnd else { return context.write(data, promise: promise) }
            closeAfterEnd = false
            let written = context.eventLoop.makePromise(of: Void.self)
            written.futureResult.cascade(to: promise)
            context.writeAndFlush(data, promise: written)
            written.futureResult.assumeIsolated().whenComplete { _ in closeLingering(context) }
        }
    }
}
