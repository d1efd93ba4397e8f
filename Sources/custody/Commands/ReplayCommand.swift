import ArgumentParser
import Custody
import CustodyPolicy
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

struct ReplayCommand: AsyncParsableCommand, StateCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract:
            "Decide the audited decisions of a window again under a candidate bundle, and report what would flip.",
        discussion: """
            Every decision the audit log holds in the window (decision auditing on) is decided \
            again under the candidate, with the query, evaluation context and recorded launch \
            facts it was made with, and the precedence in force; a query that gave no `now` is \
            decided at its entry's time. The report counts the decisions decided again, those \
            that flip (allow to block, block to allow, a launch outcome that changes) and which \
            way, groups the flips by setting, app, action and account, and lists the 20 most \
            frequent with a sample of each and both reasons. Flips that loosen (block to allow, \
            a milder launch outcome, encryption no longer required) come first. Nothing is \
            applied, and the candidate's signature is not checked.

            Entries audited before the log kept queries, and a shared item's receive (which \
            no one query asks), are counted as not replayable; a check-in's launch is decided \
            again from the facts it reported. A progress bar is drawn on \
            standard error when it is a terminal; Ctrl-C stops the replay.

            Exit status: 0, or 1 when --fail-on names something the replay found.
            """)

    @Option(help: ArgumentHelp("The candidate bundle directory.", valueName: "dir"))
    var candidate: String

    @Option(
        help: ArgumentHelp(
            "The window: the decisions of the last AGE (30m, 12h, 7d, 2w; default 7d).", valueName: "age"))
    var since: String?

    @Option(help: ArgumentHelp("The window's start (RFC 3339), instead of --since.", valueName: "time"))
    var from: String?

    @Option(help: ArgumentHelp("The window's end (RFC 3339, not included; default now).", valueName: "time"))
    var to: String?

    @Option(help: ArgumentHelp("Only decisions about this account (a UPN or object id).", valueName: "account"))
    var account: String?

    @Option(help: ArgumentHelp("Only decisions about members of this group (its object id).", valueName: "group"))
    var group: String?

    @Option(help: ArgumentHelp("Only decisions of this action (saveTo, launch, ...).", valueName: "action"))
    var action: String?

    @Option(
        help: ArgumentHelp(
            "Exit 1 when the replay finds flips that loosen (loosened) or any flip (flipped).",
            valueName: "loosened|flipped"))
    var failOn: String?

    @Option(help: ArgumentHelp("Decide on this many cores (1 to 64).", valueName: "n"))
    var jobs = 2

    @Flag(help: "The report as one JSON object.")
    var json = false

    @OptionGroup var stateOptions: StateOptions
    @OptionGroup var loggingOptions: LoggingOptions

    func validate() throws {
        try refuseEmptyPath(candidate, named: "--candidate", give: "a bundle directory")
        _ = try window(now: Date())
        if let action, DecisionAction(rawValue: action) == nil {
            throw ValidationError(
                "--action must be one of: \(DecisionAction.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        if let failOn, failOn != "loosened", failOn != "flipped" {
            throw ValidationError("--fail-on takes loosened or flipped")
        }
        guard (1...64).contains(jobs) else { throw ValidationError("--jobs must be from 1 to 64") }
        for (option, value) in [("--account", account), ("--group", group)] {
            guard let value else { continue }
            if value.isEmpty || value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
                throw ValidationError("\(option) must be a name without control characters")
            }
        }
    }

    /// The window the options name.
    private func window(now: Date) throws -> (from: Date, to: Date) {
        do {
            return try ReplayScope.window(since: since, from: from, to: to, now: now, prefix: "--")
        } catch {
            throw ValidationError(error.message)
        }
    }

    func run() async throws {
        let files = try BundleFiles.read(directory: candidate)
        let (start, end) = try window(now: Date())
        let engine = try await openEngine(
            state: stateOptions, logging: loggingOptions, access: .reading, restoring: true)
        let scope = ReplayScope(
            from: start, to: end, account: account, group: group, action: action.flatMap(DecisionAction.init))
        let bar = ReplayBar()
        let report = try await engine.replay(candidate: files, scope: scope, jobs: jobs) { bar.update($0) }
        bar.finish()
        if json {
            StandardOutput.write(try JSONLine.encode(report, pretty: true))
        } else {
            StandardOutput.write(Self.text(report))
        }
        switch failOn {
        case "loosened" where report.loosened > 0, "flipped" where report.flipped > 0: throw ExitCode(1)
        default: break
        }
    }

    /// The report for people: totals, the groups, the flips with their samples.
    static func text(_ report: ImpactReport) -> String {
        let lines = [
            "candidate \(report.candidate)",
            "window \(report.from) to \(report.to)",
            "decided again \(report.decided): unchanged \(report.unchanged), flipped \(report.flipped) "
                + "(loosened \(report.loosened), tightened \(report.tightened)), refused \(report.refused); "
                + "not decided again: \(report.notReplayable) audited without their query, "
                + "\(report.unreadable) whose query no longer reads",
        ]
        // Accounts, queries and reasons came from input: escaped, one item per line.
        return lines.map(\.escapingControlCharacters).joined(separator: "\n") + "\n"
            + details(report, sample: "entry", before: "before", after: "after")
    }

    /// A report's groups, flips (each sample named `sample` with its number, the two reasons
    /// `before` and `after`), refusals.
    static func details(_ report: ImpactReport, sample: String, before: String, after: String) -> String {
        var lines: [String] = []
        for (title, groups) in [
            ("by setting", report.bySetting), ("by app", report.byApp), ("by action", report.byAction),
            ("by account", report.byAccount),
        ] where !groups.isEmpty {
            lines.append("")
            lines.append(title + ":")
            for group in groups {
                lines.append("  \(group.key)  flipped \(group.flipped), loosened \(group.loosened)")
            }
        }
        if !report.flips.isEmpty {
            lines.append("")
            lines.append("flips, loosening first:")
            for flip in report.flips {
                lines.append(
                    "  \(flip.loosens ? "LOOSENS " : "TIGHTENS") \(flip.count)×  \(flip.action) \(flip.before) → \(flip.after)"
                        + "  app \(flip.app), setting \(flip.setting)")
                lines.append("    e.g. \(sample) \(flip.sample.entry) at \(flip.sample.at): \(flip.sample.query)")
                lines.append("    \(before): \(flip.sample.reasonBefore ?? "-")")
                lines.append("    \(after): \(flip.sample.reasonAfter)")
            }
        }
        if !report.refusals.isEmpty {
            lines.append("")
            lines.append("refused by the candidate:")
            for refusal in report.refusals {
                lines.append("  \(sample) \(refusal.entry) at \(refusal.at): \(refusal.query): \(refusal.reasonAfter)")
            }
        }
        if report.truncated {
            lines.append("")
            lines.append("(more distinct flips than listed one by one: the totals count them all)")
        }
        guard !lines.isEmpty else { return "" }
        return lines.map(\.escapingControlCharacters).joined(separator: "\n") + "\n"
    }
}

/// A replay's progress on standard error, when it is a terminal: the share of the window read,
/// decisions and flips so far.
final class ReplayBar: @unchecked Sendable {
    // @unchecked: updated from the replay's one task at a time.
    private let enabled = isatty(2) == 1
    private var lastDrawn = ContinuousClock.now - .seconds(1)
    private var drawn = false

    func update(_ progress: ReplayProgress) {
        guard enabled else { return }
        let now = ContinuousClock.now
        guard now - lastDrawn >= .milliseconds(100) else { return }
        lastDrawn = now
        drawn = true
        let width = 30
        let filled = Int(progress.fraction * Double(width))
        let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
        StandardError.write(
            "\rreplaying \(bar) \(Int(progress.fraction * 100))%  \(progress.decided) decided, \(progress.flipped) flipped "
        )
    }

    func finish() {
        guard enabled, drawn else { return }
        StandardError.write("\n")
    }
}
