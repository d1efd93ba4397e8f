public import Custody
public import CustodyGraph
import CustodyPolicy
public import Hummingbird
import HummingbirdAuth
import HummingbirdCore
import HummingbirdTLS
public import Logging
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
public import ServiceLifecycle
import UnixSignals
public import Prometheus

/// The decision service over one engine: every route, the middleware (request ids, logs,
/// metrics, bearer tokens and scopes, JSON errors), the listener with its limits and TLS, and
/// the engine's background work. What `custody serve` runs and what the tests run.
///
/// - Parameters:
///   - configuration: where to listen, TLS, limits, what to watch.
///   - engine: the installation; share it with nothing that outlives the application.
///   - graph: syncs the policy from a Microsoft Graph tenant at start, every
///     `configuration.graphInterval` and on `POST /v1/graph/sync`; nil: the service does not.
///     Its HTTP client is shut down when the service stops.
///   - metrics: where `/metrics` reads from (a fresh registry by default).
/// - Throws: when the TLS files cannot be read.
///   - onListening: called once the listener is bound, with the address it is bound to (the
///     real port when 0 was asked for); nothing is announced before.
public func buildApplication(
    configuration: CustodyServerConfiguration, engine: CustodyEngine, graph: GraphSyncRunner? = nil,
    metrics registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry(),
    logger: Logger = Logger(label: "custody.server"), onListening: @escaping @Sendable (String) async -> Void = { _ in }
) throws -> some ApplicationProtocol {
    try makeApplication(
        configuration: configuration, engine: engine, graph: graph, metrics: registry, logger: logger,
        onListening: onListening, watched: WatchedDirectory())
}

/// `buildApplication`, telling `watched` which bundle directory the service watches.
func makeApplication(
    configuration: CustodyServerConfiguration, engine: CustodyEngine, graph: GraphSyncRunner?,
    metrics registry: PrometheusCollectorRegistry, logger: Logger,
    onListening: @escaping @Sendable (String) async -> Void, watched: WatchedDirectory
) throws -> some ApplicationProtocol {
    let metrics = ServerMetrics(registry: registry)
    let router = buildRouter(configuration: configuration, engine: engine, graph: graph, metrics: metrics)
    let connections = ConnectionSettings(configuration.limits)
    var server: HTTPServerBuilder = .custodyHTTP1(
        configuration: connections.http, gate: connections.gate, headerTimeout: connections.headerTimeout)
    if let tls = configuration.tls {
        server = try .tls(server, tlsConfiguration: try TLSSettings.configuration(tls))
    }
    let address: BindAddress
    switch configuration.listen {
    case .tcp(let host, let port): address = .hostname(host, port: port)
    case .unixSocket(let path): address = .unixDomainSocket(path: path)
    case .passed:
        throw ListenError(
            description: "sockets passed by systemd are served by runService, not by an Application of Hummingbird's")
    }
    return Application(
        router: router, server: server, configuration: .init(address: address, serverName: configuration.serverName),
        services: backgroundServices(
            configuration: configuration, engine: engine, graph: graph, metrics: metrics, logger: logger,
            watched: watched),
        onServerRunning: { channel in
            let bound = channel.localAddress.map { address in
                address.pathname.map { "unix:\($0)" }
                    ?? CustodyServerConfiguration.Listen.tcp(host: address.ipAddress ?? "?", port: address.port ?? 0)
                    .description
            }
            await onListening(bound ?? configuration.listen.description)
        },
        logger: logger)
}

/// The engine's work beside the listener: the bundle directory, the change log, the fleet, the
/// console's activity, Microsoft Graph.
func backgroundServices(
    configuration: CustodyServerConfiguration, engine: CustodyEngine, graph: GraphSyncRunner?,
    metrics: ServerMetrics, logger: Logger, watched: WatchedDirectory
) -> [any Service] {
    [
        EngineService(
            engine: engine, configuration: configuration, logger: logger, syncsFromGraph: graph != nil,
            watched: watched),
        FleetService(engine: engine, behindAfter: configuration.fleetBehindAfter, metrics: metrics, logger: logger),
        ShadowService(engine: engine, metrics: metrics),
        ActivitySampler(activity: metrics.activity),
    ] + (graph.map { [GraphSyncService(runner: $0, interval: configuration.graphInterval, metrics: metrics)] } ?? [])
        + (configuration.auditRetention.map {
            [AuditRetention(engine: engine, age: $0, interval: .seconds(3_600), logger: logger)]
        } ?? [])
}

/// How each connection is held to the service's limits (`CustodyHTTP1Channel`).
struct ConnectionSettings {
    let http: HTTP1Channel.Configuration
    let gate: ConnectionGate
    let headerTimeout: TimeAmount

    init(_ limits: CustodyServerConfiguration.Limits) {
        http = HTTP1Channel.Configuration(
            additionalChannelHandlers: [
                HeadErrorHandler(), ExpectContinueHandler(limit: limits.bodyBytes, allowance: 1 << 16),
                BodyDeadlineHandler(limit: TimeAmount(limits.bodyTimeout)), CloseAfterResponseHandler(),
            ],
            // A body that stalls must get its 408 before the idle timer closes the connection
            // without a word: the idle timeout is never shorter than the body deadline plus 15 s.
            idleTimeout: TimeAmount(max(limits.idleTimeout, limits.bodyTimeout + .seconds(15))),
            httpDecoderConfiguration: .init(
                maxHeaderFieldSize: limits.headerBytes, maxHeaderListSize: limits.headerBytes,
                maxHeaderFieldCount: limits.headerFields))
        gate = ConnectionGate(limit: limits.maxConnections ?? ConnectionGate.defaultLimit)
        headerTimeout = TimeAmount(limits.headerTimeout)
    }

    func channel(responder: @escaping HTTPChannelHandler.Responder) -> CustodyHTTP1Channel {
        CustodyHTTP1Channel(
            base: HTTP1Channel(responder: responder, configuration: http), gate: gate, headerTimeout: headerTimeout)
    }
}

/// Every route, grouped by the scope it needs; with `refusingOtherMethods`, each route's other
/// methods answer 405 (off only to list the routes themselves).
func buildRouter(
    configuration: CustodyServerConfiguration, engine: CustodyEngine, graph: GraphSyncRunner? = nil,
    metrics: ServerMetrics,
    refusingOtherMethods: Bool = true
) -> Router<CustodyRequestContext> {
    let router = Router(context: CustodyRequestContext.self, options: .autoGenerateHeadEndpoints)
    if configuration.tracing {
        // Outermost, so that the span covers every middleware and sees the status sent.
        router.add(middleware: RequestTracing(scheme: configuration.tls == nil ? "http" : "https"))
    }
    router.add(
        middleware: RequestMiddleware(
            metrics: metrics, engine: engine, bodyLimit: configuration.limits.bodyBytes,
            hostCheck: configuration.hostCheck))
    router.add(middleware: TokenAuthenticator(engine: engine))
    let operations = OperationsController(engine: engine, graph: graph, metrics: metrics)
    operations.addRoutes(to: router)

    let v1 = router.group("v1")
    operations.addReadRoutes(to: v1.group().add(middleware: RequireScope(scope: .read)))
    let decisions = DecisionController(
        engine: engine, limits: configuration.limits, metrics: metrics,
        spans: DecisionSpans(tracing: configuration.tracing))
    decisions.addRoutes(to: v1.group().add(middleware: RequireScope(scope: .decide)))
    let policy = PolicyController(engine: engine, limits: configuration.limits)
    policy.addReadRoutes(to: v1.group().add(middleware: RequireScope(scope: .read)))
    EventsController(engine: engine, configuration: configuration, metrics: metrics).addRoutes(
        to: v1.group().add(middleware: RequireScope(scope: .events)))
    let protection = ProtectionController(engine: engine, limits: configuration.limits)
    protection.addProtectRoutes(to: v1.group().add(middleware: RequireScope(scope: .protect)))
    let admin = v1.group().add(middleware: RequireScope(scope: .admin))
    policy.addAdminRoutes(to: admin)
    let replays = ReplayGate()
    let console = ConsoleController(
        engine: engine, syncsFromGraph: graph != nil, limits: configuration.limits, activity: metrics.activity,
        replays: replays)
    console.addPublicRoutes(to: router)
    console.addViewRoutes(
        to: router.group("console").add(middleware: RequireScope(scope: .read)).add(middleware: InBackground()))
    let bundles = BundleController(engine: engine, limits: configuration.limits, replays: replays)
    bundles.addReadRoutes(to: v1.group().add(middleware: RequireScope(scope: .read)))
    bundles.addAdminRoutes(to: admin)
    protection.addAdminRoutes(to: admin)
    GraphController(runner: graph, metrics: metrics).addAdminRoutes(to: admin)
    if refusingOtherMethods { router.addMethodNotAllowedRoutes() }
    return router
}

extension Router where Context == CustodyRequestContext {
    /// Every route's other methods answer 405 with `Allow` (HEAD is generated for every GET).
    /// Call once every route is added.
    func addMethodNotAllowedRoutes() {
        var byPath: [String: (path: RouterPath, methods: Set<HTTPRequest.Method>)] = [:]
        for route in routes { byPath[route.path.description, default: (route.path, [])].methods.insert(route.method) }
        let standard: [HTTPRequest.Method] = [.get, .head, .post, .put, .patch, .delete, .options]
        for (_, entry) in byPath {
            var allowed = entry.methods
            if allowed.contains(.get) { allowed.insert(.head) }
            let allow = standard.filter(allowed.contains).map(\.rawValue).joined(separator: ", ")
            for method in standard where !allowed.contains(method) {
                on(entry.path, method: method) { _, _ -> Response in
                    throw ServiceError(
                        .methodNotAllowed, .methodNotAllowed, "this endpoint takes \(allow); see GET /openapi.json",
                        headers: [.allow: allow],
                        details: ServiceError.Details(
                            allow: allow.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }))
                }
            }
        }
    }
}

/// Refuses a Unix socket path that a live service answers on (binding would take its socket
/// away: it would keep running, unreachable), and one that is not a socket at all. A socket
/// file nothing answers on is left to be replaced, as after a crash.
func checkSocketPath(_ path: String) throws {
    var status = stat()
    guard lstat(path, &status) == 0 else { return }
    guard status.st_mode & S_IFMT == S_IFSOCK else {
        throw ListenError(
            description:
                "cannot listen on unix:\(path): \(path) exists and is \(fileKind(of: status.st_mode) ?? "not a socket"), not a socket; remove it or choose another path"
        )
    }
    let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { return }
    defer { close(descriptor) }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        raw.copyBytes(from: bytes)
        raw[bytes.count] = 0
    }
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
        }
    }
    if connected == 0 {
        throw ListenError(
            description:
                "cannot listen on unix:\(path): another service listens there (its socket answers); stop it or choose another path"
        )
    }
}

/// Why the service could not start listening, naming the address.
public struct ListenError: Error, CustomStringConvertible {
    public let description: String
}

/// Builds the service (`buildApplication`) and runs it until SIGTERM or SIGINT, then stops
/// gracefully: requests in flight finish, event streams end with a `shutdown` event.
///
/// On `.passed` sockets (systemd socket activation) it serves those, with the same routes,
/// limits and TLS (`PassedSocketServer`). With `notifier`, it tells the service manager when
/// it is ready, reloading and stopping, and keeps its watchdog fed; with or without one,
/// `SIGHUP` reads the policy again (`SystemdService`).
/// - Parameters:
///   - services: run beside the service, started first and stopped last (a trace exporter,
///     which sends the spans of the last requests as it stops).
///   - onListening: called once the listener is bound, with its address.
/// - Throws: `ListenError` naming the address when it cannot be listened on (taken, not this
///   host's, or not permitted).
public func runService(
    configuration: CustodyServerConfiguration, engine: CustodyEngine, graph: GraphSyncRunner? = nil,
    notifier: ServiceNotifier? = nil, services additional: [any Service] = [],
    logger: Logger = Logger(label: "custody.server"),
    onListening: @escaping @Sendable (String) async -> Void = { _ in }
) async throws {
    if case .unixSocket(let path) = configuration.listen { try checkSocketPath(path) }
    let (listening, announce) = AsyncStream.makeStream(of: String.self)
    let watched = WatchedDirectory()
    let systemd = SystemdService(
        engine: engine, notifier: notifier, graph: graph, watched: watched, listening: listening, logger: logger)
    let announcing: @Sendable (String) async -> Void = { address in
        await onListening(address)
        announce.yield(address)
        announce.finish()
    }
    do {
        if case .passed(let sockets) = configuration.listen {
            let metrics = ServerMetrics(registry: PrometheusCollectorRegistry())
            let router = buildRouter(configuration: configuration, engine: engine, graph: graph, metrics: metrics)
            let responder = makeResponder(router: router, serverName: configuration.serverName, logger: logger)
            let connections = ConnectionSettings(configuration.limits)
            let address = configuration.listen.description
            let listener: any Service =
                if let tls = configuration.tls {
                    PassedSocketServer(
                        sockets: sockets,
                        childChannel: try TLSChannel(
                            connections.channel(responder: responder),
                            tlsConfiguration: try TLSSettings.configuration(tls)),
                        logger: logger, onRunning: { await announcing(address) })
                } else {
                    PassedSocketServer(
                        sockets: sockets, childChannel: connections.channel(responder: responder), logger: logger,
                        onRunning: { await announcing(address) })
                }
            let services =
                additional
                + backgroundServices(
                    configuration: configuration, engine: engine, graph: graph, metrics: metrics, logger: logger,
                    watched: watched) + [systemd, listener]
            try await ServiceGroup(
                configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
            ).run()
        } else {
            let application = try makeApplication(
                configuration: configuration, engine: engine, graph: graph, metrics: PrometheusCollectorRegistry(),
                logger: logger, onListening: announcing, watched: watched)
            try await ServiceGroup(
                configuration: .init(
                    services: additional + [application, systemd], gracefulShutdownSignals: [.sigterm, .sigint],
                    logger: logger)
            ).run()
        }
    } catch let error as IOError where error.errnoCode == EADDRINUSE {
        throw ListenError(
            description:
                "cannot listen on \(configuration.listen): the address is already in use (another service listens there)"
        )
    } catch let error as IOError where error.errnoCode == EACCES || error.errnoCode == EADDRNOTAVAIL {
        let why =
            error.errnoCode == EACCES
            ? "permission denied (a port below 1024 needs privileges)" : "the address is not one of this host's"
        throw ListenError(description: "cannot listen on \(configuration.listen): \(why)")
    }
}

/// A parse error that came while an answer was being written: the connection is closed.
struct ResponseWriteFailed: Error {}

/// Each request answered by `router`, as Hummingbird's `Application` answers it: a request id
/// in the log's metadata, an error that escapes every middleware answered 500, the `Date` and
/// `Server` headers. For the listener on passed sockets, which has no `Application`.
func makeResponder(router: Router<CustodyRequestContext>, serverName: String?, logger: Logger)
    -> HTTPChannelHandler.Responder
{
    let responder = router.buildResponder()
    let date = HTTPDate()
    return { request, writer, channel in
        var requestLogger = logger
        requestLogger[metadataKey: "hb.request.id"] = .stringConvertible(RequestID())
        let context = CustodyRequestContext(source: .init(channel: channel, logger: requestLogger))
        var response: Response
        do {
            response = try await responder.respond(to: request, context: context)
        } catch let error as HTTPParserError {
            throw error
        } catch {
            requestLogger.debug("an error no middleware answered", metadata: ["error.type": "\(error)"])
            response = Response(status: .internalServerError)
        }
        response.headers[.date] = date.now
        if let serverName { response.headers[.server] = serverName }
        do {
            try await writer.write(response: response.head, body: response.body)
        } catch is HTTPParserError {
            // Not rethrown as it is: the connection's handler would answer it with a second
            // response. Any other error closes the connection, as Hummingbird's own does.
            throw ResponseWriteFailed()
        }
    }
}
