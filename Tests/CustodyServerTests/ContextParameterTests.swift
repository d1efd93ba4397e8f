import Custody
import CustodyPolicy
import CustodyTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import CustodyServer

@Suite("Context parameters override their own field only", .timeLimit(.minutes(2)))
struct ContextParameterTests {
    /// A request, on a service started with `started`, and what it must answer.
    struct Case: Sendable, CustomTestStringConvertible {
        let label: String
        let started: EvaluationContext
        let uri: String
        let body: String
        let status: HTTPResponse.Status
        /// The `allowed` of the answer, for a decision.
        var allowed: Bool? = nil
        var testDescription: String { label }
    }

    static let print = #"{"action":"print","account":"alice@contoso.com"}"#
    static let shareToExpenses = #"{"action":"share","owner":"alice@contoso.com","targets":["com.contoso.expenses"]}"#

    static let cases: [Case] = [
        Case(
            label: "an app on a service started for iOS decides on iOS", started: EvaluationContext(platform: .ios),
            uri: "/v1/decisions?app=com.microsoft.office.outlook", body: print, status: .ok, allowed: false),
        Case(
            label: "a platform on a service started for an app keeps the app",
            started: EvaluationContext(platform: .ios, appID: "com.contoso.expenses"),
            uri: "/v1/decisions?platform=ios", body: print, status: .ok, allowed: true),
        Case(
            label: "a management level keeps the platform", started: EvaluationContext(platform: .ios),
            uri: "/v1/decisions?managementLevel=unmanaged", body: print, status: .ok, allowed: false),
        Case(
            label: "no platform anywhere for a bundle of both", started: EvaluationContext(),
            uri: "/v1/decisions?app=com.microsoft.office.outlook", body: print, status: .badRequest),
        Case(
            label: "protect takes the platform it is told to add", started: EvaluationContext(),
            uri: "/v1/protect?owner=alice@contoso.com&platform=ios", body: "data", status: .ok),
        Case(
            label: "protect takes an app", started: EvaluationContext(platform: .ios),
            uri: "/v1/protect?owner=alice@contoso.com&app=com.microsoft.office.outlook", body: "data", status: .ok),
        Case(
            label: "the policy report takes an app", started: EvaluationContext(platform: .ios),
            uri: "/v1/accounts/alice@contoso.com/policy?app=com.microsoft.office.outlook", body: "", status: .ok),
        Case(
            label: "configuration takes a platform", started: EvaluationContext(),
            uri: "/v1/accounts/alice@contoso.com/configuration?platform=ios", body: "", status: .ok),
    ]

    @Test("each parameter changes its own field of the service's context", arguments: cases)
    func overrides(_ input: Case) async throws {
        let fixture = try await ServiceFixture.make(context: input.started)
        try await fixture.application().test(.router) { client in
            let scope: TokenScope =
                input.uri.hasPrefix("/v1/protect") ? .protect : input.uri.hasPrefix("/v1/accounts") ? .read : .decide
            let method: HTTPRequest.Method = input.body.isEmpty ? .get : .post
            let response = try await client.execute(
                uri: input.uri, method: method, headers: fixture.auth(scope),
                body: input.body.isEmpty ? nil : ByteBuffer(string: input.body))
            #expect(response.status == input.status, "\(response.body.text)")
            if let allowed = input.allowed { #expect(try object(response)["allowed"] as? Bool == allowed) }
            if response.status == .badRequest {
                let message = try object(response)["error"] as? String ?? ""
                #expect(message.contains("?platform="), "the error names what works: \(message)")
            }
        }
    }

    @Test(
        "a parameter naming the service's own value answers as no parameter does; the app is kept when the platform is named"
    )
    func sameAnswer() async throws {
        let fixture = try await ServiceFixture.make(
            context: EvaluationContext(platform: .ios, appID: "com.contoso.expenses"))
        try await fixture.application().test(.router) { client in
            let body = ByteBuffer(string: Self.shareToExpenses)
            let plain = try await client.execute(
                uri: "/v1/decisions", method: .post, headers: fixture.auth(.decide), body: body)
            let named = try await client.execute(
                uri: "/v1/decisions?platform=ios", method: .post, headers: fixture.auth(.decide), body: body)
            #expect(plain.status == .ok && named.status == .ok)
            var a = try object(plain)
            var b = try object(named)
            a["eventId"] = nil
            b["eventId"] = nil
            #expect(
                NSDictionary(dictionary: a) == NSDictionary(dictionary: b), "\(plain.body.text) vs \(named.body.text)")
        }
    }

    @Test("an account in the path is percent-decoded, as encodeURIComponent sends it")
    func percentDecodedAccount() async throws {
        let fixture = try await ServiceFixture.make()
        try await fixture.application().test(.router) { client in
            for path in ["alice%40contoso.com", "ALICE%40CONTOSO.COM", "alice@contoso.com"] {
                let response = try await client.execute(
                    uri: "/v1/accounts/\(path)/policy", method: .get, headers: fixture.auth(.read))
                #expect(response.status == .ok, "\(path): \(response.body.text)")
            }
            let unknown = try await client.execute(
                uri: "/v1/accounts/%C3%A9lise%40contoso.com/policy", method: .get, headers: fixture.auth(.read))
            #expect(unknown.status == .notFound)
            #expect((try object(unknown)["error"] as? String ?? "").hasPrefix("élise@contoso.com is not in the tenant"))
        }
    }
}

/// Issue 47, item 11: identifiers are not trimmed of anything but ASCII spaces before they are
/// checked, and control, line-separator and bidirectional characters are refused wherever an
/// identifier enters: a path, a parameter, a body.
@Suite("Service: identifiers with invisible characters")
struct InvisibleIdentifierTests {
    @Test(
        "a path, a parameter or a body naming an account padded with a tab, NEL, a line separator or a bidi override is refused; NBSP or U+3000 name no account",
        arguments: [
            ("/v1/accounts/%09alice%40contoso.com/policy", HTTPResponse.Status.badRequest),
            ("/v1/accounts/alice%40contoso.com%C2%85/policy", .badRequest),
            ("/v1/accounts/%E2%80%A8alice%40contoso.com/policy", .badRequest),
            ("/v1/accounts/%E2%80%AEalice%40contoso.com/policy", .badRequest),
            ("/v1/accounts/%C2%A0alice%40contoso.com/policy", .notFound),
            ("/v1/accounts/alice%40contoso.com%E3%80%80/policy", .notFound),
            ("/v1/accounts/alice%40contoso.com/policy?app=com.contoso%E2%80%AE.app", .badRequest),
            ("/v1/accounts/alice%40contoso.com/policy?app=com.contoso%E2%80%A8.app", .badRequest),
            ("/v1/groups/g%E2%80%A8/grid", .badRequest),
        ])
    func paths(uri: String, status: HTTPResponse.Status) async throws {
        let fixture = try await ServiceFixture.make(context: EvaluationContext(platform: .ios))
        try await fixture.application().test(.router) { client in
            let response = try await client.execute(uri: uri, method: .get, headers: fixture.auth(.read))
            #expect(response.status == status, "\(response.body.text)")
        }
    }

    @Test(
        "a decision whose account is padded with a tab or a line separator is refused, not trimmed and decided",
        arguments: ["\\talice@contoso.com", "alice@contoso.com\\u2028", "alice@contoso.com\\u0085"])
    func bodies(account: String) async throws {
        let fixture = try await ServiceFixture.make(context: EvaluationContext(platform: .ios))
        try await fixture.application().test(.router) { client in
            let response = try await client.execute(
                uri: "/v1/decisions", method: .post, headers: fixture.auth(.decide),
                body: ByteBuffer(string: #"{"action":"print","account":"\#(account)"}"#))
            #expect(response.status == .badRequest, "\(response.body.text)")
        }
    }
}
