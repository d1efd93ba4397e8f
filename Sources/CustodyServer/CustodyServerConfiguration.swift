/// How the decision service listens, what it accepts, and what it watches.
public struct CustodyServerConfiguration: Sendable {
    /// Where the service listens.
    public enum Listen: Sendable, Hashable, CustomStringConvertible {
        case tcp(host: String, port: Int)
        case unixSocket(path: String)
        /// Sockets the service was handed, already listening (systemd socket activation; see
        /// `SocketActivation.passedSockets()`).
        case passed([PassedSocket])

        public var description: String {
            switch self {
            case .tcp(let host, let port): PassedSocket.Address.tcp(host: host, port: port).description
            case .unixSocket(let path): PassedSocket.Address.unix(path: path).description
            case .passed(let sockets): sockets.map(\.address.description).joined(separator: ", ")
            }
        }
    }

    /// TLS for the listener: PEM files; with `clientCertificateAuthority`, callers must also
    /// present a certificate it signed.
    public struct TLS: Sendable, Hashable {
        public var certificateChain: String
        public var privateKey: String
        public var clientCertificateAuthority: String?

        public init(certificateChain: String, privateKey: String, clientCertificateAuthority: String? = nil) {
            self.certificateChain = certificateChain
            self.privateKey = privateKey
            self.clientCertificateAuthority = clientCertificateAuthority
        }
    }

    /// Limits on what a request may be. Every limit refused is a clear error naming it.
    public struct Limits: Sendable, Hashable {
        /// `fleetBehindAfter`'s default: a minute.
        public static let fleetBehindAfterDefault: Duration = .seconds(60)

        /// Largest request body (a query, a bundle, data to protect): 16 MiB.
        public var bodyBytes = 16 << 20
        /// Most queries in one batch request: 10,000.
        public var batchQueries = 10_000
        /// Longest query line of a batch: 64 KiB.
        public var lineBytes = 64 << 10
        /// Largest request head (all header fields): 16 KiB.
        public var headerBytes = 16 << 10
        /// How long a connection may stay idle: 75 s, and never less than the body deadline
        /// plus 15 s (a stalled body gets its 408 first). Event streams send heartbeats well
        /// within it.
        public var idleTimeout: Duration = .seconds(75)
        /// How long a request body may take to arrive, from its head to its end: 60 s. A client
        /// sending a byte now and then, which keeps the idle timeout from firing, is cut with
        /// 408 when it passes.
        public var bodyTimeout: Duration = .seconds(60)
        /// Most header fields in a request head: 100.
        public var headerFields = 100
        /// How long a request head may take to arrive: 10 s, from the connection's opening for
        /// its first request, from its first byte for later ones. A client sending its head a
        /// byte at a time, or opening connections and sending nothing, is answered 408
        /// `header-timeout` and closed when it passes.
        public var headerTimeout: Duration = .seconds(10)
        /// Most connections open at once; nil: 10,000, or the process's open-file limit less
        /// 256 when that is lower (`ConnectionGate.defaultLimit`). One more is answered 503
        /// `too-many-connections` and closed, so that a flood of connections never takes the
        /// file descriptors the state, the bundle directory and the logs need.
        public var maxConnections: Int?

        public init() {}
    }

    /// Which `Host` a request may name; nil: any (what an embedding application or a test
    /// decides for itself). `custody serve` always sets one (`HostCheck(listen:allowing:)`).
    public var hostCheck: HostCheck?
    public var listen: Listen
    public var tls: TLS?
    public var limits: Limits
    /// A bundle directory applied on start and whenever it changes; nil: the one the bundle in
    /// force came from, if it is a directory.
    public var bundleDirectory: String?
    /// How often the bundle directory is probed.
    public var watchInterval: Duration
    /// How often offline grace is evaluated.
    public var offlineCheckInterval: Duration
    /// How often the state's change log is read besides change notices (the only way to hear
    /// of changes on SQLite; a safety net and the reachability probe on PostgreSQL).
    public var statePollInterval: Duration = .seconds(1)
    /// How long without reaching the state (or, on PostgreSQL, without a listening connection)
    /// before the service marks its answers stale (`Custody-Stale`) and `/readyz` fails.
    public var staleAfter: Duration = .seconds(3)
    /// How often the policy is synced from Microsoft Graph, when the service does (`--graph`):
    /// 5 minutes.
    public var graphInterval: Duration = .seconds(300)
    /// How long after a bundle is applied a replica still running another revision is announced
    /// (`replicaBehind`): a minute.
    public var fleetBehindAfter: Duration = Limits.fleetBehindAfterDefault
    /// How often an event stream sends a heartbeat when nothing happens.
    public var heartbeat: Duration
    /// Events an event stream may fall behind by before it is dropped (the client resumes from
    /// the state's event log with `Last-Event-ID`).
    public var eventBuffer: Int
    /// The name in the `Server` header.
    public var serverName: String
    /// Whether the service records spans with the tracer the process set up
    /// (`InstrumentationSystem.bootstrap`, as `custody serve --otel-endpoint` does): one per
    /// request (Hummingbird's `TracingMiddleware`, continuing a W3C `traceparent` the caller
    /// sent), one per decision or batch inside it (action, revision, outcome), one per state
    /// call on PostgreSQL and per Microsoft Graph request. Off: no tracing code runs on the
    /// request path.
    public var tracing = false
    /// How long the audit log keeps its entries (`serve --audit-retention`): older ones are
    /// deleted at start and then every hour; nil keeps every entry.
    public var auditRetention: Duration?

    public init(
        listen: Listen = .tcp(host: "127.0.0.1", port: 8080), tls: TLS? = nil, limits: Limits = Limits(),
        bundleDirectory: String? = nil,
        watchInterval: Duration = .seconds(1), offlineCheckInterval: Duration = .seconds(60),
        heartbeat: Duration = .seconds(15),
        eventBuffer: Int = 1_000, serverName: String = "custody"
    ) {
        self.listen = listen
        self.tls = tls
        self.limits = limits
        self.bundleDirectory = bundleDirectory
        self.watchInterval = watchInterval
        self.offlineCheckInterval = offlineCheckInterval
        self.heartbeat = heartbeat
        self.eventBuffer = eventBuffer
        self.serverName = serverName
    }
}

/// The `Host` values requests must carry, against DNS rebinding: a web page whose name an
/// attacker points at 127.0.0.1 can make a browser send it requests, but they name the page's
/// host, not one the service answers to. A request without `Host` is malformed (RFC 9112
/// §3.2: 400); one naming another host is `421 misdirected-request`.
public struct HostCheck: Sendable, Hashable {
    /// The host names (lower-case, without a port) requests may name; nil: any name, though
    /// `Host` must be there.
    public let names: Set<String>?

    /// Loopback names, the listen addresses unless one is a wildcard (`0.0.0.0`, `::`), and
    /// `extra` (`--allowed-host`; `*` allows any). A service listening on a wildcard address
    /// with no extra names, or on a Unix socket, allows any name: it cannot know the names
    /// clients reach it by.
    public init(listen: CustodyServerConfiguration.Listen, allowing extra: [String] = []) {
        if extra.contains("*") {
            names = nil
            return
        }
        var names = Set(extra.map { Self.hostName($0) })
        // The hosts listened on; nil for a wildcard address or a Unix socket.
        let hosts: [String?] =
            switch listen {
            case .tcp(let host, _): [host]
            case .unixSocket: [nil]
            case .passed(let sockets):
                sockets.map {
                    if case .tcp(let host, _) = $0.address { host } else { nil }
                }
            }
        for host in hosts {
            if let listening = host.map(Self.hostName), !["0.0.0.0", "::", "[::]", ""].contains(listening) {
                names.insert(listening)
            } else if extra.isEmpty {
                self.names = nil
                return
            }
        }
        names.formUnion(["localhost", "127.0.0.1", "[::1]"])
        self.names = names
    }

    /// `value` as a host and a port: `[v6]:port`, `name:port`, or a host alone (an IPv6 address
    /// without brackets, which has several colons, is a host alone); nil for an unclosed `[`.
    private static func split(_ value: Substring) -> (host: Substring, port: Substring?)? {
        if value.hasPrefix("[") {
            guard let close = value.firstIndex(of: "]") else { return nil }
            let rest = value[value.index(after: close)...]
            return (value[...close], rest.isEmpty ? nil : rest)
        }
        guard value.filter({ $0 == ":" }).count == 1, let colon = value.firstIndex(of: ":") else { return (value, nil) }
        return (value[..<colon], value[colon...])
    }

    /// The host of a `Host` value or a name given: lower-cased, without its port or a trailing
    /// dot, an IPv6 address in brackets.
    static func hostName(_ value: String) -> String {
        let lowered = value.lowercased()
        var host = split(lowered[...]).map { String($0.host) } ?? lowered
        if host.contains(":"), !host.hasPrefix("[") { host = "[" + host + "]" }
        if host.hasSuffix(".") { host.removeLast() }
        return host
    }

    /// Whether `value` is one host and an optional port (1 to 65535), as a `Host` must be.
    static func isValid(_ value: String) -> Bool {
        guard let (host, port) = split(value[...]), host.hasPrefix("[") || !host.contains(":") else { return false }
        if let port {
            // The port keeps its colon here: `:` and then 1 to 65535 in ASCII digits.
            let digits = port.dropFirst()
            guard port.hasPrefix(":"), let number = Int(digits), (1...65_535).contains(number),
                digits.allSatisfy(\.isASCII)
            else { return false }
        }
        return !host.isEmpty
            && host.unicodeScalars.allSatisfy { $0.isASCII && $0.value > 0x20 && $0 != "/" && $0 != "@" }
    }

    /// Whether a request whose `Host` is `value` may be answered.
    func allows(_ value: String) -> Bool {
        guard let names else { return true }
        return names.contains(Self.hostName(value))
    }
}
