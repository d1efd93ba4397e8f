import ArgumentParser
import Custody
import CustodyPolicy
import CustodyStore
import Foundation

extension BundleCommand {
    /// `custody bundle shadow`: a candidate decided beside the bundle in force.
    struct Shadow: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "shadow",
            abstract: "Decide every live decision under a candidate bundle too, and count where the two disagree.",
            discussion: """
                custody bundle shadow DIR puts the candidate beside the bundle in force for every \
                replica of the state: each decision a service (custody serve) answers is decided \
                under the candidate too, off the answer's path (on a busy machine the shadow's \
                work is dropped and counted, never the answer delayed), and the disagreements \
                are counted (custody_shadow_disagreements_total{setting,action} in /metrics), \
                logged with both answers, and summed over the replicas by custody bundle shadow \
                status. The shadow outlives restarts. Promote it with custody apply of the same \
                files (signed as usual): the shadow then ends as promoted. custody bundle \
                shadow stop drops it; its counts stay readable until another is set. See \
                docs/impact.md.
                """,
            subcommands: [Set.self, Status.self, Stop.self],
            defaultSubcommand: Set.self)
    }
}

extension BundleCommand.Shadow {
    struct Set: AsyncParsableCommand, StateCommand {
        static let configuration = CommandConfiguration(
            commandName: "set",
            abstract: "Put a candidate bundle directory beside the bundle in force (the default subcommand).",
            discussion: """
                It replaces any other shadow. The candidate must load; its signature is not \
                checked (nothing is decided with it): custody apply checks it on promotion.
                """)

        @Argument(help: ArgumentHelp("The candidate bundle directory.", valueName: "dir"))
        var directory: String

        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var loggingOptions: LoggingOptions

        func validate() throws {
            try refuseEmptyPath(directory, named: "DIR", give: "a bundle directory")
        }

        func run() async throws {
            let files = try BundleFiles.read(directory: directory)
            let engine = try await openEngine(
                state: stateOptions, logging: loggingOptions, access: .existing, restoring: true)
            let record = try await engine.setShadow(files, source: directory, by: commandLineOperator)
            StandardOutput.write(
                "shadow \(record.revision) set beside \(engine.bundleInForce?.revision ?? "no bundle in force"); every serving replica decides under it too\n"
            )
        }
    }

    struct Status: AsyncParsableCommand, StateCommand {
        static let configuration = CommandConfiguration(
            commandName: "status",
            abstract: "What the shadow found, over every replica: decisions compared, disagreements, samples.",
            discussion: """
                Counts are as the replicas last recorded them (every 2 seconds while they \
                serve); each service process counts as one (a restart is a new one). A sample's \
                decision number is its number on the process that made it, not an audit entry. \
                With --json, {"shadow": …} as GET /v1/bundle/shadow answers ({"shadow": null} \
                when there is none). Exit status: 0; 1 when --fail-on names something the \
                shadow found; 2 when the state has no shadow.
                """)

        @Option(
            help: ArgumentHelp(
                "Exit 1 when the shadow found disagreements that loosen (loosened) or any (flipped).",
                valueName: "loosened|flipped"))
        var failOn: String?

        @Flag(help: "The status as one JSON object.")
        var json = false

        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var loggingOptions: LoggingOptions

        func validate() throws {
            if let failOn, failOn != "loosened", failOn != "flipped" {
                throw ValidationError("--fail-on takes loosened or flipped")
            }
        }

        func run() async throws {
            let engine = try await openEngine(
                state: stateOptions, logging: loggingOptions, access: .reading, restoring: false)
            let found = try await engine.shadowStatus()
            if json { StandardOutput.write(try JSONLine.encode(ShadowAnswer(shadow: found), pretty: true)) }
            guard let status = found else {
                StandardError.write("custody: the state has no shadow bundle (custody bundle shadow DIR sets one)\n")
                throw ExitCode(2)
            }
            if !json {
                StandardOutput.write(Self.text(status))
            }
            switch failOn {
            case "loosened" where status.report.loosened > 0, "flipped" where status.report.flipped > 0:
                throw ExitCode(1)
            default: break
            }
        }

        static func text(_ status: ShadowStatus) -> String {
            let report = status.report
            var head = [
                "shadow \(status.revision) from \(status.source)\(status.by.map { " (set by \($0))" } ?? "")",
                status.ended.map { "ended \($0), \(status.endedHow ?? "ended"); ran from \(status.since)" }
                    ?? "running since \(status.since)",
                "decided under the shadow \(report.decided) by \(status.replicas) service process(es): agreed \(report.unchanged), "
                    + "disagreed \(report.flipped) (loosened \(report.loosened), tightened \(report.tightened)), "
                    + "refused \(report.refused); dropped (queue full) \(status.dropped)",
            ]
            if let problem = status.problem { head.append("not deciding here: \(problem)") }
            return head.map(\.escapingControlCharacters).joined(separator: "\n") + "\n"
                + ReplayCommand.details(report, sample: "decision", before: "live", after: "shadow")
        }
    }

    struct Stop: AsyncParsableCommand, StateCommand {
        static let configuration = CommandConfiguration(
            commandName: "stop",
            abstract: "Drop the shadow: no replica decides under it any more; its counts stay readable.")

        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var loggingOptions: LoggingOptions

        func run() async throws {
            let engine = try await openEngine(
                state: stateOptions, logging: loggingOptions, access: .existing, restoring: false)
            let stopped = try await engine.stopShadow(by: commandLineOperator)
            StandardOutput.write(stopped ? "shadow stopped\n" : "no shadow was running\n")
        }
    }
}
