public import Foundation
import SwiftASN1
public import X509

/// A certificate stored as a secret, parsed and checked by swift-certificates.
public struct ManagedCertificate: Sendable, Hashable, CustomStringConvertible {
    /// The parsed certificate.
    public let certificate: Certificate
    /// Its DER encoding, as stored.
    public let derBytes: [UInt8]

    /// Parses a certificate in PEM (`-----BEGIN CERTIFICATE-----`) or DER form.
    public init(bytes: [UInt8]) throws(SecretParsingError) {
        let der: [UInt8]
        if let text = String(validating: bytes, as: UTF8.self), text.contains("-----BEGIN") {
            do {
                der = try PEMDocument(pemString: text).derBytes
            } catch {
                throw SecretParsingError("not a PEM certificate: \(error)")
            }
        } else {
            der = bytes
        }
        do {
            certificate = try Certificate(derEncoded: der)
        } catch {
            throw SecretParsingError("not an X.509 certificate: \(error)")
        }
        derBytes = der
    }

    public var subject: String { certificate.subject.description }
    public var issuer: String { certificate.issuer.description }
    public var notValidBefore: Date { certificate.notValidBefore }
    public var notValidAfter: Date { certificate.notValidAfter }
    /// The serial number in hex.
    public var serialNumber: String { certificate.serialNumber.description }

    /// Whether `date` is within the validity period.
    public func isValid(at date: Date) -> Bool { notValidBefore <= date && date <= notValidAfter }

    public var description: String {
        "certificate \(subject), issued by \(issuer), valid \(notValidBefore) to \(notValidAfter)"
    }

    public static func == (lhs: ManagedCertificate, rhs: ManagedCertificate) -> Bool { lhs.derBytes == rhs.derBytes }
    public func hash(into hasher: inout Hasher) { hasher.combine(derBytes) }
}

/// A certificate with its private key (P-256, P-384, P-521, Ed25519 or RSA).
public struct ManagedIdentity: Sendable, CustomStringConvertible {
    public let certificate: ManagedCertificate
    /// The private key; its public key is the certificate's.
    public let privateKey: Certificate.PrivateKey

    /// Parses a certificate (PEM or DER) and a PEM private key (PKCS#8, SEC1 or PKCS#1), and
    /// checks that the key is the certificate's.
    public init(certificate: [UInt8], privateKey: [UInt8]) throws(SecretParsingError) {
        let parsed = try ManagedCertificate(bytes: certificate)
        guard let text = String(validating: privateKey, as: UTF8.self), text.contains("-----BEGIN") else {
            throw SecretParsingError("the private key must be PEM (-----BEGIN PRIVATE KEY-----)")
        }
        let key: Certificate.PrivateKey
        do {
            key = try Certificate.PrivateKey(pemEncoded: text)
        } catch {
            // The error text of a key parser may quote the input: give only its kind.
            throw SecretParsingError(
                "not a supported PEM private key (P-256, P-384, P-521, Ed25519 or RSA; PKCS#8, SEC1 or PKCS#1)")
        }
        guard key.publicKey == parsed.certificate.publicKey else {
            throw SecretParsingError("the private key does not belong to the certificate \(parsed.subject)")
        }
        self.certificate = parsed
        self.privateKey = key
    }

    /// Never shows the key.
    public var description: String { "identity: \(certificate), private key \(privateKey.publicKey)" }
}

/// Why bytes given as a certificate or key are not one. Never quotes the bytes.
public struct SecretParsingError: Error, Sendable, Hashable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
