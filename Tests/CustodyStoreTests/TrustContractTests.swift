@testable import CustodyPostgres
@testable import CustodyStore
import CustodyTestSupport
import Foundation
import PostgresNIO
import Testing

private let t0 = Date(timeIntervalSince1970: 1_790_000_000)

/// Trusted keys, the freeze, the highest sequence and replicas, against every backend: the
/// state's own rules hold in the transaction that records a bundle.
@Suite("State store contract: trust, freeze, sequence, replicas")
struct TrustContractTests {
    func apply(
        _ state: any StateStore, _ hash: String, _ provenance: BundleProvenance, at offset: Double = 0
    ) async throws(StoreError) {
        try await state.recordBundle(
            contentHash: hash, source: hash, result: .applied, message: nil,
            files: [StoredFile(name: "tenant.json", bytes: Array(hash.utf8))], provenance: provenance,
            accounts: [], reach: [], events: [], retaining: 50, at: t0 + offset)
    }

    @Test(
        "keys: added once (a known key, even revoked, is a conflict), revoked once, listed, audited",
        arguments: Backend.reachable)
    func keys(backend: Backend) async throws {
        let state = try await backend.make(in: TemporaryDirectory())
        let key = TrustedKeyRecord(keyID: "k1", publicKey: "ed25519:AAAA", name: "ci", addedAt: t0)
        try await state.addTrustedKey(key)
        await #expect(throws: StoreError.self) { try await state.addTrustedKey(key) }
        #expect(try await state.revokeTrustedKey(id: "k1", at: t0 + 1))
        #expect(try await !state.revokeTrustedKey(id: "k1", at: t0 + 2))
        #expect(try await !state.revokeTrustedKey(id: "nope", at: t0 + 2))
        await #expect(throws: StoreError.self) { try await state.addTrustedKey(key) }
        let keys = try await state.trustedKeys()
        #expect(keys.count == 1 && keys[0].revokedAt == t0 + 1 && keys[0].name == "ci")
        #expect(try await state.auditEntries().filter { $0.kind == .trust }.map(\.action) == ["add", "revoke"])
    }

    @Test(
        "the state refuses, as it records: frozen, a replayed sequence, unsigned or unknown or revoked signers; a rollback passes the freeze and the sequence only",
        arguments: Backend.reachable)
    func rules(backend: Backend) async throws {
        let state = try await backend.make(in: TemporaryDirectory())
        try await apply(state, "a1", BundleProvenance(sequence: 5))
        #expect(try await state.bundleSequence() == 5)
        func refusal(_ hash: String, _ provenance: BundleProvenance) async -> String? {
            do {
                try await apply(state, hash, provenance, at: 1)
                return nil
            } catch {
                return error.code == .refused ? error.message : "\(error)"
            }
        }
        await #expect(refusal("a2", BundleProvenance(sequence: 5))?.hasPrefix("replayed") == true)
        await #expect(refusal("a2", BundleProvenance(sequence: 4))?.hasPrefix("replayed") == true)
        try await state.setBundleFreeze(BundleFreeze(reason: "incident", by: "ops", at: t0), by: "ops", at: t0)
        #expect(try await state.bundleFreeze()?.reason == "incident")
        await #expect(refusal("a2", BundleProvenance(sequence: 6))?.hasPrefix("frozen") == true)
        await #expect(refusal("a0", BundleProvenance(sequence: 1, isRollback: true)) == nil, "a rollback passes")
        #expect(try await state.bundleSequence() == 5, "a rollback does not lower the highest sequence")
        #expect(try await state.setBundleFreeze(nil, by: "ops", at: t0))
        #expect(try await !state.setBundleFreeze(nil, by: nil, at: t0))
        await #expect(refusal("a2", BundleProvenance(sequence: 6)) == nil)
        #expect(try await state.bundleSequence() == 6)

        try await state.addTrustedKey(TrustedKeyRecord(keyID: "k1", publicKey: "ed25519:AAAA", name: nil, addedAt: t0))
        try await state.addTrustedKey(TrustedKeyRecord(keyID: "k2", publicKey: "ed25519:BBBB", name: nil, addedAt: t0))
        try await state.revokeTrustedKey(id: "k2", at: t0)
        await #expect(refusal("a3", BundleProvenance(sequence: 7))?.hasPrefix("unsigned") == true)
        await #expect(refusal("a3", BundleProvenance(sequence: 7, signers: ["k9"]))?.hasPrefix("unknown key") == true)
        await #expect(
            refusal("a3", BundleProvenance(sequence: 7, signers: ["k1", "k2"]))?.hasPrefix("revoked key") == true)
        await #expect(
            refusal("a0", BundleProvenance(sequence: 1, isRollback: true))?.hasPrefix("unsigned") == true,
            "a rollback never passes trust")
        await #expect(refusal("a3", BundleProvenance(sequence: 7, signers: ["k1"])) == nil)
        // An in-memory bundle (no files) answers to none of these: it is one process's own.
        try await state.recordBundle(contentHash: "mem", source: "memory", result: .applied, at: t0 + 3)
        let record = try #require(try await state.bundleHistory(limit: 1).first)
        #expect(record.contentHash == "mem")
        let applied = try #require(try await state.bundleHistory().first { $0.contentHash == "a3" })
        #expect(applied.provenance.sequence == 7 && applied.provenance.signers == ["k1"])
    }

    @Test(
        "a sequence reset lowers the mark in one audited step: bundles above the new mark are taken, at or below it refused, and the history before the reset no longer counts",
        arguments: Backend.reachable)
    func sequenceReset(backend: Backend) async throws {
        let state = try await backend.make(in: TemporaryDirectory())
        try await apply(state, "r1", BundleProvenance(sequence: 7))
        #expect(try await state.resetBundleSequence(to: 3, reason: "new signer", by: "ops", at: t0 + 1) == 7)
        #expect(try await state.bundleSequence() == 3)
        await #expect(throws: StoreError.self, "at the new mark") {
            try await apply(state, "r2", BundleProvenance(sequence: 3), at: 2)
        }
        try await apply(state, "r2", BundleProvenance(sequence: 4), at: 2)
        #expect(try await state.bundleSequence() == 4)
        // To 0: no setting, and the history's 7 and 4 do not count.
        #expect(try await state.resetBundleSequence(to: 0, reason: "pipeline rebuilt", by: nil, at: t0 + 3) == 4)
        #expect(try await state.bundleSequence() == 0)
        try await apply(state, "r3", BundleProvenance(sequence: 1), at: 4)
        #expect(try await state.bundleSequence() == 1)
        await #expect(throws: StoreError.self, "replayed after the reset") {
            try await apply(state, "r4", BundleProvenance(sequence: 1), at: 5)
        }
        let resets = try await state.auditEntries().filter { $0.kind == .bundle && $0.action == "reset-sequence" }
        #expect(
            resets.map(\.detail) == ["from 7 to 3: new signer (by ops)", "from 4 to 0: pipeline rebuilt"],
            "\(resets)")
        // A reset does not change what is in force.
        #expect(try await state.lastAppliedBundle()?.contentHash == "r3")
    }

    /// Overwrites the text of the setting `name`, as damage to the state would.
    func damage(setting name: String, with text: String, in state: any StateStore) async throws {
        switch state {
        case let database as CustodyDatabase:
            try await database.write("damaging a setting") { db in try SettingRow.save(name, text, in: db) }
        case let postgres as PostgresState:
            _ = try await postgres.sessions.run("damaging a setting", transaction: true) { session in
                try await session.execute(
                    "INSERT INTO settings (name, value) VALUES (\(name), \(text)) ON CONFLICT (name) DO UPDATE SET value = excluded.value"
                )
            }
        default:
            Issue.record("no way to damage \(type(of: state))")
        }
    }

    @Test(
        "the highest sequence outlives the history rows that named it: a bundle whose row was pruned still counts",
        arguments: Backend.reachable)
    func sequenceOutlivesHistory(backend: Backend) async throws {
        let state = try await backend.make(in: TemporaryDirectory())
        try await apply(state, "h1", BundleProvenance(sequence: 5))
        // Kept: the newest applied row only, which names no sequence.
        try await state.recordBundle(
            contentHash: "h2", source: "h2", result: .applied, message: nil,
            files: [StoredFile(name: "tenant.json", bytes: Array("h2".utf8))], provenance: BundleProvenance(),
            accounts: [], reach: [], events: [], retaining: 1, at: t0 + 1)
        #expect(try await state.bundleHistory().map(\.contentHash) == ["h2"])
        #expect(try await state.bundleSequence() == 5)
        await #expect(throws: StoreError.self) { try await apply(state, "h3", BundleProvenance(sequence: 4), at: 2) }
    }

    @Test(
        "an audit switch the state holds damaged is a damaged state, never read as off", arguments: Backend.reachable)
    func unreadableAuditSwitch(backend: Backend) async throws {
        let state = try await backend.make(in: TemporaryDirectory())
        try await state.setDecisionAuditEnabled(true)
        #expect(try await state.isDecisionAuditEnabled())
        for (name, text) in [("audit_decisions", "garbage"), ("audit_decisions", ""), ("audit", "ON")] {
            try await damage(setting: name, with: text, in: state)
            await #expect(throws: StoreError.self, "\(name) = \"\(text)\"") { try await state.isDecisionAuditEnabled() }
            try await damage(setting: name, with: "on", in: state)
        }
        #expect(try await state.isDecisionAuditEnabled())
    }

    @Test(
        "a highest sequence the state cannot read is a damaged state: a bundle is refused, never admitted as if none had been applied",
        arguments: Backend.reachable)
    func unreadableSequence(backend: Backend) async throws {
        let state = try await backend.make(in: TemporaryDirectory())
        try await apply(state, "h1", BundleProvenance(sequence: 5))
        #expect(try await state.bundleSequence() == 5)
        for text in ["garbage", "", "1e300", "99999999999999999999999", "-1", "0"] {
            try await damage(setting: "bundle-sequence", with: text, in: state)
            do {
                try await apply(state, "h2", BundleProvenance(sequence: 1), at: 2)
                Issue.record("\(backend): a sequence of \"\(text)\" admitted a bundle")
            } catch {
                #expect(error.code == .corrupt, "\(text): \(error)")
            }
            await #expect(throws: StoreError.self) { try await state.bundleSequence() }
        }
        #expect(try await state.lastAppliedBundle()?.contentHash == "h1")
        // The setting lost: the history still names the highest sequence.
        try await damage(setting: "bundle-sequence", with: "1", in: state)
        #expect(try await state.bundleSequence() == 5)
        await #expect(throws: StoreError.self) { try await apply(state, "h3", BundleProvenance(sequence: 2), at: 3) }
    }

    @Test(
        "a freeze the state cannot read refuses every bundle as a damaged state, rollback included: it is never taken for no freeze",
        arguments: Backend.reachable)
    func unreadableFreeze(backend: Backend) async throws {
        let state = try await backend.make(in: TemporaryDirectory())
        try await apply(state, "h1", BundleProvenance())
        #expect(
            try await state.setBundleFreeze(BundleFreeze(reason: "incident", by: "ops", at: t0), by: "ops", at: t0 + 1))
        try await damage(setting: "bundle-freeze", with: "{not a freeze", in: state)
        for provenance in [BundleProvenance(), BundleProvenance(isRollback: true)] {
            await #expect(throws: StoreError.self) { try await apply(state, "h2", provenance, at: 2) }
            do {
                try await apply(state, "h2", provenance, at: 2)
            } catch {
                #expect(error.code == .corrupt, "\(error)")
            }
        }
        #expect(try await state.lastAppliedBundle()?.contentHash == "h1")
        await #expect(throws: StoreError.self) { try await state.bundleFreeze() }
    }

    @Test("replicas: recorded, updated in place, listed, forgotten when gone", arguments: Backend.reachable)
    func replicas(backend: Backend) async throws {
        let state = try await backend.make(in: TemporaryDirectory())
        func replica(_ id: String, contact: Date, revision: String? = "r1") -> ReplicaRecord {
            ReplicaRecord(
                id: id, host: "h", processID: 7, startedAt: t0, version: "0.1.0", revision: revision, change: 3,
                lastContact: contact, lastError: nil)
        }
        try await state.recordReplica(replica("a", contact: t0))
        try await state.recordReplica(replica("b", contact: t0))
        try await state.recordReplica(replica("a", contact: t0 + 10, revision: "r2"))
        let all = try await state.replicas()
        #expect(all.map(\.id) == ["a", "b"] && all[0].revision == "r2" && all[0].lastContact == t0 + 10)
        #expect(try await state.forgetReplicas(lastContactBefore: t0 + 5, id: nil) == 1)
        #expect(try await state.replicas().map(\.id) == ["a"])
        #expect(try await state.forgetReplicas(lastContactBefore: .distantPast, id: "a") == 1)
        #expect(try await state.replicas().isEmpty)
    }
}
