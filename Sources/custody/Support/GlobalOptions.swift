public import ArgumentParser
import CustodyPolicy
public import Logging

/// The evaluation context: platform, app and management level.
struct ContextOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Evaluate for this platform only; by default iOS and Android policies both apply.", valueName: "ios|android"))
    var platform: Platform?

    @Option(name: .customLong("app"), help: ArgumentHelp("The evaluating app's bundle or package id; policies whose app lists omit it do not apply.", valueName: "id"))
    var appID: String?

    @Option(help: ArgumentHelp("The device's management state (unmanaged, mdm, androidEnterprise, ...), matched against targetedAppManagementLevels.", valueName: "level"))
    var managementLevel: AppManagementLevel?

    var context: EvaluationContext {
        EvaluationContext(platform: platform, appID: appID, managementLevel: managementLevel)
    }
}

/// Options every command that evaluates a bundle takes.
struct BundleOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The policy bundle directory (tenant.json plus Graph JSON exports).", valueName: "dir"))
    var bundle: String

    @OptionGroup var contextOptions: ContextOptions

    /// Loads and resolves the bundle, or prints its diagnostics and exits 1.
    func loadSnapshot(logger: Logger) throws -> PolicySnapshot {
        try loadPolicySnapshot(bundle, context: contextOptions.context, logger: logger)
    }
}

/// A bundle for commands that can do without one (without it, only an explicit request encrypts).
struct OptionalBundleOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("A policy bundle: its policy decides whose data must be encrypted, and its tenant names accounts by OID.", valueName: "dir"))
    var bundle: String?

    @OptionGroup var contextOptions: ContextOptions

    func loadSnapshot(logger: Logger) throws -> PolicySnapshot? {
        try bundle.map { try loadPolicySnapshot($0, context: contextOptions.context, logger: logger) }
    }
}

/// Loads and resolves a bundle, or prints its diagnostics and exits 1.
func loadPolicySnapshot(_ path: String, context: EvaluationContext, logger: Logger) throws -> PolicySnapshot {
    PolicySnapshot(bundle: try loadPolicyBundle(path), context: context, logger: logger)
}

/// Loads a bundle, or prints its diagnostics and exits 1.
func loadPolicyBundle(_ path: String) throws -> PolicyBundle {
    do {
        return try PolicyBundle.load(path: path)
    } catch {
        StandardError.write(lines: error.diagnostics.map(\.description))
        throw ExitCode.failure
    }
}

/// Log verbosity, for commands that log.
struct LoggingOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Log level on standard error: trace, debug, info, notice, warning, error, critical.", valueName: "level"))
    var logLevel: Logger.Level = .warning

    func makeLogger() -> Logger {
        let level = logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        return Logger(label: "custody")
    }
}

extension Platform: ExpressibleByArgument {}
extension AppManagementLevel: ExpressibleByArgument {}
extension AppSpec.ValueType: ExpressibleByArgument {}
extension Logger.Level: @retroactive ExpressibleByArgument {}
extension DecisionStream.Format: ExpressibleByArgument {}
