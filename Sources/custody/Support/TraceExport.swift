import ArgumentParser
import Custody
import Foundation
import Logging
#if OpenTelemetry
    import OTel
#endif
import ServiceLifecycle
import Tracing

/// `custody serve --otel-endpoint URL`: the process's tracer, swift-otel's, exporting spans over
/// OTLP/HTTP (protobuf) in batches, W3C trace context as the propagator. Set up once, before
/// the state is opened and the Graph client is made (each takes the process's tracer then);
/// its exporter runs as a service beside the listener and sends what is left as it stops.
///
/// swift-otel reads the OpenTelemetry SDK's variables (`OTEL_*`) itself. Those it would stop
/// the process on (a propagator, sampler or exporter it does not have: `fatalError`), or
/// misuse (a protocol other than http/protobuf), are refused here first, each naming the
/// variable (`checkEnvironment`).
enum TraceExport {
    /// Bootstraps the process's tracer (`InstrumentationSystem`) and returns the exporter's
    /// service, to run beside the listener. `--otel-endpoint` wins over the endpoint variables,
    /// as a command line wins over a configuration: they are set aside, with a warning.
    /// - Throws: `ValidationError` for an endpoint that is not an http or https URL.
    static func start(endpoint: String, logger: Logger) throws -> any Service {
        #if OpenTelemetry
            var configuration = OTel.Configuration.default
            configuration.serviceName = "custody"
            configuration.resourceAttributes["service.version"] = custodyVersion
            // The exporter's own troubles (a collector that does not answer) go to the service's
            // log, not to a console of its own, without what must not be logged (`Diagnostics`).
            let handler = logger.handler
            configuration.diagnosticLogger = .custom(
                Logger(label: "custody.otel", factory: { _ in Diagnostics(wrapped: handler) }))
            configuration.diagnosticLogLevel = .warning
            configuration.metrics.enabled = false
            configuration.logs.enabled = false
            configuration.traces.enabled = true
            configuration.traces.exporter = .otlp
            configuration.traces.otlpExporter.protocol = .httpProtobuf
            configuration.traces.otlpExporter.endpoint = try tracesURL(endpoint)
            for name in ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"] {
                guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else { continue }
                logger.warning(
                    "\(name) is set aside: --otel-endpoint names where traces go", metadata: ["ignored": "\(value)"])
                unsetenv(name)
            }
            let backend = try OTel.makeTracingBackend(configuration: configuration)
            InstrumentationSystem.bootstrap(backend.factory)
            return backend.service
        #else
            throw ValidationError(
                "--otel-endpoint: this custody was built without OpenTelemetry (the OpenTelemetry trait of its package)"
            )
        #endif
    }

    /// What puts the trace and span ids of the traced request or call under way in each log
    /// line (swift-otel's provider); nil in a build without OpenTelemetry.
    static var loggingMetadataProvider: Logger.MetadataProvider? {
        #if OpenTelemetry
            OTel.makeLoggingMetadataProvider()
        #else
            nil
        #endif
    }

    /// Whether `OTEL_SDK_DISABLED=true` turns tracing off (the SDK's own switch: the service then
    /// runs untraced, as without `--otel-endpoint`).
    static func isDisabled(in environment: [String: String]) -> Bool {
        environment["OTEL_SDK_DISABLED"]?.lowercased() == "true"
    }

    /// Refuses what swift-otel 1.6 cannot do, before it is asked to (an empty value is taken
    /// as unset, as the specification says):
    /// - a protocol other than http/protobuf: the gRPC exporter is not built in, and its
    ///   OTLP/JSON writes trace and span ids in base64, which the OTLP specification forbids
    ///   ("they are not base64-encoded as is defined in the standard Protobuf JSON Mapping") and
    ///   the OpenTelemetry Collector refuses, so every span would be lost without a word;
    /// - a propagator other than tracecontext (or none), a Jaeger or X-Ray sampler, an exporter
    ///   other than otlp: swift-otel stops the process on them.
    /// - Throws: `ValidationError` naming the variable and what is taken.
    static func checkEnvironment(_ environment: [String: String]) throws {
        func values(_ name: String) -> [String]? {
            guard let value = environment[name], !value.trimmingCharacters(in: .whitespaces).isEmpty else { return nil }
            return value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        }
        for name in ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"] {
            if let value = environment[name], !value.isEmpty, value != "http/protobuf" {
                throw ValidationError(
                    "\(name)=\(value): custody exports traces over OTLP/HTTP with protobuf (http/protobuf) only; unset it or set http/protobuf"
                )
            }
        }
        if let propagators = values("OTEL_PROPAGATORS"),
            let other = propagators.first(where: { $0 != "tracecontext" && $0 != "none" })
        {
            throw ValidationError(
                "OTEL_PROPAGATORS: \(other) is not a propagator custody has; it reads and writes W3C trace context (tracecontext), or none"
            )
        }
        if let sampler = values("OTEL_TRACES_SAMPLER")?.first,
            ["jaeger_remote", "parentbased_jaeger_remote", "xray"].contains(sampler)
        {
            throw ValidationError(
                "OTEL_TRACES_SAMPLER=\(sampler): not a sampler custody has (always_on, always_off, traceidratio and their parentbased_ forms)"
            )
        }
        if let exporters = values("OTEL_TRACES_EXPORTER"), exporters != ["otlp"] {
            throw ValidationError(
                "OTEL_TRACES_EXPORTER=\(exporters.joined(separator: ",")): custody exports traces over OTLP only (otlp); to trace nothing, leave out --otel-endpoint"
            )
        }
    }

    /// Where spans are sent: the collector's base URL with `v1/traces` after it, as the
    /// OpenTelemetry specification derives it from `OTEL_EXPORTER_OTLP_ENDPOINT`.
    /// - Throws: `ValidationError` naming what is wrong with the URL.
    static func tracesURL(_ endpoint: String) throws -> String {
        guard let url = URLComponents(string: endpoint), let scheme = url.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = url.host, !host.isEmpty
        else {
            throw ValidationError(
                "--otel-endpoint must be the collector's http or https URL, such as http://127.0.0.1:4318, not \"\(endpoint)\""
            )
        }
        guard url.query == nil, url.fragment == nil, url.user == nil, url.password == nil else {
            throw ValidationError(
                "--otel-endpoint takes no query, fragment or credentials (headers go in OTEL_EXPORTER_OTLP_HEADERS): \"\(endpoint)\""
            )
        }
        if let port = url.port, !(1...65_535).contains(port) {
            throw ValidationError("--otel-endpoint: the port \(port) is not between 1 and 65535: \"\(endpoint)\"")
        }
        return endpoint.hasSuffix("/") ? endpoint + "v1/traces" : endpoint + "/v1/traces"
    }

    /// What swift-otel says of itself, as the service's log has it, less what must not be in a
    /// log: the headers of a request whose trace context did not parse (`carrier`: its
    /// `Authorization` and cookies among them) and a variable's value (`environment_value`:
    /// `OTEL_EXPORTER_OTLP_HEADERS` holds API keys). A trace context that does not parse is
    /// ignored, as W3C Trace Context says; said at debug level only, so a caller cannot fill
    /// the log with one warning a request.
    struct Diagnostics: LogHandler {
        var wrapped: any LogHandler

        var logLevel: Logger.Level {
            get { wrapped.logLevel }
            set { wrapped.logLevel = newValue }
        }

        var metadata: Logger.Metadata {
            get { wrapped.metadata }
            set { wrapped.metadata = newValue }
        }

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { wrapped[metadataKey: key] }
            set { wrapped[metadataKey: key] = newValue }
        }

        static let withheld: Set<String> = ["carrier", "environment_value"]

        func log(event: LogEvent) {
            var event = event
            if event.metadata?["carrier"] != nil {
                guard wrapped.logLevel <= .debug else { return }
                event.level = .debug
            }
            event.metadata = event.metadata?.filter { !Self.withheld.contains($0.key) }
            wrapped.log(event: event)
        }
    }
}
