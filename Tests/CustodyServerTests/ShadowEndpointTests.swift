import Custody
@testable import CustodyServer
import CustodyPolicy
import CustodyTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// `/v1/bundle/shadow` (issue 51): a candidate decided beside the bundle in force.
@Suite("/v1/bundle/shadow", .timeLimit(.minutes(2)))
struct ShadowEndpointTests {
    /// Waits until the service decided `count` decisions under the shadow and recorded them.
    static func shadowStatus(_ fixture: ServiceFixture, decided count: Int) async throws -> ShadowStatus {
        for _ in 0..<500 {
            await fixture.engine.drainShadow()
            if let status = try await fixture.engine.shadowStatus(), status.report.decided >= count { return status }
            try await Task.sleep(for: .milliseconds(10))
        }
        return try #require(try await fixture.engine.shadowStatus())
    }

    @Test(
        "set by an admin, the shadow decides every decision the service answers; GET and /metrics count the disagreements by setting and action; DELETE stops it"
    )
    func lifecycle() async throws {
        let fixture = try await ServiceFixture.make()
        let inForce = try #require(fixture.engine.bundleInForce?.revision)
        let files = try ImpactEndpointTests.candidate(fixture)
        try await fixture.application().test(.router) { client in
            let body = try ImpactEndpointTests.body(["files": files])
            let refused = try await client.execute(
                uri: "/v1/bundle/shadow", method: .put, headers: fixture.auth(.read), body: body)
            #expect(refused.status == .forbidden, "setting a shadow needs admin")
            let none = try object(
                try await client.execute(uri: "/v1/bundle/shadow", method: .get, headers: fixture.auth(.read)))
            #expect(none["shadow"] is NSNull, "\(none)")

            let set = try await client.execute(
                uri: "/v1/bundle/shadow", method: .put, headers: fixture.auth(.admin), body: body)
            #expect(set.status == .ok, "\(set.body.text)")
            let shadow = try #require(try object(set)["shadow"] as? [String: Any])
            #expect(shadow["source"] as? String == "http" && shadow["ended"] == nil)
            #expect(fixture.engine.bundleInForce?.revision == inForce, "nothing applied")
            // The service runs it (its ShadowService read it when the change came).
            for _ in 0..<500 where try await fixture.engine.shadowStatus()?.decidingHere != true {
                try await Task.sleep(for: .milliseconds(10))
            }
            // bob (All Staff) may print; the candidate blocks it. alice (Finance) is blocked by both.
            for (query, times) in [
                (#"{"action":"print","account":"bob@contoso.com"}"#, 3),
                (#"{"action":"print","account":"alice@contoso.com"}"#, 2),
            ] {
                for _ in 0..<times {
                    let decided = try await client.execute(
                        uri: "/v1/decisions", method: .post, headers: fixture.auth(.decide),
                        body: ByteBuffer(string: query))
                    #expect(decided.status == .ok, "\(decided.body.text)")
                }
            }
            let batch = try await client.execute(
                uri: "/v1/decisions/batch", method: .post, headers: fixture.auth(.decide),
                body: ByteBuffer(
                    string: #"{"action":"print","account":"bob@contoso.com"}"# + "\n"
                        + #"{"action":"backup","account":"bob@contoso.com"}"# + "\n"))
            #expect(batch.status == .ok, "\(batch.body.text)")
            let status = try await Self.shadowStatus(fixture, decided: 7)
            #expect(status.report.decided == 7 && status.report.tightened == 4 && status.report.unchanged == 3)
            let answer = try #require(
                try object(
                    try await client.execute(uri: "/v1/bundle/shadow", method: .get, headers: fixture.auth(.read))
                )["shadow"] as? [String: Any])
            let report = try #require(answer["report"] as? [String: Any])
            #expect(report["tightened"] as? Int == 4 && answer["dropped"] as? Int == 0, "\(answer)")
            let metrics = try await client.execute(uri: "/metrics", method: .get).body.text
            #expect(
                metrics.contains(#"custody_shadow_disagreements_total{setting="printBlocked",action="print"} 4"#)
                    || metrics.contains(#"custody_shadow_disagreements_total{action="print",setting="printBlocked"} 4"#),
                "\(metrics.split(separator: "\n").filter { $0.contains("shadow") })")
            #expect(metrics.contains("custody_shadow_decisions_total 7"))

            let stopped = try await client.execute(
                uri: "/v1/bundle/shadow", method: .delete, headers: fixture.auth(.admin))
            #expect(stopped.status == .ok, "\(stopped.body.text)")
            let ended = try #require(try object(stopped)["shadow"] as? [String: Any])
            #expect((ended["endedHow"] as? String)?.hasPrefix("stopped by") == true, "\(ended)")
            let again = try await client.execute(
                uri: "/v1/bundle/shadow", method: .delete, headers: fixture.auth(.admin))
            #expect(again.status == .notFound && again.body.text.contains("no shadow bundle is running"))
        }
    }

    @Test(
        "the console's Shadow view: none set; then the disagreements with both reasons, grouped, and for an admin alone the stop button and the form"
    )
    func consoleView() async throws {
        let fixture = try await ServiceFixture.make()
        let candidate = try ImpactEndpointTests.candidate(fixture)
        try await fixture.application().test(.router) { client in
            let empty = try await client.execute(
                uri: "/console/views/shadow", method: .get, headers: fixture.auth(.read)
            ).body.text
            #expect(empty.contains("No shadow bundle has been set") && !empty.contains("shadow-form"))
            let set = try await client.execute(
                uri: "/v1/bundle/shadow", method: .put, headers: fixture.auth(.admin),
                body: try ImpactEndpointTests.body(["files": candidate]))
            #expect(set.status == .ok, "\(set.body.text)")
            for _ in 0..<500 where try await fixture.engine.shadowStatus()?.decidingHere != true {
                try await Task.sleep(for: .milliseconds(10))
            }
            for query in [
                #"{"action":"print","account":"bob@contoso.com"}"#,
                #"{"action":"print","account":"alice@contoso.com"}"#,
            ] {
                _ = try await client.execute(
                    uri: "/v1/decisions", method: .post, headers: fixture.auth(.decide), body: ByteBuffer(string: query)
                )
            }
            _ = try await Self.shadowStatus(fixture, decided: 2)
            let read = try await client.execute(
                uri: "/console/views/shadow", method: .get, headers: fixture.auth(.read)
            ).body.text
            // bob (All Staff) may print, the candidate blocks it; alice (Finance) is blocked by both.
            #expect(read.contains(#"data-refresh="5""#) && read.contains("Agreed 1"), "\(read)")
            #expect(read.contains("tightens: print allow → block"))
            #expect(read.contains("printBlocked is false (from &quot;Contoso All Staff (iOS)&quot;)"), "\(read)")
            #expect(read.contains("printBlocked is true (from &quot;Contoso All Staff (iOS)&quot;)"))
            #expect(read.contains(#"<table id="shadow-settings">"#) && read.contains("<td>printBlocked</td><td>1</td>"))
            #expect(!read.contains("shadow-form") && !read.contains("data-action=\"shadow-stop\""))
            let admin = try await client.execute(
                uri: "/console/views/shadow", method: .get, headers: fixture.auth(.admin)
            ).body.text
            #expect(admin.contains("shadow-form") && admin.contains(#"data-action="shadow-stop""#))
        }
    }

    @Test("refused: a candidate that does not load (422 with where), the bundle in force itself, a body on DELETE")
    func refusals() async throws {
        let fixture = try await ServiceFixture.make()
        let files = try ImpactEndpointTests.candidate(fixture)
        var same = files
        same["all-staff.json"] = try String(contentsOfFile: fixture.bundle + "/all-staff.json", encoding: .utf8)
        try await fixture.application().test(.router) { [same] client in
            var broken = files
            broken["all-staff.json"] = "{"
            let bad = try await client.execute(
                uri: "/v1/bundle/shadow", method: .put, headers: fixture.auth(.admin),
                body: try ImpactEndpointTests.body(["files": broken]))
            #expect(bad.status == .unprocessableContent && bad.body.text.contains("all-staff.json"), "\(bad.body.text)")
            let inForce = try await client.execute(
                uri: "/v1/bundle/shadow", method: .put, headers: fixture.auth(.admin),
                body: try ImpactEndpointTests.body(["files": same]))
            #expect(
                inForce.status == .badRequest && inForce.body.text.contains("bundle in force already"),
                "\(inForce.body.text)")
            #expect(try object(inForce)["parameter"] as? String == "files", "\(inForce.body.text)")
            var none = files
            none["tenant.json"] = #"{"accounts": [], "allowedAccounts": null}"#
            let empty = try await client.execute(
                uri: "/v1/bundle/shadow", method: .put, headers: fixture.auth(.admin),
                body: try ImpactEndpointTests.body(["files": none]))
            #expect(
                empty.status == .unprocessableContent && empty.body.text.contains("no candidate for a shadow")
                    && !empty.body.text.contains("allowEmpty"), "\(empty.body.text)")
            let body = try await client.execute(
                uri: "/v1/bundle/shadow", method: .delete, headers: fixture.auth(.admin),
                body: ByteBuffer(string: "{}"))
            #expect(body.status == .badRequest, "\(body.body.text)")
        }
        #expect(try await fixture.engine.shadowStatus() == nil)
    }
}
