import CustodyPolicy
import Foundation
import Testing

@testable import CustodyProtection

@Suite("Buffers")
struct BufferProtectionTests {
    static let algorithms: [EnvelopeAlgorithm] = [
        .aes256GCMDerived, .chaCha20Poly1305Derived, .aes256GCM, .xChaCha20Poly1305,
    ]

    @Test(
        "round trips, encrypted with every algorithm and tag-only",
        arguments: [1, 15, 16, 17, 1_000, 65_536, (1 << 20) - 1, 1 << 20, (1 << 20) + 1, 3 << 20])
    func roundTrips(size: Int) async throws {
        let state = try await TestState()
        let data = pattern(size)
        for algorithm in Self.algorithms {
            let protector = state.protector(algorithm: algorithm)
            let envelope = try await protector.protect(data, owner: alice, encrypt: true)
            #expect(
                envelope.count == (try #require(try protector.protectionInfo(envelope))).headerLength + size + 16
                    * (size / (1 << 20) + 1))
            #expect(!envelope.contains(subsequence: Array(data.prefix(16))) || size < 16)
            #expect(try await protector.unprotect(envelope) == data)
        }
        let tagged = try await state.protector().protect(data, owner: alice, encrypt: false)
        #expect(try state.protector().protectionInfo(tagged)?.isEncrypted == false)
        #expect(try await state.protector().unprotect(tagged) == data)
    }

    /// What a one-chunk buffer goes through: `protect` and `unprotect` seal and open it in
    /// place, without the `ChunkCipher` every other envelope uses. Both ways must be one format.
    struct OneChunkCase: Sendable, CustomTestStringConvertible {
        let algorithm: EnvelopeAlgorithm
        let size: Int
        var testDescription: String { "\(algorithm), \(size) bytes" }
    }

    static let oneChunkCases: [OneChunkCase] = [EnvelopeAlgorithm.aes256GCMDerived, .chaCha20Poly1305Derived]
        .flatMap { algorithm in [1, 16, 1_024, (1 << 20) - 1].map { OneChunkCase(algorithm: algorithm, size: $0) } }

    @Test(
        "a one-chunk buffer sealed in place opens through the chunk cipher, and the other way round, with the same errors",
        arguments: oneChunkCases)
    func oneChunkIsTheChunkedFormat(_ testCase: OneChunkCase) async throws {
        let state = try await TestState()
        let protector = state.protector(algorithm: testCase.algorithm)
        let data = pattern(testCase.size)

        // In place, opened by the chunk cipher.
        let inPlace = try await protector.protect(data, owner: alice, encrypt: true)
        func openChunked(_ envelope: [UInt8]) async throws -> [UInt8] {
            let decoded = envelope.withUnsafeBytes { bytes in
                Result { () throws(ProtectionError) in try EnvelopeHeader.decode(bytes) }
            }
            guard let header = try decoded.get() else { throw ProtectionError(.malformedEnvelope, "not an envelope") }
            let cipher = try await protector.makeOpener(header)
            return try envelope.withUnsafeBytes { bytes in
                try DataProtector.open(UnsafeRawBufferPointer(rebasing: bytes[header.count...]), with: cipher)
            }
        }
        #expect(try await openChunked(inPlace) == data)

        // By the chunk cipher, opened in place.
        let sealer = try await protector.makeSealer(
            owner: alice, encrypt: true, chunkExponent: DataProtector.bufferChunkExponent)
        let chunked = data.withUnsafeBytes { DataProtector.seal($0, with: sealer) }
        #expect(try await protector.unprotect(chunked) == data)
        #expect(chunked.count == inPlace.count)
        let headerCount = sealer.headerBytes.count
        let prefixCount = headerCount - EnvelopeHeader.saltCount - EnvelopeHeader.keyCheckCount
        #expect(chunked.prefix(prefixCount) == inPlace.prefix(prefixCount), "same owner, algorithm and key version")

        // The same damage gets the same error both ways.
        var tag = inPlace
        tag[tag.count - 1] ^= 1
        var check = inPlace
        check[headerCount - 1] ^= 1
        let damaged: [(String, [UInt8])] = [
            ("tag", tag), ("key check", check), ("cut inside the tag", Array(inPlace.prefix(headerCount + 15))),
            ("no chunk", Array(inPlace.prefix(headerCount))),
        ]
        for (what, envelope) in damaged {
            let inPlaceError = await protectionError { _ = try await protector.unprotect(envelope) }
            let chunkedError = await protectionError { _ = try await openChunked(envelope) }
            #expect(inPlaceError != nil, "\(what)")
            #expect(inPlaceError?.code == chunkedError?.code, "\(what)")
            #expect(inPlaceError?.message == chunkedError?.message, "\(what)")
        }
    }

    @Test("buffers sealed and opened on many threads at once, with both algorithms on each, round trip")
    func oneChunkOnManyThreads() async throws {
        let state = try await TestState()
        let protectors = [EnvelopeAlgorithm.aes256GCMDerived, .chaCha20Poly1305Derived].map {
            state.protector(algorithm: $0)
        }
        let failures = Locked(0)
        await withTaskGroup { group in
            for thread in 0..<16 {
                group.addTask {
                    for round in 0..<200 {
                        let data = pattern(1 + (thread * 37 + round) % 3_000, seed: UInt8(truncatingIfNeeded: round))
                        for protector in protectors {
                            let opened = try? await protector.unprotect(
                                await protector.protect(data, owner: alice, encrypt: true))
                            if opened != data { failures.withLock { $0 += 1 } }
                        }
                    }
                }
            }
        }
        #expect(failures.withLock { $0 } == 0)
    }

    @Test("protectionInfo reads the owner and algorithm without a key")
    func info() async throws {
        let state = try await TestState()
        let envelope = try await state.protector(algorithm: .xChaCha20Poly1305).protect(
            pattern(100), owner: alice, encrypt: true)
        let info = try #require(try DataProtector.protectionInfo(envelope))
        #expect(info.owner.rawValue == "oid:0d000000-0000-4000-8000-000000000001")
        #expect(info.owner.account == AccountID(oid: "0d000000-0000-4000-8000-000000000001"))
        #expect(info.isEncrypted)
        #expect(info.algorithm == .xChaCha20Poly1305)
        #expect(info.keyVersion == 1)
        #expect(info.chunkSize == 1 << 20)
        let tagged = try await state.protector().protect(
            pattern(100), owner: AccountID(upn: "Carol@Contoso.com")!, encrypt: false)
        #expect(try DataProtector.protectionInfo(tagged)?.owner.rawValue == "upn:carol@contoso.com")
        #expect(try DataProtector.protectionInfo(tagged)?.keyVersion == nil)
    }

    @Test(
        "bytes that are not an envelope pass through unprotect; protectionInfo is nil for them",
        arguments: [[], [0x89], [0x89, 0x43, 0x53], Array("hello".utf8), pattern(300)])
    func notEnvelopes(bytes: [UInt8]) async throws {
        let state = try await TestState()
        #expect(try await state.protector().unprotect(bytes) == bytes)
        #expect(try DataProtector.protectionInfo(bytes) == nil)
    }

    @Test("an empty buffer cannot be protected")
    func empty() async throws {
        let state = try await TestState()
        #expect(
            await protectionError { _ = try await state.protector().protect([], owner: alice, encrypt: false) }?.code
                == .emptyData)
    }

    @Test(
        "every single-byte change of an encrypted or tagged buffer is rejected, with no plaintext",
        arguments: [true, false])
    func flips(encrypted: Bool) async throws {
        let state = try await TestState()
        let protector = state.protector()
        let data = pattern(200)
        let envelope = try await protector.protect(data, owner: alice, encrypt: encrypted)
        for index in envelope.indices {
            var damaged = envelope
            damaged[index] ^= 0x01
            var plaintext: [UInt8]?
            let error = await protectionError { plaintext = try await protector.unprotect(damaged) }
            if index < 4 {
                // A changed magic number means "not an envelope": the bytes come back untouched.
                #expect(plaintext == damaged, "byte \(index)")
            } else {
                #expect(plaintext == nil, "byte \(index) flipped was accepted")
                let expected: Set<ProtectionError.Code> = [
                    .decryptFailed, .malformedEnvelope, .unsupportedVersion, .keyUnavailable,
                ]
                #expect(error.map { expected.contains($0.code) } == true, "byte \(index): \(String(describing: error))")
                if let error, error.code == .keyUnavailable {
                    // The owner or version in the header changed: never read as a plain wipe.
                    #expect(error.message.contains("header was altered"), "byte \(index): \(error.message)")
                }
            }
        }
    }

    @Test("truncated, extended and cut envelopes are rejected")
    func lengths() async throws {
        let state = try await TestState()
        let protector = state.protector()
        let envelope = try await protector.protect(pattern(3 << 20), owner: alice, encrypt: true)
        let header = try #require(try protector.protectionInfo(envelope)).headerLength
        let sealedChunk = (1 << 20) + 16
        for cut in [
            header, header + 1, header + 16, header + sealedChunk, header + sealedChunk + 7, header + 3 * sealedChunk,
            envelope.count - 1,
        ] {
            #expect(
                await protectionError { _ = try await protector.unprotect(Array(envelope.prefix(cut))) }?.code
                    == .decryptFailed,
                "cut at \(cut)")
        }
        #expect(await protectionError { _ = try await protector.unprotect(envelope + [0]) }?.code == .decryptFailed)
        #expect(
            await protectionError { _ = try await protector.unprotect(Array(envelope.prefix(header - 1))) }?.code
                == .malformedEnvelope)
    }

    @Test("an envelope moved to another owner does not open")
    func ownerChange() async throws {
        let state = try await TestState()
        let protector = state.protector()
        _ = try await protector.protect(pattern(10), owner: bob, encrypt: true)  // bob has a key too
        let envelope = try await protector.protect(pattern(64), owner: alice, encrypt: true)
        // Same length owner: swap alice's OID for bob's in the header.
        let aliceOID = Array("oid:0d000000-0000-4000-8000-000000000001".utf8)
        let bobOID = Array("oid:0d000000-0000-4000-8000-000000000002".utf8)
        let start = try #require(envelope.firstRange(of: aliceOID))
        var moved = envelope
        moved.replaceSubrange(start, with: bobOID)
        let error = await protectionError { _ = try await protector.unprotect(moved) }
        #expect(error?.code == .decryptFailed)
        #expect(
            error?.message.contains(
                "key check does not match key version 1 of oid:0d000000-0000-4000-8000-000000000002") == true)
    }

    @Test("wiping the owner's key makes its envelopes unreadable; other owners are untouched")
    func wipe() async throws {
        let state = try await TestState()
        let protector = state.protector()
        let envelope = try await protector.protect(pattern(64), owner: alice, encrypt: true)
        let other = try await protector.protect(pattern(64), owner: bob, encrypt: true)
        #expect(try await state.keyRing.wipe(protector.ownerIdentifier(for: alice)) == 1)
        let error = await protectionError { _ = try await protector.unprotect(envelope) }
        #expect(error?.code == .keyUnavailable)
        #expect(try await protector.unprotect(other) == pattern(64))
        // A fresh ring on the same store agrees (nothing was only in memory).
        let reopened = DataProtector(
            keyRing: try await KeyRing(
                store: FileKeyStore(directory: state.directory + "/state"), masterKey: .keyFile(path: state.keyFile)))
        #expect(await protectionError { _ = try await reopened.unprotect(envelope) }?.code == .keyUnavailable)
    }

    @Test("rotation: new envelopes use the new version, old ones still open")
    func rotation() async throws {
        let state = try await TestState()
        let protector = state.protector()
        let old = try await protector.protect(pattern(64), owner: alice, encrypt: true)
        let owner = protector.ownerIdentifier(for: alice)
        #expect(try await state.keyRing.rotate(owner) == 2)
        let new = try await protector.protect(pattern(64), owner: alice, encrypt: true)
        #expect(try protector.protectionInfo(old)?.keyVersion == 1)
        #expect(try protector.protectionInfo(new)?.keyVersion == 2)
        #expect(try await protector.unprotect(old) == pattern(64))
        #expect(try await protector.unprotect(new) == pattern(64))
        #expect(try await state.keyRing.versions(of: owner) == [1, 2])
    }

    @Test("a wrong master key is refused before anything is decrypted")
    func wrongMasterKey() async throws {
        let state = try await TestState()
        _ = try await state.protector().protect(pattern(8), owner: alice, encrypt: true)
        let otherKey = state.path("other.key")
        #expect(
            FileManager.default.createFile(
                atPath: otherKey, contents: Data(pattern(32, seed: 99)), attributes: [.posixPermissions: 0o600]))
        let error = await protectionError {
            _ = try await KeyRing(
                store: FileKeyStore(directory: state.directory + "/state"), masterKey: .keyFile(path: otherKey))
        }
        #expect(error?.code == .masterKey)
        #expect(error?.message.contains("not the one this state's keys were wrapped with") == true)
    }

    @Test(
        "states opened at the same moment on one new key file all get its one whole key: none reads it empty or half written"
    )
    func keyFileCreatedOnce() async throws {
        // The moment between a file's creation and its key being in it is short: many rounds
        // of many openers, each round on a new key file.
        let openers = 16
        for round in 0..<40 {
            let state = try await TestState()
            let keyFile = state.path("shared-\(round).key")
            let failures = Locked<[String]>([])
            await withTaskGroup { group in
                for index in 0..<openers {
                    group.addTask {
                        do {
                            _ = try await KeyRing(
                                store: FileKeyStore(directory: state.directory + "/state\(index)"),
                                masterKey: .keyFile(path: keyFile))
                        } catch {
                            failures.withLock { $0.append("\(index): \(error)") }
                        }
                    }
                }
            }
            try #require(failures.withLock { $0 }.isEmpty, "round \(round): \(failures.withLock { $0 })")
            #expect(FileManager.default.contents(atPath: keyFile)?.count == 32)
            // Every state recorded the one key in the file: each opens with it again.
            for index in 0..<openers {
                await #expect(throws: Never.self) {
                    _ = try await KeyRing(
                        store: FileKeyStore(directory: state.directory + "/state\(index)"),
                        masterKey: .keyFile(path: keyFile))
                }
            }
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: state.directory).filter {
                $0.hasSuffix(".new")
            }
            #expect(leftovers.isEmpty, "no temporary key file is left: \(leftovers)")
        }
    }

    @Test("a mistyped key file path on a state with keys fails without creating a key file (issue 13)")
    func missingMasterKeyFile() async throws {
        let state = try await TestState()
        _ = try await state.protector().protect(pattern(8), owner: alice, encrypt: true)
        let typo = state.path("typo.key")
        let error = await protectionError {
            _ = try await KeyRing(
                store: FileKeyStore(directory: state.directory + "/state"), masterKey: .keyFile(path: typo))
        }
        #expect(error?.code == .masterKey)
        #expect(error?.message.contains("there is no master key file here") == true)
        #expect(!FileManager.default.fileExists(atPath: typo))
    }

    @Test("strings round trip through base64, and plain strings pass through")
    func strings() async throws {
        let state = try await TestState()
        let protector = state.protector()
        let protected = try await protector.protect(
            string: "Quarterly numbers: ünïcode ✓", owner: alice, encrypt: true)
        #expect(protected != "Quarterly numbers: ünïcode ✓")
        #expect(try await protector.unprotect(string: protected) == "Quarterly numbers: ünïcode ✓")
        #expect(try await protector.unprotect(string: "just text") == "just text")
        #expect(try await protector.unprotect(string: "aGVsbG8=") == "aGVsbG8=")
    }

    @Test("an unknown format version and unknown fields are typed errors")
    func versions() async throws {
        let state = try await TestState()
        var envelope = try await state.protector().protect(pattern(8), owner: alice, encrypt: true)
        envelope[4] = 2
        #expect(
            await protectionError { _ = try await state.protector().unprotect(envelope) }?.code == .unsupportedVersion)
        await #expect(protectionError { _ = try DataProtector.protectionInfo(envelope) }?.code == .unsupportedVersion)
        envelope[4] = 1
        envelope[5] = 9
        await #expect(
            protectionError { _ = try DataProtector.protectionInfo(envelope) }?.message.contains(
                "unknown algorithm 9 at byte 5") == true)
    }

    @Test(
        "an owner the format does not allow is a damaged header",
        arguments: [
            (offset: 10, byte: UInt8(ascii: "O")),  // "Oid:": one spelling per owner, lower-case
            (offset: 12, byte: UInt8(ascii: "x")),  // "oix:"
            (offset: 20, byte: 0xFF),  // not UTF-8
        ])
    func owners(offset: Int, byte: UInt8) async throws {
        let state = try await TestState()
        for encrypted in [false, true] {
            var envelope = try await state.protector().protect(pattern(8), owner: alice, encrypt: encrypted)
            envelope[offset] = byte
            let error = await protectionError { _ = try DataProtector.protectionInfo(envelope) }
            #expect(error?.code == .malformedEnvelope)
            #expect(error?.message.contains("owner at byte 10") == true)
            #expect(
                await protectionError { _ = try await state.protector().unprotect(envelope) }?.code
                    == .malformedEnvelope)
        }
    }

    @Test("AES-256-GCM envelopes open without libsodium's hardware path, and the other way round")
    func portableAES() async throws {
        let state = try await TestState()
        let hardware = state.protector(algorithm: .aes256GCM)
        let portable = state.protector(algorithm: .aes256GCM, implementation: .portable)
        let data = pattern(70_000)
        #expect(try await portable.unprotect(try hardware.protect(data, owner: alice, encrypt: true)) == data)
        #expect(try await hardware.unprotect(try portable.protect(data, owner: alice, encrypt: true)) == data)
    }
}

extension Array where Element == UInt8 {
    func contains(subsequence: [UInt8]) -> Bool {
        guard !subsequence.isEmpty, subsequence.count <= count else { return false }
        return (0...(count - subsequence.count)).contains {
            self[$0..<$0 + subsequence.count].elementsEqual(subsequence)
        }
    }
}
