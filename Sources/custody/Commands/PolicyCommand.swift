import ArgumentParser
import Custody
import CustodyPolicy

/// `custody policy`: check bundles and explain what they mean for an account.
struct PolicyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "policy",
        abstract: "Validate policy bundles and show effective policies.",
        subcommands: [Validate.self, Show.self]
    )

    /// `custody policy validate PATH...`
    struct Validate: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "validate",
            abstract: "Check that bundles and Graph JSON files load.",
            discussion: """
                Each PATH is a bundle directory, a tenant.json, or a single Graph JSON file. Every \
                problem is printed on standard error as `file:line:column: error: message` (or \
                `warning:`, `notice:`), the form editors and CI annotate. Warnings (unknown \
                properties, unknown enum values, ignored documents, settings not in effect) and \
                notices (the settings of each policy that Custody does not enforce, such as PIN and \
                device conditions; files that are not Graph documents, such as scenario matrices) \
                do not fail validation; errors (invalid JSON, wrong value types, documents without \
                @odata.type, duplicate accounts) do.

                Standard output gets one summary line per path. Exit status: 0 when every path \
                loads, 1 when any has an error.
                """
        )

        @Argument(help: ArgumentHelp("Bundle directories or JSON files to check.", valueName: "path"))
        var paths: [String]

        @Flag(name: .shortAndLong, help: "Print errors only: no warnings, no summary.")
        var quiet = false

        func run() throws {
            var failed = false
            for path in paths {
                do {
                    let bundle = try PolicyBundle.load(path: path)
                    if !quiet {
                        StandardError.write(lines: bundle.warnings.map(\.description))
                        StandardOutput.write("\(path): ok: \(summary(of: bundle))\n")
                    }
                } catch {
                    failed = true
                    let shown = quiet ? error.errors : error.diagnostics
                    StandardError.write(lines: shown.map(\.description))
                    if !quiet {
                        let errors = error.errors.count
                        StandardOutput.write("\(path): failed: \(errors) error\(errors == 1 ? "" : "s")\n")
                    }
                }
            }
            if failed { throw ExitCode.failure }
        }

        private func summary(of bundle: PolicyBundle) -> String {
            func count(_ number: Int, _ singular: String, _ plural: String) -> String {
                "\(number) \(number == 1 ? singular : plural)"
            }
            return [
                count(bundle.tenant.accounts.count, "account", "accounts"),
                count(bundle.protectionPolicies.count, "protection policy", "protection policies"),
                count(bundle.appConfigurations.count, "app configuration", "app configurations"),
                count(bundle.warnings.filter { $0.severity == .warning }.count, "warning", "warnings"),
                count(bundle.warnings.filter { $0.severity == .notice }.count, "notice", "notices"),
            ].joined(separator: ", ")
        }
    }

    /// `custody policy show --account A [--bundle DIR]`
    struct Show: AsyncParsableCommand, StateCommand {
        static let configuration = CommandConfiguration(
            commandName: "show",
            abstract: "Print an account's effective policy as JSON.",
            discussion: """
                Prints the policies that reach the account in the evaluation context and, for each \
                evaluated setting, its merged value, how it was resolved (configured, notConfigured: \
                Intune's default, or conflictDefault: policies disagree on a number) and the \
                policies it came from. The policy is the bundle in force (see `custody apply`), or \
                --bundle for this command alone. An account the tenant does not know is an error: \
                unknown accounts are unmanaged and have no policy to show. A policy is for one \
                platform: when the bundle holds iOS and Android policies and no platform is named \
                (--platform, or recorded by `custody apply`), the output is a JSON array of one \
                report per platform.
                """
        )

        @OptionGroup var policyOptions: PolicyOptions
        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var loggingOptions: LoggingOptions

        @Option(help: ArgumentHelp("The account: a UPN, or an OID in GUID form.", valueName: "upn-or-oid"))
        var account: String

        func run() async throws {
            let account = try parseAccount(account, option: "--account")
            let engine = try await openEngine(
                state: stateOptions, policy: policyOptions, logging: loggingOptions, access: .readOnly)
            let snapshots = try engine.policyReport(for: account)
            StandardOutput.write(PolicyReport.json(account: account, snapshots: snapshots, pretty: true))
        }
    }
}
