#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import HTTPTypes
import NIOCore
import NIOHTTPTypes
import Synchronization

/// How many connections the service keeps open at once. One more is answered `503
/// too-many-connections` (with `Retry-After`) and closed at once, so that a flood of
/// connections (a slow client per connection, or a million idle ones) cannot take the file
/// descriptors the process needs for its state, its bundle directory and its logs.
final class ConnectionGate: Sendable {
    let limit: Int
    private let open = Atomic<Int>(0)

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// The default: 10,000, or the process's open-file limit less 256 (kept for everything
    /// else the process opens) when that is lower.
    static var defaultLimit: Int {
        var limits = rlimit()
        #if canImport(Glibc)
            let read = getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limits)
        #else
            let read = getrlimit(RLIMIT_NOFILE, &limits)
        #endif
        // RLIM_INFINITY is all ones, which Swift cannot import as a constant of the unsigned type.
        guard read == 0, limits.rlim_cur != .max else { return 10_000 }
        return max(16, min(10_000, Int(clamping: limits.rlim_cur) - 256))
    }

    /// Connections open now.
    var count: Int { open.load(ordering: .relaxed) }

    /// Counts one more connection; false (counting nothing) when that would pass the limit.
    func enter() -> Bool {
        var current = open.load(ordering: .relaxed)
        while current < limit {
            let (exchanged, original) = open.compareExchange(
                expected: current, desired: current + 1, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
        return false
    }

    func leave() {
        open.subtract(1, ordering: .relaxed)
    }
}

/// Answers a connection over the limit with 503 and closes it; reads nothing from it.
final class RefuseConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    let limit: Int
    private var answered = false

    init(limit: Int) {
        self.limit = limit
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { refuse(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        refuse(context)
        context.fireChannelActive()
    }

    /// Nothing a refused connection sends is read as a request.
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}

    private func refuse(_ context: ChannelHandlerContext) {
        guard !answered else { return }
        answered = true
        writeAndClose(
            ServiceError(
                .serviceUnavailable, .tooManyConnections,
                "this service has \(limit) connections open, as many as it keeps (custody serve --max-connections); try again shortly, or over a connection already open",
                headers: [.retryAfter: "1"]),
            context: context)
    }
}

/// The time a request head may take to arrive: from the connection's opening for its first
/// request, from its first byte for each later one. A client that sends its head a byte at a
/// time, or opens connections and sends nothing, is answered `408 header-timeout` and closed
/// when it passes, rather than holding the connection until the idle timeout.
///
/// Two handlers share it: `HeadBytesObserver`, first in the pipeline, sees a request's first
/// byte; `HeadDeadlineHandler`, past the HTTP decoder, sees its head complete and its answer
/// end, and answers when the time passes. Both run on the connection's event loop only.
final class HeadDeadline {
    let limit: TimeAmount
    /// No head has come since the connection opened or the last answer ended.
    fileprivate var awaitingHead = true
    /// When the head awaited now began to arrive (its first byte, or the connection's opening).
    private var startedAt: NIODeadline?
    /// One timer at a time, kept across requests: a kept-alive connection answering request
    /// after request reads the clock once a request and schedules a timer once a `limit`, not
    /// once a request.
    private var timer: Scheduled<Void>?
    fileprivate var expire: (() -> Void)?

    init(limit: TimeAmount) {
        self.limit = limit
    }

    /// A head begins to arrive (when one is awaited and none has begun).
    fileprivate func begin(_ loop: any EventLoop) {
        guard awaitingHead, startedAt == nil else { return }
        startedAt = .now()
        schedule(loop, in: limit)
    }

    /// The head is complete: nothing is due until the answer ends and another begins.
    fileprivate func complete() {
        awaitingHead = false
        startedAt = nil
    }

    /// The answer ended: the next head is awaited (its first byte starts its time).
    fileprivate func answered() {
        awaitingHead = true
    }

    private func schedule(_ loop: any EventLoop, in delay: TimeAmount) {
        guard timer == nil else { return }
        timer = loop.assumeIsolated().scheduleTask(in: delay) {
            self.timer = nil
            self.check(loop)
        }
    }

    /// The head that began at `startedAt` is due now, or later (then looked at again then).
    private func check(_ loop: any EventLoop) {
        guard awaitingHead, let startedAt else { return }
        let due = startedAt + limit
        let now = NIODeadline.now()
        if now >= due {
            expire?()
        } else {
            schedule(loop, in: due - now)
        }
    }

    fileprivate func stop() {
        timer?.cancel()
        timer = nil
        startedAt = nil
        awaitingHead = false
    }
}

/// First in the pipeline: a byte of a new request starts its head's deadline.
final class HeadBytesObserver: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let deadline: HeadDeadline

    init(_ deadline: HeadDeadline) {
        self.deadline = deadline
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        deadline.begin(context.eventLoop)
        context.fireChannelRead(data)
    }
}

/// Past the HTTP decoder: a complete head stops its deadline; an answer's end awaits the next
/// head (whose first byte starts the deadline again); the deadline passing is answered 408.
final class HeadDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let deadline: HeadDeadline
    private var expired = false

    init(_ deadline: HeadDeadline) {
        self.deadline = deadline
    }

    func handlerAdded(context: ChannelHandlerContext) {
        deadline.expire = { [unowned self] in self.expire(context) }
        // The first request's head is due from the connection's opening.
        if context.channel.isActive { deadline.begin(context.eventLoop) }
    }

    func channelActive(context: ChannelHandlerContext) {
        deadline.begin(context.eventLoop)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if expired { return }
        if case .head = unwrapInboundIn(data) { deadline.complete() }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { deadline.answered() }
        context.write(data, promise: promise)
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline.stop()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline.stop()
        deadline.expire = nil
    }

    private func expire(_ context: ChannelHandlerContext) {
        guard !expired else { return }
        expired = true
        deadline.stop()
        let seconds = deadline.limit.nanoseconds / 1_000_000_000
        writeAndClose(
            ServiceError(
                .requestTimeout, .headerTimeout,
                "the request's head did not arrive within \(seconds) s (custody serve --header-timeout)"),
            context: context)
    }
}
