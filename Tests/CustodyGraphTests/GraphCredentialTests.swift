@testable import CustodyGraph
import CustodyTestSupport
import Foundation
import Testing

/// Certificate credentials named by files: every problem names the file, never a parser's
/// internals; and the token service's text never carries the client secret.
@Suite("Graph credentials")
struct GraphCredentialTests {
    enum Pair: String, CaseIterable, CustomTestStringConvertible {
        case notACertificate = "a certificate file that is not PEM"
        case notRSA = "a P-256 key (Entra ID signs with RSA)"
        case mismatched = "another certificate's key"
        case keyOpen = "a key file others may read"
        var testDescription: String { rawValue }
    }

    @Test("a certificate and key that do not hold are refused when read, naming the files", arguments: Pair.allCases)
    func refusedPair(pair: Pair) throws {
        let directory = try TemporaryDirectory()
        let made = try TestCertificates.make(
            .rsa, commonName: "custody-graph", notBefore: Date().addingTimeInterval(-60),
            notAfter: Date().addingTimeInterval(3_600))
        let other = try TestCertificates.make(
            pair == .notRSA ? .p256 : .rsa, commonName: "other", notBefore: Date().addingTimeInterval(-60),
            notAfter: Date().addingTimeInterval(3_600))
        try directory.write("cert.pem", pair == .notACertificate ? "not a certificate" : made.certificatePEM)
        try directory.write("key.pem", pair == .notRSA || pair == .mismatched ? other.keyPEM : made.keyPEM)
        chmod(directory.file("key.pem"), pair == .keyOpen ? 0o644 : 0o600)
        let expected: String
        switch pair {
        case .notACertificate: expected = "the certificate \(directory.file("cert.pem")) is not a PEM X.509 certificate"
        case .notRSA: expected = "the private key \(directory.file("key.pem")) is not a PEM RSA private key"
        case .mismatched:
            expected =
                "the private key \(directory.file("key.pem")) is not the private key of the certificate \(directory.file("cert.pem"))"
        case .keyOpen: expected = "the private key file \(directory.file("key.pem")) may be read by others"
        }
        do {
            _ = try GraphCredential.load(
                clientSecretFile: nil, certificate: directory.file("cert.pem"), privateKey: directory.file("key.pem"),
                environment: [:])
            Issue.record("accepted")
        } catch {
            #expect(error.code == .configuration)
            #expect(error.message.contains(expected), "\(error)")
            #expect(
                !error.message.contains("Error") && !error.message.contains(".swift"), "no parser internals: \(error)")
        }
    }

    static let echoes: [(label: String, text: String, repeats: Bool)] = [
        ("as sent", "invalid_client: bad client_secret=a+b/c=d&e f", true),
        ("form-encoded, upper case", "client_secret=a%2Bb%2Fc%3Dd%26e%20f", true),
        ("form-encoded, lower case", "client_secret=a%2bb%2fc%3dd%26e%20f", true),
        ("a plus for the space", "client_secret=a+b/c=d&e+f", true),
        ("in another case", "A+B/C=D&E F", true),
        // Found from outside: a description holding the secret in base64.
        ("in base64", "invalid_client: the credential YStiL2M9ZCZlIGY= is not valid", true),
        ("in base64url, unpadded", "invalid_client: YStiL2M9ZCZlIGY", true),
        ("Entra's own text", "AADSTS7000215: Invalid client secret provided.", false),
    ]

    @Test("a token service's text that repeats the client secret, in any encoding, is withheld", arguments: echoes)
    func secretEchoed(label: String, text: String, repeats: Bool) {
        #expect(GraphTokens.mayRepeat("a+b/c=d&e f", text) == repeats, "\(label)")
    }
}
