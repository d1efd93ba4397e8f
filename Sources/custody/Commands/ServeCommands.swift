import ArgumentParser
import Custody
import CustodyPolicy
import CustodyStore
import CustodyGraph
import CustodyServer
import Foundation
import Logging
import ServiceLifecycle

/// `custody serve`: the decision service.
struct ServeCommand: AsyncParsableCommand, StateCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the decision service: decisions, policy, events and protection over HTTP.",
        discussion: """
            Serves the installation in --state over HTTP (Hummingbird 2): POST /v1/decisions, \
            /v1/decisions/batch and /v1/launch (conditional launch), GET /v1/accounts/{account}/policy and /configuration, GET and \
            PUT /v1/bundle, GET /v1/events (Server-Sent Events), POST /v1/protect and \
            /v1/unprotect, POST /v1/accounts/{account}/wipe and /keys/rotate, GET /healthz, \
            /readyz, /metrics (Prometheus) and /openapi.json. Every /v1 route needs a bearer \
            token with its scope (`custody tokens create`).

            With --config FILE, options are also read from FILE, a JSON object whose keys are the \
            long options without their dashes ({"listen": "0.0.0.0:8080", "bundle": \
            "/etc/custody/bundle", "allowed-host": ["custody.example.com"], "without-keys": \
            false}); an option given on the command line wins over the file's, and a key that \
            is no option is refused with its line (docs/operations.md).

            With --bundle, that directory is applied at start and whenever it changes (a broken \
            edit is rejected and the policy in force stays); without it, the directory the \
            bundle in force came from is watched, if any, and the watch follows the bundle in \
            force (applied from another directory: that one; rolled back or PUT: none). On a \
            state shared by replicas, --bundle \
            at start replaces the bundle in force for every replica, even one put in force since \
            (PUT /v1/bundle, another replica): a warning names the revision it replaced. With no bundle in force, decisions are \
            refused with 503 until one is applied (PUT /v1/bundle, or custody apply).

            With --graph FILE (a JSON object: tenantId, clientId, clientSecretFile or \
            certificate and privateKey, cloud, authority, graphUrl, tenantOverlay, signingKey, \
            intervalSeconds; see docs/graph.md), the policy is synced from Microsoft Graph at \
            start, every --graph-interval seconds (default: the file's intervalSeconds, else 300) \
            and on POST /v1/graph/sync (admin), as custody graph sync --state does. A failed sync \
            keeps the policy in force; /readyz, /metrics and the event stream (policySynced) say \
            how each went. On a state shared by replicas, one syncs at a time.

            Listens on 127.0.0.1:8080 by default (--listen HOST:PORT, or --unix-socket PATH), or \
            on the sockets systemd passes (socket activation: LISTEN_FDS, custody.socket); \
            TLS with --tls-certificate and --tls-key, and client certificates with \
            --tls-client-ca. Under systemd (Type=notify) it says READY=1 once it listens with a \
            policy in force, with the revision in STATUS=, and feeds the watchdog when \
            WatchdogSec= is set. SIGHUP reads the policy again (the bundle directory applied \
            now, or a sync from Graph): a refused reload leaves the policy in force. Stops \
            gracefully on SIGTERM or SIGINT: requests in flight finish, event streams end with \
            a shutdown event.
            """
    )

    @Option(
        help: ArgumentHelp(
            "Read options from this JSON file (keys are the long options without --); options given here win.",
            valueName: "file"))
    var config: String?

    @Option(
        name: .long, help: ArgumentHelp("A bundle directory to apply now and whenever it changes.", valueName: "dir"))
    var bundle: String?

    @Option(
        help: ArgumentHelp(
            "Sync the policy from Microsoft Graph with the settings in this JSON file.", valueName: "file"))
    var graph: String?

    @Option(
        name: .customLong("graph-interval"),
        help: ArgumentHelp("Seconds between syncs from Graph (10 to 86400; default 300).", valueName: "seconds"))
    var graphInterval: Int?

    @OptionGroup var contextOptions: ContextOptions
    @OptionGroup var stateOptions: StateOptions
    @OptionGroup var masterKeyOptions: MasterKeyOptions

    @Option(
        help: ArgumentHelp(
            "Where to listen: HOST:PORT (default 127.0.0.1:8080; [::1]:8080 for IPv6; port 0 takes a free one, announced on stderr).",
            valueName: "host:port"))
    var listen: String?

    @Option(help: ArgumentHelp("Listen on this Unix domain socket instead.", valueName: "path"))
    var unixSocket: String?

    @Option(help: ArgumentHelp("TLS certificate chain (PEM).", valueName: "file"))
    var tlsCertificate: String?

    @Option(help: ArgumentHelp("TLS private key (PEM).", valueName: "file"))
    var tlsKey: String?

    @Option(help: ArgumentHelp("Require client certificates signed by this CA (PEM).", valueName: "file"))
    var tlsClientCa: String?

    @Option(help: ArgumentHelp("Largest request body, in bytes.", valueName: "bytes"))
    var maxBody = CustodyServerConfiguration.Limits().bodyBytes

    @Option(help: ArgumentHelp("Most queries in one batch request.", valueName: "n"))
    var maxBatch = CustodyServerConfiguration.Limits().batchQueries

    @Option(
        help: ArgumentHelp(
            "How long a request body may take to arrive, in seconds; a slower one is cut with 408.",
            valueName: "seconds"))
    var bodyTimeout = Int(CustodyServerConfiguration.Limits().bodyTimeout.components.seconds)

    @Option(
        help: ArgumentHelp(
            "How long a request head may take to arrive, in seconds (from the connection's opening, or a request's first byte); a slower one is cut with 408.",
            valueName: "seconds"))
    var headerTimeout = Int(CustodyServerConfiguration.Limits().headerTimeout.components.seconds)

    @Option(
        help: ArgumentHelp(
            "Most connections open at once; one more is answered 503 and closed. Default: 10000, or the open-file limit less 256 when lower.",
            valueName: "n"))
    var maxConnections: Int?

    @Option(
        help: ArgumentHelp(
            "Announce (replicaBehind) a replica still running another revision this many seconds after the newest was applied.",
            valueName: "seconds"))
    var fleetBehindAfter = Int(CustodyServerConfiguration.Limits.fleetBehindAfterDefault.components.seconds)

    @Option(
        help: ArgumentHelp(
            "A host name requests may name in Host (repeatable; * for any). Loopback names and the listen address are allowed already; a request naming another is answered 421 (DNS rebinding). On a wildcard address (0.0.0.0, ::) or a Unix socket, any name is allowed unless one is given.",
            valueName: "name"))
    var allowedHost: [String] = []

    @Option(
        help: ArgumentHelp(
            "Export traces over OTLP/HTTP to this collector (its base URL, such as http://127.0.0.1:4318; spans go to /v1/traces): a span per request, continuing the caller's W3C traceparent, per decision, per PostgreSQL call and per Microsoft Graph request. Protobuf encoding. Off by default. The OTEL_* variables (OTEL_SERVICE_NAME, OTEL_EXPORTER_OTLP_HEADERS, OTEL_TRACES_SAMPLER …) apply.",
            valueName: "url"))
    var otelEndpoint: String?

    @Option(
        help: ArgumentHelp(
            "Delete audit log entries older than this age (30d, 12h, 2w; 1h to 36600d), at start and every hour; each deletion is itself an entry. Default: keep every entry.",
            valueName: "age"))
    var auditRetention: String?

    @OptionGroup var historyOptions: BundleHistoryOptions

    @Flag(help: "Serve without a master key: protect, unprotect, rotation and secrets answer 503.")
    var withoutKeys = false

    @Flag(help: "Print the OpenAPI document the service serves, and exit.")
    var printOpenapi = false

    @OptionGroup var loggingOptions: LoggingOptions

    func validate() throws {
        if listen != nil && unixSocket != nil { throw ValidationError("--listen and --unix-socket exclude each other") }
        if (tlsCertificate == nil) != (tlsKey == nil) {
            throw ValidationError("--tls-certificate and --tls-key go together")
        }
        if tlsClientCa != nil && tlsCertificate == nil {
            throw ValidationError("--tls-client-ca needs --tls-certificate and --tls-key")
        }
        if maxBody < 1 || maxBatch < 1 { throw ValidationError("--max-body and --max-batch must be positive") }
        if bodyTimeout < 1 { throw ValidationError("--body-timeout must be at least 1 second") }
        if !(1...3_600).contains(headerTimeout) {
            throw ValidationError("--header-timeout must be between 1 and 3600 seconds")
        }
        if let maxConnections, maxConnections < 1 { throw ValidationError("--max-connections must be positive") }
        if !(5...86_400).contains(fleetBehindAfter) {
            throw ValidationError("--fleet-behind-after must be between 5 and 86400 seconds")
        }
        if let listen { _ = try Self.parse(listen) }
        if let auditRetention { _ = try retentionAge(auditRetention, option: "--audit-retention") }
        if let otelEndpoint {
            _ = try TraceExport.tracesURL(otelEndpoint)
            if !TraceExport.isDisabled(in: ProcessInfo.processInfo.environment) {
                try TraceExport.checkEnvironment(ProcessInfo.processInfo.environment)
            }
        }
        if graph != nil && bundle != nil {
            throw ValidationError(
                "--graph and --bundle exclude each other: the policy comes from the tenant or from a directory")
        }
        if let graphInterval {
            guard graph != nil else { throw ValidationError("--graph-interval needs --graph FILE") }
            guard (10...86_400).contains(graphInterval) else {
                throw ValidationError("--graph-interval must be between 10 and 86400 seconds")
            }
        }
    }

    func run() async throws {
        if let config {
            // The file's options, then the command line's (which win), parsed as one command line.
            let file: ServeConfigurationFile
            do {
                file = try ServeConfigurationFile(path: config)
            } catch {
                StandardError.write("error: \(error)\n")
                throw ExitCode.failure
            }
            let commandLine = Array(CommandLine.arguments.drop { $0 != Self.configuration.commandName }.dropFirst())
            var merged: ServeCommand
            do {
                merged = try Self.parse(file.arguments(before: commandLine))
            } catch {
                StandardError.write(
                    "error: \(file.located(error) ?? "with --config \(config): \(Self.message(for: error))")\n")
                throw ExitCode.validationFailure
            }
            merged.config = nil
            try await merged.run()
            return
        }
        if printOpenapi {
            StandardOutput.write(CustodyServerConfiguration.openAPIDocument)
            return
        }
        let logger = loggingOptions.makeLogger()
        // Sockets systemd passed (custody.socket) are read first, and their variables removed,
        // so that nothing this process starts takes them for its own.
        let passedSockets: [PassedSocket]?
        do {
            passedSockets = try SocketActivation.passedSockets()
        } catch {
            StandardError.write("error: \(error)\n")
            throw ExitCode.failure
        }
        if let passedSockets, listen != nil || unixSocket != nil {
            StandardError.write(
                "error: systemd passed \(passedSockets.count) listening socket(s) (\(passedSockets.map(\.description).joined(separator: ", "))): they are where the service listens; remove --listen and --unix-socket\n"
            )
            throw ExitCode.failure
        }
        if passedSockets == nil, let count = ProcessInfo.processInfo.environment["LISTEN_FDS"] {
            // sd_listen_fds(3): sockets meant for another process are not this one's; said, since
            // the service then listens where its options say instead.
            StandardError.write(
                "warning: LISTEN_FDS=\(count) is set, but LISTEN_PID names another process (or none): those sockets are not this process's; listening on \(unixSocket.map { "unix:\($0)" } ?? listen ?? "127.0.0.1:8080")\n"
            )
        }
        let notifier = ServiceNotifier()
        // Before the state is opened and the Graph client made: both take the tracer then.
        var traceExport: (any Service)?
        if let otelEndpoint {
            if TraceExport.isDisabled(in: ProcessInfo.processInfo.environment) {
                logger.notice("OTEL_SDK_DISABLED=true: serving untraced, --otel-endpoint set aside")
            } else {
                traceExport = try TraceExport.start(endpoint: otelEndpoint, logger: logger)
            }
        }
        // Read before anything is opened: a configuration that does not hold stops here.
        let graphConfiguration: GraphConfiguration?
        do {
            graphConfiguration = try graph.map { path throws(GraphError) in try GraphConfiguration.load(file: path) }
        } catch {
            StandardError.write("error: --graph: \(error)\n")
            throw ExitCode.failure
        }
        let masterKey = withoutKeys ? nil : try masterKeyOptions.source()
        var engineConfiguration = CustodyConfiguration(
            state: stateOptions.opened(CustodyConfiguration.State.path), masterKey: masterKey,
            context: contextOptions.context, logger: logger)
        engineConfiguration.retainedBundles = historyOptions.bundleHistory
        let engine = try await CustodyEngine.open(engineConfiguration)
        if let bundle { try await Self.apply(bundle, to: engine) }
        var configuration = CustodyServerConfiguration(bundleDirectory: bundle)
        if let passedSockets {
            configuration.listen = .passed(passedSockets)
        } else if let unixSocket {
            configuration.listen = .unixSocket(path: unixSocket)
        } else if let listen {
            let (host, port) = try Self.parse(listen)
            configuration.listen = .tcp(host: host, port: port)
        }
        configuration.hostCheck = HostCheck(listen: configuration.listen, allowing: allowedHost)
        if let tlsCertificate, let tlsKey {
            configuration.tls = .init(
                certificateChain: tlsCertificate, privateKey: tlsKey, clientCertificateAuthority: tlsClientCa)
        }
        configuration.limits.bodyBytes = maxBody
        configuration.limits.batchQueries = maxBatch
        configuration.limits.bodyTimeout = .seconds(bodyTimeout)
        configuration.limits.headerTimeout = .seconds(headerTimeout)
        configuration.limits.maxConnections = maxConnections
        configuration.fleetBehindAfter = .seconds(fleetBehindAfter)
        configuration.tracing = traceExport != nil
        configuration.auditRetention = try auditRetention.map { try retentionAge($0, option: "--audit-retention") }
        let scheme = configuration.tls == nil ? "http" : "https"
        var runner: GraphSyncRunner?
        if let graphConfiguration {
            do {
                let sync = try GraphSync(
                    settings: graphConfiguration.settings, overlay: graphConfiguration.overlay,
                    signingKey: graphConfiguration.signingKey, logger: Logger(label: "custody.graph"))
                runner = GraphSyncRunner(sync: sync, engine: engine)
            } catch {
                StandardError.write("error: --graph: \(error)\n")
                throw ExitCode.failure
            }
            configuration.graphInterval = .seconds(
                graphInterval ?? graphConfiguration.interval.map { Int($0.components.seconds) } ?? 300)
        }
        do {
            try await runService(
                configuration: configuration, engine: engine, graph: runner, notifier: notifier,
                services: traceExport.map { [$0] } ?? [], logger: logger
            ) {
                address in
                StandardError.write(
                    "custody serve: \(scheme) on \(address), revision \(engine.bundleInForce?.revision ?? "none")\n")
            }
        } catch let error as ListenError {
            await runner?.sync.shutdown()
            StandardError.write("error: \(error)\n")
            throw ExitCode.failure
        } catch {
            await runner?.sync.shutdown()
            throw error
        }
        await runner?.sync.shutdown()
    }

    static func parse(_ listen: String) throws -> (String, Int) {
        guard let colon = listen.lastIndex(of: ":"), let port = Int(listen[listen.index(after: colon)...]),
            (0...65_535).contains(port)
        else {
            throw ValidationError("--listen must be HOST:PORT, such as 127.0.0.1:8080 or [::1]:8080")
        }
        var host = String(listen[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { throw ValidationError("--listen must name a host, such as 127.0.0.1:8080") }
        return (host, port)
    }
}

/// `custody tokens`: the service's bearer tokens.
struct TokensCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tokens",
        abstract: "Create, list, rotate and revoke the decision service's bearer tokens.",
        subcommands: [Create.self, List.self, Rotate.self, Revoke.self]
    )

    /// When a token expires, as `--expires` gives it: a lifetime from now (`30d`, `12h`, `90m`,
    /// `3600s`) or an instant (`2027-01-01T00:00:00Z`, ISO 8601 with its offset).
    static func expiry(_ text: String, option: String, now: Date = Date()) throws -> Date {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3_600, "d": 86_400, "w": 604_800]
        let longest = CustodyEngine.longestTokenLifetime
        if let unit = text.last.flatMap({ units[$0] }), let count = Int(text.dropLast()), count > 0,
            text.dropLast().allSatisfy(\.isASCII)
        {
            guard Double(count) * unit <= longest else {
                throw ValidationError("\(option) \(text) is more than ten years: give at most 3660d")
            }
            return now.addingTimeInterval(Double(count) * unit)
        }
        if let date = try? Date(text, strategy: .iso8601) {
            guard date > now else { throw ValidationError("\(option) \(text) has passed: give a later time") }
            guard date.timeIntervalSince(now) <= longest else {
                throw ValidationError("\(option) \(text) is more than ten years away")
            }
            return date
        }
        throw ValidationError(
            "\(option) takes a lifetime (30d, 12h, 90m, 3600s, 2w) or a time with its offset (2027-01-01T00:00:00Z), not '\(text)'"
        )
    }

    struct Create: AsyncParsableCommand, StateCommand {
        static let configuration = CommandConfiguration(
            commandName: "create",
            abstract: "Create a token with the given scopes; the token is printed once, alone on the last line.",
            discussion: """
                Scopes: decide (POST /v1/decisions, /v1/launch), read (policies, configuration, the bundle), \
                events (GET /v1/events), protect (protect, unprotect), admin (everything, and \
                wipes, key rotation, PUT /v1/bundle). The state keeps only a hash of the token's \
                secret part; lose the token and create another. Creation is audited (by id). A token \
                that cannot be written out (a full disk, a closed pipe) is revoked at once, and the \
                command exits 1. With --json, standard output is one JSON object: the token's id, \
                name, scopes and creation time, and the bearer token.
                """
        )

        @Flag(help: "Print the token and its record as one JSON object.")
        var json = false

        @Option(help: ArgumentHelp("A scope (repeatable): decide, read, events, protect, admin.", valueName: "scope"))
        var scope: [String]

        @Option(help: ArgumentHelp("What the token is for, shown in lists.", valueName: "name"))
        var name: String?

        @Option(
            help: ArgumentHelp(
                "When it stops being valid: a lifetime (30d, 12h, 90m) or a time (2027-01-01T00:00:00Z). Default: never.",
                valueName: "when"))
        var expires: String?

        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var loggingOptions: LoggingOptions

        func validate() throws {
            if let expires { _ = try TokensCommand.expiry(expires, option: "--expires") }
            guard !scope.isEmpty else {
                throw ValidationError("give at least one --scope (decide, read, events, protect, admin)")
            }
            for scope in scope where TokenScope(rawValue: scope) == nil {
                throw ValidationError(
                    "unknown scope '\(scope)' (one of: \(TokenScope.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
        }

        func run() async throws {
            let engine = try await openEngine(
                state: stateOptions, logging: loggingOptions, access: .readWrite, restoring: false)
            let scopes = Set(scope.compactMap(TokenScope.init(rawValue:)))
            let created = try await engine.createToken(
                scopes: scopes, name: name,
                expires: try expires.map { try TokensCommand.expiry($0, option: "--expires") })
            let token = created.token
            StandardError.write(
                "created token \(token.id) (\(token.scopes.sorted().map(\.rawValue).joined(separator: " "))\(token.expires.map { ", expires \(formatTime($0))" } ?? "")); it is shown once:\n"
            )
            try await TokensCommand.deliver(created, json: json, engine: engine)
        }
    }

    /// Writes a token just made to standard output; one that cannot be written out (a full
    /// disk, a closed pipe) must not stay valid with nobody holding it: it is revoked, and said.
    static func deliver(_ created: CreatedToken, json: Bool, engine: CustodyEngine) async throws {
        let token = created.token
        let output = json ? String(decoding: try JSONLine.encode(created), as: UTF8.self) : created.bearer + "\n"
        guard let failure = StandardOutput.attemptWrite(output) else { return }
        let revoked = await (try? engine.revokeToken(id: token.id)) == true
        StandardError.write(
            "error: \(failure); "
                + (revoked
                    ? "token \(token.id) was revoked, since nobody received it\n"
                    : "token \(token.id) could not be revoked: revoke it with custody tokens revoke \(token.id)\n"))
        throw ExitCode.failure
    }

    struct Rotate: AsyncParsableCommand, StateCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate",
            abstract: "Issue a successor to a token, and keep the old one valid for an overlap.",
            discussion: """
                The successor has the token's scopes and name, and lives as long as the token was \
                made to (from now; --expires sets another expiry). The old token stays valid for \
                --overlap (default 1h), or until it expired anyway when that is sooner, so that its \
                holders can move to the successor; then it is refused with 401 token-expired. \
                Audited. The successor is printed once, alone on the last line (with --json, one \
                JSON object); stderr says when the old token stops being valid.
                """)

        @Argument(help: ArgumentHelp("The token's id (as `tokens list` shows it).", valueName: "id"))
        var id: String

        @Option(
            help: ArgumentHelp(
                "How long the old token stays valid: 30m, 1h, 7d; 0s ends it now.", valueName: "lifetime"))
        var overlap = "1h"

        @Option(
            help: ArgumentHelp(
                "When the successor stops being valid: a lifetime (30d) or a time (2027-01-01T00:00:00Z).",
                valueName: "when"))
        var expires: String?

        @Flag(help: "Print the successor and its record as one JSON object.")
        var json = false

        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var loggingOptions: LoggingOptions

        func validate() throws {
            _ = try overlapDuration
            if let expires { _ = try TokensCommand.expiry(expires, option: "--expires") }
        }

        var overlapDuration: Duration {
            get throws {
                if overlap == "0s" || overlap == "0" { return .zero }
                let now = Date()
                let until = try TokensCommand.expiry(overlap, option: "--overlap", now: now)
                return .seconds(Int64(until.timeIntervalSince(now).rounded()))
            }
        }

        func run() async throws {
            let engine = try await openEngine(
                state: stateOptions, logging: loggingOptions, access: .existing, restoring: false)
            let rotated = try await engine.rotateToken(
                id: id, overlap: try overlapDuration,
                expires: try expires.map { try TokensCommand.expiry($0, option: "--expires") })
            let successor = rotated.successor.token
            StandardError.write(
                "token \(id) is valid until \(formatTime(rotated.predecessorExpires)); its successor \(successor.id)\(successor.expires.map { " expires \(formatTime($0))" } ?? " does not expire") and is shown once:\n"
            )
            try await TokensCommand.deliver(rotated.successor, json: json, engine: engine)
        }
    }

    struct List: AsyncParsableCommand, StateCommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract:
                "List tokens: id, scopes, name, created, status (valid, revoked, expired), expiry, last use. Never the tokens themselves."
        )

        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var loggingOptions: LoggingOptions

        func run() async throws {
            let engine = try await openEngine(
                state: stateOptions, logging: loggingOptions, access: .existing, restoring: false)
            let now = Date()
            for token in try await engine.tokens() {
                let scopes = token.scopes.sorted().map(\.rawValue).joined(separator: " ")
                let status =
                    token.revoked.map { "revoked \(formatTime($0))" }
                    ?? (token.isExpired(at: now) ? "expired \(formatTime(token.expires!))" : "valid")
                let expiry = token.expires.map { "expires \(formatTime($0))" } ?? "no expiry"
                let used = token.lastUsed.map { "last used \(formatTime($0))" } ?? "never used"
                StandardOutput.write(
                    "\(token.id)\t\(scopes)\t\((token.name ?? "-").escapingControlCharacters)\tcreated \(formatTime(token.created))\t\(status)\t\(expiry)\t\(used)\n"
                )
            }
        }
    }

    struct Revoke: AsyncParsableCommand, StateCommand {
        static let configuration = CommandConfiguration(
            commandName: "revoke",
            abstract: "Revoke a token by id; services on this state refuse it within a second.")

        @Argument(help: ArgumentHelp("The token's id (as `tokens list` shows it).", valueName: "id"))
        var id: String

        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var loggingOptions: LoggingOptions

        func run() async throws {
            let engine = try await openEngine(
                state: stateOptions, logging: loggingOptions, access: .existing, restoring: false)
            guard try await engine.revokeToken(id: id)
            else {
                StandardError.write("error: no valid token \(id)\n")
                throw ExitCode.failure
            }
            StandardOutput.write("revoked \(id)\n")
        }
    }
}

extension ServeCommand {
    /// Puts `--bundle`'s directory in force on the state the service starts with. Refused by the
    /// state's rules (unsigned, replayed after a rollback, frozen) while a policy is in force:
    /// that policy stays and the service starts with it, as a running one would have kept it
    /// (/readyz warns of the refusal). Put in force over another: said loudly, since every
    /// replica on this state follows it, whatever was put in force since this directory was
    /// last applied.
    static func apply(_ bundle: String, to engine: CustodyEngine) async throws(CustodyError) {
        let before = engine.bundleInForce
        let result: CustodyEngine.ApplyResult
        do {
            result = try await engine.apply(
                bundleDirectory: bundle, provenance: BundleProvenance(appliedBy: "serve --bundle"))
        } catch {
            guard error.code == .untrusted, let before else { throw error }
            StandardError.write(
                "warning: --bundle \(bundle) is refused, the policy in force (revision \(before.revision)) stays: \(error.diagnostics.first?.message ?? error.message)\n"
            )
            return
        }
        if let before, !result.unchanged {
            StandardError.write(
                "warning: --bundle \(bundle) (revision \(result.bundle.revision)) replaced the bundle in force on this state, revision \(before.revision) from \(before.source)\(before.appliedAt.map { ", applied \(formatTime($0))" } ?? ""); every replica on this state now decides with it\n"
            )
        }
    }
}
