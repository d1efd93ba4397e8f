import Custody
import CustodyGraph
import CustodyPolicy
import CustodyStore
import CustodyTestSupport
import Foundation
import Testing

@Suite("Graph sync into a state that trusts signing keys", .timeLimit(.minutes(2)))
struct GraphSigningTests {
    @Test(
        "unsigned, the tenant's bundle is refused and the policy in force stays; with --signing-key it goes in, signed")
    func signedSync() async throws {
        let server = GraphServer(tenant: try standardTenant())
        try await server.serving { base in
            let directory = try TemporaryDirectory()
            let engine = try await CustodyEngine.open(
                CustodyConfiguration(
                    state: .path(directory.file("state.sqlite")), context: EvaluationContext(platform: .ios)))
            let key = BundleSigningKey()
            try await engine.trust(key.publicKey, name: "graph")
            let unsigned = try GraphSync(settings: try settings(base))
            do {
                _ = try await unsigned.sync(into: engine)
                Issue.record("an unsigned bundle went in")
            } catch let error as CustodyError {
                #expect(error.code == .untrusted && error.message.contains("unsigned"), "\(error)")
            }
            await unsigned.shutdown()
            #expect(engine.bundleInForce == nil)

            let signed = try GraphSync(settings: try settings(base), signingKey: key)
            do {
                let (report, applied) = try await signed.sync(into: engine)
                #expect(applied.bundle.revision == report.revision)
                #expect(engine.bundleInForce?.provenance.signers == [key.publicKey.keyID])
                #expect(engine.bundleInForce?.provenance.appliedBy == "graph-sync")
                let again = try await signed.sync(into: engine)
                #expect(again.applied.unchanged, "an unchanged tenant keeps the signature it went in with")
                // To a directory: the signature file is written beside the files, and verifies.
                _ = try await signed.sync(to: directory.file("out"))
                let files = try BundleFiles.read(directory: directory.file("out"))
                #expect(files.signature != nil)
                await #expect(try engine.verifySignature(of: files).signers == [key.publicKey.keyID])
            } catch {
                await signed.shutdown()
                throw error
            }
            await signed.shutdown()
        }
    }
}
