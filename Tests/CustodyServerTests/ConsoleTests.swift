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

/// The admin console's routes as the service answers them (the browser's view of them is
/// scripts/console/browser_test.py, which `make test` runs in headless Chromium).
@Suite("The admin console", .timeLimit(.minutes(2)))
struct ConsoleTests {
    @Test(
        "the page, its script and style: public, with no data, a strict Content-Security-Policy, never framed",
        arguments: ["/console", "/console/console.js", "/console/console.css"])
    func assets(path: String) async throws {
        let fixture = try await ServiceFixture.make()
        try await fixture.application().test(.router) { client in
            let response = try await client.execute(uri: path, method: .get)
            #expect(response.status == .ok)
            let policy = try #require(response.headers[HTTPField.Name("Content-Security-Policy")!])
            #expect(policy.contains("default-src 'none'") && policy.contains("script-src 'self'"))
            #expect(policy.contains("frame-ancestors 'none'"))
            #expect(response.headers[HTTPField.Name("X-Content-Type-Options")!] == "nosniff")
            #expect(response.headers[HTTPField.Name("Referrer-Policy")!] == "no-referrer")
            if path == "/console" {
                #expect(!response.body.text.contains("<script>") && !response.body.text.contains("onclick"))
                #expect(!response.body.text.contains(fixture.engine.bundleInForce!.revision), "no data without a token")
            }
        }
    }

    @Test(
        "every view needs a read token: none or a revoked one is 401 (a revoked one says so), decide-only is 403",
        arguments: ["/console/views/overview", "/console/views/accounts", "/console/views/whatif"])
    func viewsNeedTokens(path: String) async throws {
        let fixture = try await ServiceFixture.make()
        let (revoked, bearer) = try fixture.engine.createToken(scopes: [.read], name: "gone")
        #expect(try fixture.engine.revokeToken(id: revoked.id))
        try await fixture.application().test(.router) { client in
            #expect(try await client.execute(uri: path, method: .get).status == .unauthorized)
            let refused = try await client.execute(
                uri: path, method: .get, headers: [.authorization: "Bearer \(bearer)"])
            #expect(refused.status == .unauthorized)
            #expect(try (object(refused)["error"] as? String)?.contains("revoked") == true)
            #expect(
                try await client.execute(uri: path, method: .get, headers: fixture.auth(.decide)).status == .forbidden)
            let read = try await client.execute(uri: path, method: .get, headers: fixture.auth(.read))
            #expect(read.status == .ok && read.headers[.contentType]?.hasPrefix("text/html") == true)
        }
    }

    @Test("an account's view escapes what administrators' exports hold: a policy named with HTML is text")
    func escapes() async throws {
        let fixture = try await ServiceFixture.make { $0.bundleDirectory = nil }
        let staff = fixture.bundle + "/all-staff.json"
        let text = try String(contentsOfFile: staff, encoding: .utf8)
        try text.replacingOccurrences(of: "Contoso All Staff (iOS)", with: "<img src=x onerror=alert(1)>")
            .write(toFile: staff, atomically: true, encoding: .utf8)
        try await fixture.engine.apply(bundleDirectory: fixture.bundle)
        try await fixture.application().test(.router) { client in
            let page = try await client.execute(
                uri: "/console/views/accounts/alice%40contoso.com", method: .get, headers: fixture.auth(.read))
            #expect(page.status == .ok)
            #expect(!page.body.text.contains("<img"), "the name is escaped")
            #expect(page.body.text.contains("&lt;img src=x onerror=alert(1)&gt;"))
            #expect(page.body.text.contains("data-setting=\"printBlocked\""))
        }
    }

    @Test("search, what-if and its refusals render; GET /v1/accounts answers the same search as JSON")
    func views() async throws {
        let fixture = try await ServiceFixture.make()
        try await fixture.application().test(.router) { client in
            let search = try await client.execute(
                uri: "/console/views/accounts?q=ALICE", method: .get, headers: fixture.auth(.read))
            #expect(search.body.text.contains("1 of 4 accounts"), "\(search.body.text)")
            let json = try object(
                try await client.execute(uri: "/v1/accounts?q=alice", method: .get, headers: fixture.auth(.read)))
            #expect((json["accounts"] as? [[String: Any]])?.first?["upn"] as? String == "alice@contoso.com")
            #expect(json["total"] as? Int == 4)
            let decided = try await client.execute(
                uri: "/console/views/whatif?action=print&account=alice%40contoso.com", method: .get,
                headers: fixture.auth(.read))
            #expect(decided.body.text.contains(">Blocked<") && decided.body.text.contains("printBlocked"))
            let wrong = try await client.execute(
                uri: "/console/views/whatif?action=print&location=box", method: .get, headers: fixture.auth(.read))
            #expect(wrong.status == .ok && wrong.body.text.contains("role=\"alert\""), "\(wrong.body.text)")
            let unknown = try await client.execute(
                uri: "/console/views/accounts/nobody%40contoso.com", method: .get, headers: fixture.auth(.read))
            #expect(unknown.status == .notFound)
        }
    }
}
