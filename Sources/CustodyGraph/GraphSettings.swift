import Foundation

/// The Microsoft cloud a tenant lives in: where its tokens come from and where Graph answers.
/// Source: Microsoft Graph national cloud deployments (learn.microsoft.com/graph/deployments).
public enum GraphCloud: String, CaseIterable, Sendable {
    /// The global service (and GCC, which uses it).
    case global
    /// US Government L4 (GCC): the global endpoints.
    case usgov
    /// US Government L4 High (GCC High).
    case usgovhigh
    /// US Government L5 (DoD).
    case dod
    /// Operated by 21Vianet in China.
    case china

    /// The token service's root.
    public var authority: String {
        switch self {
        case .global, .usgov: "https://login.microsoftonline.com"
        case .usgovhigh, .dod: "https://login.microsoftonline.us"
        case .china: "https://login.chinacloudapi.cn"
        }
    }

    /// Graph's root with the version Custody reads (beta: the shape of real exports).
    public var graphURL: String {
        switch self {
        case .global, .usgov: "https://graph.microsoft.com/beta"
        case .usgovhigh: "https://graph.microsoft.us/beta"
        case .dod: "https://dod-graph.microsoft.us/beta"
        case .china: "https://microsoftgraph.chinacloudapi.cn/beta"
        }
    }
}

/// How the app registration proves who it is.
public enum GraphCredential: Sendable {
    /// A client secret.
    case secret(String)
    /// A certificate registered with the app and its private key (PEM): each token request
    /// carries a client assertion signed with the key (`GraphSettings.assertionAlgorithm`).
    case certificate(certificatePEM: String, privateKeyPEM: String)

    /// Reads a client secret from `path`: refused when the file may be read by its group or
    /// others, or is empty. Surrounding whitespace (a trailing newline) is not part of it.
    public static func secret(file path: String) throws(GraphError) -> GraphCredential {
        .secret(try privateText(file: path, what: "the client secret file"))
    }

    /// The text of `path`, trimmed: refused when the file may be read by its group or others,
    /// or is empty. `what` names it in errors.
    static func privateText(file path: String, what: String) throws(GraphError) -> String {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path) else {
            throw GraphError(.configuration, "cannot read \(what) \(path)")
        }
        if let permissions = attributes[.posixPermissions] as? Int, permissions & 0o077 != 0 {
            throw GraphError(
                .configuration,
                "\(what) \(path) may be read by others (mode \(String(permissions, radix: 8))): chmod 600 it")
        }
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8)
        else {
            throw GraphError(.configuration, "cannot read \(what) \(path) as UTF-8 text")
        }
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw GraphError(.configuration, "\(what) \(path) is empty") }
        return trimmed
    }
}

/// How a client assertion is signed and names its certificate.
public enum AssertionAlgorithm: String, Sendable, CaseIterable {
    /// RSASSA-PSS with SHA-256, the certificate named by its SHA-256 thumbprint (`x5t#S256`):
    /// what Microsoft's "certificate credentials" page asks for ("alg: Should be PS256", "Use
    /// PSS padding").
    case ps256 = "PS256"
    /// PKCS #1 v1.5 with SHA-256, the certificate named by its SHA-1 thumbprint (`x5t`): for a
    /// token service that has not caught up (some sovereign clouds, older ADFS).
    case rs256 = "RS256"
}

/// Everything a sync needs to reach a tenant, and how hard it may press Graph.
public struct GraphSettings: Sendable {
    /// The directory (tenant) ID or a verified domain.
    public var tenantID: String
    /// The app registration's application (client) ID.
    public var clientID: String
    public var credential: GraphCredential
    /// How a certificate credential's client assertion is signed.
    public var assertionAlgorithm = AssertionAlgorithm.ps256
    /// The token service's root, e.g. `https://login.microsoftonline.com`.
    public var authority: String
    /// Graph's root with its version, e.g. `https://graph.microsoft.com/beta`.
    public var graphURL: String
    /// How long connecting may take.
    public var connectTimeout: Duration = .seconds(10)
    /// How long one request may take, answer and body.
    public var requestTimeout: Duration = .seconds(60)
    /// How many times one request is tried when Graph throttles it (429) or fails it (5xx).
    public var maximumAttempts = 6
    /// The first wait when Graph gives no `Retry-After`; doubled each try, up to `maximumBackoff`.
    public var initialBackoff: Duration = .seconds(1)
    public var maximumBackoff: Duration = .seconds(60)
    /// The longest `Retry-After` waited for; Graph asking for more fails the sync at once
    /// (a sync that would sit for an hour is better reported, and run again later).
    public var maximumRetryAfter: Duration = .seconds(300)
    /// The client's own budget: at most this many requests in any `budgetWindow`, below
    /// Intune's 1,000 requests per 20 seconds per app and tenant.
    public var requestBudget = 900
    public var budgetWindow: Duration = .seconds(20)
    /// The most pages one listing may have (20,000 pages of 999: 20 million items), and a
    /// listing also ends after 100 empty pages in a row: a server that pages without end
    /// fails the sync rather than holding it.
    public var maximumPages = 20_000
    /// Requests in flight at once (group members are read side by side).
    public var concurrency = 4
    /// The largest answer read, in bytes.
    public var maximumResponseBytes = 64 << 20

    /// Settings for a tenant in `cloud`; `authority` and `graphURL` override its endpoints.
    public init(
        tenantID: String, clientID: String, credential: GraphCredential, cloud: GraphCloud = .global,
        authority: String? = nil,
        graphURL: String? = nil
    ) throws(GraphError) {
        try self.init(
            tenantID: tenantID, clientID: clientID, credential: credential, cloud: cloud, authority: authority,
            graphURL: graphURL,
            optionNames: (authority: "--authority", graphURL: "--graph-url"))
    }

    /// `optionNames`: what the errors call the authority and the Graph root (the command's
    /// options, or a configuration file's keys).
    init(
        tenantID: String, clientID: String, credential: GraphCredential, cloud: GraphCloud, authority: String?,
        graphURL: String?,
        optionNames: (authority: String, graphURL: String)
    ) throws(GraphError) {
        let identifier = { (value: String) in
            !value.isEmpty && value.count <= 256
                && value.unicodeScalars.allSatisfy {
                    $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "-._".unicodeScalars.contains($0))
                }
        }
        guard identifier(tenantID) else {
            throw GraphError(.configuration, "the tenant ID \"\(tenantID)\" is not a directory ID or a domain name")
        }
        guard identifier(clientID) else {
            throw GraphError(.configuration, "the client ID \"\(clientID)\" is not an application ID")
        }
        self.tenantID = tenantID
        self.clientID = clientID
        self.credential = credential
        self.authority = try Self.checked(authority ?? cloud.authority, optionNames.authority)
        self.graphURL = try Self.checked(graphURL ?? cloud.graphURL, optionNames.graphURL)
    }

    /// The token endpoint: `{authority}/{tenant}/oauth2/v2.0/token`.
    public var tokenURL: String { "\(authority)/\(tenantID)/oauth2/v2.0/token" }

    /// The scope asked for: Graph's host with `/.default` (the app's granted permissions).
    public var scope: String {
        guard let url = URL(string: graphURL), let scheme = url.scheme, let host = url.host else {
            return "https://graph.microsoft.com/.default"
        }
        return "\(scheme)://\(host)\(url.port.map { ":\($0)" } ?? "")/.default"
    }

    /// `url` without a trailing slash; https, or http to this machine alone (a secret or a
    /// token never crosses a network in the clear).
    static func checked(_ url: String, _ option: String) throws(GraphError) -> String {
        let trimmed = url.hasSuffix("/") ? String(url.dropLast()) : url
        guard let parsed = URL(string: trimmed), let scheme = parsed.scheme?.lowercased(), let host = parsed.host,
            !host.isEmpty,
            parsed.query == nil, parsed.fragment == nil
        else {
            throw GraphError(.configuration, "\(option) \"\(url)\" is not an absolute URL")
        }
        let loopback = ["127.0.0.1", "::1", "[::1]", "localhost"].contains(host.lowercased())
        guard scheme == "https" || (scheme == "http" && loopback) else {
            throw GraphError(
                .configuration, "\(option) \"\(url)\" must be https (plain http only to this machine, for tests)")
        }
        return trimmed
    }
}
