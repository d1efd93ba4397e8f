import Crypto
import Foundation
import JWTKit
import NIOHTTP1
import SwiftASN1
import X509

/// Access tokens for Graph by OAuth 2.0 client credentials at the settings' token endpoint,
/// kept until a minute before they expire. One fetch is in flight at a time: callers that need
/// a token while one is being fetched wait for it. The token service is tried again like Graph
/// (429 and 5xx, `Retry-After` honoured; no answer).
actor GraphTokens {
    private let settings: GraphSettings
    private let transport: GraphTransport
    private let retry: RetryPolicy
    private var current: (token: String, expires: ContinuousClock.Instant)?
    private var pending: Task<Result<String, GraphError>, Never>?
    /// Signs client assertions, for a certificate credential.
    private let assertions: ClientAssertions?
    /// Tokens obtained (for the sync's report).
    private(set) var obtained = 0

    init(settings: GraphSettings, transport: GraphTransport, assertions: ClientAssertions?, retry: RetryPolicy) {
        self.settings = settings
        self.transport = transport
        self.assertions = assertions
        self.retry = retry
    }

    /// A token valid for at least another minute. With `refused` (a token Graph answered 401
    /// to), a new one, unless another caller has replaced it already.
    func token(replacing refused: String? = nil) async throws(GraphError) -> String {
        if let current, current.token != refused, ContinuousClock.now < current.expires { return current.token }
        if let pending { return try await pending.value.get() }
        let fetch = Task { await self.fetch() }
        pending = fetch
        let result = await fetch.value
        pending = nil
        return try result.get()
    }

    private func fetch() async -> Result<String, GraphError> {
        do {
            let (token, lifetime) = try await request()
            current = (token, ContinuousClock.now + .seconds(lifetime))
            obtained += 1
            return .success(token)
        } catch {
            return .failure(error)
        }
    }

    /// Asks the token service, trying again on throttling, server errors and no answer.
    private func request() async throws(GraphError) -> (token: String, lifetime: Int) {
        let name = "POST \(settings.tokenURL)"
        var attempt = 0
        while true {
            attempt += 1
            var form: [(String, String)] = [
                ("client_id", settings.clientID), ("scope", settings.scope), ("grant_type", "client_credentials"),
            ]
            switch settings.credential {
            case .secret(let secret):
                form.append(("client_secret", secret))
            case .certificate:
                guard let assertions else {
                    throw GraphError(.configuration, "no key to sign the client assertion with")
                }
                // A new assertion each try: its jti is used once.
                form.append(("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"))
                form.append(("client_assertion", try await assertions.make()))
            }
            let sent = RequestIdentifiers.fresh()
            let body = Array(Self.formEncoded(form).utf8)
            guard
                let response = try await retry.attempt(
                    attempt, of: name, identifiers: sent,
                    { () async throws(GraphError) in
                        try await transport.send(
                            .POST, settings.tokenURL,
                            headers: [
                                ("Content-Type", "application/x-www-form-urlencoded"), ("Accept", "application/json"),
                                ("client-request-id", sent.client), ("return-client-request-id", "true"),
                            ],
                            body: body)
                    })
            else { continue }
            let identifiers = sent.answered(response.headers, body: response.body)
            if RetryPolicy.isTransient(response.status) {
                switch retry.wait(
                    after: response.status, headers: response.headers, attempt: attempt,
                    detail: Self.refusal(response, credential: settings.credential), request: name,
                    identifiers: identifiers)
                {
                case .success(let wait):
                    try await retry.pause(wait, request: name)
                    continue
                case .failure(let error):
                    throw GraphError(
                        .authentication, "the token service did not answer: \(error.message)", request: name,
                        status: response.status, identifiers: identifiers)
                }
            }
            guard response.status == 200 else {
                throw GraphError(
                    .authentication,
                    "the token service refused the app: \(Self.refusal(response, credential: settings.credential))",
                    request: name, status: response.status, identifiers: identifiers)
            }
            guard let answer = try? JSONDecoder().decode(TokenAnswer.self, from: Data(response.body)),
                !answer.accessToken.isEmpty
            else {
                throw GraphError(
                    .invalidResponse, "the token service's answer has no access_token", request: name,
                    identifiers: identifiers)
            }
            return (answer.accessToken, max(0, (answer.expiresIn ?? 3_600) - 60))
        }
    }

    /// The token service's error as it came (`invalid_client: AADSTS7000215: ...`), but never
    /// with the secret, should a token service repeat it in any encoding: then the description
    /// is withheld.
    static func refusal(_ response: GraphTransport.Response, credential: GraphCredential) -> String {
        let failure = try? JSONDecoder().decode(TokenFailure.self, from: Data(response.body))
        let said =
            failure.map { "\($0.error)\($0.errorDescription.map { ": \($0)" } ?? "")" } ?? "HTTP \(response.status)"
        if case .secret(let secret) = credential, mayRepeat(secret, said) {
            return
                "\(failure?.error ?? "HTTP \(response.status)"): [the description is withheld: it repeats the client secret]"
        }
        return said
    }

    /// Whether `text` may hold `secret`: as it is, or percent-decoded (either case, `+` for a
    /// space), ignoring case.
    static func mayRepeat(_ secret: String, _ text: String) -> Bool {
        guard !secret.isEmpty else { return false }
        // `+` and a space are one character here, in the secret and in the text alike: a form
        // encoder writes a space as `+`, and a `+` may be read back as a space.
        func folded(_ value: String) -> String { value.replacingOccurrences(of: "+", with: " ").lowercased() }
        let wanted = folded(secret)
        if [text, text.removingPercentEncoding ?? text].contains(where: { folded($0).contains(wanted) }) {
            return true
        }
        // Base64 and base64url of the secret, with or without padding (case matters there).
        let base64 = Data(secret.utf8).base64EncodedString()
        let unpadded = base64.replacingOccurrences(of: "=", with: "")
        let url = unpadded.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        return [base64, unpadded, url].contains { text.contains($0) }
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

/// Client assertions for a certificate credential: a JWT whose issuer and subject are the
/// client ID and whose audience is the token endpoint, valid for ten minutes. Signed PS256 and
/// naming the certificate by its SHA-256 thumbprint (`x5t#S256`), as Microsoft identity
/// platform's "certificate credentials" page asks ("alg: Should be PS256", "Use PSS padding");
/// or RS256 with the SHA-1 thumbprint (`x5t`) for a token service that lags.
struct ClientAssertions: Sendable {
    let key: JWTKit.Insecure.RSA.PrivateKey
    /// The base64url thumbprint of the certificate's DER: SHA-256 for PS256, SHA-1 for RS256.
    let thumbprint: String
    let clientID: String
    let audience: String
    let algorithm: AssertionAlgorithm

    /// - Parameter names: what errors call the certificate and the key (their files, when known).
    init(
        certificatePEM: String, privateKeyPEM: String, clientID: String, audience: String,
        algorithm: AssertionAlgorithm = .ps256,
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
        let der = serializer.serializedBytes
        thumbprint =
            switch algorithm {
            case .ps256: Data(SHA256.hash(data: der)).base64URLEncodedString()
            case .rs256: Data(Insecure.SHA1.hash(data: der)).base64URLEncodedString()
            }
        self.algorithm = algorithm
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
        do {
            let keys: JWTKeyCollection
            switch algorithm {
            case .ps256:
                header.x5tS256 = thumbprint
                keys = await JWTKeyCollection().add(pss: key, digestAlgorithm: .sha256)
            case .rs256:
                header.x5t = thumbprint
                keys = await JWTKeyCollection().add(rsa: key, digestAlgorithm: .sha256)
            }
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
