#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import CustodyPolicy
import HTTPTypes
import NIOCore
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import Synchronization

/// How many connections the service keeps open at once, so that a flood of connections (a
/// slow client per connection, or a million idle ones) cannot take the file descriptors the
/// process needs for its state, its bundle directory and its logs.
///
/// At the limit, a new connection takes the place of the connection idle the longest (open
/// with no request in progress: one that has sent nothing yet, or a kept-alive one between
/// requests), which is closed, as HTTP/1.1 lets a server close an idle connection at any time;
/// without one, of the connection whose request head has taken the longest, past a second (a
/// client sending it a byte at a time). So connections held open and silent or slow cannot keep
/// clients that have something to ask (a load balancer's `/readyz` probe among them) out. Only
/// when every connection is in a request whose head is complete (or begun under a second ago)
/// is a new one answered `503 too-many-connections` (with `Retry-After`) and closed.
final class ConnectionGate: Sendable {
    /// One admitted connection: whether it is idle, and since when.
    final class Slot: Sendable {
        fileprivate let channel: any Channel
        /// What the connection is doing, in nanoseconds of `NIODeadline.now()`: idle since T
        /// (T > 0), sending a request head it began at T (-T), or in a request whose head is
        /// complete (0).
        fileprivate let state = Atomic<Int64>(0)

        fileprivate init(channel: any Channel) {
            self.channel = channel
            state.store(Self.now(), ordering: .relaxed)
        }

        /// A request's head began to arrive.
        func headBegan() { state.store(-Self.now(), ordering: .relaxed) }

        /// The head is complete: in a request until its answer ends.
        func inRequest() { state.store(0, ordering: .relaxed) }

        /// Its answer ended: idle from now until the next request's first byte.
        func idle() { state.store(Self.now(), ordering: .relaxed) }

        fileprivate static func now() -> Int64 { max(1, Int64(NIODeadline.now().uptimeNanoseconds)) }
    }

    /// How long a head may take before its connection gives way to a new one at the limit: a
    /// client sends its head in well under this; one sending a byte at a time does not.
    static let slowHead: Int64 = 1_000_000_000

    let limit: Int
    private let slots = Locked<[ObjectIdentifier: Slot]>([:])

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

    /// Connections admitted and not closed yet.
    var count: Int { slots.withLock { $0.count } }

    /// Admits `channel`, closing the connection idle the longest when the limit is reached;
    /// nil when every connection is busy (then nothing is counted). The slot leaves when the
    /// channel closes.
    func enter(_ channel: any Channel) -> Slot? {
        let slot = Slot(channel: channel)
        let key = ObjectIdentifier(channel)
        let evicted = slots.withLock { slots -> Slot?? in
            var evicted: Slot?
            if slots.count >= limit {
                // The connection idle the longest gives way; without one, the one whose head has
                // taken the longest, past `slowHead`.
                let now = Slot.now()
                var idle: (key: ObjectIdentifier, since: Int64)?
                var slow: (key: ObjectIdentifier, since: Int64)?
                for (key, candidate) in slots {
                    let state = candidate.state.load(ordering: .relaxed)
                    if state > 0, state < idle?.since ?? .max { idle = (key, state) }
                    if state < 0, now + state > Self.slowHead, -state < slow?.since ?? .max { slow = (key, -state) }
                }
                guard let chosen = idle ?? slow else { return .none }
                evicted = slots.removeValue(forKey: chosen.key)
            }
            slots[key] = slot
            return .some(evicted)
        }
        guard case .some(let victim) = evicted else { return nil }
        victim?.channel.close(promise: nil)
        channel.closeFuture.whenComplete { [weak self] _ in
            _ = self?.slots.withLock { $0.removeValue(forKey: key) }
        }
        return slot
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
                "this service has \(limit) connections open, as many as it keeps (custody serve --max-connections), each in the middle of a request; try again shortly, or over a connection already open",
                headers: [.retryAfter: "1"]),
            context: context)
    }
}

/// The time a request head may take to arrive: from the connection's opening for its first
/// request, from its first byte for each later one. A client that sends its head a byte at a
/// time, or opens connections and sends nothing, is answered `408 header-timeout` and closed
/// when it passes, rather than holding the connection until the idle timeout.
///
/// `HeadBytesObserver`, first in the pipeline, keeps it (it sees the opening and each request's
/// first byte, and answers when the time passes); `KeepAliveHandler`, which sees each head and
/// each answer's end anyway, tells it of those. Both run on the connection's event loop only.
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
    /// The connection's place under the connection limit, told when it is idle.
    private let slot: ConnectionGate.Slot

    init(limit: TimeAmount, slot: ConnectionGate.Slot) {
        self.limit = limit
        self.slot = slot
    }

    /// The head awaited is due from now (the connection's opening, or a request's first byte),
    /// unless it was due already.
    fileprivate func begin(_ loop: any EventLoop) {
        guard awaitingHead, startedAt == nil else { return }
        startedAt = .now()
        schedule(loop, in: limit)
    }

    /// Bytes arrived: a head awaited and not begun begins now (the connection is no longer
    /// idle), and is due from now.
    fileprivate func received(_ loop: any EventLoop) {
        guard awaitingHead, startedAt == nil else { return }
        slot.headBegan()
        begin(loop)
    }

    /// The head is complete: nothing is due until the answer ends and another begins.
    func complete() {
        awaitingHead = false
        startedAt = nil
        slot.inRequest()
    }

    /// The answer ended: the next head is awaited (its first byte starts its time), and the
    /// connection is idle until then.
    func answered() {
        awaitingHead = true
        slot.idle()
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

/// First in the pipeline: the head deadline's clock. The connection's opening and a new
/// request's first byte start it; `KeepAliveHandler` (which sees each request's head and each
/// answer's end) tells it a head is complete or an answer ended; when it passes, a
/// `HeadTimeoutAnswer` is put past the HTTP codec to answer 408, and nothing more is read. The
/// only handler the deadline adds to a request's path is this one.
final class HeadBytesObserver: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

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
        deadline.received(context.eventLoop)
        context.fireChannelRead(data)
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
        let pipeline = context.pipeline.syncOperations
        let answer = HeadTimeoutAnswer(seconds: deadline.limit.nanoseconds / 1_000_000_000)
        if let codec = try? pipeline.handler(type: HTTP1ToHTTPServerCodec.self),
            (try? pipeline.addHandler(answer, position: .after(codec))) != nil
        {
            return
        }
        context.close(promise: nil)
    }
}

/// Answers `408 header-timeout` as it is added (past the HTTP codec) and closes the connection.
final class HeadTimeoutAnswer: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    let seconds: Int64

    init(seconds: Int64) {
        self.seconds = seconds
    }

    func handlerAdded(context: ChannelHandlerContext) {
        writeAndClose(
            ServiceError(
                .requestTimeout, .headerTimeout,
                "the request's head did not arrive within \(seconds) s (custody serve --header-timeout)"),
            context: context)
    }
}
