import Dispatch
import Foundation

/// Tells the service manager how the service is doing, by sd_notify(3)'s protocol: one datagram
/// of `KEY=value` lines to the Unix socket named by `NOTIFY_SOCKET` (a path, or an abstract name
/// when it starts with `@`). The protocol is systemd's documented interface, written out here
/// rather than linked from libsystemd (docs/decisions.md, "Running under systemd").
///
/// What the service says, and when (`custody.service` is `Type=notify`):
/// - `READY=1` once it listens with a policy in force, `STATUS=` with the revision;
/// - `RELOADING=1` with `MONOTONIC_USEC=` on SIGHUP, then `READY=1` when the reload is done;
/// - `WATCHDOG=1` every half `WATCHDOG_USEC` when the unit sets `WatchdogSec=`;
/// - `STOPPING=1` when it begins to stop.
public struct ServiceNotifier: Sendable {
    /// Where the datagrams go: the socket's address bytes (`sun_path`, a leading zero byte for
    /// an abstract name).
    private let path: [UInt8]
    /// How often to send `WATCHDOG=1`, when the manager expects it: half its `WATCHDOG_USEC`.
    public let watchdogInterval: Duration?

    /// The notifier `environment` names; nil when it names none (not started by a service
    /// manager that listens, or `NOTIFY_SOCKET` not a Unix socket path or abstract name).
    /// Read from the process's environment (`environment` nil), `NOTIFY_SOCKET`, `WATCHDOG_USEC`
    /// and `WATCHDOG_PID` are removed from it, so that a process this one starts does not
    /// speak for it.
    public init?(environment: [String: String]? = nil) {
        let ownEnvironment = environment == nil
        let environment = environment ?? ProcessInfo.processInfo.environment
        defer {
            if ownEnvironment { for name in ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"] { unsetenv(name) } }
        }
        guard let socket = environment["NOTIFY_SOCKET"], socket.hasPrefix("/") || socket.hasPrefix("@"),
            socket.utf8.count < MemoryLayout.size(ofValue: sockaddr_un().sun_path)
        else { return nil }
        var bytes = Array(socket.utf8)
        if bytes[0] == UInt8(ascii: "@") { bytes[0] = 0 }
        path = bytes
        let forThisProcess = environment["WATCHDOG_PID"].map { Int32($0) == getpid() } ?? true
        if forThisProcess, let text = environment["WATCHDOG_USEC"], let microseconds = Int64(text), microseconds > 0 {
            // Half the interval, as sd_watchdog_enabled(3) advises; never more often than
            // every 100 ms, whatever a unit says.
            watchdogInterval = max(.microseconds(microseconds / 2), .milliseconds(100))
        } else {
            watchdogInterval = nil
        }
    }

    /// Sends `fields` (`READY=1`, `STATUS=…`) as one message; whether it was sent. A value's
    /// line breaks are replaced by spaces: a line is a field.
    @discardableResult
    public func notify(_ fields: [String]) -> Bool {
        let message = fields.map { $0.replacingOccurrences(of: "\n", with: " ") }.joined(separator: "\n")
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { target in
            for (index, byte) in path.enumerated() { target[index] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + path.count + (path[0] == 0 ? 0 : 1))
        let sent = Array(message.utf8).withUnsafeBytes { bytes in
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(descriptor, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL), $0, length)
                }
            }
        }
        return sent == message.utf8.count
    }

    /// `MONOTONIC_USEC=` now: CLOCK_MONOTONIC in microseconds, as `RELOADING=1` must carry.
    public static func monotonicMicroseconds() -> UInt64 {
        // Dispatch's uptime is CLOCK_MONOTONIC on Linux.
        DispatchTime.now().uptimeNanoseconds / 1_000
    }
}
