import CustodyPolicy
import CustodyTestSupport
import Foundation
import Testing

@testable import CustodyProtection

/// A fresh state directory and master key file for one test, removed when the test's scope ends.
final class TestState: @unchecked Sendable {
    private let temporary: TemporaryDirectory
    let directory: String
    let keyFile: String
    let keyRing: KeyRing

    init() async throws {
        temporary = try TemporaryDirectory()
        directory = temporary.path
        keyFile = directory + "/master.key"
        keyRing = try await KeyRing(
            store: FileKeyStore(directory: directory + "/state"), masterKey: .keyFile(path: keyFile))
    }

    func protector(algorithm: EnvelopeAlgorithm = .preferred, implementation: AEADCipher.Implementation = .automatic)
        -> DataProtector
    {
        DataProtector(keyRing: keyRing, algorithm: algorithm, implementation: implementation)
    }

    func path(_ name: String) -> String { directory + "/" + name }
}

let alice = AccountID(oid: "0d000000-0000-4000-8000-000000000001", upn: "alice@contoso.com")!
let bob = AccountID(oid: "0d000000-0000-4000-8000-000000000002", upn: "bob@contoso.com")!

/// Deterministic bytes of any length.
func pattern(_ count: Int, seed: UInt8 = 7) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed) &+ $0 >> 8) }
}

/// Runs `body` and returns the ProtectionError it threw, or nil. Any other error fails the test.
func protectionError(_ body: () async throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) async
    -> ProtectionError?
{
    do {
        try await body()
        return nil
    } catch let error as ProtectionError {
        return error
    } catch {
        Issue.record("expected a ProtectionError, got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}
