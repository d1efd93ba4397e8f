import Hummingbird
import HummingbirdCore
import Testing

@testable import CustodyServer

/// What a traced request's span may carry, and which `tracestate` is handed to the tracer.
@Suite("Request tracing: the query a span keeps, the tracestate it takes")
struct RequestTracingTests {
    /// W3C Trace Context §3.3.1: "list-member = (key "=" value) / OWS", "There can be a
    /// maximum of 32 list-members in a list", keys "MUST begin with a lowercase letter" (a
    /// simple key) or be `tenant@system`, values printable ASCII except "," and "=", not ending
    /// in a space; §3.3.1.1 (key uniqueness) and the examples of §3.3.1.3.
    @Test(
        "tracestate: a W3C list is taken, anything else left out",
        arguments: [
            ("congo=t61rcWkgMzE", true),
            ("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE", true),
            ("rojo=00f067aa0ba902b7 , congo=t61rcWkgMzE", true),
            ("fw529a3039@dt=FW4", true),
            ("a=1,,b=2", true),
            ("===,BAD KEY=1,a=b", false),
            ("Upper=1", false),
            ("1abc=1", false),
            ("a=", false),
            ("a=b ", true),  // the space is the optional whitespace around a member, not the value's
            ("a=b,c", false),
            ("a=1,a=2", false),
            ("a=b=c", false),
            ("a=\u{7F}", false),
            ("k=" + String(repeating: "x", count: 257), false),
            ("k=" + String(repeating: "x", count: 256), true),
            ((1...32).map { "k\($0)=v" }.joined(separator: ","), true),
            ((1...33).map { "k\($0)=v" }.joined(separator: ","), false),
            ("tenant@toolongsystemname=1", false),
        ])
    func traceState(text: String, accepted: Bool) {
        #expect(TraceContextExtractor.isTraceState(text) == accepted, "\(text.prefix(80))")
    }

    @Test(
        "url.query keeps each name, and a value only where it names no one",
        arguments: [
            ("/v1/decisions?platform=ios&reasons=false", "platform=ios&reasons=false"),
            ("/v1/protect?owner=alice@contoso.com&encrypt=true", "owner=REDACTED&encrypt=true"),
            ("/v1/events?access_token=custody_secret", "access_token=REDACTED"),
            ("/console/search?q=bob", "q=REDACTED"),
            (
                "/v1/x?sig=SECRET&X-Amz-Signature=S&password=p",
                "sig=REDACTED&X-Amz-Signature=REDACTED&password=REDACTED"
            ),
        ])
    func query(uri: String, recorded: String) {
        let parts = Set((RequestTracing.query(URI(uri)) ?? "").split(separator: "&"))
        #expect(parts == Set(recorded.split(separator: "&")), "\(uri)")
    }

    @Test("no query, no url.query")
    func noQuery() {
        #expect(RequestTracing.query(URI("/v1/decisions")) == nil)
        #expect(RequestTracing.query(URI("/v1/decisions?")) == nil)
    }
}
