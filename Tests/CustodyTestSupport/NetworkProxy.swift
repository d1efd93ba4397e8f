import NIOCore
import NIOPosix
import Synchronization

/// A TCP proxy on loopback between clients and one server, for tests of what the network does
/// to them. It carries bytes both ways until told otherwise:
/// - `blackhole()`: no byte goes through either way, and connections stay open, as when a
///   network silently drops packets (new connections are accepted, and hang);
/// - `cut()`: every connection is closed, and new ones are closed as soon as they are made,
///   as when the server is gone;
/// - `holdReplies()`: what clients send reaches the server, but nothing the server answers
///   reaches them (held, not dropped), as when the return path of a network stalls: a commit
///   the server performs is never confirmed;
/// - `slow(delay)`: every chunk of bytes either way is held `delay`, one after another, as on
///   a link with that much latency (a slow link, not a cut: everything arrives);
/// - `heal()`: bytes flow again (connections a cut closed stay closed; held replies arrive).
///
/// It runs on NIO's process-wide event loops, which are never stopped: a loop stopped while a
/// connection to the server was still being made would leave that attempt (and the loop) for
/// nobody to free, which LeakSanitizer reports (make test runs the store tests under it).
public final class NetworkProxy: Sendable {
    public enum Mode: Sendable {
        case open, blackhole, cut, holdReplies
        /// Every chunk of bytes, either way, is held `NetworkProxy.slowDelay` before it is
        /// passed on, one after another: a link with that much latency per packet.
        case slow
    }

    /// The port clients connect to, on 127.0.0.1.
    public let port: Int
    private let server: any Channel
    private let state: Shared

    private final class Shared: Sendable {
        let mode = Mutex(Mode.open)
        /// Whether `close()` was called: a connection to the server made after that is closed.
        let closed = Mutex(false)
        /// Every channel, both sides of every connection, and whether it is the server's side.
        let channels = Mutex<[ObjectIdentifier: (channel: any Channel, toServer: Bool)]>([:])
        /// How long each chunk is held in `.slow` mode.
        let delay = Mutex(Duration.zero)
    }

    /// A proxy to `host`:`port`, listening on a free port of its own.
    public init(to host: String = "127.0.0.1", port targetPort: Int) throws {
        let state = Shared()
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.autoRead, value: false)
            .childChannelInitializer { inbound in
                Self.track(inbound, toServer: false, in: state)
                if state.mode.withLock({ $0 }) == .cut { return inbound.close() }
                return ClientBootstrap(group: inbound.eventLoop)
                    .channelOption(.autoRead, value: false)
                    .connect(host: host, port: targetPort)
                    .flatMap { outbound in
                        // Tracked before `closed` is read: `close()` sets it before it cuts
                        // what is tracked, so either the cut or this closes the connection.
                        Self.track(outbound, toServer: true, in: state)
                        guard !state.closed.withLock({ $0 }) else {
                            outbound.close(promise: nil)
                            return inbound.close()
                        }
                        let (toServer, toClient) = (
                            Relay(partner: outbound, shared: state), Relay(partner: inbound, shared: state)
                        )
                        return inbound.pipeline.addHandler(toServer).flatMap { outbound.pipeline.addHandler(toClient) }
                            .map {
                                // Bytes flow as the network lets them now.
                                let mode = state.mode.withLock { $0 }
                                inbound.setOption(.autoRead, value: Self.reads(mode, toServer: false)).whenComplete {
                                    _ in
                                }
                                outbound.setOption(.autoRead, value: Self.reads(mode, toServer: true)).whenComplete {
                                    _ in
                                }
                            }
                    }
            }
        let server = try bootstrap.bind(host: "127.0.0.1", port: 0).wait()
        self.server = server
        self.state = state
        self.port = server.localAddress?.port ?? 0
    }

    /// Lets no byte through, leaving connections open.
    public func blackhole() { set(.blackhole) }

    /// Closes every connection, and each new one as it is made.
    public func cut() { set(.cut) }

    /// Carries what clients send, holds back what the server answers.
    public func holdReplies() { set(.holdReplies) }

    /// Holds every chunk, either way, `delay` before passing it on (in order).
    public func slow(_ delay: Duration) {
        state.delay.withLock { $0 = delay }
        set(.slow)
    }

    /// Lets bytes through again.
    public func heal() { set(.open) }

    /// Whether the side of a connection facing the server (`toServer`), or the client, is read
    /// (and what it reads relayed) in `mode`.
    private static func reads(_ mode: Mode, toServer: Bool) -> Bool {
        switch mode {
        case .open, .slow: true
        case .blackhole, .cut: false
        case .holdReplies: !toServer
        }
    }

    /// Switches every connection to `mode`, returning once each has switched: a test that
    /// holds replies back and then lets the server answer must not have the answer read by a
    /// connection whose event loop has not switched yet.
    private func set(_ mode: Mode) {
        state.mode.withLock { $0 = mode }
        let channels = state.channels.withLock { Array($0.values) }
        for (channel, toServer) in channels {
            // A channel already closed (by its peer) has nothing left to switch.
            if mode == .cut {
                try? channel.close().wait()
            } else {
                try? channel.setOption(.autoRead, value: Self.reads(mode, toServer: toServer)).wait()
            }
        }
    }

    /// Stops the proxy: every connection closes, and one still being made closes when made.
    public func close() throws {
        state.closed.withLock { $0 = true }
        try server.close().wait()
        set(.cut)
    }

    private static func track(_ channel: any Channel, toServer: Bool, in state: Shared) {
        let id = ObjectIdentifier(channel)
        state.channels.withLock { $0[id] = (channel, toServer) }
        channel.closeFuture.whenComplete { _ in _ = state.channels.withLock { $0.removeValue(forKey: id) } }
    }

    /// Writes what one side reads to the other (in `.slow` mode after the delay, in order), and
    /// closes the other when one closes.
    private final class Relay: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        let partner: any Channel
        let shared: Shared
        /// When the last chunk held back is passed on: the next waits for it. Touched on the
        /// channel's event loop only.
        private var tail: EventLoopFuture<Void>?

        init(partner: any Channel, shared: Shared) {
            self.partner = partner
            self.shared = shared
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let bytes = Self.unwrapInboundIn(data)
            let partner = self.partner
            guard shared.mode.withLock({ $0 }) == .slow || tail != nil else {
                partner.writeAndFlush(bytes, promise: nil)
                return
            }
            let delay = shared.mode.withLock { $0 } == .slow ? TimeAmount(shared.delay.withLock { $0 }) : .zero
            let loop = context.eventLoop
            let previous = tail ?? loop.makeSucceededVoidFuture()
            tail = previous.flatMap {
                loop.scheduleTask(in: delay) { partner.writeAndFlush(bytes, promise: nil) }.futureResult
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            let partner = self.partner
            if let tail { tail.whenComplete { _ in partner.close(promise: nil) } } else { partner.close(promise: nil) }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }
    }
}
