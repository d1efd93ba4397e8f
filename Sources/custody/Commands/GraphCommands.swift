import ArgumentParser
import Custody
import CustodyPolicy
import CustodyStore
import CustodyGraph
import Foundation
import Logging

/// `custody graph`: read a tenant from Microsoft Graph.
struct GraphCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "graph",
        abstract: "Build the bundle from a Microsoft Graph tenant, with an app registration.",
        subcommands: [GraphSyncCommand.self]
    )
}

enum GraphCloudArgument: String, ExpressibleByArgument, CaseIterable {
    case global, usgov, usgovhigh, dod, china
}

/// `custody graph sync`.
struct GraphSyncCommand: AsyncParsableCommand, StateCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract:
            "Read the tenant's app protection policies and the members of the groups they target, and write or apply the bundle.",
        discussion: """
            Reads /deviceAppManagement/iosManagedAppProtections, androidManagedAppProtections, \
            defaultManagedAppProtections and targetedManagedAppConfigurations (with their apps \
            and assignments), then the transitive user members of every group an assignment \
            includes or excludes. tenant.json lists those users (OID, UPN, groups); \
            --tenant-overlay adds what Graph does not hold (allowedAccounts, managedApps, \
            mdmManagedApps).

            --out DIR writes the bundle as DIR, atomically: DIR holds the old bundle or the whole \
            new one; an existing DIR must be empty or hold only *.json files. --state applies it as the bundle in force, as custody apply does, its source \
            recorded as graph:TENANT@HOST. The app registration needs the application permissions \
            DeviceManagementApps.Read.All and GroupMember.Read.All (see docs/graph.md).

            The secret comes from --client-secret-file (readable by its owner alone) or \
            CUSTODY_GRAPH_CLIENT_SECRET; or a certificate registered with the app and its RSA \
            private key sign each token request. Throttled (429) and failed (5xx) requests are \
            tried again after Retry-After or an exponential backoff; the client keeps itself \
            under Intune's per-app limit. Any failure leaves the previous bundle as it was, \
            names the request that failed, and exits 1. Two syncs of an unchanged tenant give \
            the same bytes, so the revision changes only when the tenant does.

            With --state, the members read and Graph's delta links are kept in the state: the \
            next sync reads only the groups that changed (/groups/delta, /users/delta; the app \
            then also needs User.Read.All), and every group again once a day.
            """
    )

    @Option(
        name: .customLong("tenant-id"),
        help: ArgumentHelp("The directory (tenant) ID or a verified domain.", valueName: "tenant"))
    var tenantID: String

    @Option(
        name: .customLong("client-id"),
        help: ArgumentHelp("The app registration's application (client) ID.", valueName: "client"))
    var clientID: String

    @Option(
        name: .customLong("client-secret-file"),
        help: ArgumentHelp("A file holding the client secret, mode 600.", valueName: "file"))
    var clientSecretFile: String?

    @Option(help: ArgumentHelp("The app's certificate (PEM), with --private-key.", valueName: "cert.pem"))
    var certificate: String?

    @Option(
        name: .customLong("private-key"),
        help: ArgumentHelp("The certificate's RSA private key (PEM).", valueName: "key.pem"))
    var privateKey: String?

    @Option(
        name: .customLong("assertion-algorithm"),
        help: ArgumentHelp(
            "How a certificate's client assertion is signed: PS256 (default; Microsoft's current rule, the certificate named by x5t#S256) or RS256 (x5t, SHA-1) for a token service that lags.",
            valueName: "PS256|RS256"))
    var assertionAlgorithm: AssertionAlgorithm = .ps256

    @Option(
        help: ArgumentHelp("The Microsoft cloud: global (default), usgov, usgovhigh, dod, china.", valueName: "cloud"))
    var cloud: GraphCloudArgument = .global

    @Option(
        help: ArgumentHelp(
            "The token service's root, overriding --cloud's (e.g. https://login.microsoftonline.com).", valueName: "url"
        ))
    var authority: String?

    @Option(
        name: .customLong("graph-url"),
        help: ArgumentHelp(
            "Graph's root with its version, overriding --cloud's (default https://graph.microsoft.com/beta).",
            valueName: "url"))
    var graphURL: String?

    @Option(
        name: .customLong("tenant-overlay"),
        help: ArgumentHelp(
            "A JSON object added to tenant.json: allowedAccounts, managedApps, mdmManagedApps.", valueName: "file"))
    var tenantOverlay: String?

    @Option(help: ArgumentHelp("Write the bundle as this directory, atomically.", valueName: "dir"))
    var out: String?

    @Option(
        help: ArgumentHelp(
            "Sign the bundle built with this key (custody bundle keygen), so that a state that trusts it takes it.",
            valueName: "file"))
    var signingKey: String?

    @OptionGroup var stateOptions: StateOptions
    @OptionGroup var historyOptions: BundleHistoryOptions
    @OptionGroup var loggingOptions: LoggingOptions

    func validate() throws {
        guard (out == nil) != (stateOptions.stateArgument == nil) else {
            throw ValidationError("give one of --out DIR (write the bundle) or --state PATH (apply it)")
        }
        let secretGiven =
            clientSecretFile != nil
            || ProcessInfo.processInfo.environment["CUSTODY_GRAPH_CLIENT_SECRET"].map { !$0.isEmpty } == true
        if certificate != nil || privateKey != nil {
            guard certificate != nil, privateKey != nil else {
                throw ValidationError("--certificate and --private-key go together")
            }
            guard clientSecretFile == nil else {
                throw ValidationError("give a client secret or a certificate, not both")
            }
        } else if !secretGiven {
            throw ValidationError(
                "give --client-secret-file FILE (or CUSTODY_GRAPH_CLIENT_SECRET), or --certificate CERT.pem with --private-key KEY.pem"
            )
        }
    }

    func run() async throws {
        // The logging system is set up once: by opening the state when there is one.
        let engine: CustodyEngine? =
            out == nil
            ? try await openEngine(
                state: stateOptions, logging: loggingOptions, access: .readWrite, restoring: false,
                history: historyOptions) : nil
        let logger = engine == nil ? loggingOptions.makeLogger() : Logger(label: "custody.graph")
        let credential: GraphCredential
        var overlay: [UInt8]?
        do {
            credential = try GraphCredential.load(
                clientSecretFile: clientSecretFile, certificate: certificate, privateKey: privateKey)
            if let tenantOverlay {
                guard let data = FileManager.default.contents(atPath: tenantOverlay) else {
                    throw GraphError(.configuration, "cannot read the tenant overlay \(tenantOverlay)")
                }
                try GraphBundle.checkOverlay(Array(data), path: tenantOverlay)
                overlay = Array(data)
            }
        } catch let error as GraphError {
            StandardError.write("error: \(error)\n")
            throw ExitCode.failure
        }
        var settings: GraphSettings
        let sync: GraphSync
        do {
            settings = try GraphSettings(
                tenantID: tenantID, clientID: clientID, credential: credential,
                cloud: GraphCloud(rawValue: cloud.rawValue) ?? .global,
                authority: authority, graphURL: graphURL)
            settings.assertionAlgorithm = assertionAlgorithm
            sync = try GraphSync(
                settings: settings, overlay: overlay, signingKey: try signingKey.map(BundleSigningKey.load(file:)),
                logger: logger)
        } catch {
            StandardError.write("error: \(error)\n")
            throw ExitCode.failure
        }
        // A progress line on a terminal: pages, policies, groups.
        var progress: (@Sendable (String) -> Void)?
        if isatty(2) == 1 {
            progress = { @Sendable line in
                StandardError.write("\rgraph sync: " + line.padding(toLength: 60, withPad: " ", startingAt: 0))
            }
        }
        do {
            if let out {
                let report = try await sync.sync(to: out, progress: progress)
                if progress != nil { StandardError.write("\n") }
                Self.describe(report)
                StandardOutput.write("wrote \(out): \(report.revision)\n")
            } else if let engine {
                // The events the sync records are the change from the bundle in force.
                await engine.restoreBundleInForceIfItLoads()
                let (report, applied) = try await sync.sync(into: engine, progress: progress)
                if progress != nil { StandardError.write("\n") }
                Self.describe(report)
                StandardOutput.write(
                    "\(applied.unchanged ? "already in force" : "applied") \(sync.source): \(applied.bundle.revision)\n"
                )
            }
        } catch let error as GraphError {
            await sync.shutdown()
            if progress != nil { StandardError.write("\n") }
            StandardError.write("error: graph sync failed, nothing changed: \(error)\n")
            throw ExitCode.failure
        } catch let error as CustodyError {
            await sync.shutdown()
            throw error
        } catch let error as StoreError {
            await sync.shutdown()
            if progress != nil { StandardError.write("\n") }
            StandardError.write("error: graph sync failed, nothing changed: \(error)\n")
            throw ExitCode.failure
        } catch {
            await sync.shutdown()
            throw error
        }
        await sync.shutdown()
    }

    private static func describe(_ report: GraphSyncReport) {
        let seconds = report.duration.inSeconds
        StandardError.write(
            "read \(report.policies) policies, \(report.groups) groups assigned (\(report.groupsRead) member listings read\(report.incremental ? ", by delta" : "")), \(report.accounts) accounts in \(report.statistics.requests) requests (\(report.statistics.pages) pages, \(report.statistics.throttled) throttled) in \(String(format: "%.1f", seconds)) s\n"
        )
        for warning in report.warnings { StandardError.write("warning: \(warning)\n") }
    }
}
