import Foundation

/// A listening socket the service was handed when it started, rather than one it opened:
/// systemd's socket activation (`custody.socket`, or `systemd-socket-activate`), as
/// sd_listen_fds(3) describes it.
public struct PassedSocket: Sendable, Hashable, CustomStringConvertible {
    /// What the socket is bound to, as the kernel says (getsockname).
    public enum Address: Sendable, Hashable, CustomStringConvertible {
        case tcp(host: String, port: Int)
        case unix(path: String)

        public var description: String {
            switch self {
            case .tcp(let host, let port): "\(host.contains(":") ? "[\(host)]" : host):\(port)"
            case .unix(let path): "unix:\(path)"
            }
        }
    }

    /// The descriptor, 3 and up.
    public let descriptor: Int32
    /// Its name in `LISTEN_FDNAMES` (a socket unit's `FileDescriptorName=`; by default the
    /// unit's name), or `unknown` when none was given.
    public let name: String
    public let address: Address

    public init(descriptor: Int32, name: String, address: Address) {
        self.descriptor = descriptor
        self.name = name
        self.address = address
    }

    public var description: String { "\(address) (descriptor \(descriptor), \(name))" }
}

/// Why the sockets passed by systemd cannot be served: named by descriptor and name, with what
/// the socket unit must say instead.
public struct SocketActivationError: Error, CustomStringConvertible, Equatable {
    public let description: String
}

/// Reads what systemd passes a socket-activated service (sd_listen_fds(3)): `LISTEN_PID` (the
/// process the sockets are for), `LISTEN_FDS` (how many, from descriptor 3 on) and
/// `LISTEN_FDNAMES` (their names, colon-separated).
public enum SocketActivation {
    /// The first descriptor passed (`SD_LISTEN_FDS_START`).
    public static let firstDescriptor: Int32 = 3

    /// The sockets passed to this process; nil when none were (no `LISTEN_PID`, or one naming
    /// another process: the variables were inherited, not meant for it).
    ///
    /// Each must be a listening stream socket (TCP over IPv4 or IPv6, or a Unix socket), as a
    /// socket unit's `ListenStream=` makes; anything else is refused, naming it. The variables
    /// are removed from the environment once read (as `sd_listen_fds(1)` does), so that a
    /// process this one starts does not take the sockets for its own; each descriptor is marked
    /// close-on-exec for the same reason.
    /// - Parameter environment: the variables to read; nil: the process's own, which are then
    ///   removed.
    public static func passedSockets(environment: [String: String]? = nil) throws(SocketActivationError)
        -> [PassedSocket]?
    {
        let ownEnvironment = environment == nil
        let environment = environment ?? ProcessInfo.processInfo.environment
        defer {
            if ownEnvironment, environment["LISTEN_PID"] != nil {
                for name in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] { unsetenv(name) }
            }
        }
        guard let pid = environment["LISTEN_PID"] else { return nil }
        guard let forProcess = Int32(pid), forProcess > 0 else {
            throw SocketActivationError(description: "LISTEN_PID is '\(pid)', not a process id")
        }
        guard forProcess == getpid() else { return nil }
        guard let countText = environment["LISTEN_FDS"], let count = Int32(countText), count >= 0, count < 1_024
        else {
            throw SocketActivationError(
                description: "LISTEN_FDS is '\(environment["LISTEN_FDS"] ?? "")', not a number of descriptors")
        }
        guard count > 0 else {
            throw SocketActivationError(
                description: "systemd passed no socket (LISTEN_FDS=0): the socket unit must have a ListenStream= line")
        }
        // sd_listen_fds_with_names(3): names that do not match the count are not used.
        let names = environment["LISTEN_FDNAMES"].map { $0.split(separator: ":", omittingEmptySubsequences: false) }
            .flatMap { $0.count == Int(count) ? $0 : nil }
        var sockets: [PassedSocket] = []
        for offset in 0..<count {
            let descriptor = firstDescriptor + offset
            let name = names.map { String($0[Int(offset)]) }.flatMap { $0.isEmpty ? nil : $0 } ?? "unknown"
            sockets.append(try inspect(descriptor, name: name))
        }
        return sockets
    }

    /// The descriptor as a listening stream socket, marked close-on-exec; refused otherwise.
    static func inspect(_ descriptor: Int32, name: String) throws(SocketActivationError) -> PassedSocket {
        func refuse(_ why: String) -> SocketActivationError {
            SocketActivationError(
                description:
                    "systemd passed descriptor \(descriptor) (\(name)), which \(why): custody serve takes listening stream sockets (ListenStream= in the socket unit, Accept=no)"
            )
        }
        let flags = fcntl(descriptor, F_GETFD)
        guard flags >= 0 else { throw refuse("is not open") }
        _ = fcntl(descriptor, F_SETFD, flags | FD_CLOEXEC)
        var type: Int32 = 0
        var listening: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_TYPE, &type, &length) == 0 else { throw refuse("is not a socket") }
        #if canImport(Glibc)
            let stream = Int32(SOCK_STREAM.rawValue)
        #else
            let stream = SOCK_STREAM
        #endif
        guard type == stream else { throw refuse("is not a stream socket (ListenDatagram=, ListenSequentialPacket=)") }
        length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_ACCEPTCONN, &listening, &length) == 0, listening != 0 else {
            throw refuse("is not listening (a connection handed over by Accept=yes)")
        }
        guard let address = localAddress(descriptor) else {
            throw refuse("is bound to neither an IP address nor a Unix socket path")
        }
        return PassedSocket(descriptor: descriptor, name: name, address: address)
    }

    /// What `descriptor` is bound to; nil for another family, or an abstract Unix socket's.
    static func localAddress(_ descriptor: Int32) -> PassedSocket.Address? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let read = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard read == 0 else { return nil }
        switch Int32(storage.ss_family) {
        case AF_INET:
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { address in
                    var ip = address.pointee.sin_addr
                    return text(family: AF_INET, &ip, capacity: Int(INET_ADDRSTRLEN)).map {
                        .tcp(host: $0, port: Int(UInt16(bigEndian: address.pointee.sin_port)))
                    }
                }
            }
        case AF_INET6:
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { address in
                    var ip = address.pointee.sin6_addr
                    return text(family: AF_INET6, &ip, capacity: Int(INET6_ADDRSTRLEN)).map {
                        .tcp(host: $0, port: Int(UInt16(bigEndian: address.pointee.sin6_port)))
                    }
                }
            }
        case AF_UNIX:
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_un.self, capacity: 1) { address in
                    withUnsafeBytes(of: address.pointee.sun_path) { bytes in
                        // An abstract socket's name starts with a zero byte: it has no path.
                        guard let first = bytes.first, first != 0 else { return nil }
                        let path = bytes.prefix { $0 != 0 }
                        return .unix(path: String(decoding: path, as: UTF8.self))
                    }
                }
            }
        default:
            return nil
        }
    }

    private static func text(family: Int32, _ address: UnsafeRawPointer, capacity: Int) -> String? {
        var buffer = [CChar](repeating: 0, count: capacity)
        guard inet_ntop(family, address, &buffer, socklen_t(capacity)) != nil else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

}
