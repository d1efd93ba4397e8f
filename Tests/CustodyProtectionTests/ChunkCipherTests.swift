import Testing

@testable import CustodyProtection

/// The STREAM properties of a chunk, below the length rule that readers also apply.
@Suite("Chunk sealing")
struct ChunkCipherTests {
    private func cipher(_ algorithm: EnvelopeAlgorithm, owner: String = "oid:a") -> ChunkCipher {
        let owner = OwnerIdentifier(rawValue: owner)!
        let header: EnvelopeHeader
        if algorithm == .none {
            header = EnvelopeHeader(unencryptedFor: owner, chunkSizeExponent: 10)
        } else if algorithm.derivesKey {
            let salt = [UInt8](repeating: 1, count: 32)
            header = salt.withUnsafeBytes { salt in
                EnvelopeHeader(
                    derivingAlgorithm: algorithm, chunkSizeExponent: 10, owner: owner, keyVersion: 1, salt: salt
                ) { _, check in
                    check.initializeMemory(as: UInt8.self, repeating: 2)
                }
            }
        } else {
            let wrapNonce = [UInt8](repeating: 1, count: 24)
            let noncePrefix = [UInt8](repeating: 3, count: EnvelopeHeader.noncePrefixCount(for: algorithm))
            header = wrapNonce.withUnsafeBytes { wrapNonce in
                noncePrefix.withUnsafeBytes { noncePrefix in
                    EnvelopeHeader(
                        algorithm: algorithm, chunkSizeExponent: 10, owner: owner, keyVersion: 1, wrapNonce: wrapNonce,
                        noncePrefix: noncePrefix
                    ) { _, _, wrapped in wrapped.initializeMemory(as: UInt8.self, repeating: 2) }
                }
            }
        }
        let key = [UInt8](repeating: 9, count: 32)
        return ChunkCipher(
            header: header,
            cipher: algorithm == .none ? nil : key.withUnsafeBytes { AEADCipher(algorithm: algorithm, key: $0) })
    }

    private func seal(_ cipher: ChunkCipher, index: UInt64, last: Bool, _ plaintext: [UInt8]) -> [UInt8] {
        var sealed = [UInt8](repeating: 0, count: plaintext.count + 16)
        plaintext.withUnsafeBytes { plain in
            sealed.withUnsafeMutableBytes { cipher.seal(index: index, last: last, plain, into: $0) }
        }
        return sealed
    }

    private func opens(_ cipher: ChunkCipher, index: UInt64, last: Bool, _ sealed: [UInt8]) -> Bool {
        var plaintext = [UInt8](repeating: 0, count: sealed.count - 16)
        return sealed.withUnsafeBytes { sealed in
            plaintext.withUnsafeMutableBytes { cipher.open(index: index, last: last, sealed, into: $0) }
        }
    }

    @Test(
        "a chunk opens only at its own index, with its own last flag, under its own header",
        arguments: EnvelopeAlgorithm.allCases)
    func binding(algorithm: EnvelopeAlgorithm) {
        let cipher = cipher(algorithm)
        let plaintext = [UInt8](repeating: 0x5A, count: 100)
        let final = seal(cipher, index: 4, last: true, plaintext)
        let middle = seal(cipher, index: 4, last: false, plaintext)
        #expect(opens(cipher, index: 4, last: true, final))
        #expect(opens(cipher, index: 4, last: false, middle))
        #expect(!opens(cipher, index: 4, last: false, final), "a final chunk read as a middle one")
        #expect(!opens(cipher, index: 4, last: true, middle), "a middle chunk read as the final one")
        #expect(!opens(cipher, index: 5, last: true, final), "a chunk moved")
        #expect(
            !opens(self.cipher(algorithm, owner: "oid:b"), index: 4, last: true, final),
            "a chunk moved to another envelope")
    }
}
