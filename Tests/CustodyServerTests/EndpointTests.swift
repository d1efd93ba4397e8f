import Custody
import CustodyPolicy
import CustodyProtection
import CustodyStore
import CustodyTestSupport
import Foundation
import GRDB
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import CustodyServer

@Suite("The decision service's endpoints", .timeLimit(.minutes(2)))
struct EndpointTests {
    static let dropbox = #"{"action":"saveTo","owner":"alice@contoso.com","location":"dropbox","locationAccount":null}"#

    @Test(
        "a token whose row the state holds damaged is 503 for a caller who is not authenticated, and the answer tells nothing of the row"
    )
    func damagedTokenRow() async throws {
        let fixture = try await ServiceFixture.make()
        let bearer = try #require(fixture.tokens[.read])
        let queue = try DatabaseQueue(path: CustodyDatabase.path(forState: fixture.directory.file("state.sqlite")))
        try await queue.write {
            try $0.execute(sql: "UPDATE tokens SET created = 'not a time' WHERE name = 'test read'")
        }
        // The token's id with another secret: no one who holds it.
        let forged = String(bearer.dropLast()) + (bearer.last == "A" ? "B" : "A")
        try await fixture.application().test(.router) { client in
            let response = try await client.execute(
                uri: "/v1/bundle", method: .get, headers: [.authorization: "Bearer \(forged)"])
            #expect(response.status == .serviceUnavailable)
            #expect(try object(response)["code"] as? String == "state")
            for secret in ["test read", "scopes", "not a time", "SELECT", "created"] {
                #expect(!response.body.text.contains(secret), "the answer names \(secret): \(response.body.text)")
            }
        }
        #expect(fixture.logs.records.contains { $0.message.contains("a token cannot be verified") })
    }

    @Test("POST /v1/decisions answers one query with the decide JSON, its revision and event id")
    func decide() async throws {
        let fixture = try await ServiceFixture.make()
        let revision = try #require(fixture.engine.bundleInForce?.revision)
        try await fixture.application().test(.router) { client in
            let response = try await client.execute(
                uri: "/v1/decisions?platform=ios", method: .post, headers: fixture.auth(.decide),
                body: ByteBuffer(text: Self.dropbox))
            #expect(response.status == .ok)
            #expect(response.headers[.contentType] == "application/json")
            #expect(response.headers[HTTPField.Name("Custody-Revision")!] == revision)
            let body = try object(response)
            #expect(body["allowed"] as? Bool == false)
            #expect(body["setting"] as? String == "saveAsBlocked")
            #expect(body["revision"] as? String == revision)
            #expect(body["eventId"] as? Int == Int(fixture.engine.lastEventID))
            #expect((body["reason"] as? String)?.contains("saveAsBlocked is true") == true)
            // The same as custody decide's line, plus the stamp.
            var session = try await fixture.engine.decisionSession(
                context: EvaluationContext(platform: .ios), options: .init(currentTime: { .zero }))
            var line: [UInt8] = []
            Array(Self.dropbox.utf8).withUnsafeBytes { session.answer(line: $0, into: &line) }
            let plain = String(decoding: line.dropLast(2), as: UTF8.self)
            #expect(response.body.text.hasPrefix(plain + ","))
        }
    }

    @Test("POST /v1/decisions/batch streams one answer per line, in order, a bad line answered in its place")
    func batch() async throws {
        let fixture = try await ServiceFixture.make()
        let lines = (0..<500).map { index in
            index == 250
                ? "{not json" : #"{"action":"print","account":"\#(index % 2 == 0 ? "alice" : "bob")@contoso.com"}"#
        }
        try await fixture.application().test(.router) { client in
            let response = try await client.execute(
                uri: "/v1/decisions/batch?platform=ios&reasons=false", method: .post, headers: fixture.auth(.decide),
                body: ByteBuffer(text: lines.joined(separator: "\n") + "\n"))
            #expect(response.status == .ok)
            #expect(response.headers[.contentType] == "application/x-ndjson")
            #expect(response.headers[HTTPField.Name("Custody-Revision")!] == fixture.engine.bundleInForce?.revision)
            let answers = response.body.text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            #expect(answers.count == 500)
            for (index, answer) in answers.enumerated() {
                if index == 250 {
                    #expect(answer.hasPrefix(#"{"error":"line 251, column 2: "#))
                } else {
                    #expect(
                        answer.hasPrefix(
                            #"{"action":"print","allowed":\#(index % 2 == 0 ? "false" : "true"),"setting":"printBlocked""#
                        ), "line \(index + 1): \(answer)")
                    #expect(!answer.contains(#""reason""#), "reasons=false")
                }
            }
        }
    }

    @Test("policy, configuration and the bundle in force can be read")
    func reads() async throws {
        let fixture = try await ServiceFixture.make()
        try await fixture.application().test(.router) { client in
            let policy = try await client.execute(
                uri: "/v1/accounts/alice@contoso.com/policy", method: .get, headers: fixture.auth(.read))
            #expect(policy.status == .ok)
            #expect(policy.body.text.contains(#""printBlocked""#))
            let byOID = try await client.execute(
                uri: "/v1/accounts/a1f0c7d2-5b1e-4c3a-9e8f-000000000001/policy", method: .get,
                headers: fixture.auth(.read))
            #expect(byOID.status == .ok)
            let configuration = try await client.execute(
                uri: "/v1/accounts/alice@contoso.com/configuration?app=com.microsoft.office.outlook&platform=ios",
                method: .get, headers: fixture.auth(.read))
            #expect(configuration.status == .ok)
            #expect(configuration.body.text.contains("com.contoso.outlook.SignatureLines"))
            let bundle = try object(
                try await client.execute(uri: "/v1/bundle", method: .get, headers: fixture.auth(.read)))
            #expect(bundle["revision"] as? String == fixture.engine.bundleInForce?.revision)
            #expect(
                (bundle["files"] as? [[String: Any]])?.compactMap { $0["name"] as? String }.contains("tenant.json")
                    == true)
        }
    }

    @Test(
        "PUT /v1/bundle applies a bundle; a broken one is refused with located diagnostics and the policy in force stays"
    )
    func putBundle() async throws {
        // No watched directory: its watcher applies the directory once it settles (250 ms
        // after start), which could land between the two PUTs and make the second a change.
        let fixture = try await ServiceFixture.make { $0.bundleDirectory = nil }
        let tenant =
            #"{"accounts": [{"oid": "a0000000-0000-4000-8000-000000000001", "upn": "a@contoso.com", "groups": []}]}"#
        let policy =
            ##"{"value": [{"@odata.type": "#microsoft.graph.iosManagedAppProtection", "id": "T_1", "displayName": "P", "printBlocked": true}]}"##
        @Sendable func body(_ files: [String: String]) throws -> ByteBuffer {
            ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: ["files": files]))
        }
        try await fixture.application().test(.router) { client in
            let before = fixture.engine.bundleInForce?.revision
            let broken = try await client.execute(
                uri: "/v1/bundle", method: .put, headers: fixture.auth(.admin),
                body: try body(["tenant.json": tenant, "policies.json": "{"]))
            #expect(broken.status == .unprocessableContent)
            #expect(try object(broken)["code"] as? String == "invalid-bundle")
            #expect(
                (try object(broken)["diagnostics"] as? [String])?.first?.hasPrefix("policies.json:1:2: error:") == true)
            #expect(fixture.engine.bundleInForce?.revision == before)

            let applied = try await client.execute(
                uri: "/v1/bundle", method: .put, headers: fixture.auth(.admin),
                body: try body(["tenant.json": tenant, "policies.json": policy]))
            #expect(applied.status == .ok)
            let revision = try #require(try object(applied)["revision"] as? String)
            #expect(revision != before)
            #expect(fixture.engine.bundleInForce?.revision == revision)
            let decision = try await client.execute(
                uri: "/v1/decisions", method: .post,
                headers: fixture.auth(.decide, [HTTPField.Name("Custody-Min-Revision")!: revision]),
                body: ByteBuffer(text: #"{"action":"print","account":"a@contoso.com"}"#))
            #expect(try object(decision)["allowed"] as? Bool == false)
            let again = try await client.execute(
                uri: "/v1/bundle", method: .put, headers: fixture.auth(.admin),
                body: try body(["tenant.json": tenant, "policies.json": policy]))
            #expect(again.status == .ok, "\(again.body.text)")
            #expect(try object(again)["unchanged"] as? Bool == true, "\(again.body.text)")
        }
    }

    @Test("protect and unprotect a buffer; a tampered envelope is a 422 naming why; a wipe makes it unreadable")
    func protection() async throws {
        let fixture = try await ServiceFixture.make()
        try await fixture.application().test(.router) { client in
            let plaintext = ByteBuffer(bytes: (0..<1_024).map { UInt8($0 & 0xFF) })
            let protected = try await client.execute(
                uri: "/v1/protect?owner=alice@contoso.com", method: .post, headers: fixture.auth(.protect),
                body: plaintext)
            #expect(protected.status == .ok)
            #expect(protected.headers[HTTPField.Name("Custody-Encrypted")!] == "true")
            #expect(protected.headers[HTTPField.Name("Custody-Owner")!] == "oid:a1f0c7d2-5b1e-4c3a-9e8f-000000000001")
            let opened = try await client.execute(
                uri: "/v1/unprotect", method: .post, headers: fixture.auth(.protect), body: protected.body)
            #expect(opened.status == .ok)
            #expect(opened.body == plaintext)

            var tampered = protected.body
            tampered.setInteger(
                tampered.getInteger(at: tampered.readableBytes - 5, as: UInt8.self)! ^ 1, at: tampered.readableBytes - 5
            )
            let refused = try await client.execute(
                uri: "/v1/unprotect", method: .post, headers: fixture.auth(.protect), body: tampered)
            #expect(refused.status == .unprocessableContent)
            #expect(try object(refused)["code"] as? String == "decrypt-failed")
            #expect(!refused.body.text.contains(String(buffer: plaintext)))

            // A reason, when given, is audited with the wipe (the console asks for one).
            let wiped = try await client.execute(
                uri: "/v1/accounts/Alice@Contoso.com/wipe", method: .post, headers: fixture.auth(.admin),
                body: ByteBuffer(string: #"{"reason":"left the company"}"#))
            #expect(wiped.status == .ok)
            await #expect(
                try fixture.engine.auditEntries().contains { $0.detail?.contains("left the company") == true },
                "the reason is audited")
            #expect(try object(wiped)["keyVersions"] as? Int == 1)
            let gone = try await client.execute(
                uri: "/v1/unprotect", method: .post, headers: fixture.auth(.protect), body: protected.body)
            #expect(gone.status == .unprocessableContent)
            #expect(try object(gone)["code"] as? String == "key-unavailable")
            #expect(gone.body.text.contains("wiped"))

            let rotated = try await client.execute(
                uri: "/v1/accounts/bob@contoso.com/keys/rotate", method: .post, headers: fixture.auth(.admin))
            #expect(try object(rotated)["version"] as? Int == 1)
            let unknown = try await client.execute(
                uri: "/v1/accounts/erin@fabrikam.com/wipe", method: .post, headers: fixture.auth(.admin))
            #expect(unknown.status == .notFound)
            #expect(try object(unknown)["code"] as? String == "unknown-account")
        }
    }

    @Test("receive decides by the item's own tag: the owner read from the envelope, plain data untagged")
    func receive() async throws {
        let fixture = try await ServiceFixture.make()
        try await fixture.application().test(.router) { client in
            let protected = try await client.execute(
                uri: "/v1/protect?owner=bob@contoso.com", method: .post, headers: fixture.auth(.protect),
                body: ByteBuffer(string: "minutes"))
            #expect(protected.status == .ok, "\(protected.body.text)")
            // Alice takes data from policy-managed apps only: Bob's envelope, yes; plain data, no.
            let tagged = try await client.execute(
                uri: "/v1/decisions/receive?receiver=alice@contoso.com", method: .post, headers: fixture.auth(.decide),
                body: protected.body)
            #expect(tagged.status == .ok)
            let answer = try object(tagged)
            #expect(answer["action"] as? String == "receive")
            #expect(answer["allowed"] as? Bool == true)
            #expect(answer["dataOwner"] as? String == "bob@contoso.com")
            #expect(answer["ownerVerified"] as? Bool == true)
            #expect((answer["revision"] as? String)?.count == 64)
            let plain = try await client.execute(
                uri: "/v1/decisions/receive?receiver=alice@contoso.com", method: .post, headers: fixture.auth(.decide),
                body: ByteBuffer(string: "minutes"))
            #expect(try object(plain)["allowed"] as? Bool == false)
            #expect(try object(plain)["dataOwner"] is NSNull)
            let damaged = try await client.execute(
                uri: "/v1/decisions/receive?receiver=alice@contoso.com", method: .post, headers: fixture.auth(.decide),
                body: ByteBuffer(bytes: [0x89, 0x43, 0x53, 0x54, 0x01, 0x4D, 0x10, 0x00, 0x00, 0x05]))
            #expect(damaged.status == .unprocessableContent)
            let noScope = try await client.execute(
                uri: "/v1/decisions/receive?receiver=alice@contoso.com", method: .post, headers: fixture.auth(.read),
                body: protected.body)
            #expect(noScope.status == .forbidden)
            let badParameter = try await client.execute(
                uri: "/v1/decisions/receive?owner=alice@contoso.com", method: .post, headers: fixture.auth(.decide),
                body: protected.body)
            #expect(badParameter.status == .badRequest)
        }
    }

    @Test("with no bundle in force, decisions are refused with 503 (never an allow) and the service is not ready")
    func noPolicy() async throws {
        let fixture = try await ServiceFixture.make(applying: false)
        try await fixture.application().test(.router) { client in
            for uri in ["/v1/decisions", "/v1/decisions/batch"] {
                let response = try await client.execute(
                    uri: uri, method: .post, headers: fixture.auth(.decide), body: ByteBuffer(text: Self.dropbox))
                #expect(response.status == .serviceUnavailable)
                #expect(try object(response)["code"] as? String == "no-policy")
                #expect(!response.body.text.contains("allowed"))
            }
            #expect(try await client.execute(uri: "/readyz", method: .get).status == .serviceUnavailable)
            #expect(try await client.execute(uri: "/healthz", method: .get).status == .ok)
        }
    }

    @Test(
        "a caller can refuse a stale answer: Custody-Min-Revision and Custody-Min-Event-Id",
        arguments: [
            ("Custody-Min-Event-Id", "999999", HTTPResponse.Status.conflict),
            ("Custody-Min-Event-Id", "0", .ok),
            ("Custody-Min-Revision", String(repeating: "ab", count: 32), .conflict),
            ("Custody-Min-Event-Id", "-1", .badRequest),
            ("Custody-Min-Revision", "NOT-HEX", .badRequest),
        ])
    func stale(header: String, value: String, status: HTTPResponse.Status) async throws {
        let fixture = try await ServiceFixture.make()
        try await fixture.application().test(.router) { client in
            let response = try await client.execute(
                uri: "/v1/decisions", method: .post, headers: fixture.auth(.decide, [HTTPField.Name(header)!: value]),
                body: ByteBuffer(text: Self.dropbox))
            #expect(response.status == status)
            if status == .conflict {
                let body = try object(response)
                #expect(body["code"] as? String == "stale")
                #expect(body["revision"] as? String == fixture.engine.bundleInForce?.revision)
            }
        }
    }

    @Test("the current revision, and one applied earlier, satisfy Custody-Min-Revision")
    func minRevisionSatisfied() async throws {
        let fixture = try await ServiceFixture.make()
        let first = try #require(fixture.engine.bundleInForce?.revision)
        try fixture.directory.edit("bundle/tenant.json") { $0 + " " }
        try await fixture.engine.apply(bundleDirectory: fixture.bundle)
        try await fixture.application().test(.router) { client in
            for revision in [first, fixture.engine.bundleInForce!.revision] {
                let response = try await client.execute(
                    uri: "/v1/decisions", method: .post,
                    headers: fixture.auth(.decide, [HTTPField.Name("Custody-Min-Revision")!: revision]),
                    body: ByteBuffer(text: Self.dropbox))
                #expect(response.status == .ok)
            }
        }
    }

    @Test("with decision auditing on, every answer carries a decision id that the audit log holds, batch items too")
    func audited() async throws {
        let fixture = try await ServiceFixture.make(auditing: true)
        try await fixture.application().test(.router) { client in
            let single = try object(
                try await client.execute(
                    uri: "/v1/decisions", method: .post, headers: fixture.auth(.decide),
                    body: ByteBuffer(text: Self.dropbox)))
            // A shared item's receive decision is audited like the others.
            let received = try object(
                try await client.execute(
                    uri: "/v1/decisions/receive?receiver=alice@contoso.com", method: .post,
                    headers: fixture.auth(.decide), body: ByteBuffer(text: "untagged data")))
            let batch = try await client.execute(
                uri: "/v1/decisions/batch", method: .post, headers: fixture.auth(.decide),
                body: ByteBuffer(
                    text: #"{"action":"print","account":"bob@contoso.com"}"# + "\n"
                        + #"{"action":"backup","account":"bob@contoso.com"}"# + "\n"
                        + #"{"action":"receive","receiver":"alice@contoso.com","dataOwner":"bob@contoso.com"}"#
                        + "\n" + #"{"action":"share","owner":"alice@contoso.com","targets":["com.a","com.b"]}"#))
            var ids = [try #require(single["decisionId"] as? String), try #require(received["decisionId"] as? String)]
            var reasons = [try #require(single["reason"] as? String), try #require(received["reason"] as? String)]
            for line in batch.body.text.split(separator: "\n") {
                let answer = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                ids.append(try #require(answer["decisionId"] as? String))
                reasons.append(try #require(answer["reason"] as? String))
            }
            let audited = try await fixture.engine.auditEntries().filter { $0.kind == .decision }
            #expect(audited.compactMap(\.decisionID) == ids)
            #expect(audited.map(\.action) == ["saveTo", "receive", "print", "backup", "receive", "share"])
            #expect(audited[1].account == "alice@contoso.com" && audited[1].allowed == (received["allowed"] as? Bool))
            // A share's entry holds each target's reason; its answer, a summary.
            let shareReason = reasons.removeLast()
            #expect(audited.dropLast().compactMap(\.detail) == reasons, "each entry holds the reason its answer gave")
            #expect(reasons.contains { $0.contains("; ") }, "a reason of two findings is among them")
            #expect(shareReason.hasSuffix("targets allowed"))
            #expect(
                audited.last?.detail?.hasPrefix("com.a: ") == true
                    && audited.last?.detail?.contains("; com.b: ") == true)
            #expect(Set(ids).count == 6)
        }
    }

    @Test("a receive decision whose audit entry cannot be stored is not given")
    func auditFailsOnReceive() async throws {
        let fixture = try await ServiceFixture.make(auditing: true)
        try await DatabaseQueue(path: fixture.directory.file("state.sqlite")).write { db in
            try db.execute(
                sql: """
                    CREATE TRIGGER full_disk BEFORE INSERT ON audit_log WHEN NEW.kind = 'decision'
                    BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END
                    """)
        }
        try await fixture.application().test(.router) { client in
            let response = try await client.execute(
                uri: "/v1/decisions/receive?receiver=alice@contoso.com", method: .post, headers: fixture.auth(.decide),
                body: ByteBuffer(text: "untagged data"))
            #expect(response.status == .serviceUnavailable)
            #expect(!response.body.text.contains("allowed"), "no decision is given: \(response.body.text)")
            #expect(response.body.text.contains("the audit log cannot be written"), "\(response.body.text)")
            // The state's file is the operator's business (logged), not the caller's.
            #expect(!response.body.text.contains(fixture.directory.path), "\(response.body.text)")
            await #expect(try fixture.engine.auditEntries().filter { $0.kind == .decision }.isEmpty)
        }
    }

    @Test(
        "a batch whose audit log fails gives one error line in place of the answers not stored, and stores nothing later"
    )
    func auditFailsInBatch() async throws {
        let fixture = try await ServiceFixture.make(auditing: true)
        // The log refuses every decision entry past the 50th: each commit of the batch fails the same way.
        try await DatabaseQueue(path: fixture.directory.file("state.sqlite")).write { db in
            try db.execute(
                sql: """
                    CREATE TRIGGER full_disk BEFORE INSERT ON audit_log
                    WHEN NEW.kind = 'decision' AND (SELECT count(*) FROM audit_log WHERE kind = 'decision') >= 50
                    BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END
                    """)
        }
        let body = String(repeating: #"{"action":"print","account":"bob@contoso.com"}"# + "\n", count: 400)
        try await fixture.application().test(.router) { client in
            let response = try await client.execute(
                uri: "/v1/decisions/batch", method: .post, headers: fixture.auth(.decide), body: ByteBuffer(text: body))
            let lines = response.body.text.split(separator: "\n").map(String.init)
            let errors = lines.filter { $0.hasPrefix(#"{"error":"#) }
            #expect(errors.count == 1, "\(errors)")
            #expect(errors.first?.contains("the audit log cannot be written") == true)
            #expect(errors.first?.contains(fixture.directory.path) == false, "the state's file is not the caller's")
            let given = lines.compactMap { line in
                line.firstRange(of: #""decisionId":""#).map { String(line[$0.upperBound...].prefix { $0 != "\"" }) }
            }
            let audited = try await fixture.engine.auditEntries().filter { $0.kind == .decision }.compactMap(
                \.decisionID)
            #expect(given == audited, "the answers given are the entries stored")
        }
    }

    /// A batch answered in several blocks (an audited block is up to 1 MiB of answers, about
    /// 88 of these shares to 40 apps), over a socket so that its body arrives in parts (of at
    /// most 64 KiB, about 73 queries). `limit`: the audit log refuses decision entries past this
    /// many (nil: never): the first block is stored and sent, a block in the middle fails.
    @Test(
        "an audited batch of many blocks sends exactly the answers whose entries are stored, in order",
        arguments: [nil, 200] as [Int?])
    func auditedBlocks(limit: Int?) async throws {
        let fixture = try await ServiceFixture.make(auditing: true)
        if let limit {
            try await DatabaseQueue(path: fixture.directory.file("state.sqlite")).write { db in
                try db.execute(
                    sql: """
                        CREATE TRIGGER full_disk BEFORE INSERT ON audit_log
                        WHEN NEW.kind = 'decision' AND (SELECT count(*) FROM audit_log WHERE kind = 'decision') >= \(limit)
                        BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END
                        """)
            }
        }
        let count = 400
        let targets = (0..<40).map { #""com.example.app\#($0)""# }.joined(separator: ",")
        let share = #"{"action":"share","owner":"alice@contoso.com","targets":["# + targets + "]}\n"
        let body = String(repeating: share, count: count)
        try await fixture.application().test(.live) { client in
            let response = try await client.execute(
                uri: "/v1/decisions/batch", method: .post, headers: fixture.auth(.decide), body: ByteBuffer(text: body))
            let lines = response.body.text.split(separator: "\n").map(String.init)
            let given = lines.compactMap { line in
                line.firstRange(of: #""decisionId":""#).map { String(line[$0.upperBound...].prefix { $0 != "\"" }) }
            }
            let audited = try await fixture.engine.auditEntries(limit: 2 * count).filter { $0.kind == .decision }
                .compactMap(
                    \.decisionID)
            #expect(given == audited, "the answers given are the entries stored, in order")
            let errors = lines.filter { $0.hasPrefix(#"{"error":"#) }
            if let limit {
                #expect(errors.count == 1 && lines.last == errors.first, "one error line, last: \(errors)")
                #expect(errors.first?.contains("the audit log cannot be written") == true)
                // Blocks before the failing one were stored and sent; none after it.
                #expect(given.count > 0 && given.count <= limit, "\(given.count) answers given")
                #expect(lines.count == given.count + 1)
            } else {
                #expect(errors.isEmpty, "\(errors.prefix(3))")
                #expect(given.count == count)
            }
        }
    }

    @Test("health, readiness, metrics and the OpenAPI document need no token")
    func operations() async throws {
        let fixture = try await ServiceFixture.make()
        try await fixture.application().test(.router) { client in
            _ = try await client.execute(
                uri: "/v1/decisions", method: .post, headers: fixture.auth(.decide),
                body: ByteBuffer(text: Self.dropbox))
            #expect(try object(try await client.execute(uri: "/healthz", method: .get))["status"] as? String == "alive")
            #expect(try object(try await client.execute(uri: "/readyz", method: .get))["status"] as? String == "ready")
            let metrics = try await client.execute(uri: "/metrics", method: .get).body.text
            #expect(metrics.contains(#"custody_decisions_total{action="saveTo",outcome="blocked"} 1"#))
            #expect(metrics.contains("custody_bundle_info{revision=\"\(fixture.engine.bundleInForce!.revision)\"} 1"))
            #expect(metrics.contains("custody_http_requests_total"))
            let document = try await client.execute(uri: "/openapi.json", method: .get)
            #expect(document.status == .ok)
            #expect(document.body.text.hasPrefix("{\n  \"openapi\": \"3.1.0\""))
        }
    }
}
