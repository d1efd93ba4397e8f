@testable import Custody
import CustodyPolicy
import CustodyProtection
import CustodyStore
import CustodyTestSupport
import Foundation
import Testing

/// A signed bundle directory in an installation, and the keys to sign it with.
struct SignedBundles {
    let installation: Installation
    let first = BundleSigningKey()
    let second = BundleSigningKey()

    /// Writes `bundle` into `name` and signs it with `keys` (sequence given, or the time).
    @discardableResult
    func write(
        _ name: String, _ bundle: TestBundle = TestBundle(), signedBy keys: [BundleSigningKey], sequence: Int64,
        expires: Date? = nil
    ) throws -> String {
        let path = try installation.bundle(name, bundle)
        try sign(path, by: keys, sequence: sequence, expires: expires)
        return path
    }

    func sign(_ path: String, by keys: [BundleSigningKey], sequence: Int64, expires: Date? = nil) throws {
        try BundleSigningTests.resign(path, by: keys, sequence: sequence, expires: expires)
    }
}

@Suite("Signed bundles: trust, no replay, history, rollback and freeze", .timeLimit(.minutes(2)))
struct BundleSigningTests {
    /// One way a bundle can be altered after signing, and the reason it is refused for.
    struct Tamper: CustomStringConvertible, Sendable {
        let description: String
        let reason: String
        let apply: @Sendable (_ directory: String, _ keys: SignedKeys) throws -> Void
    }

    /// The keys a tamper case may use: trusted, revoked and unknown.
    struct SignedKeys: Sendable {
        let trusted: BundleSigningKey
        let revoked: BundleSigningKey
        let unknown: BundleSigningKey
    }

    static func rewriteSignature(_ directory: String, _ edit: (inout [String: Any]) -> Void) throws {
        let path = directory + "/" + BundleFiles.signatureName
        var object =
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as! [String: Any]
        edit(&object)
        try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: path))
    }

    static func resign(_ directory: String, by keys: [BundleSigningKey], sequence: Int64 = 10, expires: Date? = nil)
        throws
    {
        let files = try BundleFiles.read(directory: directory)
        var signature = BundleSignatureFile(
            manifest: BundleManifest(describing: files, sequence: sequence, created: Date(), expires: expires))
        for key in keys { signature.sign(with: key) }
        try signature.write(to: directory + "/" + BundleFiles.signatureName)
    }

    static let tampers: [Tamper] = [
        Tamper(description: "unsigned", reason: "unsigned") { directory, _ in
            try FileManager.default.removeItem(atPath: directory + "/" + BundleFiles.signatureName)
        },
        Tamper(description: "no signature in the file", reason: "unsigned") { directory, _ in
            try rewriteSignature(directory) { $0["signatures"] = [] }
        },
        Tamper(description: "signed by an untrusted key", reason: "unknown-key") { directory, keys in
            try resign(directory, by: [keys.unknown])
        },
        Tamper(description: "signed by a revoked key", reason: "revoked-key") { directory, keys in
            try resign(directory, by: [keys.revoked])
        },
        Tamper(description: "signed by a revoked key beside a trusted one", reason: "revoked-key") { directory, keys in
            try resign(directory, by: [keys.trusted, keys.revoked])
        },
        Tamper(description: "a file changed after signing", reason: "changed-file") { directory, _ in
            try Data("{}".utf8).write(to: URL(fileURLWithPath: directory + "/tenant.json"))
        },
        Tamper(description: "a file added after signing", reason: "extra-file") { directory, _ in
            try Data("[]".utf8).write(to: URL(fileURLWithPath: directory + "/added.json"))
        },
        Tamper(description: "a file removed after signing", reason: "missing-file") { directory, _ in
            try FileManager.default.removeItem(atPath: directory + "/policies.json")
        },
        Tamper(description: "a file renamed after signing", reason: "extra-file") { directory, _ in
            try FileManager.default.moveItem(atPath: directory + "/policies.json", toPath: directory + "/renamed.json")
        },
        Tamper(description: "the manifest edited (a higher sequence)", reason: "bad-signature") { directory, _ in
            try rewriteSignature(directory) { object in
                var manifest = object["manifest"] as! [String: Any]
                manifest["sequence"] = 99
                object["manifest"] = manifest
            }
        },
        Tamper(description: "a signature over another manifest", reason: "bad-signature") { directory, keys in
            let other = try JSONSerialization.jsonObject(
                with: Data(contentsOf: URL(fileURLWithPath: directory + "/" + BundleFiles.signatureName)))
            try resign(directory, by: [keys.trusted], sequence: 11)
            try rewriteSignature(directory) { object in
                object["signatures"] = (other as! [String: Any])["signatures"]
            }
        },
        Tamper(description: "an expired manifest", reason: "expired") { directory, keys in
            try resign(directory, by: [keys.trusted], expires: Date(timeIntervalSince1970: 1_000))
        },
        Tamper(
            description: "a sequence far above the time (it would lock out every later bundle)",
            reason: "sequence-too-high"
        ) {
            directory, keys in
            try resign(directory, by: [keys.trusted], sequence: Int64.max)
        },
        Tamper(description: "a truncated signature file", reason: "malformed-signature") { directory, _ in
            let path = directory + "/" + BundleFiles.signatureName
            let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
            try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: path))
        },
        Tamper(description: "a signature file with an unknown member", reason: "malformed-signature") { directory, _ in
            try rewriteSignature(directory) { $0["note"] = "hi" }
        },
        Tamper(description: "a signature that is not 64 bytes", reason: "malformed-signature") { directory, _ in
            try rewriteSignature(directory) { object in
                var signatures = object["signatures"] as! [[String: Any]]
                signatures[0]["signature"] = "AAAA"
                object["signatures"] = signatures
            }
        },
    ]

    /// A state that trusts `trusted`, knows `revoked` as revoked, with a signed bundle (sequence
    /// 5) in force; and a second signed bundle (sequence 10) to tamper with.
    func trustedInstallation() async throws -> (Installation, CustodyEngine, SignedKeys, String) {
        let installation = try Installation()
        let keys = SignedKeys(trusted: BundleSigningKey(), revoked: BundleSigningKey(), unknown: BundleSigningKey())
        let engine = try await installation.open()
        try await engine.trust(keys.trusted.publicKey, name: "ci")
        try await engine.trust(keys.revoked.publicKey, name: "old")
        try await engine.revokeTrust(keyID: keys.revoked.publicKey.keyID)
        let signer = SignedBundles(installation: installation)
        let first = try installation.bundle("first")
        try signer.sign(first, by: [keys.trusted], sequence: 5)
        try await engine.apply(bundleDirectory: first)
        let second = try installation.bundle("second", TestBundle(printBlockedA: true))
        try signer.sign(second, by: [keys.trusted], sequence: 10)
        return (installation, engine, keys, second)
    }

    @Test("every tamper case is refused with its reason, recorded, and the policy in force stays", arguments: tampers)
    func tampered(tamper: Tamper) async throws {
        let (installation, engine, keys, second) = try await trustedInstallation()
        defer { withExtendedLifetime(installation) {} }
        let before = try #require(engine.bundleInForce)
        try tamper.apply(second, keys)
        let error = try #require(await custodyError { try await engine.apply(bundleDirectory: second) })
        #expect(error.code == .untrusted, "\(error)")
        #expect(error.message.contains(tamper.reason), "\(error.message)")
        #expect(error.diagnostics.first?.code == .untrusted)
        #expect(engine.bundleInForce?.revision == before.revision, "the policy in force is unchanged")
        let history = try await engine.bundleHistory(limit: 1)
        #expect(history.first?.result == .rejected && history.first?.message?.contains(tamper.reason) == true)
        #expect(engine.lastBundleRejection?.message.contains(tamper.reason) == true)
        // The same bundle offered as files (PUT /v1/bundle, a Graph sync) is refused alike.
        if FileManager.default.fileExists(atPath: second) {
            let files = try BundleFiles.read(directory: second)
            let again = try #require(await custodyError { try await engine.apply(files: files, source: "request") })
            #expect(again.code == .untrusted && again.message.contains(tamper.reason))
        }
    }

    @Test(
        "the files in force under another signature file are checked, not taken as unchanged: garbage is refused, a newer valid signature is recorded"
    )
    func sameFilesOtherSignature() async throws {
        let installation = try Installation()
        let engine = try await installation.open()
        let signer = SignedBundles(installation: installation)
        // Applied unsigned before any key was trusted.
        let path = try installation.bundle("one")
        try await engine.apply(bundleDirectory: path)
        let revision = try #require(engine.bundleInForce?.revision)
        try await engine.trust(signer.first.publicKey, name: nil)
        #expect(
            try await engine.apply(bundleDirectory: path).unchanged, "the same files, no signature: in force already")
        try Data("garbage".utf8).write(to: URL(fileURLWithPath: path + "/" + BundleFiles.signatureName))
        let garbage = try #require(await custodyError { try await engine.apply(bundleDirectory: path) })
        #expect(garbage.code == .untrusted && garbage.message.contains("malformed-signature"), "\(garbage)")
        try signer.sign(path, by: [signer.first], sequence: 3)
        let signed = try await engine.apply(bundleDirectory: path)
        #expect(
            signed.bundle.revision == revision
                && engine.bundleInForce?.provenance.signers == [signer.first.publicKey.keyID])
        #expect(try await engine.apply(bundleDirectory: path).unchanged, "the same signature again: unchanged")
        try await engine.apply(
            bundleDirectory: try signer.write(
                "two", TestBundle(printBlockedA: true), signedBy: [signer.first], sequence: 4))
        try await engine.rollback(to: revision, reason: "back to the signed one", by: nil)
        #expect(engine.bundleInForce?.revision == revision)
    }

    /// A key trusted for an audience (or for any), a manifest signed for one (or for none), and
    /// whether the bundle goes in (the issue: "a bundle signed for staging is refused by
    /// production even with the same key").
    static let audiences: [(trusted: String?, signed: String?, accepted: Bool)] = [
        (nil, nil, true),
        (nil, "staging", true),  // a key trusted for any audience
        ("production", "production", true),
        ("production", "staging", false),
        ("production", nil, false),  // signed for no audience: not production's
        ("production", "Production", false),  // names are compared exactly
    ]

    @Test(
        "a key trusted for an audience counts only on a bundle signed for it; refused with wrong-audience, naming both",
        arguments: audiences.indices)
    func audience(index: Int) async throws {
        let (trusted, signed, accepted) = Self.audiences[index]
        let installation = try Installation()
        let engine = try await installation.open()
        let key = BundleSigningKey()
        try await engine.trust(key.publicKey, name: "ci", audience: trusted)
        let path = try installation.bundle("bundle")
        let files = try BundleFiles.read(directory: path)
        var signature = BundleSignatureFile(
            manifest: BundleManifest(describing: files, sequence: 7, created: Date(), expires: nil, audience: signed))
        signature.sign(with: key)
        try signature.write(to: path + "/" + BundleFiles.signatureName)
        // What was signed is what is read back: the audience is part of the signed manifest.
        let read = try BundleSignatureFile.parse(try BundleFiles.read(directory: path).signature ?? [])
        #expect(read.manifest.audience == signed)
        do {
            try await engine.apply(bundleDirectory: path)
            #expect(accepted, "\(String(describing: trusted)) / \(String(describing: signed)) went in")
        } catch {
            #expect(!accepted, "\(error)")
            #expect(error.code == .untrusted, "\(error)")
            let said = error.diagnostics.first?.message ?? error.message
            #expect(said.contains("wrong-audience"), "\(said)")
            #expect(said.contains("only for bundles signed for '\(trusted ?? "")'"), "\(said)")
            #expect(said.contains(signed.map { "for the audience '\($0)'" } ?? "for no audience"), "\(said)")
            #expect(engine.bundleInForce == nil)
        }
        // An audience is part of what is signed: changing it afterwards breaks the signature.
        if signed != nil {
            try Self.rewriteSignature(path) { object in
                var manifest = object["manifest"] as! [String: Any]
                manifest["audience"] = trusted ?? "elsewhere"
                object["manifest"] = manifest
            }
            await #expect(throws: CustodyError.self) { try await engine.apply(bundleDirectory: path + "/") }
        }
    }

    @Test("a bundle signed by a trusted key goes in, with its sequence, signers and who applied it")
    func accepted() async throws {
        let (installation, engine, keys, second) = try await trustedInstallation()
        defer { withExtendedLifetime(installation) {} }
        let result = try await engine.apply(
            bundleDirectory: second, provenance: BundleProvenance(appliedBy: "test"))
        #expect(!result.unchanged)
        let inForce = try #require(engine.bundleInForce)
        #expect(inForce.provenance.sequence == 10 && inForce.provenance.signers == [keys.trusted.publicKey.keyID])
        let record = try #require(try await engine.bundleHistory(limit: 1).first)
        #expect(record.provenance.appliedBy == "test" && record.provenance.signature != nil)
        #expect(try await engine.database.bundleSequence() == 10)
    }

    @Test(
        "an older sequence is refused as replayed, a lower one after a rollback too; the same bundle again is unchanged"
    )
    func replay() async throws {
        let (installation, engine, keys, second) = try await trustedInstallation()
        try await engine.apply(bundleDirectory: second)
        #expect(try await engine.apply(bundleDirectory: second).unchanged)
        let old = try installation.bundle("old", TestBundle(printBlockedB: true))
        try SignedBundles(installation: installation).sign(old, by: [keys.trusted], sequence: 7)
        let error = try #require(await custodyError { try await engine.apply(bundleDirectory: old) })
        #expect(error.code == .untrusted && error.diagnostics.first?.code == .replayed, "\(error)")
        // Roll back to the first (sequence 5): the highest stays 10, so 7 is still a replay and
        // the bundle rolled back from is not taken again as new.
        let first = try #require(try await engine.bundleHistory().last { $0.result == .applied })
        try await engine.rollback(to: String(first.contentHash.prefix(12)), reason: "incident 42", by: "test")
        #expect(engine.bundleInForce?.revision == first.contentHash)
        #expect(try await engine.database.bundleSequence() == 10)
        #expect(
            await custodyError { try await engine.apply(bundleDirectory: old) }?.diagnostics.first?.code == .replayed)
        let back = await custodyError { try await engine.apply(bundleDirectory: second) }
        #expect(back?.diagnostics.first?.code == .replayed, "the bundle rolled back from stays out")
        let record = try #require(try await engine.bundleHistory(limit: 10).first { $0.provenance.isRollback })
        #expect(record.provenance.reason == "incident 42" && record.provenance.appliedBy == "test")
    }

    @Test(
        "a sequence reset lets a lower sequence in, and is refused without a reason, below 0, or not below the mark",
        arguments: [
            (to: Int64(0), reason: "new signing pipeline", refusal: nil as String?),
            (to: 6, reason: "counter lost", refusal: nil),
            (to: 0, reason: "  ", refusal: "a sequence reset needs a reason"),
            (to: -1, reason: "why", refusal: "at least 0, not -1"),
            (to: 10, reason: "why", refusal: "10 is not below the highest sequence, 10"),
            (to: 11, reason: "why", refusal: "11 is not below the highest sequence, 10"),
        ])
    func sequenceReset(to: Int64, reason: String, refusal: String?) async throws {
        let (installation, engine, keys, second) = try await trustedInstallation()
        try await engine.apply(bundleDirectory: second)
        let old = try installation.bundle("old", TestBundle(printBlockedB: true))
        try SignedBundles(installation: installation).sign(old, by: [keys.trusted], sequence: 7)
        do {
            #expect(try await engine.resetBundleSequence(to: to, reason: reason, by: "test") == 10)
            #expect(refusal == nil, "reset, where it should have been refused: \(refusal ?? "")")
        } catch {
            #expect(error.code == .invalidArgument && error.message.contains(refusal ?? "(no refusal)"), "\(error)")
            #expect(try await engine.highestBundleSequence() == 10, "a refused reset changes nothing")
            return
        }
        #expect(try await engine.highestBundleSequence() == to)
        // The bundle in force stays; sequence 7 is above the new mark, so it is taken now.
        #expect(engine.bundleInForce?.provenance.sequence == 10)
        try await engine.apply(bundleDirectory: old)
        #expect(engine.bundleInForce?.provenance.sequence == 7)
        let audit = try await engine.database.auditEntries().last { $0.action == "reset-sequence" }
        #expect(audit?.detail == "from 10 to \(to): \(reason) (by test)")
    }

    /// Issue 47: a key's name is printed by `trust list`; one that could rewrite a terminal line
    /// or reorder it is refused, as account ids are.
    @Test(
        "a trusted key's name with a control or bidirectional-formatting character is refused; nothing is trusted",
        arguments: ["ci\u{1B}[2J", "ci\u{202E}kcab", "line\nbreak", "ci\u{85}", "ci\u{2028}"])
    func unprintableKeyName(name: String) async throws {
        let installation = try Installation()
        let engine = try await installation.open()
        let signer = SignedBundles(installation: installation)
        let error = try await #require(throws: CustodyError.self) {
            try await engine.trust(signer.first.publicKey, name: name)
        }
        #expect(error.code == .invalidArgument)
        #expect(!error.message.contains(name), "the name is escaped in the error")
        #expect(try await engine.trustedKeys().isEmpty)
        #expect(try await engine.trust(signer.first.publicKey, name: "ci (2026)").name == "ci (2026)")
    }

    @Test("two keys during a rotation: signed by both, or by the new one alone once trusted; the old one revoked")
    func rotation() async throws {
        let installation = try Installation()
        let engine = try await installation.open()
        let signer = SignedBundles(installation: installation)
        try await engine.trust(signer.first.publicKey, name: "old")
        // Signed by both while only the old key is trusted here: the new one is not known yet.
        let both = try signer.write("both", signedBy: [signer.first, signer.second], sequence: 1)
        try await engine.apply(bundleDirectory: both)
        #expect(engine.bundleInForce?.provenance.signers == [signer.first.publicKey.keyID])
        try await engine.trust(signer.second.publicKey, name: "new")
        try await engine.revokeTrust(keyID: signer.first.publicKey.keyID)
        let new = try signer.write("new", TestBundle(printBlockedA: true), signedBy: [signer.second], sequence: 2)
        try await engine.apply(bundleDirectory: new)
        #expect(engine.bundleInForce?.provenance.signers == [signer.second.publicKey.keyID])
        // A revoked key is never trusted again.
        await #expect(throws: CustodyError.self) { try await engine.trust(signer.first.publicKey, name: "again") }
        await #expect(throws: CustodyError.self) { try await engine.revokeTrust(keyID: "0000000000000000") }
    }

    @Test("a freeze refuses every new bundle with its reason until lifted; a rollback still goes through")
    func freeze() async throws {
        let installation = try Installation()
        let engine = try await installation.open()
        try await engine.apply(bundleDirectory: try installation.bundle("one"))
        let first = try #require(engine.bundleInForce?.revision)
        try await engine.apply(bundleDirectory: try installation.bundle("two", TestBundle(printBlockedA: true)))
        try await engine.freeze(reason: "incident 7", by: "test")
        let three = try installation.bundle("three", TestBundle(printBlockedB: true))
        let error = try #require(await custodyError { try await engine.apply(bundleDirectory: three) })
        #expect(error.diagnostics.first?.code == .frozen && error.message.contains("incident 7"))
        try await engine.rollback(to: first, reason: "back", by: nil)
        #expect(engine.bundleInForce?.revision == first)
        #expect(try await engine.unfreeze())
        #expect(try await !engine.unfreeze())
        try await engine.apply(bundleDirectory: three)
        #expect(
            await custodyError { try await engine.rollback(to: first, reason: " ", by: nil) }?.code == .invalidArgument)
        #expect(
            await custodyError { try await engine.rollback(to: "deadbeef", reason: "x", by: nil) }?.code == .notFound)
        #expect(
            await custodyError { try await engine.rollback(to: "xyz", reason: "x", by: nil) }?.code == .invalidArgument)
    }

    /// Issue 47: the edit a freeze refused is due once the freeze is lifted; the watched
    /// directory is offered again, unchanged.
    @Test("a watched edit refused while frozen goes in force when the freeze is lifted")
    func unfreezeOffersAgain() async throws {
        let installation = try Installation()
        let engine = try await installation.open()
        let watched = try installation.bundle("watched")
        try await engine.apply(bundleDirectory: watched)
        let before = try #require(engine.bundleInForce?.revision)
        let watch = engine.manager.watch(
            bundleDirectory: watched, interval: .milliseconds(10), debounce: .milliseconds(50))
        defer { watch.cancel() }
        try await engine.freeze(reason: "incident 8", by: "test")
        _ = try installation.bundle("watched", TestBundle(printBlockedA: true))
        #expect(
            await eventually(within: .seconds(30)) {
                engine.lastBundleRejection?.message.contains("incident 8") == true
            })
        try await Task.sleep(for: .milliseconds(300))
        #expect(engine.bundleInForce?.revision == before, "frozen: the edit waits")
        #expect(try await engine.unfreeze())
        #expect(
            await eventually(within: .seconds(30)) { engine.bundleInForce?.revision != before },
            "lifted: the edit it refused goes in")
    }

    @Test("a rollback to an unsigned revision is refused once the state trusts keys")
    func rollbackTrust() async throws {
        let installation = try Installation()
        let engine = try await installation.open()
        try await engine.apply(bundleDirectory: try installation.bundle("one"))
        let unsigned = try #require(engine.bundleInForce?.revision)
        let signer = SignedBundles(installation: installation)
        try await engine.trust(signer.first.publicKey, name: nil)
        try await engine.apply(
            bundleDirectory: try signer.write(
                "two", TestBundle(printBlockedA: true), signedBy: [signer.first], sequence: 3))
        let error = try #require(await custodyError { try await engine.rollback(to: unsigned, reason: "x", by: nil) })
        #expect(error.code == .untrusted && error.message.contains("unsigned"))
    }

    @Test("a signed revision applied before any key was trusted can be rolled back to once its key is")
    func rollbackSignedBeforeTrust() async throws {
        let installation = try Installation()
        let engine = try await installation.open()
        let signer = SignedBundles(installation: installation)
        try await engine.apply(bundleDirectory: try signer.write("one", signedBy: [signer.first], sequence: 1))
        let first = try #require(engine.bundleInForce?.revision)
        try await engine.trust(signer.first.publicKey, name: nil)
        try await engine.apply(
            bundleDirectory: try signer.write(
                "two", TestBundle(printBlockedA: true), signedBy: [signer.first], sequence: 2))
        try await engine.rollback(to: first, reason: "back", by: nil)
        #expect(engine.bundleInForce?.revision == first)
        #expect(engine.bundleInForce?.provenance.signers == [signer.first.publicKey.keyID])
    }

    @Test("the diff between two kept revisions names the settings that changed and the decisions that flip")
    func diff() async throws {
        let installation = try Installation()
        let engine = try await installation.open()
        try await engine.apply(bundleDirectory: try installation.bundle("one"))
        let first = try #require(engine.bundleInForce?.revision)
        try await engine.apply(bundleDirectory: try installation.bundle("two", TestBundle(printBlockedA: true)))
        let diff = try await engine.bundleDiff(from: first, to: nil)
        #expect(diff.to == engine.bundleInForce?.revision)
        #expect(diff.settings.contains { $0.setting == "printBlocked" }, "\(diff.settings)")
        #expect(!diff.decisions.isEmpty)
        #expect(try await engine.bundleDiff(from: first, to: first).decisions.isEmpty)
        #expect(try await engine.bundleDiff(from: nil, to: nil).from == first, "by default: the last change")
        #expect(try await engine.bundleDiff(from: nil, to: first).from == first, "nothing before the first")

        // Issue 47, item 25: a comparison is kept by (from, to), newest first, at most 8; the
        // same pair asked again is the kept answer, in either spelling of its revisions.
        let second = try #require(engine.bundleInForce?.revision)
        let pairs = engine.diffs.withLock { $0.map { [$0.key.from, $0.key.to] } }
        #expect(Set(pairs) == [[first, second], [first, first]], "each pair once: \(pairs)")
        let again = try await engine.bundleDiff(from: String(first.prefix(12)), to: second)
        #expect(again.settings == diff.settings && again.decisions.count == diff.decisions.count)
        #expect(engine.diffs.withLock { $0.first?.key } == DiffKey(from: first, to: second), "used last, kept first")
        #expect(engine.diffs.withLock { $0.count } == 2)
    }

    @Test("fleet status: a replica behind the newest revision is marked, counted, and announced once by one replica")
    func replicasBehind() async throws {
        let installation = try Installation()
        let engine = try await installation.open()
        try await engine.apply(bundleDirectory: try installation.bundle("one"))
        try await engine.recordReplicaStatus()
        let late = ReplicaRecord(
            id: "zz-other", host: "other", processID: 1, startedAt: Date(), version: "0.1.0", revision: "old",
            change: 0, lastContact: Date(), lastError: nil)
        try await engine.database.recordReplica(late)
        let gone = ReplicaRecord(
            id: "zz-gone", host: "gone", processID: 2, startedAt: .distantPast, version: "0.1.0", revision: "old",
            change: 0, lastContact: Date(timeIntervalSinceNow: -60), lastError: nil)
        try await engine.database.recordReplica(gone)
        let status = try await engine.fleetStatus()
        #expect(status.replicas.count == 3 && status.behind == 1, "the stale one is not counted")
        #expect(status.replicas.first { $0.record.id == "zz-gone" }?.isStale == true)
        let before = try await engine.events(after: 0).events.count
        var announced = try await engine.announceReplicasBehind(threshold: 1, announced: [])
        announced = try await engine.announceReplicasBehind(threshold: 1, announced: announced)
        let events = try await engine.events(after: 0).events.dropFirst(before)
        #expect(events.count == 1, "once per replica and revision")
        #expect(
            events.first.map {
                $0.name == "replicaBehind" && String(decoding: $0.body, as: UTF8.self).contains("zz-other")
            } == true)
        #expect(announced.count == 1)
        // A replica that is not the first by id among those current leaves it to that one.
        try await engine.database.recordReplica(
            ReplicaRecord(
                id: "0-first", host: "h", processID: 3, startedAt: Date(), version: "0.1.0", revision: "older",
                change: 0, lastContact: Date(), lastError: nil))
        #expect(try await engine.announceReplicasBehind(threshold: 1, announced: []).isEmpty)
    }

    /// Issue 47, item 9: `custody fleet status` failed for an hour after a replica crashed and
    /// was replaced. A replica silent for a status period past stale is gone: shown, never
    /// counted against the fleet.
    @Test(
        "fleet status: silent 16 s is stale and the fleet not whole; silent 21 s is gone and the fleet whole again",
        arguments: [
            (0.0, false, false, true), (16, true, false, false), (21, true, true, true), (3_000, true, true, true),
        ])
    func goneReplicas(silentFor: TimeInterval, stale: Bool, gone: Bool, whole: Bool) async throws {
        let installation = try Installation()
        let engine = try await installation.open()
        try await engine.apply(bundleDirectory: try installation.bundle("one"))
        let now = Date()
        try await engine.recordReplicaStatus(at: now)
        try await engine.database.recordReplica(
            ReplicaRecord(
                id: "crashed", host: "h", processID: 9, startedAt: now.addingTimeInterval(-3_600), version: "0.1.0",
                revision: engine.bundleInForce?.revision, change: 0, lastContact: now.addingTimeInterval(-silentFor),
                lastError: nil))
        let status = try await engine.fleetStatus(at: now)
        let replica = try #require(status.replicas.first { $0.record.id == "crashed" })
        #expect(replica.isStale == stale)
        #expect(replica.isGone == gone)
        #expect(status.isWhole == whole)
    }
}

@Suite("Bundle signatures: the format")
struct BundleSignatureFormatTests {
    struct Vector: Decodable {
        struct File: Decodable {
            let name: String
            let base64: String
        }

        let name: String
        let seed: String
        let publicKey: String
        let keyId: String
        let files: [File]
        let sequence: Int64
        let created: String
        let expires: String?
        let canonical: String
        let signature: String
    }

    static let vectors: [Vector] = {
        let path = TestPaths.package("fixtures/vectors/bundle-signatures.json")
        struct Document: Decodable { let vectors: [Vector] }
        let data = FileManager.default.contents(atPath: path) ?? Data()
        return (try? JSONDecoder().decode(Document.self, from: data).vectors) ?? []
    }()

    static func bytes(hex: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            bytes.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }

    @Test("the known-answer vectors (made outside Swift): canonical bytes, key id and signature agree")
    func knownAnswers() throws {
        try #require(Self.vectors.count == 2)
        for vector in Self.vectors {
            let key = try BundleSigningKey(seed: Self.bytes(hex: vector.seed))
            #expect(key.publicKey.text == vector.publicKey && key.publicKey.keyID == vector.keyId, "\(vector.name)")
            let files = try BundleFiles(
                entries: vector.files.map { .init(name: $0.name, bytes: Array(Data(base64Encoded: $0.base64)!)) })
            var manifest = BundleManifest(describing: files, sequence: vector.sequence, created: Date(), expires: nil)
            manifest.created = vector.created
            manifest.expires = vector.expires
            #expect(String(decoding: manifest.canonicalBytes, as: UTF8.self) == vector.canonical, "\(vector.name)")
            var signature = BundleSignatureFile(manifest: manifest)
            signature.sign(with: key)
            #expect(signature.signatures.first?.signature == vector.signature, "\(vector.name)")
            // And it verifies as a state would see it.
            let record = TrustedKeyRecord(keyID: vector.keyId, publicKey: vector.publicKey, name: nil, addedAt: Date())
            let verified = try BundleVerifier.verify(
                files.signed(signature.encoded), keys: [record], at: Date(timeIntervalSince1970: 1_796_000_000))
            #expect(verified.signers == [vector.keyId])
        }
    }

    @Test("a key file round-trips through PKCS#8 PEM, mode 600; one others may read is refused")
    func keyFile() throws {
        let directory = try TemporaryDirectory()
        let key = BundleSigningKey()
        let path = directory.file("signer.key")
        try key.write(to: path)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(try BundleSigningKey.load(file: path).publicKey == key.publicKey)
        #expect(
            String(decoding: FileManager.default.contents(atPath: path)!, as: UTF8.self).hasPrefix(
                "-----BEGIN PRIVATE KEY-----"))
        #expect(throws: BundleTrustError.self) { try key.write(to: path) }
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
        #expect(throws: BundleTrustError.self) { try BundleSigningKey.load(file: path) }
        // An X25519 key's 32 bytes are not an Ed25519 seed: its PKCS#8 algorithm says so.
        let x25519 = directory.file("x25519.key")
        let der =
            [0x30, 0x2E, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x6E, 0x04, 0x22, 0x04, 0x20]
            .map(UInt8.init) + [UInt8](repeating: 7, count: 32)
        let pem = "-----BEGIN PRIVATE KEY-----\n\(Data(der).base64EncodedString())\n-----END PRIVATE KEY-----\n"
        #expect(
            FileManager.default.createFile(
                atPath: x25519, contents: Data(pem.utf8), attributes: [.posixPermissions: 0o600]))
        #expect(throws: BundleTrustError.self) { try BundleSigningKey.load(file: x25519) }
        // The same bytes as an Ed25519 key (OID 1.3.101.112) load.
        let ed25519 = directory.file("ed25519.key")
        var edDER = der
        edDER[11] = 0x70
        #expect(
            FileManager.default.createFile(
                atPath: ed25519,
                contents: Data(
                    "-----BEGIN PRIVATE KEY-----\n\(Data(edDER).base64EncodedString())\n-----END PRIVATE KEY-----\n"
                        .utf8),
                attributes: [.posixPermissions: 0o600]))
        #expect(throws: Never.self) { try BundleSigningKey.load(file: ed25519) }
    }

    @Test("a directory entry whose name holds a control character is refused, as a request's is")
    func controlCharacterName() throws {
        let directory = try TemporaryDirectory()
        let bundle = directory.file("bundle")
        try FileManager.default.createDirectory(atPath: bundle, withIntermediateDirectories: true)
        try Data("{}".utf8).write(to: URL(fileURLWithPath: bundle + "/x\u{1B}[31mred.json"))
        #expect {
            _ = try BundleFiles.read(directory: bundle)
        } throws: { error in
            (error as? BundleError)?.diagnostics.contains { $0.message.contains("control or bidirectional") } == true
        }
    }

    @Test(
        "public keys: only ed25519:<base64 of 32 bytes>",
        arguments: [
            "", "ed25519:", "ed25519:AAAA", "rsa:AAAA", "ed25519:!!!",
            "ED25519:" + String(repeating: "A", count: 43) + "=",
            // 32 zero bytes: small order, no signature can hold for it.
            "ed25519:" + String(repeating: "A", count: 43) + "=",
        ])
    func badPublicKey(text: String) {
        #expect(throws: BundleTrustError.self) { try BundleSigningPublicKey(text: text) }
    }

    @Test(
        "signature files are read strictly: each malformed one names what is wrong",
        arguments: [
            ("[]", "is not an object"),
            (#"{"signatures": []}"#, "no \"manifest\""),
            (
                #"{"manifest": {"files": [], "sequence": 1, "created": "2026-01-01T00:00:00Z"}, "manifest": {}}"#,
                "twice"
            ),
            (#"{"manifest": {"files": [], "sequence": 1.5, "created": "2026-01-01T00:00:00Z"}}"#, "sequence"),
            (#"{"manifest": {"files": [], "sequence": 0, "created": "2026-01-01T00:00:00Z"}}"#, "sequence"),
            (#"{"manifest": {"files": [], "sequence": 1, "created": "yesterday"}}"#, "created"),
            (#"{"manifest": {"files": [], "sequence": 1, "created": "2026-01-01T02:00:00+02:00"}}"#, "created"),
            (
                #"{"manifest": {"files": [{"name": "b.json", "sha256": "\#(String(repeating: "0", count: 64))", "size": 1}, {"name": "a.json", "sha256": "\#(String(repeating: "0", count: 64))", "size": 1}], "sequence": 1, "created": "2026-01-01T00:00:00Z"}}"#,
                "order"
            ),
            (
                #"{"manifest": {"files": [], "sequence": 1, "created": "2026-01-01T00:00:00Z", "expires": null}}"#,
                "null"
            ),
            (
                #"{"manifest": {"files": [{"name": "a.json", "sha256": "00", "size": 1}], "sequence": 1, "created": "2026-01-01T00:00:00Z"}}"#,
                "sha256"
            ),
            (
                #"{"manifest": {"files": [{"name": "a.json", "sha256": "\#(String(repeating: "0", count: 64))", "size": -1}], "sequence": 1, "created": "2026-01-01T00:00:00Z"}}"#,
                "size"
            ),
            (
                #"{"manifest": {"files": [], "sequence": 1, "created": "2026-01-01T00:00:00Z"}, "signatures": [{"algorithm": "rsa", "keyId": "a", "signature": "AA=="}]}"#,
                "algorithm"
            ),
        ])
    func malformed(text: String, names: String) {
        #expect {
            _ = try BundleSignatureFile.parse(Array(text.utf8))
        } throws: { error in
            guard let error = error as? BundleTrustError else { return false }
            return error.reason == .malformedSignature && error.message.contains(names)
        }
    }
}
