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
/// Filled through a buffer, not `map`: this debug-built loop runs on a thread of Swift's
/// cooperative pool (one per core), and a slow one for megabytes held up every other test.
func pattern(_ count: Int, seed: UInt8 = 7) -> [UInt8] {
    [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
        for index in 0..<count {
            buffer[index] = UInt8(truncatingIfNeeded: index &* 31 &+ Int(seed) &+ index >> 8)
        }
        initialized = count
    }
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
