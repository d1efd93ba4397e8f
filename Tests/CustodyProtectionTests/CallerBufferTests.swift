import CustodyPolicy
import Foundation
import Testing

@testable import CustodyProtection

/// `protect(_:owner:encrypt:into:)` and `unprotect(_:into:)` write into memory the caller owns:
/// the same envelopes and plaintext as the array API, counted exactly beforehand, and never a
/// byte written outside what they report (or anything at all when they refuse).
@Suite("Buffers the caller provides")
struct CallerBufferTests {
    static let sentinel: UInt8 = 0xA5

    /// `count` bytes of the sentinel, with `slack` more after the `needed` bytes.
    static func output(_ needed: Int, slack: Int = 3) -> [UInt8] {
        [UInt8](repeating: sentinel, count: needed + slack)
    }

    @Test(
        "every size round-trips through either API, and the counts given beforehand are the counts written",
        arguments: [
            EnvelopeAlgorithm.aes256GCMDerived, .chaCha20Poly1305Derived,
        ],
        [1, 15, 16, 17, 1_023, 1_024, 65_536, (1 << 20) - 1, 1 << 20, (1 << 20) + 1])
    func roundTrips(algorithm: EnvelopeAlgorithm, size: Int) async throws {
        let state = try await TestState()
        let protector = state.protector(algorithm: algorithm)
        let data = pattern(size)
        try await protector.prepare(owner: alice)
        for encrypt in [true, false] {
            let needed = try protector.envelopeCount(of: size, owner: alice, encrypt: encrypt)
            var envelope = Self.output(needed)
            let written = try data.withUnsafeBytes { data in
                try envelope.withUnsafeMutableBytes {
                    try protector.protect(data, owner: alice, encrypt: encrypt, into: $0)
                }
            }
            #expect(written == needed)
            #expect(envelope[needed...].allSatisfy { $0 == Self.sentinel }, "nothing written past the envelope")
            let sealed = Array(envelope[..<written])
            #expect(try await protector.unprotect(sealed) == data, "the array API opens it")
            #expect(try await protector.protect(data, owner: alice, encrypt: encrypt).count == needed)
            #expect(try sealed.withUnsafeBytes { try DataProtector.unprotectedCount(of: $0) } == size)

            let fromArray = try await protector.protect(data, owner: alice, encrypt: encrypt)
            var plaintext = Self.output(size)
            let opened = try fromArray.withUnsafeBytes { sealed in
                try plaintext.withUnsafeMutableBytes { try protector.unprotect(sealed, into: $0) }
            }
            #expect(opened == size)
            #expect(Array(plaintext[..<opened]) == data, "opens what the array API sealed")
            #expect(plaintext[size...].allSatisfy { $0 == Self.sentinel })
        }
    }

    /// What happens to the key between `prepare` and the call into the caller's memory.
    enum Between: String, CaseIterable, Sendable {
        /// Nothing: the call follows `prepare`.
        case nothing
        /// `prepare` was never called.
        case neverPrepared = "never prepared"
        /// The ring's revalidation interval passed: the key was not confirmed against the store.
        case intervalPassed = "the revalidation interval passed"
        /// Another ring (another process) wiped the account, and the interval passed.
        case wipedElsewhere = "wiped elsewhere"
    }

    @Test(
        "into the caller's memory, a key is used only once prepared and while confirmed against the store; a key wiped elsewhere is never used again",
        arguments: Between.allCases)
    func preparedKeys(between: Between) async throws {
        let state = try await TestState()
        let interval = Duration.milliseconds(200)
        let ring = try await KeyRing(
            store: FileKeyStore(directory: state.directory + "/state"), masterKey: .keyFile(path: state.keyFile),
            revalidationInterval: interval)
        let protector = DataProtector(keyRing: ring)
        // Sealed by the other ring: this one holds no key until it prepares one.
        let sealed = try await state.protector().protect(pattern(100), owner: alice, encrypt: true)
        if between != .neverPrepared {
            try await protector.prepare(owner: alice)
            try await protector.prepare(envelope: sealed)
        }
        switch between {
        case .nothing, .neverPrepared: break
        case .intervalPassed: try await Task.sleep(for: interval * 3)
        case .wipedElsewhere:
            try await state.keyRing.wipe(OwnerIdentifier(alice))
            try await Task.sleep(for: interval * 3)
        }
        var envelope = Self.output(try protector.envelopeCount(of: 100, owner: alice, encrypt: true))
        let sealing = await protectionError {
            _ = try pattern(100).withUnsafeBytes { data in
                try envelope.withUnsafeMutableBytes {
                    try protector.protect(data, owner: alice, encrypt: true, into: $0)
                }
            }
        }
        var plaintext = Self.output(100)
        let opening = await protectionError {
            _ = try sealed.withUnsafeBytes { sealed in
                try plaintext.withUnsafeMutableBytes { try protector.unprotect(sealed, into: $0) }
            }
        }
        if between == .nothing {
            #expect(sealing == nil && opening == nil, "\(String(describing: sealing ?? opening))")
            #expect(Array(plaintext[..<100]) == pattern(100))
            return
        }
        for error in [sealing, opening] {
            #expect(error?.code == .keyUnavailable, "\(String(describing: error))")
            #expect(error?.message.contains("prepare it first") == true)
        }
        #expect(plaintext.allSatisfy { $0 == Self.sentinel }, "nothing opened")
        // Preparing again asks the store: a wiped key stays gone, any other comes back.
        let again = await protectionError { try await protector.prepare(envelope: sealed) }
        if between == .wipedElsewhere {
            #expect(again?.code == .keyUnavailable, "the store no longer has it")
        } else {
            #expect(again == nil)
        }
    }

    @Test(
        "a key prepared just before its comparison with the store falls due is still ready: prepared each time, no call into the caller's memory fails across many intervals",
        arguments: [Duration.milliseconds(50), .milliseconds(100)])
    func preparedAcrossIntervals(interval: Duration) async throws {
        let state = try await TestState()
        let ring = try await KeyRing(
            store: FileKeyStore(directory: state.directory + "/state"), masterKey: .keyFile(path: state.keyFile),
            revalidationInterval: interval)
        let protector = DataProtector(keyRing: ring)
        let data = pattern(1_024)
        var envelope = Self.output(try protector.envelopeCount(of: data.count, owner: alice, encrypt: true))
        var plaintext = Self.output(data.count)
        let end = ContinuousClock.now + interval * 12
        var (rounds, done) = (0, 0)
        while ContinuousClock.now < end {
            rounds += 1
            // What is promised: ready for half the interval after `prepare`. A call that a loaded
            // machine held up past that may be refused; one within it may not.
            var prepared = ContinuousClock.now
            do {
                try await protector.prepare(owner: alice)
                prepared = .now
                let written = try data.withUnsafeBytes { data in
                    try envelope.withUnsafeMutableBytes {
                        try protector.protect(data, owner: alice, encrypt: true, into: $0)
                    }
                }
                try await protector.prepare(envelope: envelope)
                prepared = .now
                let opened = try envelope.withUnsafeBytes { sealed in
                    try plaintext.withUnsafeMutableBytes {
                        try protector.unprotect(UnsafeRawBufferPointer(rebasing: sealed[..<written]), into: $0)
                    }
                }
                #expect(opened == data.count)
                done += 1
            } catch {
                let waited = prepared.duration(to: .now)
                #expect(waited >= interval / 2, "refused \(waited) after prepare: \(error)")
            }
        }
        #expect(done > 12 && done * 10 >= rounds * 9, "\(done) of \(rounds) rounds")
    }

    @Test(
        "the count is exact for identifiers whose lower case changes their length",
        arguments: [
            (nil, "ALICE@contoso.com"), (nil, "ÉMILE@contoso.com"), (nil, "İ@contoso.com"), (nil, "ǅ@contoso.com"),
            (nil, "ß@contoso.com"), ("0D000000-0000-4000-8000-00000000000A", "X@contoso.com"),
        ] as [(String?, String?)])
    func countsForIdentifiers(oid: String?, upn: String?) async throws {
        let account = try #require(AccountID(oid: oid, upn: upn))
        let state = try await TestState()
        let protector = state.protector()
        for encrypt in [true, false] {
            let data = pattern(100)
            let needed = try protector.envelopeCount(of: data.count, owner: account, encrypt: encrypt)
            #expect(needed == (try await protector.protect(data, owner: account, encrypt: encrypt)).count)
            var envelope = Self.output(needed, slack: 0)
            let written = try data.withUnsafeBytes { data in
                try envelope.withUnsafeMutableBytes {
                    try protector.protect(data, owner: account, encrypt: encrypt, into: $0)
                }
            }
            #expect(written == needed)
            #expect(try await protector.unprotect(envelope) == data)
        }
    }

    @Test(
        "an output one byte short is refused before anything is written or any key is made",
        arguments: [true, false], [1, 1_024, (1 << 20) + 1])
    func shortOutput(encrypt: Bool, size: Int) async throws {
        let state = try await TestState()
        let protector = state.protector()
        let data = pattern(size)
        let needed = try protector.envelopeCount(of: size, owner: alice, encrypt: encrypt)
        var short = [UInt8](repeating: Self.sentinel, count: needed - 1)
        let error = await protectionError {
            _ = try data.withUnsafeBytes { data in
                try short.withUnsafeMutableBytes {
                    try protector.protect(data, owner: alice, encrypt: encrypt, into: $0)
                }
            }
        }
        #expect(error?.code == .invalidArguments)
        #expect(error?.message.contains("holds \(needed - 1) bytes; the envelope takes \(needed)") == true)
        #expect(short.allSatisfy { $0 == Self.sentinel }, "nothing written")
        #expect(try await state.keyRing.versions(of: OwnerIdentifier(alice)).isEmpty, "no key made")

        let envelope = try await protector.protect(data, owner: alice, encrypt: encrypt)
        var plaintext = [UInt8](repeating: Self.sentinel, count: size - 1)
        let refused = await protectionError {
            _ = try envelope.withUnsafeBytes { sealed in
                try plaintext.withUnsafeMutableBytes { try protector.unprotect(sealed, into: $0) }
            }
        }
        #expect(refused?.code == .invalidArguments)
        #expect(plaintext.allSatisfy { $0 == Self.sentinel }, "nothing written")
    }

    @Test(
        "input and output that share a byte are refused, whichever way they overlap",
        arguments: [0, 1, 50, 99])
    func overlapping(offset: Int) async throws {
        let state = try await TestState()
        let protector = state.protector()
        var memory = pattern(100) + [UInt8](repeating: 0, count: 400)
        let before = memory
        let error = await protectionError {
            _ = try memory.withUnsafeMutableBytes { bytes in
                try protector.protect(
                    UnsafeRawBufferPointer(rebasing: bytes[..<100]), owner: alice, encrypt: true,
                    into: UnsafeMutableRawBufferPointer(rebasing: bytes[offset...]))
            }
        }
        #expect(error?.code == .invalidArguments)
        #expect(error?.message.contains("overlaps") == true)
        let unchanged = memory == before
        #expect(unchanged, "nothing written")

        let envelope = try await protector.protect(pattern(100), owner: alice, encrypt: true)
        var shared = envelope + [UInt8](repeating: 0, count: 200)
        let sharedBefore = shared
        let refused = await protectionError {
            _ = try shared.withUnsafeMutableBytes { bytes in
                try protector.unprotect(
                    UnsafeRawBufferPointer(rebasing: bytes[..<envelope.count]),
                    into: UnsafeMutableRawBufferPointer(rebasing: bytes[min(offset, envelope.count - 1)...]))
            }
        }
        #expect(refused?.code == .invalidArguments)
        let sharedUnchanged = shared == sharedBefore
        #expect(sharedUnchanged, "nothing written")
    }

    @Test(
        "an envelope that does not open leaves no plaintext in the output: a flipped bit in a chunk, a cut, the header",
        arguments: [1_024, (1 << 20) + 100], ["chunk", "last byte", "header", "cut"])
    func tampered(size: Int, damage: String) async throws {
        let state = try await TestState()
        let protector = state.protector()
        var envelope = try await protector.protect(pattern(size), owner: alice, encrypt: true)
        let headerCount = try #require(try protector.protectionInfo(envelope)).headerLength
        switch damage {
        case "chunk": envelope[headerCount + size / 2] ^= 0x01
        case "last byte": envelope[envelope.count - 1] ^= 0x80
        case "header": envelope[headerCount - 1] ^= 0x01
        default: envelope.removeLast(17)
        }
        var plaintext = Self.output(size)
        let error = await protectionError {
            _ = try envelope.withUnsafeBytes { sealed in
                try plaintext.withUnsafeMutableBytes { try protector.unprotect(sealed, into: $0) }
            }
        }
        #expect(error?.code == .decryptFailed, "\(String(describing: error))")
        #expect(
            plaintext.allSatisfy { $0 == 0 || $0 == Self.sentinel }, "only zeros where plaintext was written")
        #expect((try? await protector.unprotect(envelope)) == nil, "the array API refuses it too")
    }

    @Test(
        "a count that is negative, or whose envelope would overflow Int, is refused, never a trap",
        arguments: [-1, -(1 << 20), Int.min, Int.max, Int.max - 10_000_000, Int.max - 200])
    func impossibleCounts(count: Int) async throws {
        let state = try await TestState()
        let protector = state.protector()
        for encrypt in [true, false] {
            let error = await protectionError {
                _ = try protector.envelopeCount(of: count, owner: alice, encrypt: encrypt)
            }
            #expect(error?.code == .invalidArguments, "\(count)")
        }
    }

    @Test(
        "an exact multiple of the chunk size ends with an empty chunk: one tag more than its full chunks",
        arguments: [((1 << 20) - 1, 1), (1 << 20, 2), (2 << 20, 3)])
    func tagsAtChunkBoundaries(count: Int, tags: Int) async throws {
        let state = try await TestState()
        let protector = state.protector()
        let header = try #require(
            try await protector.protectionInfo(try protector.protect(pattern(1), owner: alice, encrypt: true))
        )
        .headerLength
        let envelope = try await protector.protect(pattern(count), owner: alice, encrypt: true)
        #expect(envelope.count == header + count + tags * 16)
        #expect(try protector.envelopeCount(of: count, owner: alice, encrypt: true) == envelope.count)
    }

    @Test("bytes that are not an envelope come back unchanged, as the array API gives them", arguments: [1, 3, 200])
    func notAnEnvelope(size: Int) async throws {
        let state = try await TestState()
        let protector = state.protector()
        let data = pattern(size, seed: 1)
        #expect(try data.withUnsafeBytes { try DataProtector.unprotectedCount(of: $0) } == size)
        var output = Self.output(size)
        let count = try data.withUnsafeBytes { data in
            try output.withUnsafeMutableBytes { try protector.unprotect(data, into: $0) }
        }
        #expect(count == size)
        #expect(Array(output[..<count]) == data)
        #expect(try await protector.unprotect(data) == data)
    }
}
