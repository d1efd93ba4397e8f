import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// An HTTP client of bytes over a plain TCP socket to 127.0.0.1: it sends exactly what a test
/// writes (broken framing, HTTP/1.0, odd methods) and reads everything the server sends until
/// it closes the connection or stops sending for `quiet`.
public enum RawHTTP {
    /// What came back.
    public struct Exchange: Sendable {
        /// Every byte the server sent, as text.
        public let text: String
        /// Whether the server closed the connection (rather than fell quiet).
        public let closed: Bool

        /// The status codes of every response in `text`, in order (`100` included).
        public var statuses: [Int] {
            text.components(separatedBy: "\r\n").compactMap { line -> Int? in
                // A status line may follow a body that ended without a line break of its own.
                guard let start = line.range(of: "HTTP/1.")?.lowerBound else { return nil }
                let status = line[start...]
                guard status.count >= 12 else { return nil }
                return Int(status.dropFirst(9).prefix(3))
            }
        }

        /// The body of the last response (what follows its blank line).
        public var lastBody: String {
            guard let range = text.range(of: "\r\n\r\n", options: .backwards) else { return "" }
            return String(text[range.upperBound...])
        }
    }

    /// A TCP socket connected to 127.0.0.1:`port`, for the caller to use and close.
    public static func connected(port: Int) throws -> Int32 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw POSIXError(.EMFILE) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            close(descriptor)
            throw POSIXError(.ECONNREFUSED)
        }
        return descriptor
    }

    /// Sends `parts` (waiting `pause` between them), then reads until the server closes or
    /// sends nothing for `quiet`.
    public static func exchange(
        port: Int, _ parts: [[UInt8]], pause: Duration = .zero, quiet: Duration = .seconds(2),
        closeAfterSending: Bool = false,
        halfCloseAfterSending: Bool = false
    ) throws -> Exchange {
        let descriptor = try connected(port: port)
        defer { close(descriptor) }
        var timeout = timeval(
            tv_sec: Int(quiet.components.seconds), tv_usec: Int(quiet.components.attoseconds / 1_000_000_000_000))
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        for (index, part) in parts.enumerated() {
            if index > 0, pause > .zero {
                Thread.sleep(
                    forTimeInterval: Double(pause.components.seconds) + Double(pause.components.attoseconds) / 1e18)
            }
            var sent = 0
            while sent < part.count {
                let written = part[sent...].withUnsafeBytes {
                    Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                }
                if written <= 0 { break }
                sent += written
            }
        }
        if closeAfterSending { return Exchange(text: "", closed: false) }
        if halfCloseAfterSending { shutdown(descriptor, Int32(SHUT_WR)) }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count == 0 { return Exchange(text: String(decoding: received, as: UTF8.self), closed: true) }
            if count < 0 {
                return Exchange(text: String(decoding: received, as: UTF8.self), closed: errno == ECONNRESET)
            }
            received += buffer[..<count]
        }
    }

    /// `exchange` with text parts.
    public static func exchange(port: Int, _ parts: String..., pause: Duration = .zero, quiet: Duration = .seconds(2))
        throws -> Exchange
    {
        try exchange(port: port, parts.map { Array($0.utf8) }, pause: pause, quiet: quiet)
    }
}

extension RawHTTP {
    /// `exchange` on a thread of its own, so that waiting for the server never holds one of
    /// the cooperative threads the server's own routes run on.
    public static func send(
        port: Int, _ parts: [String], pause: Duration = .zero, quiet: Duration = .seconds(2),
        closeAfterSending: Bool = false,
        halfCloseAfterSending: Bool = false
    ) async throws -> Exchange {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                continuation.resume(
                    with: Result {
                        try exchange(
                            port: port, parts.map { Array($0.utf8) }, pause: pause, quiet: quiet,
                            closeAfterSending: closeAfterSending,
                            halfCloseAfterSending: halfCloseAfterSending)
                    })
            }
            thread.start()
        }
    }
}
