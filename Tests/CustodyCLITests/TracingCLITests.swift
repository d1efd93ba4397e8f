import CustodyTestSupport
import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import Testing

/// `custody serve --otel-endpoint`: the spans a collector receives, checked against the OTLP
/// specification (https://opentelemetry.io/docs/specs/otlp/) by a stand-in collector
/// (scripts/otel/collector.py), and the W3C Trace Context a caller sends
/// (https://www.w3.org/TR/trace-context/).
@Suite(
    "custody serve --otel-endpoint: spans over OTLP/HTTP to a stand-in collector", .serialized,
    .timeLimit(.minutes(2)))
struct TracingCLITests {
    typealias Scratch = ProtectionCLITests.Scratch

    /// The W3C Trace Context specification's own example (§3.2.2.3, "trace-id":
    /// `4bf92f3577b34da6a3ce929d0e0e4736`; §3.2.2.4, "parent-id": `00f067aa0ba902b7`), sampled.
    static let traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
    static let parentID = "00f067aa0ba902b7"
    static let traceparent = "00-\(traceID)-\(parentID)-01"

    /// Runs the stand-in collector for `body`, with its base URL and the file it records each
    /// export in.
    static func collecting(in scratch: Scratch, _ body: (String, String) async throws -> Void) async throws {
        let record = scratch.file("exports.jsonl")
        _ = FileManager.default.createFile(atPath: record, contents: nil)
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [CLIRunner.packageRoot + "/scripts/otel/collector.py", record]
        let portFile = scratch.file("collector-port")
        _ = FileManager.default.createFile(atPath: portFile, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: portFile))
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { process.terminate() }
        var port: Int?
        for _ in 0..<100 where port == nil {
            try await Task.sleep(for: .milliseconds(50))
            let lines = ((try? String(contentsOfFile: portFile, encoding: .utf8)) ?? "").split(separator: "\n")
            if lines.count >= 2 { port = Int(lines[0]) }
        }
        try await body("http://127.0.0.1:\(try #require(port))", record)
    }

    /// Sends `method` to `path` with the token, `body` and `headers`; the status, the answer and
    /// its `Custody-Revision`.
    static func send(
        _ method: String = "POST", _ address: String, _ path: String, token: String, body: String? = nil,
        headers: [String: String] = [:]
    ) async throws -> (status: Int, answer: String, revision: String?) {
        var request = URLRequest(url: URL(string: address + path)!)
        request.httpMethod = method
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpBody = body.map { Data($0.utf8) }
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        return (
            http.statusCode, String(decoding: data, as: UTF8.self), http.value(forHTTPHeaderField: "Custody-Revision")
        )
    }

    static func post(
        _ address: String, _ path: String, token: String, body: String, headers: [String: String] = [:]
    ) async throws -> (status: Int, answer: String, revision: String?) {
        try await send("POST", address, path, token: token, body: body, headers: headers)
    }

    /// A second trace, sent with a `tracestate` that is no W3C list: its `traceparent` holds.
    static let secondTraceID = "0af7651916cd43dd8448eb211c8031ab"

    /// Starts the service on the example bundle, tracing to `collector`, and makes:
    /// - a traced decision (with the specification's `traceparent`), an untraced one, a batch;
    /// - a request naming an account in its path, and one naming it in its query that the
    ///   service answers 503 (it has no master key);
    /// - a decision whose `traceparent` is invalid (all-zero trace id, which W3C says to ignore),
    ///   and one whose `tracestate` is no list;
    /// then stops it (the exporter sends what is left as it stops). Returns what the collector
    /// recorded, the traced decision's answer and revision, the service's log and the token.
    static func run(in scratch: Scratch, state: String? = nil, collector: String, record: String) async throws
        -> (exports: [[String: Any]], answer: String, revision: String, log: String, token: String)
    {
        let state = state ?? scratch.file("state")
        let token = try #require(
            try await CLIRunner.run([
                "tokens", "create", "--scope", "decide", "--scope", "read", "--scope", "protect", "--state", state,
            ]).stdoutLines.last)
        let server = try await ServeProcess(
            [
                "--state", state, "--platform", "ios", "--without-keys", "--otel-endpoint", collector,
                "--log-level", "info", "--log-format", "json",
            ],
            log: scratch.file("serve.log"), environment: ["OTEL_BSP_SCHEDULE_DELAY": "100"])
        let query = #"{"action":"print","account":"alice@contoso.com"}"#
        let decided = try await post(
            server.address, "/v1/decisions", token: token, body: query, headers: ["traceparent": traceparent])
        #expect(decided.status == 200, "\(decided.answer)")
        let untraced = try await post(server.address, "/v1/decisions", token: token, body: query)
        #expect(untraced.status == 200, "\(untraced.answer)")
        let batch = try await post(
            server.address, "/v1/decisions/batch", token: token, body: query + "\n" + query + "\nnot json\n",
            headers: ["traceparent": "00-\(traceID)-\("1111111111111111")-01"])
        #expect(batch.status == 200, "\(batch.answer)")
        let policy = try await send("GET", server.address, "/v1/accounts/alice@contoso.com/policy", token: token)
        #expect(policy.status == 200, "\(policy.answer)")
        let protect = try await post(
            server.address, "/v1/protect?owner=alice@contoso.com", token: token, body: "hello",
            headers: ["traceparent": traceparent])
        #expect(protect.status == 503, "\(protect.answer)")
        let invalid = try await post(
            server.address, "/v1/decisions", token: token, body: query,
            headers: ["traceparent": "00-00000000000000000000000000000000-b7ad6b7169203331-01"])
        #expect(invalid.status == 200, "an invalid traceparent is ignored: \(invalid.answer)")
        let badState = try await post(
            server.address, "/v1/decisions", token: token, body: query,
            headers: ["traceparent": "00-\(secondTraceID)-\(parentID)-01", "tracestate": "===,BAD KEY=1,a=b"])
        #expect(badState.status == 200, "\(badState.answer)")
        #expect(server.stop() == 0, "\(server.output)")
        let exports = try String(contentsOfFile: record, encoding: .utf8).split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        return (exports, decided.answer, try #require(decided.revision), server.output, token)
    }

    /// Every span of the exports (as the collector recorded them, in OTLP/JSON's shape), each
    /// with its resource's attributes beside it.
    static func spans(_ exports: [[String: Any]]) -> [(span: [String: Any], resource: [String: Any])] {
        exports.flatMap { export -> [(span: [String: Any], resource: [String: Any])] in
            let body = export["body"] as? [String: Any] ?? [:]
            return (body["resourceSpans"] as? [[String: Any]] ?? []).flatMap { resourceSpans in
                let resource = attributes(resourceSpans["resource"] as? [String: Any] ?? [:])
                return (resourceSpans["scopeSpans"] as? [[String: Any]] ?? []).flatMap { scope in
                    (scope["spans"] as? [[String: Any]] ?? []).map { (span: $0, resource: resource) }
                }
            }
        }
    }

    /// An OTLP/JSON attribute list as a dictionary: `{"key": k, "value": {"stringValue": v}}`,
    /// or `intValue` (a 64-bit integer, a JSON string by protobuf's JSON mapping), `boolValue`.
    static func attributes(_ holder: [String: Any]) -> [String: Any] {
        var found: [String: Any] = [:]
        for attribute in holder["attributes"] as? [[String: Any]] ?? [] {
            guard let key = attribute["key"] as? String, let value = attribute["value"] as? [String: Any] else {
                continue
            }
            found[key] = value["stringValue"] ?? value["intValue"].map { "\($0)" } ?? value["boolValue"]
        }
        return found
    }

    @Test(
        "OTLP/HTTP protobuf to /v1/traces: the request's span continues the caller's traceparent, the decision's span is its child with action, revision and outcome, a batch's counts its lines; JSON log lines carry the trace id"
    )
    func exported() async throws {
        let scratch = try Scratch()
        try await scratch.applyExampleBundle()
        try await Self.collecting(in: scratch) { collector, record in
            let (exports, answer, revision, log, token) = try await Self.run(
                in: scratch, collector: collector, record: record)
            #expect(!exports.isEmpty, "the collector received nothing; the service said: \(log)")
            for export in exports {
                // OTLP/HTTP: "The default URL path for requests that carry trace data is /v1/traces".
                #expect(export["path"] as? String == "/v1/traces")
                // "Binary Protobuf encoded payloads use proto3 encoding standard": application/x-protobuf.
                #expect(export["contentType"] as? String == "application/x-protobuf")
                #expect(export["error"] == nil, "\(export)")
            }
            let spans = Self.spans(exports)
            #expect(spans.allSatisfy { $0.resource["service.name"] as? String == "custody" }, "\(spans)")
            // Ids as hex (the collector's record, as OTLP/JSON writes them); a request served is
            // SPAN_KIND_SERVER (2).
            let traced = spans.map(\.span).filter { ($0["traceId"] as? String)?.lowercased() == Self.traceID }
            let requests = traced.filter { "\($0["kind"] ?? "")" == "2" || "\($0["kind"] ?? "")" == "SPAN_KIND_SERVER" }
            // The HTTP semantic conventions: "HTTP server span names SHOULD be {method} {target}",
            // the target the route's template.
            let request = try #require(
                requests.first {
                    ($0["parentSpanId"] as? String)?.lowercased() == Self.parentID
                        && $0["name"] as? String == "POST /v1/decisions"
                }, "no server span POST /v1/decisions continues the traceparent: \(traced)")
            let requestAttributes = Self.attributes(request)
            #expect(requestAttributes["http.request.method"] as? String == "POST", "\(requestAttributes)")
            #expect(requestAttributes["http.response.status_code"] as? String == "200", "\(requestAttributes)")
            #expect(requestAttributes["http.route"] as? String == "/v1/decisions", "\(requestAttributes)")
            #expect(requestAttributes["url.scheme"] as? String == "http", "\(requestAttributes)")
            // "For HTTP status codes in the 5xx range … span status MUST be set to Error"
            // (STATUS_CODE_ERROR, 2), and error.type is the status.
            let refused = try #require(
                requests.first { $0["name"] as? String == "POST /v1/protect" }, "no span for the 503: \(traced)")
            #expect("\((refused["status"] as? [String: Any])?["code"] ?? "")" == "2", "\(refused)")
            #expect(Self.attributes(refused)["error.type"] as? String == "503", "\(refused)")
            #expect(Self.attributes(request)["error.type"] == nil)
            // No span names the account: not in a path, not in a query (the collector is
            // another party).
            let everything = Self.spans(exports).map { "\($0.span)" }
            #expect(everything.allSatisfy { !$0.contains("alice") }, "\(everything.filter { $0.contains("alice") })")
            #expect(
                Self.spans(exports).contains { $0.span["name"] as? String == "GET /v1/accounts/{account}/policy" }
                    || Self.spans(exports).contains {
                        ($0.span["name"] as? String)?.hasPrefix("GET /v1/accounts/") == true
                    },
                "the request naming an account in its path has a span of its own")
            // A tracestate that is no list does not cost the traceparent its trace (W3C §3.3:
            // "failure to parse tracestate MUST NOT affect the parsing of traceparent").
            #expect(
                Self.spans(exports).contains {
                    $0.span["traceId"] as? String == Self.secondTraceID
                        && $0.span["parentSpanId"] as? String == Self.parentID
                }, "the request with a bad tracestate did not continue its trace")
            // An invalid traceparent is ignored without a word of the request's headers in the
            // log: its token least of all.
            #expect(!log.contains(token) && !log.contains(String(token.suffix(20))), "the token is in the log")
            #expect(!log.contains("carrier"), "\(log)")
            let decision = try #require(
                traced.first {
                    $0["name"] as? String == "decide" && $0["parentSpanId"] as? String == request["spanId"] as? String
                },
                "no decision span under the request's: \(traced)")
            let decided = Self.attributes(decision)
            #expect(decided["custody.action"] as? String == "print")
            #expect(decided["custody.revision"] as? String == revision)
            // The outcome is what the service answered.
            let allowed =
                try #require(
                    try JSONSerialization.jsonObject(with: Data(answer.utf8)) as? [String: Any])["allowed"] as? Bool
            #expect(
                decided["custody.outcome"] as? String == (allowed == true ? "allow" : "block"), "\(decided) \(answer)")
            // The untraced request began a trace of its own.
            let others = spans.map(\.span).filter { ($0["traceId"] as? String)?.lowercased() != Self.traceID }
            #expect(
                others.contains {
                    $0["name"] as? String == "POST /v1/decisions" && $0["parentSpanId"] == nil
                        || ($0["parentSpanId"] as? String)?.isEmpty == true
                }, "\(others)")
            // The batch: 2 lines decided, 1 refused, under the request span of its traceparent.
            let batch = try #require(traced.first { $0["name"] as? String == "decide batch" }, "\(traced)")
            let counted = Self.attributes(batch)
            #expect(
                (Int("\(counted["custody.allowed"] ?? "")") ?? 0) + (Int("\(counted["custody.blocked"] ?? "")") ?? 0)
                    == 2,
                "\(counted)")
            #expect("\(counted["custody.refused"] ?? "")" == "1", "\(counted)")
            let batchRequest = try #require(
                traced.first { $0["spanId"] as? String == batch["parentSpanId"] as? String })
            #expect((batchRequest["parentSpanId"] as? String)?.lowercased() == "1111111111111111")
            // JSON log lines: the traced request's "request" line carries its trace and span.
            let lines = log.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
            let logged = try #require(
                lines.first { $0["message"] as? String == "request" && ($0["trace_id"] as? String) == Self.traceID },
                "no JSON request line with the trace id: \(log)")
            #expect(logged["span_id"] as? String == request["spanId"] as? String, "\(logged)")
            #expect(logged["level"] as? String == "info")
            #expect((logged["metadata"] as? [String: Any])?["path"] as? String == "/v1/decisions", "\(logged)")
        }
    }

    @Test(
        "on PostgreSQL, an audited decision's state write is a client span of the request's trace",
        TestPostgres.enabled)
    func postgres() async throws {
        let scratch = try Scratch()
        let state = TestPostgres.freshURL("otel")
        let applied = try await CLIRunner.run([
            "apply", "--bundle", CLIRunner.packageRoot + "/policies", "--platform", "ios", "--state", state,
        ])
        #expect(applied.status == 0, "\(applied.stderr)")
        #expect(try await CLIRunner.run(["audit", "--decisions", "on", "--state", state]).status == 0)
        try await Self.collecting(in: scratch) { collector, record in
            let (exports, _, _, log, _) = try await Self.run(
                in: scratch, state: state, collector: collector, record: record)
            let traced = Self.spans(exports).map(\.span).filter { $0["traceId"] as? String == Self.traceID }
            let request = try #require(
                traced.first {
                    $0["parentSpanId"] as? String == Self.parentID && $0["name"] as? String == "POST /v1/decisions"
                }, "\(traced) \(log)")
            let writes = traced.filter { $0["name"] as? String == "state write" }
            let write = try #require(
                writes.first { $0["parentSpanId"] as? String == request["spanId"] as? String },
                "no state write under the request's span: \(traced)")
            #expect("\(write["kind"] ?? "")" == "3", "SPAN_KIND_CLIENT: \(write)")
            let attributes = Self.attributes(write)
            #expect(attributes["db.system.name"] as? String == "postgresql", "\(attributes)")
            #expect(attributes["db.namespace"] as? String != nil, "\(attributes)")
            #expect(
                !"\(write)".contains("alice"), "a state span names no account: the collector is another party: \(write)"
            )
        }
    }

    @Test("POST /v1/graph/sync with a traceparent: the requests to Microsoft Graph are client spans of that trace")
    func graph() async throws {
        let scratch = try Scratch()
        _ = try scratch.write("secret", "anything")
        chmod(scratch.file("secret"), 0o600)
        let state = scratch.file("state")
        let token = try #require(
            try await CLIRunner.run(["tokens", "create", "--scope", "admin", "--state", state]).stdoutLines.last)
        try await GraphCLISyncTests.serving { base in
            _ = try scratch.write(
                "graph.json",
                #"{"tenantId":"contoso","clientId":"app","clientSecretFile":"secret","authority":"\#(base)","graphUrl":"\#(base)/beta"}"#
            )
            try await Self.collecting(in: scratch) { collector, record in
                let server = try await ServeProcess(
                    [
                        "--state", state, "--graph", scratch.file("graph.json"), "--platform", "ios", "--without-keys",
                        "--otel-endpoint", collector,
                    ], log: scratch.file("serve.log"), environment: ["OTEL_BSP_SCHEDULE_DELAY": "100"])
                let synced = try await Self.post(
                    server.address, "/v1/graph/sync", token: token, body: "", headers: ["traceparent": Self.traceparent]
                )
                #expect(synced.status == 200, "\(synced.answer)")
                #expect(server.stop() == 0, "\(server.output)")
                let exports = try String(contentsOfFile: record, encoding: .utf8).split(separator: "\n").map {
                    try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
                }
                let traced = Self.spans(exports).map(\.span).filter { $0["traceId"] as? String == Self.traceID }
                let clients = traced.filter { "\($0["kind"] ?? "")" == "3" }
                #expect(!clients.isEmpty, "no client span in the sync's trace: \(traced)")
                // One span for the sync, under the request's; every Graph request under it.
                let request = try #require(traced.first { $0["name"] as? String == "POST /v1/graph/sync" }, "\(traced)")
                let sync = try #require(
                    traced.first {
                        $0["name"] as? String == "graph sync"
                            && $0["parentSpanId"] as? String == request["spanId"] as? String
                    }, "no graph sync span under the request's: \(traced)")
                #expect(Self.attributes(sync)["custody.sync.trigger"] as? String == "request", "\(sync)")
                #expect(clients.allSatisfy { $0["parentSpanId"] as? String == sync["spanId"] as? String }, "\(clients)")
                // The sync at start is a trace of its own, its requests inside it, not one a request.
                let all = Self.spans(exports).map(\.span)
                let starts = all.filter {
                    $0["name"] as? String == "graph sync"
                        && Self.attributes($0)["custody.sync.trigger"] as? String == "start"
                }
                #expect(starts.count == 1, "\(starts)")
                #expect(
                    all.filter { "\($0["kind"] ?? "")" == "3" }.allSatisfy {
                        ($0["parentSpanId"] as? String)?.isEmpty == false
                    },
                    "a Graph request outside a sync's span")
                for client in clients {
                    let attributes = Self.attributes(client)
                    #expect(["GET", "POST"].contains(attributes["http.request.method"] as? String), "\(attributes)")
                }
            }
        }
    }

    @Test(
        "--otel-endpoint must be an http or https URL without query or credentials",
        arguments: [
            ("127.0.0.1:4318", "must be the collector's http or https URL"),
            ("ftp://collector:4318", "must be the collector's http or https URL"),
            ("http://", "must be the collector's http or https URL"),
            ("http://collector:4318/?x=1", "takes no query, fragment or credentials"),
            ("http://user:secret@collector:4318", "takes no query, fragment or credentials"),
            ("http://127.0.0.1:99999", "the port 99999 is not between 1 and 65535"),
        ])
    func endpoints(endpoint: String, message: String) async throws {
        let result = try await TemporaryDirectory().run([
            "serve", "--platform", "ios", "--without-keys", "--otel-endpoint", endpoint,
        ])
        #expect(result.status == 64, "\(endpoint): \(result.stderr)")
        #expect(result.stderr.contains(message), "\(endpoint): \(result.stderr)")
    }

    @Test(
        "an OTLP protocol other than http/protobuf in the environment is refused at start, naming the variable",
        arguments: [
            ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json"), ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "HTTP/PROTOBUF"),
        ])
    func protocols(variable: String, value: String) async throws {
        let result = try await CLIRunner.run(
            ["serve", "--platform", "ios", "--without-keys", "--otel-endpoint", "http://127.0.0.1:4318"],
            environment: [variable: value])
        #expect(result.status == 64, "\(variable)=\(value): \(result.stderr)")
        #expect(result.stderr.contains("\(variable)=\(value): custody exports traces over OTLP/HTTP with protobuf"))
    }

    @Test(
        "an OTEL_* value swift-otel would stop the process on is refused at start, naming it",
        arguments: [
            ("OTEL_PROPAGATORS", "b3", "OTEL_PROPAGATORS: b3 is not a propagator custody has"),
            ("OTEL_PROPAGATORS", "tracecontext,baggage", "OTEL_PROPAGATORS: baggage is not a propagator"),
            ("OTEL_PROPAGATORS", "xray", "OTEL_PROPAGATORS: xray is not a propagator"),
            ("OTEL_TRACES_SAMPLER", "jaeger_remote", "OTEL_TRACES_SAMPLER=jaeger_remote: not a sampler custody has"),
            ("OTEL_TRACES_SAMPLER", "xray", "OTEL_TRACES_SAMPLER=xray: not a sampler"),
            ("OTEL_TRACES_EXPORTER", "console", "OTEL_TRACES_EXPORTER=console: custody exports traces over OTLP only"),
            ("OTEL_TRACES_EXPORTER", "none", "OTEL_TRACES_EXPORTER=none: custody exports traces over OTLP only"),
        ])
    func unsupported(variable: String, value: String, message: String) async throws {
        let result = try await CLIRunner.run(
            ["serve", "--platform", "ios", "--without-keys", "--otel-endpoint", "http://127.0.0.1:4318"],
            environment: [variable: value])
        #expect(result.status == 64, "\(variable)=\(value): \(result.stderr)")
        #expect(result.stderr.contains(message), "\(variable)=\(value): \(result.stderr)")
    }

    @Test("OTEL_SDK_DISABLED=true serves untraced, saying so; an empty OTEL_* value is taken as unset")
    func disabled() async throws {
        let scratch = try Scratch()
        try await scratch.applyExampleBundle()
        let server = try await ServeProcess(
            [
                "--state", scratch.file("state"), "--platform", "ios", "--without-keys", "--otel-endpoint",
                "http://127.0.0.1:9", "--log-level", "notice",
            ], log: scratch.file("serve.log"),
            environment: ["OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_PROTOCOL": "", "OTEL_PROPAGATORS": ""])
        #expect(server.stop() == 0, "\(server.output)")
        #expect(server.output.contains("OTEL_SDK_DISABLED=true: serving untraced"), "\(server.output)")
    }
}
