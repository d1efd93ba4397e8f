import ArgumentParser
import Custody
import Foundation
import Logging
import OTel
import ServiceLifecycle
import Tracing

/// `custody serve --otel-endpoint URL`: the process's tracer, swift-otel's, exporting spans over
/// OTLP/HTTP (protobuf) in batches, W3C trace context as the propagator. Set up once, before
/// the state is opened and the Graph client is made (each takes the process's tracer then);
/// its exporter runs as a service beside the listener and sends what is left as it stops.
enum TraceExport {
    /// Bootstraps the process's tracer (`InstrumentationSystem`) and returns the exporter's
    /// service, to run beside the listener.
    /// - Throws: `ValidationError` for an endpoint that is not an http or https URL.
    static func start(endpoint: String, logger: Logger) throws -> any Service {
        var configuration = OTel.Configuration.default
        configuration.serviceName = "custody"
        configuration.resourceAttributes["service.version"] = custodyVersion
        // The exporter's own troubles (a collector that does not answer) go to the service's
        // log, not to a console of its own.
        configuration.diagnosticLogger = .custom(logger)
        configuration.diagnosticLogLevel = .warning
        configuration.metrics.enabled = false
        configuration.logs.enabled = false
        configuration.traces.enabled = true
        configuration.traces.exporter = .otlp
        configuration.traces.otlpExporter.protocol = .httpProtobuf
        configuration.traces.otlpExporter.endpoint = try tracesURL(endpoint)
        let backend = try OTel.makeTracingBackend(configuration: configuration)
        InstrumentationSystem.bootstrap(backend.factory)
        return backend.service
    }

    /// Refuses an OTLP protocol other than http/protobuf asked for in the environment (which
    /// swift-otel reads): the gRPC exporter is not built in, and swift-otel 1.6's OTLP/JSON
    /// writes trace and span ids in base64, which the OTLP specification forbids ("they are not
    /// base64-encoded as is defined in the standard Protobuf JSON Mapping") and the
    /// OpenTelemetry Collector refuses, so every span would be lost without a word.
    /// - Throws: `ValidationError` naming the variable.
    static func checkProtocol(in environment: [String: String]) throws {
        for name in ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"] {
            guard let value = environment[name], !value.isEmpty else { continue }
            guard value == "http/protobuf" else {
                throw ValidationError(
                    "\(name)=\(value): custody exports traces over OTLP/HTTP with protobuf (http/protobuf) only; unset it or set http/protobuf"
                )
            }
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
        return endpoint.hasSuffix("/") ? endpoint + "v1/traces" : endpoint + "/v1/traces"
    }
}
