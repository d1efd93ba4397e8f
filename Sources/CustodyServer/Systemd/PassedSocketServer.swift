import Foundation
import NIOConcurrencyHelpers
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOExtras
import NIOPosix
import ServiceLifecycle

/// Hummingbird's server loop over sockets the service was handed (systemd socket activation):
/// Hummingbird 2 binds only addresses it opens itself (`BindAddress` is a host and port or a
/// socket path), so this serves each passed descriptor with SwiftNIO's
/// `ServerBootstrap.bind(_:)` and hands every connection to the same child channel (and so
/// the same HTTP/1 rules, limits and TLS) as a service that opened its own socket. On graceful
/// shutdown it stops accepting, lets requests in flight finish, and returns once every
/// connection has closed, as Hummingbird's `Server` does.
struct PassedSocketServer<ChildChannel: ServerChildChannel>: Service {
    let sockets: [PassedSocket]
    let childChannel: ChildChannel
    let logger: Logger
    let onRunning: @Sendable () async -> Void

    func run() async throws {
        let group = MultiThreadedEventLoopGroup.singleton
        let (childChannel, logger) = (self.childChannel, self.logger)
        var listeners: [NIOAsyncChannel<ChildChannel.Value, Never>] = []
        // One quiescing helper per listener: a helper follows the one server channel it is
        // given first.
        let quiescings = sockets.map { _ in ServerQuiescingHelper(group: group) }
        do {
            for (socket, quiescing) in zip(sockets, quiescings) {
                let listener = try await ServerBootstrap(group: group)
                    .serverChannelInitializer { channel in
                        channel.eventLoop.makeCompletedFuture {
                            try channel.pipeline.syncOperations.addHandler(
                                quiescing.makeServerChannelHandler(channel: channel))
                        }
                    }
                    .childChannelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
                    .bind(socket.descriptor) { channel in childChannel.setup(channel: channel, logger: logger) }
                listeners.append(listener)
                logger.info("listening on a socket passed by systemd", metadata: ["socket": "\(socket)"])
            }
        } catch {
            for listener in listeners { try? await listener.channel.close() }
            throw ListenError(description: "cannot serve the sockets systemd passed: \(error)")
        }
        await withGracefulShutdownHandler {
            await onRunning()
            await withDiscardingTaskGroup { group in
                for listener in listeners {
                    group.addTask {
                        do {
                            try await listener.executeThenClose { inbound in
                                try await withThrowingDiscardingTaskGroup { connections in
                                    for try await connection in inbound {
                                        connections.addTask {
                                            await childChannel.handle(value: connection, logger: logger)
                                        }
                                    }
                                }
                            }
                        } catch {
                            logger.error("waiting for connections failed", metadata: ["error": "\(error)"])
                        }
                    }
                }
            }
        } onGracefulShutdown: {
            for quiescing in quiescings { quiescing.initiateShutdown(promise: nil) }
        }
    }
}

/// The `Date` header's value, formatted once a second (RFC 9110 §5.6.7's IMF-fixdate), as
/// Hummingbird's own server loop keeps it.
final class HTTPDate: Sendable {
    private let cached = NIOLockedValueBox<(second: Int, text: String)>((-1, ""))

    var now: String {
        let second = Int(Date().timeIntervalSince1970)
        return cached.withLockedValue { cache in
            if cache.second != second { cache = (second, Self.format(second)) }
            return cache.text
        }
    }

    static func format(_ second: Int) -> String {
        Date(timeIntervalSince1970: Double(second)).formatted(
            Date.VerbatimFormatStyle(
                format:
                    "\(weekday: .abbreviated), \(day: .twoDigits) \(month: .abbreviated) \(year: .padded(4)) \(hour: .twoDigits(clock: .twentyFourHour, hourCycle: .zeroBased)):\(minute: .twoDigits):\(second: .twoDigits) GMT",
                locale: Locale(identifier: "en_US_POSIX"), timeZone: TimeZone(identifier: "GMT")!,
                calendar: Calendar(identifier: .gregorian)))
    }
}
