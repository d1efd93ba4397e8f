import ArgumentParser
import Custody
import CustodyPolicy
import Foundation

/// `custody matrix`: scenario matrices, decision tables and what a policy change changes.
struct MatrixCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "matrix",
        abstract: "Validate what policies allow before they ship, and what a change would change.",
        subcommands: [Run.self, Table.self, Diff.self]
    )

    /// `custody matrix run FILE|DIR...`
    struct Run: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "run",
            abstract: "Run scenario matrices (*.matrix.json) and report the cases that fail.",
            discussion: """
                Directories are searched recursively for *.matrix.json. Prints a table of the \
                failing cases (where, case, expected, actual, actual reason), then a last line \
                `N passed, N failed`. A matrix that does not load (unknown members, a missing \
                bundle, a malformed case) is an error with file:line:column and counts as \
                failed. Exit 0 only when nothing failed. The format is in docs/matrices.md.
                """
        )

        @Argument(help: ArgumentHelp("Matrix files or directories.", valueName: "path"))
        var paths: [String]

        @Option(help: ArgumentHelp("Also write a JUnit XML report here.", valueName: "file"))
        var junit: String?

        @Flag(help: "Print a JSON report instead of the table.")
        var json = false

        func validate() throws {
            try refuseEmptyPath(junit, named: "--junit")
            for path in paths { try refuseEmptyPath(path, named: "a matrix path") }
        }

        func run() throws {
            var files: [String] = []
            for path in paths {
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                    StandardError.write("error: \(path): no such file or directory\n")
                    throw ExitCode.failure
                }
                files += isDirectory.boolValue ? ScenarioRun.matrixFiles(in: path) : [path]
            }
            let report = MatrixReport(run: ScenarioRun(files: files))
            if let junit {
                do {
                    try PathName.write(Array(report.junit().utf8), toFile: junit)
                } catch {
                    StandardError.write("error: cannot write \(junit): \(error)\n")
                    throw ExitCode.failure
                }
            }
            if json {
                StandardOutput.write(report.json())
            } else {
                for problem in report.loadErrors { StandardError.write(problem + "\n") }
                StandardOutput.write(report.failureTable())
                StandardOutput.write("\(report.run.passed) passed, \(report.run.failed) failed\n")
            }
            if report.run.failed > 0 { throw ExitCode.failure }
        }
    }

    /// `custody matrix table --account A [--bundle DIR]`
    struct Table: AsyncParsableCommand, StateCommand {
        static let configuration = CommandConfiguration(
            commandName: "table",
            abstract: "Print every decision one account's policy makes, with its reason.",
            discussion: """
                Every save-to and open-from location × the location accounts that matter (the \
                same account, another managed account, an unmanaged account, none), receiving, \
                sharing, clipboard, print, backup, screen capture, notifications, encryption and \
                whether the account is allowed, with the conflicts between the policies that \
                reach it (settings they configure differently; under --precedence incumbent, the \
                policies set aside). The policy is the bundle in force (see `custody apply`), or \
                --bundle for this command alone. An aligned table, Markdown (--markdown) or JSON \
                (--json, one object per line). With no platform named and a bundle of iOS and \
                Android policies, one table per platform.
                """
        )

        @OptionGroup var policyOptions: PolicyOptions
        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var loggingOptions: LoggingOptions

        @Option(help: ArgumentHelp("The account: a UPN, or an OID in GUID form.", valueName: "account"))
        var account: String

        @Flag(help: "Print Markdown.")
        var markdown = false

        @Flag(help: "Print JSON.")
        var json = false

        func validate() throws {
            if markdown && json { throw ValidationError("--markdown and --json exclude each other") }
        }

        func run() async throws {
            let account = try parseAccount(account, option: "--account")
            let engine = try await openEngine(
                state: stateOptions, policy: policyOptions, logging: loggingOptions, access: .readOnly)
            let snapshots = try engine.policyPerPlatform()
            for (index, snapshot) in snapshots.enumerated() {
                let table = DecisionTable(snapshot: snapshot, account: account)
                if json {
                    StandardOutput.write(DecisionTableRendering.json(table))
                } else {
                    if index > 0 { StandardOutput.write("\n") }
                    StandardOutput.write(DecisionTableRendering.text(table, markdown: markdown))
                }
            }
        }
    }

    /// `custody matrix diff [--bundle OLD] --bundle NEW`
    struct Diff: AsyncParsableCommand, StateCommand {
        static let configuration = CommandConfiguration(
            commandName: "diff",
            abstract: "List every decision that differs between two bundles, account by account, with both reasons.",
            discussion: """
                Compares the decision tables (see `custody matrix table`) of the given accounts, \
                or of every account either tenant lists, using the same counterparts on both \
                sides. With one --bundle, the old side is the bundle in force: what applying the \
                new bundle would change. Exit 1 when anything differs and --fail-on-change is given.
                """
        )

        @Option(
            name: .customLong("bundle"),
            help: ArgumentHelp(
                "The old bundle, then the new one; or only the new one, against the bundle in force.", valueName: "dir")
        )
        var bundles: [String]

        @OptionGroup var contextOptions: ContextOptions
        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var loggingOptions: LoggingOptions

        @Option(help: ArgumentHelp("Only this account (repeatable).", valueName: "account"))
        var account: [String] = []

        @Flag(help: "Exit 1 when any decision differs.")
        var failOnChange = false

        @Flag(help: "Print JSON.")
        var json = false

        func validate() throws {
            if !(1...2).contains(bundles.count) {
                throw ValidationError(
                    "give --bundle twice (the old bundle, then the new one), or once (the new one, against the bundle in force)"
                )
            }
        }

        func run() async throws {
            let logger = loggingOptions.makeLogger()
            let context = contextOptions.context
            let old: PolicySnapshot
            if bundles.count == 2 {
                old = PolicySnapshot(bundle: try loadPolicyBundle(bundles[0]), context: context, logger: logger)
            } else {
                let configuration = CustodyConfiguration(
                    state: stateOptions.opened(CustodyConfiguration.State.existingPath), context: context,
                    logger: logger)
                old = try await CustodyEngine.open(configuration).policy()
            }
            let new = PolicySnapshot(
                bundle: try loadPolicyBundle(bundles[bundles.count - 1]), context: context, logger: logger)
            let accounts = try account.isEmpty ? nil : account.map { try parseAccount($0, option: "--account") }
            let diff = DecisionDiff(old: old, new: new, accounts: accounts)
            StandardOutput.write(
                json ? DecisionTableRendering.json(diff) : Array(DecisionTableRendering.text(diff).utf8))
            if failOnChange, !diff.changes.isEmpty { throw ExitCode.failure }
        }
    }
}
