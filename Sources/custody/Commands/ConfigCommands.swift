import ArgumentParser
import Custody
import CustodyPolicy
import Foundation

/// `custody config`: the app configuration a bundle delivers.
struct ConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Show the app configuration an account receives, or check a bundle against an app's spec.",
        subcommands: [Show.self, Validate.self]
    )

    /// `custody config show --bundle DIR --account A [--key K ...]`
    struct Show: AsyncParsableCommand, StateCommand {
        static let configuration = CommandConfiguration(
            commandName: "show",
            abstract: "Show the app configuration an account receives (targetedManagedAppConfiguration).",
            discussion: """
                Without --key: JSON with fullData (one object per contributing policy, targeted \
                ones by policy id, then the __IsDefault ones) and, per key, every value that \
                counts and whether targeted policies conflict. With --key: the resolved value \
                alone on one line; nothing and exit 1 when there is none. .any takes the first \
                value by policy id, so it is the same on every run; min and max compare strings \
                by code point and numbers by value; and and or combine booleans.

                An unmanaged account receives no configuration: `null`, or exit 1 with --key. The \
                policy is the bundle in force (see `custody apply`), or --bundle for this command \
                alone.
                """
        )

        @OptionGroup var policyOptions: PolicyOptions
        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var loggingOptions: LoggingOptions

        @Option(help: ArgumentHelp("The account: a UPN, or an OID in GUID form.", valueName: "account"))
        var account: String

        @Option(help: ArgumentHelp("Print only this key's resolved value.", valueName: "key"))
        var key: String?

        @Option(help: ArgumentHelp("How to read the value (with --key).", valueName: "string|integer|double|bool"))
        var type: AppSpec.ValueType = .string

        @Option(
            help: ArgumentHelp(
                "Which value among several (with --key): any, min or max; any, and or or for bool.", valueName: "query")
        )
        var query: String = "any"

        func validate() throws {
            if key == nil, type != .string || query != "any" {
                throw ValidationError("--type and --query need --key")
            }
            let valid =
                type == .bool
                ? AppConfiguration.BoolQuery.allCases.map(\.rawValue)
                : AppConfiguration.ValueQuery.allCases.map(\.rawValue)
            guard valid.contains(query) else {
                throw ValidationError("--query for a \(type.rawValue) must be one of: \(valid.joined(separator: ", "))")
            }
        }

        func run() async throws {
            let engine = try await openEngine(
                state: stateOptions, policy: policyOptions, logging: loggingOptions, access: .readOnly)
            let account = try parseAccount(account, option: "--account")
            let configuration = try engine.appConfigurationReport(for: account)
            guard let key else {
                StandardOutput.write(Self.json(configuration))
                return
            }
            guard let configuration, let value = Self.resolve(configuration, key: key, type: type, query: query) else {
                throw ExitCode.failure
            }
            StandardOutput.write(value + "\n")
        }

        static func resolve(_ configuration: AppConfiguration, key: String, type: AppSpec.ValueType, query: String)
            -> String?
        {
            let valueQuery = AppConfiguration.ValueQuery(rawValue: query) ?? .any
            switch type {
            case .string: return configuration.string(key, query: valueQuery)
            case .integer: return configuration.integer(key, query: valueQuery).map(String.init)
            case .double: return configuration.double(key, query: valueQuery).map { String($0) }
            case .bool:
                return configuration.bool(key, query: AppConfiguration.BoolQuery(rawValue: query) ?? .any).map(
                    String.init)
            }
        }

        static func json(_ configuration: AppConfiguration?) -> [UInt8] {
            ConfigurationReport.json(configuration)
        }
    }

    /// `custody config validate --spec FILE --bundle DIR`
    struct Validate: AsyncParsableCommand, StateCommand {
        static let configuration = CommandConfiguration(
            commandName: "validate",
            abstract: "Check a bundle's app configuration against an app's spec before rollout.",
            discussion: """
                Errors: a value the spec does not allow (type, allowed values, bounds, length), a \
                required setting some managed accounts would not receive. Warnings: a setting the \
                app does not read, conflicting values for one account. Prints one \
                file:line:column diagnostic per line, then a summary; exit 1 when there are errors. \
                The bundle is --bundle, or the bundle in force (see `custody apply`).
                """
        )

        @Option(help: ArgumentHelp("The app's spec file (<app>.spec.json).", valueName: "file"))
        var spec: String

        @Option(
            name: .long,
            help: ArgumentHelp("The policy bundle directory to check (default: the bundle in force).", valueName: "dir")
        )
        var bundle: String?

        @Option(
            help: ArgumentHelp(
                "Evaluate for this platform only; by default every platform.", valueName: "ios|android|windows"))
        var platform: Platform?

        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var loggingOptions: LoggingOptions

        func run() async throws {
            let spec = try loadSpec(spec)
            let policyBundle: PolicyBundle
            if let bundle {
                policyBundle = try loadPolicyBundle(bundle)
            } else {
                let engine = try await openEngine(state: stateOptions, logging: loggingOptions, access: .readOnly)
                policyBundle = try engine.policy()
                    .bundle
            }
            let diagnostics = spec.validate(policyBundle, platform: platform)
            StandardOutput.write(diagnostics.map { $0.description + "\n" }.joined())
            let errors = diagnostics.filter { $0.severity == .error }.count
            let warnings = diagnostics.count - errors
            StandardOutput.write(
                "\(errors) error\(errors == 1 ? "" : "s"), \(warnings) warning\(warnings == 1 ? "" : "s")\n")
            if errors > 0 { throw ExitCode.failure }
        }
    }
}

/// `custody spec --app ID`
struct SpecCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "spec",
        abstract:
            "Print an app's published configuration spec: its keys, types, valid values, decoder errors and secrets.",
        discussion: """
            Reads <app>.spec.json (from --directory, or the file --spec names) and prints it as \
            Markdown for administrators, or as JSON with --json. See docs/configuration.md for \
            the spec format.
            """
    )

    @Option(help: ArgumentHelp("The app's bundle or package id.", valueName: "id"))
    var app: String?

    @Option(help: ArgumentHelp("Where <app>.spec.json is.", valueName: "dir"))
    var directory: String = "."

    @Option(help: ArgumentHelp("The spec file itself, instead of --app and --directory.", valueName: "file"))
    var spec: String?

    @Flag(help: "Print JSON instead of Markdown.")
    var json = false

    func validate() throws {
        if (app == nil) == (spec == nil) { throw ValidationError("give --app (with --directory) or --spec") }
    }

    func run() throws {
        let path = spec ?? (directory as NSString).appendingPathComponent("\(app!).spec.json")
        let loaded = try loadSpec(path)
        if let app, loaded.app != app {
            StandardError.write("error: \(path) is the spec of \(loaded.app), not \(app)\n")
            throw ExitCode.failure
        }
        StandardOutput.write(json ? SpecRendering.json(loaded) : Array(SpecRendering.markdown(loaded).utf8))
    }
}

/// Loads a spec, or prints its diagnostics and exits 1.
func loadSpec(_ path: String) throws -> AppSpec {
    do {
        return try AppSpec.load(path: path)
    } catch {
        StandardError.write(lines: error.diagnostics.map(\.description))
        throw ExitCode.failure
    }
}

/// A spec as administrators read it.
enum SpecRendering {
    static func markdown(_ spec: AppSpec) -> String {
        var text = "# Managed configuration of \(spec.app)\n\n"
        if let description = spec.description { text += description + "\n\n" }
        text += "## Settings\n\n"
        if spec.settings.isEmpty {
            text += "The app reads no settings.\n\n"
        } else {
            text += "| Key | Type | Required | Valid values | Default | Description |\n|---|---|---|---|---|---|\n"
            for setting in spec.settings {
                text +=
                    "| `\(setting.key)` | \(setting.type.rawValue) | \(setting.required ? "yes" : "no") | \(validValues(setting)) | "
                text += "\(setting.defaultValue.map { "`\($0)`" } ?? "") | \(escape(setting.description ?? "")) |\n"
            }
            text += "\n"
        }
        text +=
            "Values are entered as text in targetedManagedAppConfiguration customSettings. Booleans are `true` or `false` "
        text += "(any letter case); when several policies reach an account, the app uses the first by policy id.\n\n"
        text +=
            "## Decoder errors\n\nWhen the configuration does not decode, the app receives none and reports one of:\n\n"
        for code in AppSpec.decoderErrorCodes { text += "- `\(code.rawValue)`: \(meaning(code))\n" }
        text += "\n## Secrets\n\n"
        if spec.secrets.isEmpty {
            text += "The app expects no secrets.\n"
        } else {
            text += "| Identifier | Kind | Scope | Description |\n|---|---|---|---|\n"
            for secret in spec.secrets {
                text +=
                    "| `\(secret.identifier)` | \(secret.kind.rawValue) | \(secret.scope == .account ? "per account" : "app-wide") | \(escape(secret.description ?? "")) |\n"
            }
        }
        return text
    }

    static func json(_ spec: AppSpec) -> [UInt8] {
        (try? JSONLine.encode(SpecAnswer(spec))) ?? []
    }

    /// `custody config spec --json`: an app's spec, every member listed (`null` when unset).
    struct SpecAnswer: Encodable {
        struct Setting: Encodable {
            var key: String
            var type: String
            var required: Bool
            @Nullable var values: [String]?
            @Nullable var minimum: SpecNumber?
            @Nullable var maximum: SpecNumber?
            @Nullable var maxLength: Int?
            @Nullable var `default`: String?
            @Nullable var description: String?
        }

        struct Secret: Encodable {
            var identifier: String
            var kind: String
            var scope: String
            @Nullable var description: String?
        }

        var app: String
        @Nullable var description: String?
        var settings: [Setting]
        var decoderErrors: [String]
        var secrets: [Secret]

        init(_ spec: AppSpec) {
            app = spec.app
            description = spec.description
            settings = spec.settings.map { setting in
                Setting(
                    key: setting.key, type: setting.type.rawValue, required: setting.required, values: setting.values,
                    minimum: setting.minimum.map(SpecNumber.init), maximum: setting.maximum.map(SpecNumber.init),
                    maxLength: setting.maxLength, default: setting.defaultValue, description: setting.description)
            }
            decoderErrors = AppSpec.decoderErrorCodes.map(\.rawValue)
            secrets = spec.secrets.map {
                Secret(
                    identifier: $0.identifier, kind: $0.kind.rawValue, scope: $0.scope.rawValue,
                    description: $0.description)
            }
        }
    }

    /// A bound of a spec: a whole number as a JSON number, any other as its decimal text.
    struct SpecNumber: Encodable, Sendable {
        let value: Double

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            if value.rounded() == value, abs(value) < 1e15 {
                try container.encode(Int(value))
            } else {
                try container.encode(String(value))
            }
        }
    }

    private static func validValues(_ setting: AppSpec.Setting) -> String {
        var parts: [String] = []
        if let values = setting.values { parts.append(values.map { "`\($0)`" }.joined(separator: ", ")) }
        if setting.minimum != nil || setting.maximum != nil {
            parts.append("\(setting.minimum.map { bound($0) } ?? "…") to \(setting.maximum.map { bound($0) } ?? "…")")
        }
        if let maxLength = setting.maxLength { parts.append("at most \(maxLength) characters") }
        if setting.type == .bool { parts.append("`true`, `false`") }
        return parts.joined(separator: "; ")
    }

    private static func bound(_ value: Double) -> String {
        value.rounded() == value && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }

    private static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "|", with: "\\|").replacingOccurrences(of: "\n", with: " ")
    }

    private static func meaning(_ code: ConfigurationDecodingError.Code) -> String {
        switch code {
        case .missingKey: "a required setting is absent"
        case .typeMismatch: "a value is not of the setting's type"
        case .invalidValue: "a value is not one the app accepts"
        case .tooLarge: "the configuration exceeds 64 KiB"
        }
    }
}
