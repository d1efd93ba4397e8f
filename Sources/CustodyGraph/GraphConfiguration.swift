public import Custody
import CustodyPolicy
public import Foundation

extension GraphCredential {
    /// The credential a command or a configuration names: a certificate with its private key
    /// (the key file readable by its owner alone), a client secret file, or else the secret in
    /// `CUSTODY_GRAPH_CLIENT_SECRET`.
    /// - Throws: `configuration` when a file cannot be read, may be read by others, or nothing
    ///   names a credential.
    public static func load(
        clientSecretFile: String?, certificate: String?, privateKey: String?,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(GraphError) -> GraphCredential {
        switch (clientSecretFile, certificate, privateKey) {
        case (nil, let certificate?, let privateKey?):
            guard let certificatePEM = try? String(contentsOfFile: certificate, encoding: .utf8) else {
                throw GraphError(.configuration, "cannot read the certificate \(certificate)")
            }
            let privateKeyPEM = try GraphCredential.privateText(file: privateKey, what: "the private key file")
            // Checked now, naming the files: a pair that does not hold fails here, not at the
            // first sync.
            _ = try ClientAssertions(
                certificatePEM: certificatePEM, privateKeyPEM: privateKeyPEM, clientID: "-", audience: "-",
                names: ("the certificate \(certificate)", "the private key \(privateKey)"))
            return .certificate(certificatePEM: certificatePEM, privateKeyPEM: privateKeyPEM)
        case (let file?, nil, nil):
            return try GraphCredential.secret(file: file)
        case (nil, nil, nil):
            guard let secret = environment["CUSTODY_GRAPH_CLIENT_SECRET"], !secret.isEmpty else {
                throw GraphError(
                    .configuration,
                    "no credential: give a client secret file (or CUSTODY_GRAPH_CLIENT_SECRET), or a certificate with its private key"
                )
            }
            return .secret(secret)
        case (nil, _, _):
            throw GraphError(.configuration, "a certificate and its private key go together")
        default:
            throw GraphError(.configuration, "give a client secret or a certificate, not both")
        }
    }
}

/// What `custody serve --graph FILE` reads: the tenant, the app registration and how often to
/// sync, as one JSON object.
///
/// ```json
/// {"tenantId": "contoso.onmicrosoft.com", "clientId": "…", "clientSecretFile": "graph-secret",
///  "cloud": "global", "tenantOverlay": "overlay.json", "intervalSeconds": 300}
/// ```
///
/// Keys: `tenantId`, `clientId` (required); `clientSecretFile`, or `certificate` with
/// `privateKey` and optionally `assertionAlgorithm` (`PS256`, the default, or `RS256`) (else
/// `CUSTODY_GRAPH_CLIENT_SECRET`); `cloud`, `authority`, `graphUrl`;
/// `tenantOverlay`; `intervalSeconds`; `signingKey` (a bundle signing key file, mode 600:
/// each bundle built is signed with it). A secret is never written in the file itself. Paths are
/// relative to the file's directory. An unknown key is an error, as is a value of the wrong
/// type, each naming the file and the key.
public struct GraphConfiguration: Sendable {
    public var settings: GraphSettings
    /// The tenant overlay's bytes (see `GraphBundle.files`).
    public var overlay: [UInt8]?
    /// Signs each bundle built, when the file names a key.
    public var signingKey: BundleSigningKey?
    /// How often to sync, when the file says.
    public var interval: Duration?

    static let keys: Set<String> = [
        "tenantId", "clientId", "clientSecretFile", "certificate", "privateKey", "assertionAlgorithm", "cloud",
        "authority", "graphUrl", "tenantOverlay", "signingKey",
        "intervalSeconds",
    ]

    private struct File: Decodable {
        var tenantId: String
        var clientId: String
        var clientSecretFile: String?
        var certificate: String?
        var privateKey: String?
        var assertionAlgorithm: String?
        var cloud: String?
        var authority: String?
        var graphUrl: String?
        var tenantOverlay: String?
        var signingKey: String?
        var intervalSeconds: Double?
    }

    /// Reads the configuration at `path`, with the credential and overlay it names.
    /// - Throws: `configuration`, naming the file and the key at fault.
    public static func load(file path: String, environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(GraphError)
        -> GraphConfiguration
    {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw GraphError(.configuration, "cannot read the Graph configuration \(path)")
        }
        // Custody's own reader first: it says where the syntax breaks, and sees a key given
        // twice (the decoder would keep one silently) and a null.
        let document: JSONDocument
        do {
            document = try JSONDocument(parsing: Array(data))
        } catch {
            throw GraphError(.configuration, "\(path): not JSON: \(error)")
        }
        guard document.root.kind == .object else { throw GraphError(.configuration, "\(path): not a JSON object") }
        var seen = Set<String>()
        for member in document.root.members {
            if member.key == "clientSecret" {
                throw GraphError(
                    .configuration,
                    "\(path): \"clientSecret\": a secret is not kept in the configuration; name a file holding it with \"clientSecretFile\" (mode 600)"
                )
            }
            guard keys.contains(member.key) else {
                throw GraphError(
                    .configuration,
                    "\(path): unknown key \"\(member.key)\" (known: \(keys.sorted().joined(separator: ", ")))")
            }
            guard seen.insert(member.key).inserted else {
                throw GraphError(.configuration, "\(path): \"\(member.key)\" is given twice")
            }
            guard !member.value.isNull else {
                throw GraphError(
                    .configuration, "\(path): \"\(member.key)\" is null: leave the key out for its default")
            }
        }
        let file: File
        do {
            file = try JSONDecoder().decode(File.self, from: data)
        } catch let DecodingError.keyNotFound(key, _) {
            throw GraphError(.configuration, "\(path): \"\(key.stringValue)\" is required")
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context), let
            DecodingError.dataCorrupted(context)
        {
            let key = context.codingPath.map(\.stringValue).joined(separator: ".")
            throw GraphError(
                .configuration,
                "\(path): \"\(key)\" has the wrong type (\(key == "intervalSeconds" ? "a whole number of seconds" : "a string") expected)"
            )
        } catch {
            throw GraphError(.configuration, "\(path): \(error)")
        }
        let directory = PathName.directory(of: path)
        func resolved(_ file: String?) -> String? {
            file.map { $0.hasPrefix("/") || directory.isEmpty ? $0 : directory + "/" + $0 }
        }
        var cloud = GraphCloud.global
        if let name = file.cloud {
            guard let named = GraphCloud(rawValue: name) else {
                throw GraphError(
                    .configuration,
                    "\(path): \"cloud\" \"\(name)\" is not one of \(GraphCloud.allCases.map(\.rawValue).joined(separator: ", "))"
                )
            }
            cloud = named
        }
        var interval: Duration?
        if let seconds = file.intervalSeconds {
            guard seconds.rounded() == seconds else {
                throw GraphError(
                    .configuration,
                    "\(path): \"intervalSeconds\" has the wrong type (a whole number of seconds expected)")
            }
            guard (10...86_400).contains(seconds) else {
                throw GraphError(
                    .configuration,
                    "\(path): \"intervalSeconds\" \(seconds.formatted(.number.grouping(.never))) is not between 10 and 86400"
                )
            }
            interval = .seconds(Int(seconds))
        }
        let credential: GraphCredential
        do {
            credential = try GraphCredential.load(
                clientSecretFile: resolved(file.clientSecretFile), certificate: resolved(file.certificate),
                privateKey: resolved(file.privateKey),
                environment: environment)
        } catch {
            throw GraphError(.configuration, "\(path): \(error.message)")
        }
        var overlay: [UInt8]?
        if let overlayPath = resolved(file.tenantOverlay) {
            guard let bytes = FileManager.default.contents(atPath: overlayPath) else {
                throw GraphError(.configuration, "\(path): cannot read the tenant overlay \(overlayPath)")
            }
            try GraphBundle.checkOverlay(Array(bytes), path: overlayPath)
            overlay = Array(bytes)
        }
        var algorithm = AssertionAlgorithm.ps256
        if let name = file.assertionAlgorithm {
            guard let named = AssertionAlgorithm(rawValue: name.uppercased()) else {
                throw GraphError(
                    .configuration,
                    "\(path): \"assertionAlgorithm\" \"\(name)\" is not one of \(AssertionAlgorithm.allCases.map(\.rawValue).joined(separator: ", "))"
                )
            }
            algorithm = named
        }
        var settings: GraphSettings
        do {
            settings = try GraphSettings(
                tenantID: file.tenantId, clientID: file.clientId, credential: credential, cloud: cloud,
                authority: file.authority, graphURL: file.graphUrl,
                optionNames: (authority: "\"authority\"", graphURL: "\"graphUrl\""))
        } catch {
            throw GraphError(.configuration, "\(path): \(error.message)")
        }
        settings.assertionAlgorithm = algorithm
        var signingKey: BundleSigningKey?
        if let keyPath = resolved(file.signingKey) {
            do {
                signingKey = try BundleSigningKey.load(file: keyPath)
            } catch {
                throw GraphError(.configuration, "\(path): \"signingKey\": \(error.message)")
            }
        }
        return GraphConfiguration(settings: settings, overlay: overlay, signingKey: signingKey, interval: interval)
    }
}
