public import ArgumentParser
import Custody
import CustodyGraph
import CustodyPolicy
import CustodyProtection
import CustodyStore
import Foundation
public import Logging
#if OpenTelemetry
    import OTel
#endif

/// The evaluation context: platform, app and management level.
struct ContextOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Evaluate for this platform: its policies and the default policy apply. Needed when the bundle holds policies of more than one platform, unless `custody apply` recorded one for the state.",
            valueName: "ios|android|windows"))
    var platform: Platform?

    @Option(
        name: .customLong("app"),
        help: ArgumentHelp(
            "The evaluating app's bundle or package id; policies whose app lists omit it do not apply.", valueName: "id"
        ))
    var appID: String?

    @Option(
        help: ArgumentHelp(
            "The device's management state (unmanaged, mdm, androidEnterprise, ...), matched against targetedAppManagementLevels.",
            valueName: "level"))
    var managementLevel: AppManagementLevel?

    @Option(
        help: ArgumentHelp(
            "How several policies reaching one account combine: mostRestrictive (every one merges, the default) or incumbent (the first to reach the account stays applied; later ones are set aside).",
            valueName: "rule"))
    var precedence: PolicyPrecedence.Rule?

    var context: EvaluationContext {
        EvaluationContext(platform: platform, appID: appID, managementLevel: managementLevel)
    }
}

extension PolicyPrecedence.Rule: ExpressibleByArgument {}

/// Where the installation's state is, and the one-off bundle override: what every command
/// that opens the engine takes.
struct StateOptions: ParsableArguments {
    @Option(
        name: .customLong("state"),
        help: ArgumentHelp(
            "Custody's state: a SQLite database file, a directory holding state.sqlite, or a PostgreSQL URL (postgres://USER@HOST:PORT/DATABASE?schema=NAME) that a fleet of replicas shares. It keeps the bundle in force, keys, secrets, check-ins, tokens and the audit log. Default: $CUSTODY_STATE_URL, else .custody/state.sqlite.",
            valueName: "path-or-url"))
    var stateArgument: String?

    /// `--state`, else `CUSTODY_STATE_URL`, else the default SQLite file.
    var state: String {
        if let stateArgument { return stateArgument }
        if let url = ProcessInfo.processInfo.environment["CUSTODY_STATE_URL"], !url.isEmpty { return url }
        return ".custody/state.sqlite"
    }

    func validate() throws {
        try refuseEmptyPath(stateArgument, named: "--state", give: "a SQLite file, a directory, or a postgres:// URL")
    }

    /// The state, opened as `path` says when it is a SQLite path.
    func opened(_ path: (String) -> CustodyConfiguration.State) -> CustodyConfiguration.State {
        .named(state, path)
    }
}

/// How much bundle history the state keeps, for commands that apply bundles.
struct BundleHistoryOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "How many applied bundle history entries the state keeps, newest first, and as many refused ones (counted apart, so refusals never push out a rollback target); the bundle in force is always kept, and each revision's files are stored once.",
            valueName: "n"))
    var bundleHistory = BundleRecord.defaultRetained

    func validate() throws {
        if bundleHistory < 1 { throw ValidationError("--bundle-history must be at least 1") }
    }
}

/// The policy a command decides with: the bundle in force in the state, or `--bundle`.
struct PolicyOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Decide with this bundle directory for this command only, instead of the bundle in force (which `custody apply` sets); nothing is recorded.",
            valueName: "dir"))
    var bundle: String?

    @OptionGroup var contextOptions: ContextOptions

    func validate() throws {
        try refuseEmptyPath(bundle, named: "--bundle", give: "the bundle directory")
    }
}

/// Where the master key comes from, for commands that need account keys.
struct MasterKeyOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "The master key file (32 bytes, raw, hex or base64; created with mode 0600 on first use). Default: CUSTODY_MASTER_KEY_FILE, else the passphrase in CUSTODY_PASSPHRASE.",
            valueName: "file"))
    var masterKeyFile: String?

    /// The configured source when there is one and it exists (a key file is not created: for
    /// commands that only verify), else nil.
    var sourceIfPresent: MasterKeySource? {
        guard let source = try? MasterKeySource.configured(keyFile: masterKeyFile) else { return nil }
        if case .keyFile(let path) = source, !FileManager.default.fileExists(atPath: path) { return nil }
        return source
    }

    /// The configured source, or a message and exit 1.
    func source() throws -> MasterKeySource {
        do {
            return try MasterKeySource.configured(keyFile: masterKeyFile)
        } catch {
            StandardError.write("error: \(error)\n")
            throw ExitCode.failure
        }
    }
}

/// Log verbosity and format, for commands that log.
struct LoggingOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Log level on standard error: trace, debug, info, notice, warning, error, critical.", valueName: "level"))
    var logLevel: Logger.Level = .warning

    @Option(
        help: ArgumentHelp(
            "Log lines as text (escaped: a control character is shown as \\u{…}) or json (one object a line, with trace_id and span_id inside a traced request).",
            valueName: "format"))
    var logFormat: LogFormat = .text

    enum LogFormat: String, ExpressibleByArgument, CaseIterable, Sendable {
        case text, json
    }

    /// Sets up the process's logging (once) and returns its logger. Each line carries the
    /// trace and span of the traced request or call it was written in, when tracing is on
    /// (`serve --otel-endpoint`): OpenTelemetry's metadata provider reads them from the task.
    func makeLogger() -> Logger {
        let (level, format) = (logLevel, logFormat)
        LoggingSystem.bootstrap(
            { label, provider in
                switch format {
                case .text:
                    var handler = EscapingLogHandler(
                        wrapped: StreamLogHandler.standardError(label: label, metadataProvider: provider))
                    handler.logLevel = level
                    return handler
                case .json:
                    var handler = JSONLogHandler(label: label, metadataProvider: provider)
                    handler.logLevel = level
                    return handler
                }
            }, metadataProvider: TraceExport.loggingMetadataProvider)
        return Logger(label: "custody")
    }
}

/// How a command opens the installation.
enum StateAccess {
    /// The command writes: the state is created when missing.
    case readWrite
    /// The command only reads: a missing state is not created (it is empty).
    case readOnly
    /// The command acts on what the state holds: a missing state is an error.
    case existing
    /// The command only reads what the state holds: a missing state is an error, and the
    /// database is opened read-only, so it is left byte for byte as it was (and a state on
    /// read-only storage serves it).
    case reading
}

/// Refuses a path option or argument given as "" (no file has that name): a usage error that
/// names it and what to give, exit 64, before anything is read or written.
func refuseEmptyPath(_ value: String?, named name: String, give what: String = "a path") throws {
    if value?.isEmpty == true { throw ValidationError("\(name) is empty: give \(what)") }
}

/// Opens the installation for a command. Why it cannot is a `CustodyError`, which `custody`'s
/// `main` reports.
/// - Parameter serving: the engine serves requests for a long time (`custody serve`): its
///   state is opened for writing at once; a command's is opened for writing on its first
///   write, so a command refused before it writes leaves the state file as it was.
func openEngine(
    state: StateOptions, policy: PolicyOptions? = nil, masterKey: MasterKeyOptions? = nil,
    masterKeyIfPresent: MasterKeyOptions? = nil,
    logging: LoggingOptions, access: StateAccess, context: EvaluationContext? = nil,
    precedence: PolicyPrecedence.Rule? = nil, restoring: Bool = true,
    serving: Bool = false, history: BundleHistoryOptions? = nil
) async throws -> CustodyEngine {
    let opened: CustodyConfiguration.State =
        switch access {
        case .readWrite: state.opened(CustodyConfiguration.State.path)
        case .readOnly: state.opened(CustodyConfiguration.State.existingPath)
        case .existing: state.opened(CustodyConfiguration.State.requiredPath)
        case .reading: state.opened(CustodyConfiguration.State.readOnlyPath)
        }
    var configuration = CustodyConfiguration(
        state: opened,
        masterKey: try masterKey?.source() ?? masterKeyIfPresent?.sourceIfPresent,
        context: context ?? policy?.contextOptions.context ?? EvaluationContext(),
        precedence: precedence ?? policy?.contextOptions.precedence,
        bundleOverride: policy?.bundle,
        restoresBundleInForce: restoring, logger: logging.makeLogger())
    configuration.defersStateWrites = !serving
    if let history { configuration.retainedBundles = history.bundleHistory }
    return try await CustodyEngine.open(configuration)
}

/// A command that opens the installation's state: when it fails with a `CustodyError`, `main`
/// names that state in what it prints (`report(_:state:)`).
protocol StateCommand {
    var stateOptions: StateOptions { get }
}

/// Prints a `CustodyError` as `error: message` and its diagnostics, one per line. With no policy
/// in force, it names the state and both ways to give one. What every command's `CustodyError`
/// comes to: `main` catches it, prints it with this and exits 1 (no command catches it to print
/// it); `custody receive` also prints each file's as it goes.
func report(_ error: CustodyError, state: StateOptions? = nil) {
    if error.code == .noPolicy {
        StandardError.write(
            "error: \(error.message) (\(state?.state ?? "the state")). Apply one with `custody apply --bundle DIR`, or give --bundle DIR to use a bundle for this command alone.\n"
        )
    } else if error.code == .platform {
        StandardError.write("error: \(error.message): give --platform with one of them\n")
    } else {
        StandardError.write("error: \(error.message)\n")
        StandardError.write(lines: error.diagnostics.map(\.description))
    }
}

/// What `main` prints for an error a command let go, as `error: ...` with exit status 1: a
/// `CustodyError` (`report(_:state:)`), or one of the errors the libraries throw for what a
/// command reads or writes without the engine (a signing key, a bundle's files, a signature, a
/// secret), each of which says what and where. False for any other error, which is
/// ArgumentParser's to print (a usage error, an exit status).
func reported(_ error: any Error, by command: any ParsableCommand) -> Bool {
    switch error {
    case let error as CustodyError:
        report(error, state: (command as? any StateCommand)?.stateOptions)
    case is BundleTrustError, is BundleError, is ProtectionError, is SecretError:
        StandardError.write("error: \(error)\n")
    default:
        return false
    }
    return true
}

/// Loads a bundle named on the command line (for commands that compare or validate bundles
/// without deciding with them), or prints its diagnostics and exits 1.
func loadPolicyBundle(_ path: String) throws -> PolicyBundle {
    do {
        return try PolicyBundle.load(path: path)
    } catch {
        StandardError.write(lines: error.diagnostics.map(\.description))
        throw ExitCode.failure
    }
}

/// An account given on the command line.
func parseAccount(_ text: String, option: String) throws -> AccountID {
    do {
        return try AccountID(validating: text)
    } catch {
        throw ValidationError("\(option) must name an account (a UPN or an OID): \(error)")
    }
}

extension Platform: ExpressibleByArgument {}
extension AssertionAlgorithm: ExpressibleByArgument {}
extension AppManagementLevel: ExpressibleByArgument {}
extension AppSpec.ValueType: ExpressibleByArgument {}
extension Logger.Level: @retroactive ExpressibleByArgument {}
extension DecisionStream.Format: ExpressibleByArgument {}

/// How long the audit log keeps its entries: `30d`, `12h`, `2w`, `90m` (from an hour to 100
/// years).
/// - Throws: `ValidationError` naming `option`.
func retentionAge(_ text: String, option: String) throws -> Duration {
    guard let age = Age.parse(text), age >= .seconds(60) else {
        throw ValidationError("\(option) takes an age such as 30d, 12h, 2w or 90m (1h to 36600d), not '\(text)'")
    }
    guard age >= .seconds(3_600) else {
        throw ValidationError("\(option) \(text) is under an hour: entries are kept at least an hour")
    }
    return age
}
