public import Custody
public import Hummingbird
import HummingbirdAuth
import HummingbirdCore
import HummingbirdTLS
public import Logging
import NIOCore
public import Prometheus

/// The decision service over one engine: every route, the middleware (request ids, logs,
/// metrics, bearer tokens and scopes, JSON errors), the listener with its limits and TLS, and
/// the engine's background work. What `custody serve` runs and what the tests run.
///
/// - Parameters:
///   - configuration: where to listen, TLS, limits, what to watch.
///   - engine: the installation; share it with nothing that outlives the application.
///   - metrics: where `/metrics` reads from (a fresh registry by default).
/// - Throws: when the TLS files cannot be read.
public func buildApplication(
    configuration: CustodyServerConfiguration, engine: CustodyEngine, metrics registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry(),
    logger: Logger = Logger(label: "custody.server")
) throws -> some ApplicationProtocol {
    let metrics = ServerMetrics(registry: registry)
    let router = buildRouter(configuration: configuration, engine: engine, metrics: metrics)
    let limits = configuration.limits
    let http = HTTP1Channel.Configuration(
        idleTimeout: TimeAmount(limits.idleTimeout),
        httpDecoderConfiguration: .init(maxHeaderFieldSize: limits.headerBytes, maxHeaderListSize: limits.headerBytes, maxHeaderFieldCount: 100))
    var server: HTTPServerBuilder = .http1(configuration: http)
    if let tls = configuration.tls {
        server = try .tls(.http1(configuration: http), tlsConfiguration: try TLSSettings.configuration(tls))
    }
    let address: BindAddress
    switch configuration.listen {
    case .tcp(let host, let port): address = .hostname(host, port: port)
    case .unixSocket(let path): address = .unixDomainSocket(path: path)
    }
    return Application(
        router: router, server: server, configuration: .init(address: address, serverName: configuration.serverName),
        services: [EngineService(engine: engine, configuration: configuration, logger: logger)], logger: logger)
}

/// Every route, grouped by the scope it needs.
func buildRouter(configuration: CustodyServerConfiguration, engine: CustodyEngine, metrics: ServerMetrics) -> Router<CustodyRequestContext> {
    let router = Router(context: CustodyRequestContext.self)
    router.add(middleware: RequestMiddleware(metrics: metrics, engine: engine))
    router.add(middleware: TokenAuthenticator(engine: engine))
    OperationsController(engine: engine, metrics: metrics).addRoutes(to: router)

    let v1 = router.group("v1")
    let decisions = DecisionController(engine: engine, limits: configuration.limits, metrics: metrics)
    decisions.addRoutes(to: v1.group().add(middleware: RequireScope(scope: .decide)))
    let policy = PolicyController(engine: engine, limits: configuration.limits)
    policy.addReadRoutes(to: v1.group().add(middleware: RequireScope(scope: .read)))
    EventsController(engine: engine, configuration: configuration, metrics: metrics).addRoutes(to: v1.group().add(middleware: RequireScope(scope: .events)))
    let protection = ProtectionController(engine: engine, limits: configuration.limits)
    protection.addProtectRoutes(to: v1.group().add(middleware: RequireScope(scope: .protect)))
    let admin = v1.group().add(middleware: RequireScope(scope: .admin))
    policy.addAdminRoutes(to: admin)
    protection.addAdminRoutes(to: admin)
    return router
}

/// Builds the service (`buildApplication`) and runs it until SIGTERM or SIGINT, then stops
/// gracefully: requests in flight finish, event streams end with a `shutdown` event.
public func runService(configuration: CustodyServerConfiguration, engine: CustodyEngine, logger: Logger = Logger(label: "custody.server")) async throws {
    try await buildApplication(configuration: configuration, engine: engine, logger: logger).runService()
}
