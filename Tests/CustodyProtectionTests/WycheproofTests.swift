import CustodyPolicy
import CustodyTestSupport
import Foundation
import Testing

@testable import CustodyProtection

/// Every AES-256-GCM (96-bit nonce), ChaCha20-Poly1305 and XChaCha20-Poly1305 vector of
/// Wycheproof through the wrappers (libsodium, swift-crypto and OpenSSL): valid vectors seal to
/// the expected ciphertext and tag and open again, invalid ones are rejected.
@Suite("Wycheproof AEAD vectors", .needsSharedCorpora)
struct WycheproofTests {
    struct Vector: Sendable, CustomTestStringConvertible {
        let id: Int
        let key: [UInt8], nonce: [UInt8], aad: [UInt8], message: [UInt8], sealed: [UInt8]
        let valid: Bool
        let comment: String
        var testDescription: String { "tcId \(id) \(valid ? "valid" : "invalid") \(comment)" }
    }

    /// - Parameter nonceBits: keep only groups with this nonce size; nil keeps every group.
    static func vectors(file: String, nonceBits: Int?) throws -> [Vector] {
        let data = try #require(
            FileManager.default.contents(atPath: TestPaths.wycheproof + "/" + file), "missing \(file)")
        let root = try JSONDocument(parsing: [UInt8](data)).root
        var vectors: [Vector] = []
        for group in root["testGroups"]!.elements
        where group["keySize"]?.int == 256 && (nonceBits == nil || group["ivSize"]?.int == nonceBits)
            && group["tagSize"]?.int == 128
        {
            for test in group["tests"]!.elements {
                func bytes(_ key: String) -> [UInt8] { hexBytes(test[key]!.string!) }
                vectors.append(
                    Vector(
                        id: test["tcId"]!.int!, key: bytes("key"), nonce: bytes("iv"), aad: bytes("aad"),
                        message: bytes("msg"),
                        sealed: bytes("ct") + bytes("tag"), valid: test["result"]!.string! != "invalid",
                        comment: test["comment"]!.string!))
            }
        }
        return vectors
    }

    @Test("AES-256-GCM: every 256-bit-key, 96-bit-nonce vector, through libsodium, swift-crypto and OpenSSL")
    func aesGCM() throws {
        let vectors = try Self.vectors(file: "aes_gcm_test.json", nonceBits: 96)
        #expect(vectors.filter(\.valid).count == 39)
        #expect(vectors.filter { !$0.valid }.count == 27)
        for implementation in [AEADCipher.Implementation.automatic, .portable] {
            for vector in vectors { check(vector, .aes256GCM, implementation) }
        }
        for vector in vectors { check(vector, .aes256GCMDerived, .automatic) }
    }

    @Test("ChaCha20-Poly1305: every vector, wrong nonce sizes included, through OpenSSL")
    func chaCha() throws {
        let vectors = try Self.vectors(file: "chacha20_poly1305_test.json", nonceBits: nil)
        #expect(vectors.filter(\.valid).count == 256)
        #expect(vectors.filter { !$0.valid }.count == 69)
        for vector in vectors { check(vector, .chaCha20Poly1305Derived, .automatic) }
    }

    @Test("XChaCha20-Poly1305: every vector, wrong nonce sizes included")
    func xChaCha() throws {
        let vectors = try Self.vectors(file: "xchacha20_poly1305_test.json", nonceBits: nil)
        #expect(vectors.filter(\.valid).count == 246)
        #expect(vectors.filter { !$0.valid }.count == 69)
        for vector in vectors { check(vector, .xChaCha20Poly1305, .automatic) }
    }

    private func check(_ vector: Vector, _ algorithm: EnvelopeAlgorithm, _ implementation: AEADCipher.Implementation) {
        let cipher = vector.key.withUnsafeBytes {
            AEADCipher(algorithm: algorithm, key: $0, implementation: implementation)
        }
        var opened = [UInt8](repeating: 0xAA, count: max(vector.sealed.count - 16, 0))
        let ok = vector.sealed.withUnsafeBytes { sealed in
            vector.nonce.withUnsafeBytes { nonce in
                vector.aad.withUnsafeBytes { aad in
                    opened.withUnsafeMutableBytes { cipher.open(sealed, nonce: nonce, aad: aad, into: $0) }
                }
            }
        }
        if vector.valid {
            #expect(ok, "\(vector.testDescription) should open")
            #expect(opened == vector.message, "\(vector.testDescription)")
            var sealed = [UInt8](repeating: 0, count: vector.message.count + 16)
            vector.message.withUnsafeBytes { message in
                vector.nonce.withUnsafeBytes { nonce in
                    vector.aad.withUnsafeBytes { aad in
                        sealed.withUnsafeMutableBytes { cipher.seal(message, nonce: nonce, aad: aad, into: $0) }
                    }
                }
            }
            #expect(sealed == vector.sealed, "\(vector.testDescription) should seal to the expected bytes")
        } else {
            #expect(!ok, "\(vector.testDescription) must be rejected")
            #expect(opened.allSatisfy { $0 == 0 }, "\(vector.testDescription): no plaintext on failure")
        }
    }
}

func hexBytes(_ text: String) -> [UInt8] {
    var bytes: [UInt8] = []
    var iterator = text.utf8.makeIterator()
    while let high = iterator.next(), let low = iterator.next() {
        bytes.append(UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)!)
    }
    return bytes
}
