@testable import Custody
import CustodyPolicy
import CustodyStore
import CustodyTestSupport
import Foundation
import Testing

@Suite("Fleet mode: signed bundles, rollback and freeze across replicas", TestPostgres.enabled, .timeLimit(.minutes(3)))
struct FleetTrustTests {
    func sign(_ path: String, _ key: BundleSigningKey, sequence: Int64) throws {
        try BundleSigningTests.resign(path, by: [key], sequence: sequence)
    }

    @Test(
        "trust set on one replica binds the other; a rollback through A is in force on B; a freeze through B refuses on A; both see each other's status"
    )
    func acrossReplicas() async throws {
        let fleet = try await Fleet()
        let a = try await fleet.replica("a")
        let b = try await fleet.replica("b")
        let followers = [a, b].map { engine in Task { await engine.follow(pollInterval: .milliseconds(100)) } }
        defer { for follower in followers { follower.cancel() } }
        let key = BundleSigningKey()
        try await a.trust(key.publicKey, name: "ci")
        let one = try fleet.bundle(1)
        try sign(one, key, sequence: 1)
        let two = try fleet.bundle(2)
        try sign(two, key, sequence: 2)
        // B refuses an unsigned bundle: the trust A recorded is the state's.
        let unsigned = try fleet.bundle(3)
        #expect(await custodyError { try await b.apply(bundleDirectory: unsigned) }?.code == .untrusted)
        let first = try await b.apply(bundleDirectory: one).bundle.revision
        try await b.apply(bundleDirectory: two)
        #expect(await eventually { a.bundleInForce?.revision == b.bundleInForce?.revision })

        try await a.rollback(to: first, reason: "incident", by: "a")
        #expect(await eventually { b.bundleInForce?.revision == first }, "B follows the rollback")
        // The sequence stays 2 for every replica: B cannot take the bundle rolled back from.
        #expect(await custodyError { try await b.apply(bundleDirectory: two) }?.diagnostics.first?.code == .replayed)

        try await b.freeze(reason: "change window", by: "b")
        let four = try fleet.bundle(4)
        try sign(four, key, sequence: 4)
        let frozen = try #require(await custodyError { try await a.apply(bundleDirectory: four) })
        #expect(frozen.diagnostics.first?.code == .frozen && frozen.message.contains("change window"))
        try await a.unfreeze()
        try await a.apply(bundleDirectory: four)
        #expect(await eventually { b.bundleInForce?.revision == a.bundleInForce?.revision })

        try await a.recordReplicaStatus()
        try await b.recordReplicaStatus()
        let status = try await b.fleetStatus()
        #expect(status.replicas.count >= 1 && status.behind == 0)
    }
}
