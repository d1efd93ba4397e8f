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

/// `POST /v1/bundle/impact` (issue 51): a candidate replayed over the audited decisions.
@Suite("POST /v1/bundle/impact", .timeLimit(.minutes(2)))
struct ImpactEndpointTests {
    /// The example bundle's files, with all staff's print blocked.
    static func candidate(_ fixture: ServiceFixture) throws -> [String: String] {
        var files: [String: String] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: fixture.bundle) where name.hasSuffix(".json") {
            files[name] = try String(contentsOfFile: fixture.bundle + "/" + name, encoding: .utf8)
        }
        files["all-staff.json"] = files["all-staff.json"]!.replacingOccurrences(
            of: #""printBlocked": false"#, with: #""printBlocked": true"#)
        return files
    }

    static func body(_ object: [String: Any]) throws -> ByteBuffer {
        ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: object))
    }

    @Test("the report of the audited decisions decided again, as JSON or as events; nothing applied")
    func report() async throws {
        let fixture = try await ServiceFixture.make()
        try await fixture.engine.setAuditing(decisions: true)
        let inForce = try #require(fixture.engine.bundleInForce?.revision)
        let files = try Self.candidate(fixture)
        try await fixture.application().test(.router) { client in
            for query in [
                #"{"action":"print","account":"bob@contoso.com"}"#,
                #"{"action":"print","account":"alice@contoso.com"}"#,
            ] {
                let decided = try await client.execute(
                    uri: "/v1/decisions", method: .post, headers: fixture.auth(.decide),
                    body: ByteBuffer(string: query))
                #expect(decided.status == .ok, "\(decided.body.text)")
            }
            let answer = try await client.execute(
                uri: "/v1/bundle/impact?since=1h", method: .post, headers: fixture.auth(.read),
                body: try Self.body(["files": files]))
            #expect(answer.status == .ok, "\(answer.body.text)")
            let report = try object(answer)
            // bob (All Staff) printed, allowed; the candidate blocks it: one tightening flip.
            // alice (Finance) was blocked already.
            #expect(report["decided"] as? Int == 2 && report["unchanged"] as? Int == 1, "\(report)")
            #expect(report["tightened"] as? Int == 1 && report["loosened"] as? Int == 0)
            let flip = try #require((report["flips"] as? [[String: Any]])?.first)
            #expect(flip["before"] as? String == "allow" && flip["after"] as? String == "block")
            #expect(flip["setting"] as? String == "printBlocked" && flip["loosens"] as? Bool == false)
            #expect((flip["sample"] as? [String: Any])?["account"] as? String == "bob@contoso.com")
            #expect(fixture.engine.bundleInForce?.revision == inForce, "nothing applied")

            var stream = fixture.auth(.read)
            stream[.accept] = "text/event-stream"
            let events = try await client.execute(
                uri: "/v1/bundle/impact?action=print", method: .post, headers: stream,
                body: try Self.body(["files": files]))
            #expect(events.headers[.contentType] == "text/event-stream")
            let text = events.body.text
            #expect(text.contains("event: progress\ndata: {"), "\(text)")
            // One page: all of the window read, as its count says.
            #expect(text.contains(#""decided":2,"flipped":1,"fraction":1,"read":2"#), "\(text)")
            let last = try #require(
                text.components(separatedBy: "event: report\ndata: ").last?.split(separator: "\n").first)
            let streamed = try #require(try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any])
            #expect(streamed["decided"] as? Int == 2 && streamed["tightened"] as? Int == 1)

            let none = try object(
                try await client.execute(
                    uri: "/v1/bundle/impact?action=saveTo", method: .post, headers: fixture.auth(.read),
                    body: try Self.body(["files": files])))
            #expect(none["decided"] as? Int == 0)
        }
    }

    @Test(
        "refused, naming why: bad parameters, a candidate that does not load, an unknown group, a token that cannot read",
        arguments: [
            ("since=1x", 400, "invalid-parameter"), ("since=7d&from=2026-11-01T00:00:00Z", 400, "invalid-parameter"),
            ("to=2026-11-01T00:00:00Z", 400, "invalid-parameter"), ("action=fly", 400, "invalid-parameter"),
            ("account=a%00b", 400, "invalid-parameter"), ("window=7d", 400, "invalid-parameter"),
            ("since=7d&since=1d", 400, "invalid-parameter"), ("group=grp-nobody", 404, "not-found"),
            ("bad-bundle", 422, "invalid-bundle"), ("decide-token", 403, "forbidden"),
        ] as [(String, Int, String)])
    func refusals(query: String, status: Int, code: String) async throws {
        let fixture = try await ServiceFixture.make()
        let files = query == "bad-bundle" ? ["policies.json": "{"] : try Self.candidate(fixture)
        let parameters = query.contains("=") ? "?" + query : ""
        try await fixture.application().test(.router) { client in
            let refused = try await client.execute(
                uri: "/v1/bundle/impact" + parameters, method: .post,
                headers: fixture.auth(query == "decide-token" ? .decide : .read), body: try Self.body(["files": files]))
            #expect(refused.status.code == status, "\(query): \(refused.body.text)")
            #expect(try object(refused)["code"] as? String == code, "\(query): \(refused.body.text)")
        }
    }
}

@Suite("The replays a service runs at once")
struct ReplayGateTests {
    @Test("two places, shared by the API and the console; a place given back is taken again")
    func places() {
        let gate = ReplayGate()
        #expect(gate.enter() && gate.enter())
        #expect(!gate.enter(), "a third waits for none: replay-busy")
        gate.leave()
        #expect(gate.enter())
        #expect(!gate.enter())
        #expect(ReplayGate.busy.status == .serviceUnavailable && ReplayGate.busy.code == .replayBusy)
    }
}
