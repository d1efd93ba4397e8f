import Crypto
public import Foundation
import SwiftASN1
public import X509
import _CryptoExtras

/// Self-signed certificates made for a test, with their keys.
public enum TestCertificates {
    public enum Algorithm: String, CaseIterable, Sendable {
        case p256, p384, ed25519, rsa
    }

    public struct Made: Sendable {
        public let certificatePEM: String
        public let certificateDER: [UInt8]
        public let keyPEM: String
        public let certificate: Certificate
    }

    public static func make(_ algorithm: Algorithm, commonName: String, notBefore: Date, notAfter: Date) throws -> Made
    {
        let key: Certificate.PrivateKey
        let signature: Certificate.SignatureAlgorithm
        switch algorithm {
        case .p256: (key, signature) = (Certificate.PrivateKey(P256.Signing.PrivateKey()), .ecdsaWithSHA256)
        case .p384: (key, signature) = (Certificate.PrivateKey(P384.Signing.PrivateKey()), .ecdsaWithSHA384)
        case .ed25519: (key, signature) = (Certificate.PrivateKey(Curve25519.Signing.PrivateKey()), .ed25519)
        case .rsa:
            (key, signature) = (
                Certificate.PrivateKey(try _RSA.Signing.PrivateKey(keySize: .bits2048)), .sha256WithRSAEncryption
            )
        }
        let name = try DistinguishedName {
            CommonName(commonName)
            OrganizationName("Contoso")
        }
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: key.publicKey, notValidBefore: notBefore,
            notValidAfter: notAfter, issuer: name, subject: name, signatureAlgorithm: signature,
            extensions: Certificate.Extensions(),
            issuerPrivateKey: key)
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return Made(
            certificatePEM: try certificate.serializeAsPEM().pemString, certificateDER: serializer.serializedBytes,
            keyPEM: try key.serializeAsPEM().pemString, certificate: certificate)
    }
}
