import Custody
import CustodyPolicy
import CustodyStore
import CustodyTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import CustodyServer

/// `PUT /v1/bundle` with signatures, the history, rollback, freeze and fleet routes, and a
/// tampered watched directory seen in `/readyz`.
@Suite("The service: signed bundles, history, rollback, freeze, fleet", .timeLimit(.minutes(2)))
struct SignedBundleServiceTests {
    static let tenant =
        #"{"accounts": [{"oid": "a0000000-0000-4000-8000-000000000001", "upn": "a@contoso.com", "groups": []}]}"#
    static func policy(printBlocked: Bool) -> String {
        ##"{"value": [{"@odata.type": "#microsoft.graph.iosManagedAppProtection", "id": "T_1", "displayName": "P", "printBlocked": \##(printBlocked)}]}"##
    }

    /// The files of a bundle, signed by `key` with `sequence` (unsigned without a key).
    static func files(printBlocked: Bool, key: BundleSigningKey?, sequence: Int64) throws -> [String: String] {
        var files = ["tenant.json": tenant, "policies.json": policy(printBlocked: printBlocked)]
        if let key {
            let bundle = try BundleFiles(entries: files.map { .init(name: $0.key, bytes: Array($0.value.utf8)) })
            var signature = BundleSignatureFile(
                manifest: BundleManifest(describing: bundle, sequence: sequence, created: Date(), expires: nil))
            signature.sign(with: key)
            files[BundleFiles.signatureName] = String(decoding: signature.encoded, as: UTF8.self)
        }
        return files
    }

    static func body(_ object: [String: Any]) throws -> ByteBuffer {
        ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: object))
    }

    @Test(
        "PUT /v1/bundle once keys are trusted: unsigned 422, tampered 422, replayed 409, frozen 409; signed goes in with its signer"
    )
    func signedPut() async throws {
        let fixture = try await ServiceFixture.make { $0.bundleDirectory = nil }
        let key = BundleSigningKey()
        try await fixture.engine.trust(key.publicKey, name: "ci")
        try await fixture.application().test(.router) { client in
            func put(_ files: [String: String]) async throws -> TestResponse {
                try await client.execute(
                    uri: "/v1/bundle", method: .put, headers: fixture.auth(.admin),
                    body: try Self.body(["files": files]))
            }
            let before = fixture.engine.bundleInForce?.revision
            var huge = try Self.files(printBlocked: true, key: key, sequence: 1)
            huge[BundleFiles.signatureName] = String(repeating: " ", count: 1 << 21) + huge[BundleFiles.signatureName]!
            let tooLarge = try await put(huge)
            #expect(tooLarge.status == .badRequest, "a signature file over 1 MiB: \(tooLarge.body.text.prefix(200))")
            let unsigned = try await put(try Self.files(printBlocked: true, key: nil, sequence: 1))
            #expect(unsigned.status == .unprocessableContent)
            #expect(try object(unsigned)["code"] as? String == "bundle-untrusted")
            #expect(try (object(unsigned)["error"] as? String)?.contains("unsigned") == true)
            var tampered = try Self.files(printBlocked: true, key: key, sequence: 2)
            tampered["policies.json"] = Self.policy(printBlocked: false)
            let changed = try await put(tampered)
            #expect(
                try changed.status == .unprocessableContent
                    && (object(changed)["error"] as? String)?.contains("changed-file") == true)
            #expect(fixture.engine.bundleInForce?.revision == before)

            let signed = try await put(try Self.files(printBlocked: true, key: key, sequence: 5))
            #expect(signed.status == .ok, "\(signed.body.text)")
            let bundle = try object(
                try await client.execute(uri: "/v1/bundle", method: .get, headers: fixture.auth(.read)))
            #expect(bundle["sequence"] as? Int == 5 && bundle["signers"] as? [String] == [key.publicKey.keyID])
            #expect((bundle["appliedBy"] as? String)?.hasPrefix("token ") == true)

            let replayed = try await put(try Self.files(printBlocked: false, key: key, sequence: 4))
            #expect(try replayed.status == .conflict && (object(replayed)["code"] as? String) == "bundle-replayed")

            let frozen = try await client.execute(
                uri: "/v1/bundle/freeze", method: .post, headers: fixture.auth(.admin),
                body: try Self.body(["reason": "incident 9"]))
            #expect(frozen.status == .ok)
            let whileFrozen = try await put(try Self.files(printBlocked: false, key: key, sequence: 6))
            #expect(try whileFrozen.status == .conflict && (object(whileFrozen)["code"] as? String) == "bundle-frozen")
            #expect(try (object(whileFrozen)["error"] as? String)?.contains("incident 9") == true)
            let state = try object(
                try await client.execute(uri: "/v1/bundle/freeze", method: .get, headers: fixture.auth(.read)))
            #expect((state["freeze"] as? [String: Any])?["frozen"] as? Bool == true)
            let lifted = try await client.execute(
                uri: "/v1/bundle/freeze", method: .delete, headers: fixture.auth(.admin))
            #expect(lifted.status == .ok)
            #expect(try await put(try Self.files(printBlocked: false, key: key, sequence: 6)).status == .ok)
        }
    }

    @Test("history, a kept revision, the diff and a rollback over HTTP; read tokens cannot roll back")
    func historyAndRollback() async throws {
        let fixture = try await ServiceFixture.make()
        let first = try #require(fixture.engine.bundleInForce?.revision)
        try await fixture.application().test(.router) { client in
            let put = try await client.execute(
                uri: "/v1/bundle", method: .put, headers: fixture.auth(.admin),
                body: try Self.body(["files": try Self.files(printBlocked: true, key: nil, sequence: 0)]))
            #expect(put.status == .ok)
            let history = try object(
                try await client.execute(uri: "/v1/bundle/history?limit=5", method: .get, headers: fixture.auth(.read)))
            let entries = try #require(history["entries"] as? [[String: Any]])
            #expect(entries.count == 2 && entries.last?["revision"] as? String == first)
            let kept = try await client.execute(
                uri: "/v1/bundle/history/\(first.prefix(10))", method: .get, headers: fixture.auth(.read))
            #expect(kept.status == .ok, "\(kept.body.text)")
            let unknown = try await client.execute(
                uri: "/v1/bundle/history/00000000", method: .get, headers: fixture.auth(.read))
            #expect(unknown.status == .notFound)
            let diff = try await client.execute(
                uri: "/v1/bundle/diff?from=\(first)", method: .get, headers: fixture.auth(.read))
            #expect(diff.status == .ok, "\(diff.body.text)")
            #expect(try ((object(diff)["diff"] as? [String: Any])?["removed"] as? [String])?.isEmpty == false)
            let forbidden = try await client.execute(
                uri: "/v1/bundle/rollback", method: .post, headers: fixture.auth(.read),
                body: try Self.body(["revision": first, "reason": "x"]))
            #expect(forbidden.status == .forbidden)
            for bad in [
                ["revision": first], ["revision": first, "reason": "x", "more": "y"], ["revision": 7, "reason": "x"],
            ] {
                let refused = try await client.execute(
                    uri: "/v1/bundle/rollback", method: .post, headers: fixture.auth(.admin), body: try Self.body(bad))
                #expect(refused.status == .badRequest, "\(bad)")
            }
            let rolled = try await client.execute(
                uri: "/v1/bundle/rollback", method: .post, headers: fixture.auth(.admin),
                body: try Self.body(["revision": first, "reason": "incident 12"]))
            #expect(rolled.status == .ok, "\(rolled.body.text)")
            #expect(fixture.engine.bundleInForce?.revision == first)
            let newest = try #require(
                (try object(
                    try await client.execute(
                        uri: "/v1/bundle/history?limit=1", method: .get, headers: fixture.auth(.read)))[
                        "entries"] as? [[String: Any]])?.first)
            #expect(newest["rollback"] as? Bool == true && newest["reason"] as? String == "incident 12")
        }
    }

    @Test("a replica records its status: GET /v1/fleet lists it, current, with the revision in force")
    func fleet() async throws {
        let fixture = try await ServiceFixture.make()
        try await fixture.engine.recordReplicaStatus()
        try await fixture.application().test(.router) { client in
            let fleet = try object(
                try await client.execute(uri: "/v1/fleet", method: .get, headers: fixture.auth(.read)))
            let replicas = try #require(fleet["replicas"] as? [[String: Any]])
            #expect(replicas.count == 1 && fleet["behind"] as? Int == 0)
            #expect(replicas.first?["revision"] as? String == fixture.engine.bundleInForce?.revision)
            #expect(replicas.first?["stale"] as? Bool == false)
        }
    }

    @Test("a watched directory altered after signing is refused; /readyz warns of it and the policy in force stays")
    func watchedTamper() async throws {
        let fixture = try await ServiceFixture.make()
        let key = BundleSigningKey()
        try await fixture.engine.trust(key.publicKey, name: nil)
        let before = try #require(fixture.engine.bundleInForce?.revision)
        try Data("[]".utf8).write(to: URL(fileURLWithPath: fixture.bundle + "/added.json"))
        try await fixture.application().test(.live) { client in
            #expect(await eventually { fixture.engine.lastBundleRejection != nil })
            let ready = try object(try await client.execute(uri: "/readyz", method: .get))
            let warnings = try #require(ready["warnings"] as? [String])
            #expect(warnings.contains { $0.contains("unsigned") }, "\(warnings)")
            #expect(fixture.engine.bundleInForce?.revision == before)
        }
    }

    /// Issue 47, item 17: `/readyz` (no token), the history (read) and the console's overview
    /// (read) named the server's bundle directory in the refusal of a watched edit.
    @Test(
        "a refused watched edit is told without the bundle directory's path: /readyz, the history and the console name its files relative to it"
    )
    func refusalWithoutPaths() async throws {
        let fixture = try await ServiceFixture.make()
        try Data("{bad".utf8).write(to: URL(fileURLWithPath: fixture.bundle + "/all-staff.json"))
        try await fixture.application().test(.live) { client in
            #expect(await eventually { fixture.engine.lastBundleRejection != nil })
            #expect(
                fixture.engine.lastBundleRejection?.message.contains(fixture.bundle) == true, "the library says where")
            // `/readyz` has no token: no path at all.
            let ready = String(buffer: try await client.execute(uri: "/readyz", method: .get).body)
            #expect(ready.contains("all-staff.json:1:2"), "\(ready.prefix(600))")
            #expect(!ready.contains(fixture.directory.path), "\(ready.prefix(600))")
            // The history's and the overview's texts name files relative to the directory (where
            // the bundle came from is the entry's `source`, its provenance, as `custody bundle
            // history` shows it).
            let history = try object(
                try await client.execute(uri: "/v1/bundle/history", method: .get, headers: fixture.auth(.read)))
            let messages = (history["entries"] as? [[String: Any]] ?? []).compactMap { $0["message"] as? String }
            #expect(messages.contains { $0.contains("all-staff.json:1:2") }, "\(messages)")
            #expect(!messages.contains { $0.contains(fixture.directory.path) }, "\(messages)")
            let overview = String(
                buffer: try await client.execute(
                    uri: "/console/views/overview", method: .get, headers: fixture.auth(.read)
                ).body)
            let refusal = try #require(overview.range(of: "the last bundle offered was refused"), "\(overview)")
            let warning = overview[refusal.lowerBound...].prefix { $0 != "<" }
            #expect(warning.contains("all-staff.json:1:2"), "\(warning)")
            #expect(!warning.contains(fixture.directory.path), "\(warning)")
            // Found from outside: the bundleRejected event (the event stream, the overview's last
            // events), the diagnostics of GET /v1/bundle, and an unknown account's refusal.
            let rejected = try await #require(
                try fixture.engine.events(after: 0).events.last { $0.name == "bundleRejected" })
            let event = try #require(try JSONSerialization.jsonObject(with: Data(rejected.body)) as? [String: Any])
            let error = try #require(event["error"] as? String)
            #expect(error.contains("all-staff.json:1:2") && !error.contains(fixture.directory.path), "\(error)")
            #expect(event["source"] as? String == fixture.bundle, "where it came from is the event's source")
            let inForce = try object(
                try await client.execute(uri: "/v1/bundle", method: .get, headers: fixture.auth(.read)))
            let diagnostics = inForce["diagnostics"] as? [String] ?? []
            #expect(
                !diagnostics.isEmpty && !diagnostics.contains { $0.contains(fixture.directory.path) }, "\(diagnostics)")
            for (method, uri, scope) in [
                (HTTPRequest.Method.get, "/v1/accounts/nobody%40contoso.com/policy", TokenScope.read),
                (.post, "/v1/protect?owner=nobody@contoso.com", .protect),
                (.get, "/console/views/accounts/nobody%40contoso.com", .read),
            ] {
                let refused = try await client.execute(
                    uri: uri, method: method, headers: fixture.auth(scope), body: ByteBuffer(string: "data"))
                let text = String(buffer: refused.body)
                #expect(text.contains("not"), "\(uri): \(text.prefix(300))")
                #expect(!text.contains(fixture.directory.path), "\(uri) names no server path: \(text.prefix(400))")
            }
        }
    }

    /// The documented CI flow: edit, then sign. The edit alone is refused as unsigned; the
    /// signature written after it is a change of the directory, so the signed bundle is offered
    /// again and goes in force (issue 47).
    @Test("edit, then sign: the unsigned edit is refused, the signature re-offers it, and it goes in force")
    func editThenSign() async throws {
        let fixture = try await ServiceFixture.make()
        let key = BundleSigningKey()
        try await fixture.engine.trust(key.publicKey, name: nil)
        let before = try #require(fixture.engine.bundleInForce?.revision)
        try await fixture.application().test(.live) { client in
            for name in try FileManager.default.contentsOfDirectory(atPath: fixture.bundle) {
                try FileManager.default.removeItem(atPath: fixture.bundle + "/" + name)
            }
            let signed = try Self.files(printBlocked: true, key: key, sequence: 1_000)
            for (name, text) in signed where name != BundleFiles.signatureName {
                try Data(text.utf8).write(to: URL(fileURLWithPath: fixture.bundle + "/" + name))
            }
            #expect(await eventually { fixture.engine.lastBundleRejection?.message.contains("unsigned") == true })
            #expect(fixture.engine.bundleInForce?.revision == before)
            try Data(signed[BundleFiles.signatureName]!.utf8).write(
                to: URL(fileURLWithPath: fixture.bundle + "/" + BundleFiles.signatureName))
            #expect(await eventually { fixture.engine.bundleInForce?.revision != before }, "the signed edit is applied")
            #expect(fixture.engine.bundleInForce?.provenance.signers == [key.publicKey.keyID])
            let ready = try object(try await client.execute(uri: "/readyz", method: .get))
            let warnings = ready["warnings"] as? [String] ?? []
            #expect(!warnings.contains { $0.contains("unsigned") }, "\(warnings)")
        }
    }
}
