@testable import Custody
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

/// What a bundle change leaves behind, read four ways: the live service, the state's record of
/// the bundle in force, the change log, and a service restarted on the same state. They must
/// always agree, whichever way the bundle came in and whether or not it loaded.
struct BundleAgreement: Equatable, CustomStringConvertible {
    var live: String?
    var state: String?
    var log: String?
    var restarted: String?

    var agrees: Bool { live == state && state == log && log == restarted }
    var description: String {
        "live \(short(live)), state \(short(state)), change log \(short(log)), restarted \(short(restarted))"
    }

    private func short(_ revision: String?) -> String { revision.map { String($0.prefix(8)) } ?? "none" }

    static func read(_ fixture: ServiceFixture) async throws -> BundleAgreement {
        let database = fixture.engine.database
        let newestBundleChange = try await database.changes(after: 0).last { $0.kind == .bundle }?.subjects.first
        let restarted = try await CustodyEngine.open(
            CustodyConfiguration(state: .path(fixture.directory.file("state.sqlite"))))
        return await BundleAgreement(
            live: fixture.engine.bundleInForce?.revision,
            state: try database.lastAppliedBundleFiles()?.record.contentHash, log: newestBundleChange,
            restarted: restarted.bundleInForce?.revision)
    }
}

@Suite("A bundle is in force everywhere or nowhere", .serialized, .timeLimit(.minutes(3)))
struct BundleAgreementTests {
    /// How a bundle comes in.
    enum Way: String, CaseIterable, CustomTestStringConvertible {
        case apply, put, watch
        var testDescription: String { rawValue }
    }

    /// What comes in.
    enum Offered: String, CaseIterable, CustomTestStringConvertible {
        /// The example bundle with print blocked for everyone: it loads and changes decisions.
        case edited
        /// No files at all (`{"files": {}}`, an emptied directory).
        case empty
        /// Only `tenant.json`, `{}`: a bundle that manages no one (issue 47).
        case tenantOnly
        /// The edited bundle with its tenant file named `Tenant.json`: it would know no account.
        case misnamedTenant
        /// Only an app configuration: no tenant, no protection policy.
        case configurationOnly
        /// A policy file that is not JSON.
        case broken
        var testDescription: String { rawValue }

        /// Whether it is put in force (without `allowEmpty`).
        var applies: Bool { self == .edited }

        func files(from bundle: String) throws -> [String: String] {
            var files: [String: String] = [:]
            for name in try FileManager.default.contentsOfDirectory(atPath: bundle) where name.hasSuffix(".json") {
                files[name] = try String(contentsOfFile: bundle + "/" + name, encoding: .utf8)
            }
            switch self {
            case .edited:
                files["all-staff.json"] = files["all-staff.json"]!.replacingOccurrences(
                    of: #""printBlocked": false"#, with: #""printBlocked": true"#)
                return files
            case .empty: return [:]
            case .tenantOnly: return ["tenant.json": "{}"]
            case .misnamedTenant:
                files["Tenant.json"] = files.removeValue(forKey: "tenant.json")
                return files
            case .configurationOnly: return ["app-configuration.json": files["app-configuration.json"]!]
            case .broken:
                files["all-staff.json"] = "{ not json"
                return files
            }
        }
    }

    static let cases: [(Way, Offered)] = Way.allCases.flatMap { way in Offered.allCases.map { (way, $0) } }

    @Test(
        "every way a bundle comes in, loaded or refused: the live service, the state, the change log and a restart agree",
        arguments: cases)
    func agreement(way: Way, offered: Offered) async throws {
        let fixture = try await ServiceFixture.make()
        let before = try await BundleAgreement.read(fixture)
        #expect(before.agrees && before.live != nil, "\(before)")
        let files = try offered.files(from: fixture.bundle)
        try await fixture.application().test(.router) { client in
            switch way {
            case .apply:
                let directory = try TemporaryDirectory()
                for (name, text) in files { _ = try directory.write(name, text) }
                if offered.applies {
                    try await fixture.engine.apply(bundleDirectory: directory.path)
                } else {
                    await #expect(throws: CustodyError.self) {
                        try await fixture.engine.apply(bundleDirectory: directory.path)
                    }
                }
            case .put:
                let response = try await client.execute(
                    uri: "/v1/bundle", method: .put, headers: fixture.auth(.admin),
                    body: ByteBuffer(bytes: try Self.body(files)))
                #expect(response.status == (offered.applies ? .ok : .unprocessableContent), "\(response.body.text)")
                if !offered.applies { #expect(try object(response)["code"] as? String == "invalid-bundle") }
            case .watch:
                for name in try FileManager.default.contentsOfDirectory(atPath: fixture.bundle) {
                    try FileManager.default.removeItem(atPath: fixture.directory.file("bundle/\(name)"))
                }
                for (name, text) in files { _ = try fixture.directory.write("bundle/\(name)", text) }
                let newest = try await fixture.engine.database.bundleHistory().first?.id
                if offered.applies {
                    #expect(await eventually { fixture.engine.bundleInForce?.revision != before.live })
                } else {
                    let refused = await eventually {
                        let first = try? await fixture.engine.database.bundleHistory().first
                        return first?.id != newest && first?.result == .rejected
                    }
                    #expect(refused, "the watcher refuses it")
                }
            }
        }
        let after = try await BundleAgreement.read(fixture)
        #expect(after.agrees, "\(after)")
        #expect((after.live != before.live) == offered.applies, "\(before) → \(after)")
        if !offered.applies {
            await #expect(
                try fixture.engine.database.bundleHistory().first?.result == .rejected, "the refusal is recorded")
        }
    }

    @Test(
        "a bundle that knows nothing is refused with a diagnostic saying how to apply it on purpose; with allowEmpty it is in force everywhere, and unmanages everyone"
    )
    func emptyOnPurpose() async throws {
        let fixture = try await ServiceFixture.make()
        try await fixture.application().test(.router) { client in
            let refused = try await client.execute(
                uri: "/v1/bundle", method: .put, headers: fixture.auth(.admin),
                body: ByteBuffer(string: #"{"files": {}}"#))
            #expect(refused.status == .unprocessableContent)
            let diagnostics = try #require(try object(refused)["diagnostics"] as? [String])
            #expect(
                diagnostics.contains { $0.contains("empty-bundle") || $0.contains("--allow-empty") }, "\(diagnostics)")

            let print = ByteBuffer(string: #"{"action":"print","account":"alice@contoso.com"}"#)
            let blocked = try await client.execute(
                uri: "/v1/decisions", method: .post, headers: fixture.auth(.decide), body: print)
            #expect(try object(blocked)["allowed"] as? Bool == false, "the policy in force stays")

            let allowed = try await client.execute(
                uri: "/v1/bundle", method: .put, headers: fixture.auth(.admin),
                body: ByteBuffer(string: #"{"files": {}, "allowEmpty": true}"#))
            #expect(allowed.status == .ok, "\(allowed.body.text)")
            #expect((try object(allowed)["events"] as? [String])?.last == "bundleApplied")
            let decided = try await client.execute(
                uri: "/v1/decisions", method: .post, headers: fixture.auth(.decide), body: print)
            #expect(try object(decided)["allowed"] as? Bool == true)

            let bad = try await client.execute(
                uri: "/v1/bundle", method: .put, headers: fixture.auth(.admin),
                body: ByteBuffer(string: #"{"files": {}, "allowEmpty": "yes"}"#))
            #expect(bad.status == .badRequest)
        }
        let after = try await BundleAgreement.read(fixture)
        #expect(after.agrees && after.live == BundleFilesRevision.empty, "\(after)")
        await #expect(try fixture.engine.auditEntries().contains { $0.kind == .bundle && $0.action == "reject" })
    }

    static func body(_ files: [String: String]) throws -> [UInt8] {
        Array(try JSONSerialization.data(withJSONObject: ["files": files], options: [.sortedKeys]))
    }
}

/// The revision of a bundle of no files: SHA-256 of nothing.
enum BundleFilesRevision {
    static let empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
}
