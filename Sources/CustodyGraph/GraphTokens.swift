import Crypto
import Foundation
import JWTKit
import NIOHTTP1
import SwiftASN1
import X509

/// Access tokens for Graph by OAuth 2.0 client credentials at the settings' token endpoint,
/// kept until a minute before they expire.
actor GraphTokens {
    private let settings: GraphSettings
    private let transport: GraphTransport
    private var current: (token: String, expires: ContinuousClock.Instant)?
    /// Signs client assertions, for a certificate credential.
    private let assertions: ClientAssertions?
    /// Tokens obtained (for the sync's report).
    private(set) var obtained = 0

    init(settings: GraphSettings, transport: GraphTransport, assertions: ClientAssertions?) {
        self.settings = settings
        self.transport = transport
        self.assertions = assertions
    }

    /// A token valid for at least another minute; a new one when `renewing` (Graph refused the
    /// one it had).
    func token(renewing: Bool = false) async throws(GraphError) -> String {
        if !renewing, let current, ContinuousClock.now < current.expires { return current.token }
        var form: [(String, String)] = [
            ("client_id", settings.clientID), ("scope", settings.scope), ("grant_type", "client_credentials"),
        ]
        switch settings.credential {
        case .secret(let secret):
            form.append(("client_secret", secret))
        case .certificate:
            guard let assertions else { throw GraphError(.configuration, "no key to sign the client assertion with") }
            form.append(("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"))
            form.append(("client_assertion", try await assertions.make()))
        }
        let response = try await transport.send(
            .POST, settings.tokenURL,
            headers: [("Content-Type", "application/x-www-form-urlencoded"), ("Accept", "application/json")],
            body: Array(Self.formEncoded(form).utf8))
        let name = "POST \(settings.tokenURL)"
        guard response.status == 200 else {
            // The token service's error as it came: `invalid_client`, `AADSTS7000215: ...`.
            let failure = try? JSONDecoder().decode(TokenFailure.self, from: Data(response.body))
            var said =
                failure.map { "\($0.error)\($0.errorDescription.map { ": \($0)" } ?? "")" } ?? "HTTP \(response.status)"
            // As it came, but never with the secret, should a token service repeat it in any
            // encoding: then the description is withheld.
            if case .secret(let secret) = settings.credential, Self.mayRepeat(secret, said) {
                said =
                    "\(failure?.error ?? "HTTP \(response.status)"): [the description is withheld: it repeats the client secret]"
            }
            throw GraphError(
                .authentication, "the token service refused the app: \(said)", request: name, status: response.status)
        }
        guard let answer = try? JSONDecoder().decode(TokenAnswer.self, from: Data(response.body)),
            !answer.accessToken.isEmpty
        else {
            throw GraphError(.invalidResponse, "the token service's answer has no access_token", request: name)
        }
        let lifetime = max(0, (answer.expiresIn ?? 3_600) - 60)
        current = (answer.accessToken, ContinuousClock.now + .seconds(lifetime))
        obtained += 1
        return answer.accessToken
    }

    /// Whether `text` may hold `secret`: as it is, or percent-decoded (either case, `+` for a
    /// space), ignoring case.
    static func mayRepeat(_ secret: String, _ text: String) -> Bool {
        guard !secret.isEmpty else { return false }
        // `+` and a space are one character here, in the secret and in the text alike: a form
        // encoder writes a space as `+`, and a `+` may be read back as a space.
        func folded(_ value: String) -> String { value.replacingOccurrences(of: "+", with: " ").lowercased() }
        let wanted = folded(secret)
        return [text, text.removingPercentEncoding ?? text].contains { folded($0).contains(wanted) }
    }

    static func formEncoded(_ form: [(String, String)]) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return form.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")" }.joined(
            separator: "&")
    }

    private struct TokenAnswer: Decodable {
        let accessToken: String
        let expiresIn: Int?
        enum CodingKeys: String, CodingKey {
            case accessToken = "access_token"
            case expiresIn = "expires_in"
        }
    }

    private struct TokenFailure: Decodable {
        let error: String
        let errorDescription: String?
        enum CodingKeys: String, CodingKey {
            case error
            case errorDescription = "error_description"
        }
    }
}

/// Client assertions for a certificate credential: a JWT (RS256) whose issuer and subject are
/// the client ID and whose audience is the token endpoint, valid for ten minutes, naming the
/// certificate by its SHA-256 thumbprint (`x5t#S256`). Source: Microsoft identity platform,
/// "Certificate credentials for application authentication".
struct ClientAssertions: Sendable {
    let key: JWTKit.Insecure.RSA.PrivateKey
    let thumbprint: String
    let clientID: String
    let audience: String

    /// - Parameter names: what errors call the certificate and the key (their files, when known).
    init(
        certificatePEM: String, privateKeyPEM: String, clientID: String, audience: String,
        names: (certificate: String, key: String) = ("the certificate", "the private key")
    ) throws(GraphError) {
        // The parsers' own errors name their source files and internal codes: not repeated.
        guard let certificate = try? Certificate(pemEncoded: certificatePEM) else {
            throw GraphError(
                .configuration, "\(names.certificate) is not a PEM X.509 certificate (-----BEGIN CERTIFICATE-----)")
        }
        guard let key = try? JWTKit.Insecure.RSA.PrivateKey(pem: privateKeyPEM) else {
            throw GraphError(
                .configuration, "\(names.key) is not a PEM RSA private key (Entra ID signs client assertions with RSA)")
        }
        // The key must be the certificate's: a mismatch fails only at the token service, later.
        guard let parsed = try? Certificate.PrivateKey(pemEncoded: privateKeyPEM),
            parsed.publicKey == certificate.publicKey
        else {
            throw GraphError(.configuration, "\(names.key) is not the private key of \(names.certificate)")
        }
        var serializer = DER.Serializer()
        do {
            try serializer.serialize(certificate)
        } catch {
            throw GraphError(.configuration, "cannot encode the certificate: \(error)")
        }
        thumbprint = Data(SHA256.hash(data: serializer.serializedBytes)).base64URLEncodedString()
        self.key = key
        self.clientID = clientID
        self.audience = audience
    }

    func make() async throws(GraphError) -> String {
        let now = Date()
        let payload = AssertionPayload(
            aud: AudienceClaim(value: audience), iss: IssuerClaim(value: clientID), sub: SubjectClaim(value: clientID),
            jti: IDClaim(value: UUID().uuidString), nbf: NotBeforeClaim(value: now.addingTimeInterval(-30)),
            iat: IssuedAtClaim(value: now),
            exp: ExpirationClaim(value: now.addingTimeInterval(600)))
        var header = JWTHeader()
        header.typ = "JWT"
        header.x5tS256 = thumbprint
        do {
            let keys = await JWTKeyCollection().add(rsa: key, digestAlgorithm: .sha256)
            return try await keys.sign(payload, header: header)
        } catch {
            throw GraphError(.configuration, "cannot sign the client assertion: \(error)")
        }
    }

    struct AssertionPayload: JWTPayload {
        let aud: AudienceClaim
        let iss: IssuerClaim
        let sub: SubjectClaim
        let jti: IDClaim
        let nbf: NotBeforeClaim
        let iat: IssuedAtClaim
        let exp: ExpirationClaim

        func verify(using algorithm: some JWTAlgorithm) async throws {
            try exp.verifyNotExpired()
        }
    }
}

extension Data {
    func base64URLEncodedString() -> String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
