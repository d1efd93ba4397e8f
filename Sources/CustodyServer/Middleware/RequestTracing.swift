import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Tracing

/// A server span per request, when the service traces: named `{method} {route}` (the route's
/// template, `POST /v1/decisions`), continuing the caller's W3C trace context, with the HTTP
/// semantic conventions' attributes, the status an error from 500 on.
///
/// Written here rather than taken from Hummingbird's `TracingMiddleware`, which sends the path
/// and the query as they came (an account in `/v1/accounts/{account}/wipe` or `?owner=`, a
/// search's text) to the collector, another party, and leaves a 5xx span's status unset. Here
/// the path is the route's template (a path that matched no route is not recorded), and the
/// query keeps each parameter's name, with its value only for those that name no one
/// (`platform`, `limit` …).
struct RequestTracing: RouterMiddleware {
    typealias Context = CustodyRequestContext

    /// `http` or `https`: `url.scheme`.
    let scheme: String

    /// Query parameters whose values name no account, group or secret, sent as they are.
    static let plainParameters: Set<Substring> = [
        "platform", "app", "managementLevel", "reasons", "explain", "encrypt", "unmanaged", "limit", "from", "to",
        "compare", "after", "action", "decide", "revision",
    ]

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        var trace = ServiceContext.current ?? .topLevel
        InstrumentationSystem.instrument.extract(request.headers, into: &trace, using: TraceContextExtractor())
        let method = request.method.rawValue
        let span = InstrumentationSystem.tracer.startSpan(method, context: trace, ofKind: .server)
        span.updateAttributes { attributes in
            attributes["http.request.method"] = method
            attributes["url.scheme"] = scheme
            if let query = Self.query(request.uri) { attributes["url.query"] = query }
            if let agent = request.headers[.userAgent] { attributes["user_agent.original"] = agent }
        }
        do {
            var response = try await ServiceContext.$current.withValue(span.context) {
                try await next(request, context)
            }
            Self.finish(span, method: method, route: context.endpointPath, status: Int(response.status.code))
            // Ended once the body is written (a batch's answer streams after this returns).
            let body = response.body
            let ending = SpanEnding(span)
            response.body = ResponseBody(contentLength: body.contentLength) { writer in
                defer { ending.end() }
                try await body.write(writer)
            }
            return response
        } catch {
            let status = (error as? any HTTPResponseError).map { Int($0.status.code) } ?? 500
            Self.finish(span, method: method, route: context.endpointPath, status: status)
            span.end()
            throw error
        }
    }

    /// Names the span by its route and records the outcome: from 500 on, an error (the
    /// conventions: "For HTTP status codes in the 5xx range … span status MUST be set to
    /// Error"), with `error.type` the status code.
    static func finish(_ span: any Span, method: String, route: String?, status: Int) {
        if let route { span.operationName = "\(method) \(route)" }
        span.updateAttributes { attributes in
            if let route {
                attributes["http.route"] = route
                attributes["url.path"] = route
            }
            attributes["http.response.status_code"] = status
            if status >= 500 { attributes["error.type"] = String(status) }
        }
        if status >= 500 { span.setStatus(SpanStatus(code: .error)) }
    }

    /// The query with each value that could name someone replaced by `REDACTED`; nil without one.
    static func query(_ uri: URI) -> String? {
        guard let query = uri.query, !query.isEmpty else { return nil }
        return uri.queryParameters.map { key, value in
            "\(key)=\(plainParameters.contains(key) ? value : "REDACTED")"
        }.joined(separator: "&")
    }
}

/// Reads a trace context from request headers. A `tracestate` that is not one (W3C Trace
/// Context, §3.3) is left out rather than handed on: "failure to parse tracestate MUST NOT
/// affect the parsing of traceparent", and the tracer drops the whole context over a bad one.
struct TraceContextExtractor: Extractor {
    func extract(key name: String, from headers: HTTPFields) -> String? {
        guard let field = HTTPField.Name(name) else { return nil }
        let values = headers[values: field]
        guard !values.isEmpty else { return nil }
        let joined = values.joined(separator: ",")
        if field == Self.traceState { return Self.isTraceState(joined) ? joined : nil }
        return joined
    }

    static let traceState = HTTPField.Name("tracestate")!

    /// Whether `text` is a W3C `tracestate` list: at most 32 members, each `key=value`; a key
    /// of a lower-case letter then up to 255 of `a-z 0-9 _ - * /`, or `tenant@system` (up to
    /// 241 characters, the first a letter or digit, and up to 14, the first a letter); a value of 1 to 256 printable ASCII characters other than
    /// `,` and `=`, not ending in a space; no key twice. Empty members (`a=1,,b=2`) are allowed.
    static func isTraceState(_ text: String) -> Bool {
        var keys: Set<Substring> = []
        for member in text.split(separator: ",", omittingEmptySubsequences: false) {
            let entry = Substring(member.trimmingCharacters(in: [" ", "\t"]))
            if entry.isEmpty { continue }
            guard let equals = entry.firstIndex(of: "=") else { return false }
            let key = entry[..<equals]
            let value = entry[entry.index(after: equals)...]
            guard isKey(key), isValue(value), keys.insert(key).inserted, keys.count <= 32 else { return false }
        }
        return true
    }

    private static func isKey(_ key: Substring) -> Bool {
        let parts = key.split(separator: "@", omittingEmptySubsequences: false)
        func simple(_ part: Substring, first: (Character) -> Bool, length: Int) -> Bool {
            guard let head = part.first, first(head), part.count <= length else { return false }
            return part.dropFirst().allSatisfy { char in
                char.isASCII && (char.isLowercase || char.isNumber || "_-*/".contains(char))
            }
        }
        let lowerOrDigit = { (char: Character) in char.isASCII && (char.isLowercase || char.isNumber) }
        switch parts.count {
        case 1: return simple(parts[0], first: { $0.isASCII && $0.isLowercase }, length: 256)
        case 2:
            return simple(parts[0], first: lowerOrDigit, length: 241)
                && simple(parts[1], first: { $0.isASCII && $0.isLowercase }, length: 14)
        default: return false
        }
    }

    private static func isValue(_ value: Substring) -> Bool {
        guard !value.isEmpty, value.count <= 256, value.last != " " else { return false }
        return value.unicodeScalars.allSatisfy { (0x20...0x7E).contains($0.value) && $0 != "," && $0 != "=" }
    }
}

/// Ends a span once, from the closure that writes the response body.
private final class SpanEnding: @unchecked Sendable {
    // @unchecked: `end()` runs once, from the one task that writes the body.
    private var span: (any Span)?

    init(_ span: any Span) { self.span = span }

    func end() {
        span?.end()
        span = nil
    }

    deinit { span?.end() }
}
