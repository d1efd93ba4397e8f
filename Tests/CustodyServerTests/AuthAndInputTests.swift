import Custody
import CustodyTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import CustodyServer

@Suite("Who may call the service", .timeLimit(.minutes(2)))
struct AuthTests {
    /// Each route, its method and the scope it needs.
    static let routes: [(method: HTTPRequest.Method, uri: String, scope: TokenScope)] = [
        (.post, "/v1/decisions", .decide), (.post, "/v1/decisions/batch", .decide), (.post, "/v1/launch", .decide),
        (.get, "/v1/accounts/alice@contoso.com/policy", .read),
        (.get, "/v1/accounts/alice@contoso.com/configuration", .read),
        (.get, "/v1/bundle", .read), (.put, "/v1/bundle", .admin), (.get, "/v1/events", .events),
        (.post, "/v1/protect?owner=alice@contoso.com", .protect), (.post, "/v1/unprotect", .protect),
        (.post, "/v1/accounts/alice@contoso.com/wipe", .admin),
        (.post, "/v1/accounts/alice@contoso.com/keys/rotate", .admin),
    ]

    @Test("no token: 401; a token without the scope: 403; a malformed or unknown token: 401", arguments: routes)
    func refusals(method: HTTPRequest.Method, uri: String, scope: TokenScope) async throws {
        let fixture = try await ServiceFixture.make()
        try await fixture.application().test(.router) { client in
            let none = try await client.execute(uri: uri, method: method)
            #expect(none.status == .unauthorized)
            #expect(none.headers[.wwwAuthenticate] == #"Bearer realm="custody""#)
            #expect(try object(none)["code"] as? String == "unauthorized")
            let other = TokenScope.allCases.first { $0 != scope && $0 != .admin }!
            let wrong = try await client.execute(uri: uri, method: method, headers: fixture.auth(other))
            #expect(wrong.status == .forbidden)
            #expect(try object(wrong)["scope"] as? String == scope.rawValue)
            let token = fixture.tokens[scope]!
            let altered = String(token.dropLast()) + (token.last == "0" ? "1" : "0")
            for bearer in ["nonsense", "custody_0000000000000000_" + String(repeating: "0", count: 64), altered] {
                let bad = try await client.execute(
                    uri: uri, method: method, headers: [.authorization: "Bearer \(bearer)"])
                #expect(bad.status == .unauthorized, "\(bearer.prefix(12))")
                // A token was sent: it is said to be invalid, not missing (RFC 6750 §3.1).
                #expect(try object(bad)["error"] as? String ?? "" == ServiceError.invalidToken.message)
                #expect(bad.headers[.wwwAuthenticate] == #"Bearer realm="custody", error="invalid_token""#)
            }
        }
    }

    /// `Authorization` values and the token read from each (nil: none).
    static let bearers: [(value: String, token: String?)] = [
        ("Bearer custody_abc_def", "custody_abc_def"),
        ("bearer custody_abc", "custody_abc"),
        ("BEARER custody_abc", "custody_abc"),
        ("BeArEr custody_abc", "custody_abc"),
        ("Bearer   custody_abc \t ", "custody_abc"),
        ("Bearer \tcustody_abc", "custody_abc"),
        ("Bearer custody abc", "custody abc"),
        ("Bearer ", nil),
        ("Bearer \t  ", nil),
        ("Bearer", nil),
        ("Bearercustody_abc", nil),
        ("Bearer\tcustody_abc", nil),
        // Whitespace around a field value is not part of it (RFC 9110 section 5.5).
        (" Bearer custody_abc", "custody_abc"),
        ("Basic dXNlcjpwYXNz", nil),
        ("Bearerx custody_abc", nil),
        ("Bearex custody_abc", nil),
        ("Bearer@ custody_abc", nil),
        ("Béarer custody_abc", nil),
        // Beyond ASCII: Unicode spaces are trimmed as well, what is left is the token as sent.
        ("Bearer \u{00A0}custody_abc\u{2003}", "custody_abc"),
        ("Bearer custody_é", "custody_é"),
        ("Bearer \u{00A0}", nil),
    ]

    @Test("the token of Authorization: Bearer, the scheme in any case, spaces around it trimmed", arguments: bearers)
    func bearer(value: String, token: String?) {
        var fields = HTTPFields()
        fields[.authorization] = value
        #expect(TokenAuthenticator.bearer(fields) == token)
    }

    @Test("a revoked token is refused; admin grants every scope")
    func revoked() async throws {
        let fixture = try await ServiceFixture.make()
        try await fixture.application().test(.router) { client in
            let body = ByteBuffer(string: #"{"action":"print","account":"alice@contoso.com"}"#)
            #expect(
                try await client.execute(uri: "/v1/decisions", method: .post, headers: fixture.auth(.admin), body: body)
                    .status == .ok)
            #expect(
                try await client.execute(
                    uri: "/v1/decisions", method: .post, headers: fixture.auth(.decide), body: body
                ).status == .ok)
            let id = try await #require(try fixture.engine.tokens().first { $0.scopes == [.decide] }?.id)
            await #expect(try fixture.engine.revokeToken(id: id))
            // Caches notice a revocation by any process at once (the token generation moved) or within a second.
            try await Task.sleep(for: .milliseconds(1_100))
            let refused = try await client.execute(
                uri: "/v1/decisions", method: .post, headers: fixture.auth(.decide), body: body)
            #expect(refused.status == .unauthorized)
        }
    }

    @Test("no token, secret or plaintext appears in a log line")
    func logs() async throws {
        let fixture = try await ServiceFixture.make()
        let secret = "the quarterly numbers are in"
        try await fixture.application().test(.router) { client in
            let protected = try await client.execute(
                uri: "/v1/protect?owner=alice@contoso.com", method: .post, headers: fixture.auth(.protect),
                body: ByteBuffer(string: secret))
            _ = try await client.execute(
                uri: "/v1/unprotect", method: .post, headers: fixture.auth(.protect), body: protected.body)
            _ = try await client.execute(
                uri: "/v1/unprotect", method: .post, headers: [.authorization: "Bearer custody_wrong"],
                body: protected.body)
        }
        let logged = fixture.logs.records.map { "\($0.message) \($0.metadata)" }.joined(separator: "\n")
        #expect(!logged.isEmpty)
        for token in fixture.tokens.values {
            #expect(!logged.contains(String(token.suffix(64))))
        }
        #expect(!logged.contains(secret))
        #expect(!logged.contains("custody_wrong"))
    }
}

@Suite("Bad input never hurts the service", .timeLimit(.minutes(2)))
struct BadInputTests {
    /// A request, and the status and error code it must get.
    struct Case: Sendable, CustomTestStringConvertible {
        let label: String
        let method: HTTPRequest.Method
        let uri: String
        let scope: TokenScope
        let body: [UInt8]?
        let status: HTTPResponse.Status
        let code: String
        var testDescription: String { label }
    }

    static let query = Array(#"{"action":"print","account":"alice@contoso.com"}"#.utf8)

    static let cases: [Case] = [
        Case(
            label: "malformed JSON", method: .post, uri: "/v1/decisions", scope: .decide,
            body: Array(#"{"action": "print",}"#.utf8), status: .badRequest, code: "invalid-query"),
        Case(
            label: "an empty body", method: .post, uri: "/v1/decisions", scope: .decide, body: [], status: .badRequest,
            code: "invalid-query"),
        Case(
            label: "two queries to the single endpoint", method: .post, uri: "/v1/decisions", scope: .decide,
            body: query + [0x0A] + query, status: .badRequest, code: "invalid-query"),
        Case(
            label: "a duplicate member", method: .post, uri: "/v1/decisions", scope: .decide,
            body: Array(#"{"action":"print","account":"a","account":"b"}"#.utf8), status: .badRequest,
            code: "invalid-query"),
        Case(
            // Issue 47, item 16: as docs/service.md says, the query is read but names no one
            // account: 422 `ambiguous-account`, as the account routes answer it.
            label: "a contradictory account", method: .post, uri: "/v1/decisions", scope: .decide,
            body: Array(
                #"{"action":"print","account":{"oid":"00000000-0000-0000-0000-000000000000","upn":"alice@contoso.com"}}"#
                    .utf8), status: .unprocessableContent, code: "ambiguous-account"),
        Case(
            label: "invalid UTF-8", method: .post, uri: "/v1/decisions", scope: .decide,
            body: [0x7B, 0x22, 0xFF, 0xFE, 0x22, 0x7D], status: .badRequest, code: "invalid-query"),
        Case(
            label: "deep nesting", method: .post, uri: "/v1/decisions", scope: .decide,
            body: Array(repeating: 0x5B, count: 100_000), status: .badRequest, code: "invalid-query"),
        Case(
            label: "an unknown platform", method: .post, uri: "/v1/decisions?platform=macos", scope: .decide,
            body: query, status: .badRequest, code: "invalid-parameter"),
        // Issue 47: a limit is digits only.
        Case(
            label: "a signed limit", method: .get, uri: "/v1/accounts?limit=%2B5", scope: .read, body: nil,
            status: .badRequest, code: "invalid-parameter"),
        Case(
            label: "a limit with a space", method: .get, uri: "/v1/bundle/history?limit=%205", scope: .read, body: nil,
            status: .badRequest, code: "invalid-parameter"),
        Case(
            label: "an unknown parameter", method: .post, uri: "/v1/decisions?plattform=ios", scope: .decide,
            body: query, status: .badRequest, code: "invalid-parameter"),
        Case(
            label: "a bad flag", method: .post, uri: "/v1/decisions?reasons=maybe", scope: .decide, body: query,
            status: .badRequest, code: "invalid-parameter"),
        Case(
            label: "an owner whose percent-encoding is not UTF-8", method: .post,
            uri: "/v1/protect?owner=%FF@fabrikam.com&encrypt=true", scope: .protect, body: [1], status: .badRequest,
            code: "invalid-parameter"),
        Case(
            label: "an owner cut inside a UTF-8 sequence", method: .post,
            uri: "/v1/protect?encrypt=true&owner=%C3@fabrikam.com", scope: .protect, body: [1], status: .badRequest,
            code: "invalid-parameter"),
        Case(
            label: "an overlong UTF-8 encoding", method: .post, uri: "/v1/protect?owner=%C0%A9@fabrikam.com",
            scope: .protect, body: [1], status: .badRequest, code: "invalid-parameter"),
        Case(
            label: "a parameter name that is not UTF-8", method: .post, uri: "/v1/decisions?%FFplatform=ios",
            scope: .decide, body: query, status: .badRequest, code: "invalid-parameter"),
        Case(
            label: "a body over the limit", method: .post, uri: "/v1/decisions", scope: .decide,
            body: Array(repeating: 0x20, count: 2_000_000), status: .contentTooLarge, code: "too-large"),
        Case(
            label: "protect with no owner", method: .post, uri: "/v1/protect", scope: .protect, body: [1],
            status: .badRequest, code: "invalid-parameter"),
        Case(
            label: "protect nothing", method: .post, uri: "/v1/protect?owner=alice@contoso.com", scope: .protect,
            body: [], status: .badRequest, code: "empty-data"),
        Case(
            label: "protect for an unknown owner", method: .post, uri: "/v1/protect?owner=erin@fabrikam.com",
            scope: .protect, body: [1], status: .notFound, code: "unknown-account"),
        Case(
            label: "tag a managed owner's data", method: .post,
            uri: "/v1/protect?owner=alice@contoso.com&unmanaged=true", scope: .protect, body: [1],
            status: .unprocessableContent, code: "refused"),
        Case(
            label: "unprotect what is not an envelope", method: .post, uri: "/v1/unprotect", scope: .protect,
            body: Array("plain".utf8), status: .unprocessableContent, code: "invalid-arguments"),
        Case(
            label: "unprotect a damaged header", method: .post, uri: "/v1/unprotect", scope: .protect,
            body: [0x89, 0x43, 0x53, 0x54, 1, 77] + Array(repeating: 0, count: 60), status: .unprocessableContent,
            code: "malformed-envelope"),
        Case(
            label: "a bundle body that is not JSON", method: .put, uri: "/v1/bundle", scope: .admin,
            body: Array("files".utf8), status: .badRequest, code: "invalid-json"),
        Case(
            label: "a bundle body without files", method: .put, uri: "/v1/bundle", scope: .admin,
            body: Array(#"{"tenant": {}}"#.utf8), status: .badRequest, code: "invalid-bundle-request"),
        Case(
            label: "a bundle body that gives files twice (the first would have been taken)", method: .put,
            uri: "/v1/bundle", scope: .admin, body: Array(#"{"files": {"tenant.json": "{}"}, "files": {}}"#.utf8),
            status: .badRequest, code: "invalid-bundle-request"),
        Case(
            label: "a bundle file name with a path", method: .put, uri: "/v1/bundle", scope: .admin,
            body: Array(#"{"files": {"../tenant.json": "{}"}}"#.utf8), status: .badRequest,
            code: "invalid-bundle-request"),
        Case(
            label: "a policy of an unknown account", method: .get, uri: "/v1/accounts/erin@fabrikam.com/policy",
            scope: .read, body: nil, status: .notFound, code: "unknown-account"),
        Case(
            label: "a wipe of an account no one knows", method: .post, uri: "/v1/accounts/%7B%7D/wipe", scope: .admin,
            body: nil, status: .notFound, code: "unknown-account"),
        Case(
            label: "a wipe with a body that is not {\"reason\"}", method: .post,
            uri: "/v1/accounts/alice@contoso.com/wipe", scope: .admin,
            body: Array(#"{"why":"left"}"#.utf8), status: .badRequest, code: "invalid-parameter"),
        Case(
            label: "a wipe with an empty reason", method: .post, uri: "/v1/accounts/alice@contoso.com/wipe",
            scope: .admin, body: Array(#"{"reason":""}"#.utf8), status: .badRequest, code: "invalid-parameter"),
        Case(
            label: "a key rotation with a body", method: .post, uri: "/v1/accounts/alice@contoso.com/keys/rotate",
            scope: .admin, body: [0x7B, 0x7D], status: .badRequest, code: "unexpected-body"),
        Case(
            label: "a Graph sync with a body", method: .post, uri: "/v1/graph/sync", scope: .admin,
            body: Array(#"{"full":true}"#.utf8), status: .badRequest, code: "unexpected-body"),
        Case(
            label: "a bad Last-Event-ID", method: .get, uri: "/v1/events?lastEventId=-3", scope: .events, body: nil,
            status: .badRequest, code: "invalid-parameter"),
        Case(
            label: "a misspelt parameter of the policy route", method: .get,
            uri: "/v1/accounts/alice@contoso.com/policy?platfrom=android", scope: .read, body: nil, status: .badRequest,
            code: "invalid-parameter"),
        Case(
            label: "a parameter given twice", method: .post, uri: "/v1/decisions?platform=ios&platform=android",
            scope: .decide, body: query, status: .badRequest, code: "invalid-parameter"),
        Case(
            label: "a parameter of a route that takes none", method: .get, uri: "/v1/bundle?verbose=true", scope: .read,
            body: nil, status: .badRequest, code: "invalid-parameter"),
        Case(
            label: "an empty app", method: .post, uri: "/v1/protect?owner=alice@contoso.com&app=", scope: .protect,
            body: [1], status: .badRequest, code: "invalid-parameter"),
        Case(
            label: "a bundle file name with NUL", method: .put, uri: "/v1/bundle", scope: .admin,
            body: Array(#"{"files": {"a\u0000.json": "{}"}}"#.utf8), status: .badRequest, code: "invalid-bundle-request"
        ),
        Case(
            label: "a bundle file name with ESC", method: .put, uri: "/v1/bundle", scope: .admin,
            body: Array(#"{"files": {"a\u001b[2J.json": "{}"}}"#.utf8), status: .badRequest,
            code: "invalid-bundle-request"),
        Case(
            label: "a bundle file name with U+202E", method: .put, uri: "/v1/bundle", scope: .admin,
            body: Array(#"{"files": {"\u202enosj.json": "{}"}}"#.utf8), status: .badRequest,
            code: "invalid-bundle-request"),
        Case(
            label: "a bundle file name not ending in .json", method: .put, uri: "/v1/bundle", scope: .admin,
            body: Array(#"{"files": {"tenant.txt": "{}"}}"#.utf8), status: .badRequest, code: "invalid-bundle-request"),
        Case(
            label: "an empty bundle", method: .put, uri: "/v1/bundle", scope: .admin,
            body: Array(#"{"files": {}}"#.utf8), status: .unprocessableContent, code: "invalid-bundle"),
        Case(
            label: "a bundle over the body limit", method: .put, uri: "/v1/bundle", scope: .admin,
            body: Array(repeating: 0x20, count: 2_000_000), status: .contentTooLarge, code: "too-large"),
        Case(
            label: "a shared item over the body limit", method: .post,
            uri: "/v1/decisions/receive?receiver=alice@contoso.com", scope: .decide,
            body: Array(repeating: 0x20, count: 2_000_000), status: .contentTooLarge, code: "too-large"),
        Case(
            label: "an account path that is not percent-encoded UTF-8", method: .get,
            uri: "/v1/accounts/alice%FF/policy", scope: .read, body: nil, status: .badRequest, code: "invalid-parameter"
        ),
        Case(
            label: "an account path hiding a bidirectional override", method: .get,
            uri: "/v1/accounts/%E2%80%AEalice@contoso.com/policy", scope: .read, body: nil, status: .badRequest,
            code: "invalid-parameter"),
        Case(
            label: "an account path hiding a control character", method: .post,
            uri: "/v1/accounts/alice%0A@contoso.com/wipe", scope: .admin, body: nil, status: .badRequest,
            code: "invalid-parameter"),
        Case(
            label: "an unknown route", method: .get, uri: "/v1/nothing", scope: .admin, body: nil, status: .notFound,
            code: "not-found"),
        Case(
            label: "a wrong method", method: .delete, uri: "/v1/decisions", scope: .admin, body: nil,
            status: .methodNotAllowed, code: "method-not-allowed"),
    ]

    @Test("each bad request gets a clear JSON error, never a 500", arguments: cases)
    func refused(_ input: Case) async throws {
        let fixture = try await ServiceFixture.make { $0.limits.bodyBytes = 1 << 20 }
        try await fixture.application().test(.router) { client in
            let response = try await client.execute(
                uri: input.uri, method: input.method, headers: fixture.auth(input.scope),
                body: input.body.map { ByteBuffer(bytes: $0) })
            #expect(response.status == input.status, "\(response.body.text)")
            #expect(response.status.code < 500 || response.status == .serviceUnavailable)
            #expect(response.headers[.contentType] == "application/json")
            #expect(try object(response)["code"] as? String == input.code, "\(response.body.text)")
            if input.status == .contentTooLarge {
                #expect(try object(response)["limit"] as? Int == 1 << 20, "every 413 names the limit")
            }
            if input.code == "invalid-parameter" {
                // Issue 47, item 16: every invalid-parameter names the parameter, bodies' too.
                #expect(try object(response)["parameter"] is String, "\(response.body.text)")
            }
        }
    }

    @Test("malformed JSON names its line and column")
    func located() async throws {
        let fixture = try await ServiceFixture.make()
        try await fixture.application().test(.router) { client in
            let response = try await client.execute(
                uri: "/v1/decisions", method: .post, headers: fixture.auth(.decide),
                body: ByteBuffer(string: #"{"action": "print", "account": tru}"#))
            let body = try object(response)
            #expect(body["line"] as? Int == 1)
            #expect(body["column"] as? Int == 32)
        }
    }

    @Test("a batch past its limits answers what it can, then says why it stopped, in place")
    func batchLimits() async throws {
        let fixture = try await ServiceFixture.make {
            $0.limits.batchQueries = 3
            $0.limits.lineBytes = 200
        }
        let query = #"{"action":"print","account":"alice@contoso.com"}"#
        let long = #"{"action":"print","account":""# + String(repeating: "a", count: 300) + #""}"#
        try await fixture.application().test(.router) { client in
            let response = try await client.execute(
                uri: "/v1/decisions/batch", method: .post, headers: fixture.auth(.decide),
                body: ByteBuffer(string: [query, long, query, query, query].joined(separator: "\n")))
            #expect(response.status == .ok)
            let lines = response.body.text.split(separator: "\n").map(String.init)
            #expect(lines.count == 4)
            #expect(lines[0].hasPrefix(#"{"action":"print""#))
            #expect(lines[1].hasPrefix(#"{"error":"line 2, column 1: the line is longer than 200 bytes"#))
            #expect(lines[2].hasPrefix(#"{"action":"print""#))
            #expect(lines[3].hasPrefix(#"{"error":"line 4, column 1: the batch holds more than 3 queries"#))
        }
    }
}
