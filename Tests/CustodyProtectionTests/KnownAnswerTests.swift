import CustodyPolicy
import Crypto
import CustodyTestSupport
import Foundation
import Testing

@testable import CustodyProtection

/// Known-answer envelopes (fixtures/vectors/envelopes.json): fixed keys, nonces and plaintexts,
/// and the exact bytes this code produces for them, for other implementations of
/// docs/format.md to check themselves against.
///
/// To regenerate after a deliberate format change: `CUSTODY_WRITE_VECTORS=1 swift test --filter KnownAnswer`.
@Suite("Known-answer envelopes")
struct KnownAnswerTests {
    struct Vector {
        var description: String
        var algorithm: EnvelopeAlgorithm
        var chunkSizeExponent: UInt8
        var owner: String
        var keyVersion: UInt32
        var accountKey: [UInt8]
        var dataKey: [UInt8]
        var wrapNonce: [UInt8]
        var noncePrefix: [UInt8]
        /// The random salt of a derived-key envelope (`dataKey` is then what it derives).
        var salt: [UInt8] = []
        var plaintext: [UInt8]
        var envelope: [UInt8]
    }

    static let path = TestPaths.package("fixtures/vectors/envelopes.json")

    /// The vectors' inputs; `envelope` is filled in by `seal`.
    static func definitions() -> [Vector] {
        func bytes(_ count: Int, _ start: UInt8) -> [UInt8] {
            (0..<count).map { UInt8(truncatingIfNeeded: Int(start) + $0) }
        }
        let text = Array("The quick brown fox jumps over the lazy dog. ".utf8)
        func repeated(_ count: Int) -> [UInt8] { (0..<count).map { text[$0 % text.count] } }
        return [
            Vector(
                description: "AES-256-GCM, 1 KiB chunks, 3.5 chunks of plaintext", algorithm: .aes256GCM,
                chunkSizeExponent: 10,
                owner: "oid:a1f0c7d2-5b1e-4c3a-9e8f-000000000001", keyVersion: 1, accountKey: bytes(32, 0x00),
                dataKey: bytes(32, 0x40),
                wrapNonce: bytes(24, 0x80), noncePrefix: bytes(7, 0xA0), plaintext: repeated(3_584), envelope: []),
            Vector(
                description: "XChaCha20-Poly1305, 1 KiB chunks, 3.5 chunks of plaintext", algorithm: .xChaCha20Poly1305,
                chunkSizeExponent: 10,
                owner: "oid:a1f0c7d2-5b1e-4c3a-9e8f-000000000001", keyVersion: 2, accountKey: bytes(32, 0x00),
                dataKey: bytes(32, 0x40),
                wrapNonce: bytes(24, 0x80), noncePrefix: bytes(19, 0xA0), plaintext: repeated(3_584), envelope: []),
            Vector(
                description: "AES-256-GCM, exactly two full chunks, then an empty final chunk", algorithm: .aes256GCM,
                chunkSizeExponent: 10,
                owner: "upn:alice@contoso.com", keyVersion: 7, accountKey: bytes(32, 0x10), dataKey: bytes(32, 0x50),
                wrapNonce: bytes(24, 0x90), noncePrefix: bytes(7, 0xB0), plaintext: repeated(2_048), envelope: []),
            Vector(
                description: "XChaCha20-Poly1305, empty plaintext: one empty final chunk",
                algorithm: .xChaCha20Poly1305, chunkSizeExponent: 16,
                owner: "oid:a1f0c7d2-5b1e-4c3a-9e8f-000000000001", keyVersion: 1, accountKey: bytes(32, 0x20),
                dataKey: bytes(32, 0x60),
                wrapNonce: bytes(24, 0x70), noncePrefix: bytes(19, 0xC0), plaintext: [], envelope: []),
            Vector(
                description: "AES-256-GCM with a derived key, 1 KiB chunks, 3.5 chunks of plaintext",
                algorithm: .aes256GCMDerived,
                chunkSizeExponent: 10, owner: "oid:a1f0c7d2-5b1e-4c3a-9e8f-000000000001", keyVersion: 1,
                accountKey: bytes(32, 0x00),
                dataKey: [], wrapNonce: [], noncePrefix: [], salt: bytes(32, 0xD0), plaintext: repeated(3_584),
                envelope: []),
            Vector(
                description: "ChaCha20-Poly1305 with a derived key, 1 KiB chunks, 3.5 chunks of plaintext",
                algorithm: .chaCha20Poly1305Derived,
                chunkSizeExponent: 10, owner: "oid:a1f0c7d2-5b1e-4c3a-9e8f-000000000001", keyVersion: 3,
                accountKey: bytes(32, 0x00),
                dataKey: [], wrapNonce: [], noncePrefix: [], salt: bytes(32, 0xD0), plaintext: repeated(3_584),
                envelope: []),
            Vector(
                description: "AES-256-GCM with a derived key, exactly one full chunk, then an empty final chunk",
                algorithm: .aes256GCMDerived,
                chunkSizeExponent: 10, owner: "upn:alice@contoso.com", keyVersion: 2, accountKey: bytes(32, 0x10),
                dataKey: [], wrapNonce: [], noncePrefix: [], salt: bytes(32, 0xE0), plaintext: repeated(1_024),
                envelope: []),
            Vector(
                description: "ChaCha20-Poly1305 with a derived key, empty plaintext: one empty final chunk",
                algorithm: .chaCha20Poly1305Derived,
                chunkSizeExponent: 16, owner: "upn:bob@contoso.com", keyVersion: 1, accountKey: bytes(32, 0x20),
                dataKey: [], wrapNonce: [], noncePrefix: [], salt: bytes(32, 0xF0), plaintext: [], envelope: []),
            Vector(
                description: "not encrypted (tag only), 1 KiB chunks, 1.5 chunks of plaintext", algorithm: .none,
                chunkSizeExponent: 10,
                owner: "upn:bob@contoso.com", keyVersion: 0, accountKey: [], dataKey: [], wrapNonce: [],
                noncePrefix: [],
                plaintext: repeated(1_536), envelope: []),
        ]
    }

    static func accountKey(_ vector: Vector) -> AccountKey {
        AccountKey(
            owner: OwnerIdentifier(rawValue: vector.owner)!, version: vector.keyVersion,
            key: vector.accountKey.withUnsafeBytes { SecretBytes(copying: $0) })
    }

    static func seal(_ vector: Vector) -> [UInt8] {
        let cipher: ChunkCipher
        if vector.algorithm == .none {
            cipher = ChunkCipher(
                header: EnvelopeHeader(
                    unencryptedFor: OwnerIdentifier(rawValue: vector.owner)!,
                    chunkSizeExponent: vector.chunkSizeExponent),
                cipher: nil)
        } else if vector.algorithm.derivesKey {
            cipher = vector.salt.withUnsafeBytes { salt in
                DataProtector.sealer(
                    algorithm: vector.algorithm, chunkExponent: vector.chunkSizeExponent,
                    accountKey: accountKey(vector), random: salt)
            }
        } else {
            cipher = (vector.dataKey + vector.wrapNonce + vector.noncePrefix).withUnsafeBytes { random in
                DataProtector.sealer(
                    algorithm: vector.algorithm, chunkExponent: vector.chunkSizeExponent,
                    accountKey: accountKey(vector), random: random)
            }
        }
        return vector.plaintext.withUnsafeBytes { DataProtector.seal($0, with: cipher) }
    }

    /// The data key a derived-key vector's account key and envelope header give, computed from
    /// the format's words alone: BLAKE2b keyed with the account key, 48 bytes out, over the label
    /// and the header up to and including the salt; the data key is the first 32 bytes, the
    /// header's key check the last 16.
    static func derivedKey(accountKey: [UInt8], header: ArraySlice<UInt8>) -> (dataKey: [UInt8], keyCheck: [UInt8]) {
        var output = [UInt8](repeating: 0, count: 48)
        let label = Array("custody data key v1".utf8) + [0]
        accountKey.withUnsafeBytes { key in
            label.withUnsafeBytes { label in
                header.withUnsafeBytes { input in
                    output.withUnsafeMutableBytes { Checksum.keyed(key: key, label, input, into: $0) }
                }
            }
        }
        return (Array(output[..<32]), Array(output[32...]))
    }

    @Test("the fixture's envelopes are exactly what the code produces, and they open")
    func vectors() throws {
        var generated = Self.definitions()
        for index in generated.indices {
            generated[index].envelope = Self.seal(generated[index])
            if generated[index].algorithm.derivesKey {
                let header = try #require(
                    try generated[index].envelope.withUnsafeBytes { try EnvelopeHeader.decode($0) })
                generated[index].dataKey =
                    Self.derivedKey(accountKey: generated[index].accountKey, header: header.derivationInput).dataKey
            }
        }
        if ProcessInfo.processInfo.environment["CUSTODY_WRITE_VECTORS"] != nil {
            try Data(Self.encode(generated)).write(to: URL(fileURLWithPath: Self.path))
        }
        let stored = try Self.decode(
            try #require(FileManager.default.contents(atPath: Self.path), "missing \(Self.path)"))
        #expect(stored.count == generated.count)
        for (stored, generated) in zip(stored, generated) {
            #expect(stored.envelope == generated.envelope, "\(stored.description): the format changed")
            #expect(
                Self.seal(stored) == stored.envelope, "\(stored.description): regenerating from the fixture's inputs")
            // Opening with only the account key, as another implementation would.
            let header = try #require(try stored.envelope.withUnsafeBytes { try EnvelopeHeader.decode($0) })
            #expect(header.owner.rawValue == stored.owner)
            let opener: ChunkCipher
            if header.algorithm.derivesKey {
                #expect(Array(header.derivationInput.suffix(32)) == stored.salt)
                let (dataKey, keyCheck) = Self.derivedKey(accountKey: stored.accountKey, header: header.derivationInput)
                #expect(dataKey == stored.dataKey)
                #expect(Array(header.keyCheck) == keyCheck)
                #expect(
                    try Self.openIndependently(stored.envelope, header: header, dataKey: dataKey) == stored.plaintext,
                    "\(stored.description): swift-crypto")
                opener = ChunkCipher(
                    header: header, cipher: dataKey.withUnsafeBytes { AEADCipher(algorithm: header.algorithm, key: $0) }
                )
            } else if header.isEncrypted {
                var dataKey = [UInt8](repeating: 0, count: 32)
                let prefix = header.encodedPrefix
                let unwrapped = header.wrappedDataKey.withUnsafeBytes { wrapped in
                    header.wrapNonce.withUnsafeBytes { nonce in
                        prefix.withUnsafeBytes { aad in
                            dataKey.withUnsafeMutableBytes {
                                Self.accountKey(stored).cipher.open(wrapped, nonce: nonce, aad: aad, into: $0)
                            }
                        }
                    }
                }
                #expect(unwrapped)
                #expect(dataKey == stored.dataKey)
                opener = ChunkCipher(
                    header: header, cipher: dataKey.withUnsafeBytes { AEADCipher(algorithm: header.algorithm, key: $0) }
                )
            } else {
                opener = ChunkCipher(header: header, cipher: nil)
            }
            let body = Array(stored.envelope[header.count...])
            #expect(try body.withUnsafeBytes { try DataProtector.open($0, with: opener) } == stored.plaintext)
        }
    }

    /// The plaintext of a derived-key envelope opened with swift-crypto's AES-GCM or
    /// ChaCha20-Poly1305 (BoringSSL), chunk by chunk as docs/format.md describes: an
    /// implementation other than the one that sealed it.
    static func openIndependently(_ envelope: [UInt8], header: EnvelopeHeader, dataKey: [UInt8]) throws -> [UInt8] {
        let key = SymmetricKey(data: dataKey)
        let sealedSize = header.chunkSize + 16
        var body = envelope[header.count...]
        var plaintext: [UInt8] = []
        var index: UInt32 = 0
        while true {
            let last = body.count < sealedSize
            let sealed = body.prefix(last ? body.count : sealedSize)
            body = body.dropFirst(sealed.count)
            let nonce =
                [UInt8](repeating: 0, count: 7) + [
                    UInt8(index >> 24), UInt8(index >> 16 & 0xFF), UInt8(index >> 8 & 0xFF), UInt8(index & 0xFF),
                    last ? 1 : 0,
                ]
            let ciphertext = sealed.dropLast(16)
            let tag = sealed.suffix(16)
            if header.algorithm == .aes256GCMDerived {
                let box = try AES.GCM.SealedBox(nonce: AES.GCM.Nonce(data: nonce), ciphertext: ciphertext, tag: tag)
                plaintext += try AES.GCM.open(box, using: key, authenticating: header.bytes)
            } else {
                let box = try ChaChaPoly.SealedBox(
                    nonce: ChaChaPoly.Nonce(data: nonce), ciphertext: ciphertext, tag: tag)
                plaintext += try ChaChaPoly.open(box, using: key, authenticating: header.bytes)
            }
            if last { return plaintext }
            index += 1
        }
    }

    // MARK: Fixture file

    static func encode(_ vectors: [Vector]) -> [UInt8] {
        var writer = JSONWriter(pretty: true)
        writer.beginObject()
        writer.key("format")
        writer.value("Custody envelope, format version 1: see docs/format.md. All byte strings are lower-case hex.")
        writer.key("vectors")
        writer.beginArray()
        for vector in vectors {
            writer.beginObject()
            writer.key("description"); writer.value(vector.description)
            writer.key("algorithm"); writer.value(Int(vector.algorithm.rawValue))
            writer.key("chunkSizeExponent"); writer.value(Int(vector.chunkSizeExponent))
            writer.key("owner"); writer.value(vector.owner)
            writer.key("keyVersion"); writer.value(Int(vector.keyVersion))
            writer.key("accountKey"); writer.value(hexString(vector.accountKey))
            writer.key("dataKey"); writer.value(hexString(vector.dataKey))
            writer.key("wrapNonce"); writer.value(hexString(vector.wrapNonce))
            writer.key("noncePrefix"); writer.value(hexString(vector.noncePrefix))
            writer.key("salt"); writer.value(hexString(vector.salt))
            writer.key("plaintext"); writer.value(hexString(vector.plaintext))
            writer.key("envelope"); writer.value(hexString(vector.envelope))
            writer.endObject()
        }
        writer.endArray()
        writer.endObject()
        writer.newline()
        return writer.bytes
    }

    static func decode(_ data: Data) throws -> [Vector] {
        let root = try JSONDocument(parsing: [UInt8](data)).root
        return try root["vectors"]!.elements.map { entry in
            func text(_ key: String) throws -> String { try #require(entry[key]?.string, "\(key)") }
            func int(_ key: String) throws -> Int { try #require(entry[key]?.int, "\(key)") }
            return Vector(
                description: try text("description"),
                algorithm: try #require(EnvelopeAlgorithm(rawValue: UInt8(try int("algorithm")))),
                chunkSizeExponent: UInt8(try int("chunkSizeExponent")), owner: try text("owner"),
                keyVersion: UInt32(try int("keyVersion")),
                accountKey: hexBytes(try text("accountKey")), dataKey: hexBytes(try text("dataKey")),
                wrapNonce: hexBytes(try text("wrapNonce")),
                noncePrefix: hexBytes(try text("noncePrefix")), salt: hexBytes(entry["salt"]?.string ?? ""),
                plaintext: hexBytes(try text("plaintext")), envelope: hexBytes(try text("envelope")))
        }
    }
}

func hexString(_ bytes: [UInt8]) -> String {
    bytes.map { hex($0) }.joined()
}
