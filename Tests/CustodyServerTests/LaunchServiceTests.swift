import Custody
import CustodyTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import CustodyServer

@Suite("POST /v1/launch", .timeLimit(.minutes(2)))
struct LaunchServiceTests {
    @Test(
        "a launch query (action optional) is answered with its outcome; another action is a 400",
        arguments: [
            (#"{"account":"alice@contoso.com","facts":{"osVersion":"17.4"},"missingFacts":"ignore"}"#, 200, "launch"),
            (#"{"action":"launch","account":"alice@contoso.com","facts":{}}"#, 200, "launch"),
            (#"{"action":"print","account":"alice@contoso.com"}"#, 400, "invalid-query"),
            (#"{"account":"alice@contoso.com","facts":{"osVersion":17}}"#, 400, "invalid-query"),
            (#"{"account":"alice@contoso.com","facts":{"colour":"red"}}"#, 400, "invalid-query"),
            (#"{}"#, 400, "invalid-query"),
            (#"[1,2]"#, 400, "invalid-query"),
        ] as [(String, Int, String)])
    func launch(body: String, status: Int, expected: String) async throws {
        let fixture = try await ServiceFixture.make()
        try await fixture.application().test(.router) { client in
            let response = try await client.execute(
                uri: "/v1/launch", method: .post, headers: fixture.auth(.decide), body: ByteBuffer(string: body))
            #expect(response.status.code == status, "\(String(buffer: response.body))")
            let answer = try object(response)
            if status == 200 {
                #expect(answer["action"] as? String == expected)
                #expect(["allow", "warn", "block", "wipe"].contains(answer["outcome"] as? String ?? ""))
                #expect(answer["revision"] as? String != nil)
                #expect(response.headers[.custodyRevision] != nil)
            } else {
                #expect(answer["code"] as? String == expected)
            }
        }
    }

    @Test("a missing fact is counted as failed unless ignored, over HTTP as in the library")
    func missingFacts() async throws {
        let fixture = try await ServiceFixture.make()
        try await fixture.application().test(.router) { client in
            for (mode, counts) in [("strict", true), ("ignore", false)] {
                let response = try await client.execute(
                    uri: "/v1/launch", method: .post, headers: fixture.auth(.decide),
                    body: ByteBuffer(string: #"{"account":"alice@contoso.com","missingFacts":"\#(mode)"}"#))
                #expect(response.status == .ok)
                let answer = try object(response)
                let checks = try #require(answer["checks"] as? [[String: Any]])
                #expect(!checks.isEmpty)
                #expect(checks.allSatisfy { ($0["counts"] as? Bool) == counts })
                #expect((answer["missingFacts"] as? [String])?.contains("lastCheckIn") == true)
            }
        }
    }
}
