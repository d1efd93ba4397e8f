import ArgumentParser
import Custody
import CustodyPolicy
import CustodyProtection
import CustodyStore
import Foundation

/// `custody watch`: apply a bundle directory as it changes and print each event.
struct WatchCommand: AsyncParsableCommand, StateCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Apply a bundle directory whenever it changes, printing each change as one JSON line.",
        discussion: """
            Watches --bundle, or, without it, the directory the bundle in force was applied from, \
            following the bundle in force (applied from another directory: that one; rolled back: \
            none, and the command goes on printing events). Applies it at once, then probes its *.json files with stat every --interval and reads \
            and applies them again once edits have settled (only when their content changed). \
            Each event is one JSON object per line on standard output: allowedAccountsChanged, \
            policyChanged (only accounts whose policy decides something differently; with \
            "platform" when no platform is set and the bundle has several), \
            dataProtectionChanged (encryption requirement flipped: re-protect that account's \
            data), appConfigurationChanged, bundleRejected (the policy in force is unchanged; the \
            errors are file:line:column), wipeRequired, wipeCompleted. Applied and rejected \
            bundles are recorded in the state database.

            Every --offline-interval the check-ins in the state are evaluated: an account past \
            its policy's periodOfflineBeforeWipeIsEnforced without a check-in (counted from when \
            the installation first saw it, if it never checked in) gets wipeRequired, once until \
            it checks in again; with --wipe-when-offline it is also wiped. Runs until interrupted.
            """
    )

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The bundle directory to watch and apply (default: where the bundle in force came from, followed as it changes, on a SQLite state; none on a PostgreSQL state, whose policy in force is the fleet's).",
            valueName: "dir"))
    var bundle: String?

    @OptionGroup var contextOptions: ContextOptions
    @OptionGroup var stateOptions: StateOptions

    @Option(help: ArgumentHelp("How often to look at the files, in milliseconds.", valueName: "ms"))
    var interval = 1_000

    @Option(help: ArgumentHelp("How often to evaluate offline grace, in seconds.", valueName: "s"))
    var offlineInterval = 60

    @Flag(help: "Wipe accounts past their offline wipe period, not only announce wipeRequired.")
    var wipeWhenOffline = false

    @OptionGroup var loggingOptions: LoggingOptions

    func validate() throws {
        guard interval > 0 else { throw ValidationError("--interval must be positive") }
        guard offlineInterval > 0 else { throw ValidationError("--offline-interval must be positive") }
    }

    func run() async throws {
        let configuration = CustodyConfiguration(
            state: stateOptions.opened(CustodyConfiguration.State.path), context: contextOptions.context,
            wipesWhenOfflineTooLong: wipeWhenOffline,
            logger: loggingOptions.makeLogger())
        let engine = try await CustodyEngine.open(configuration)
        let watch = engine.watch(
            bundleDirectory: bundle, interval: .milliseconds(interval),
            offlineCheckInterval: .seconds(offlineInterval))
        guard watch.directory != nil else {
            watch.cancel()
            throw CustodyError(
                .noPolicy,
                engine.bundleInForce == nil
                    ? "nothing to watch: no bundle is in force in this state, and no directory was given"
                    : engine.stateBackend == .postgres
                        ? "nothing to watch: no directory was given, and on a state replicas share the directory the bundle in force came from is not watched (it may be another machine's)"
                        : "nothing to watch: no directory was given, and the bundle in force did not come from a directory on this machine"
            )
        }
        defer { watch.cancel() }
        for await event in watch.events {
            StandardOutput.write(event.jsonLine)
        }
    }
}

/// `custody checkin`: record a successful policy sync, and the launch facts an app reported.
struct CheckInCommand: AsyncParsableCommand, StateCommand {
    static let configuration = CommandConfiguration(
        commandName: "checkin",
        abstract:
            "Record that an account's policy was synced now (or at --at), with the launch facts its app reported.",
        discussion: """
            Offline grace counts from the last check-in: past periodOfflineBeforeAccessCheck the \
            account's access is blocked, past periodOfflineBeforeWipeIsEnforced its data is to be \
            wiped. The account is resolved through the policy in force (or --bundle) and recorded \
            under its canonical identifier (its tenant OID), so its UPN and OID share one \
            check-in; an account the installation does not know is an error.

            --facts FILE (or - for standard input) records what the app and device reported, a \
            JSON object such as {"osVersion":"17.4","appVersion":"5.2","jailbroken":false} (the \
            facts of a launch decision: custody decide --help), decides conditional launch with \
            them and prints the decision as JSON (with its "decisionId" when decisions are audited), \
            with "wiped" saying whether it wiped the \
            account. Later launch decisions take the facts a query \
            does not give from the recorded ones. A wipe outcome that reported facts call for \
            (not one counted for a missing fact) wipes the account's keys, audited and \
            announced, when the installation acts on launch (custody apply --act-on-launch); \
            otherwise it is reported only. Exit status 0 whatever the outcome; 1 when the \
            facts cannot be read.
            """
    )

    @Option(help: ArgumentHelp("The account: a UPN, or an OID in GUID form.", valueName: "account"))
    var account: String

    @Option(
        help: ArgumentHelp(
            "When the sync happened (RFC 3339, e.g. 2026-11-21T09:30:00Z); default now.", valueName: "time"))
    var at: String?

    @Option(
        help: ArgumentHelp(
            "A JSON object of launch facts the app reported (- for standard input).", valueName: "file"))
    var facts: String?

    func validate() throws {
        try refuseEmptyPath(facts, named: "--facts", give: "a file, or - for standard input")
    }

    @OptionGroup var policyOptions: PolicyOptions
    @OptionGroup var stateOptions: StateOptions
    @OptionGroup var loggingOptions: LoggingOptions

    func run() async throws {
        let account = try parseAccount(account, option: "--account")
        let date = try at.map { try parseTime($0, option: "--at") } ?? Date()
        let reported = try facts.map { try readLaunchFacts($0) }
        let engine = try await openEngine(
            state: stateOptions, policy: policyOptions, logging: loggingOptions, access: .readWrite)
        guard let reported else {
            let resolved = try await engine.checkIn(account: account, at: date)
            StandardOutput.write("\(resolved.owner): checked in at \(formatTime(date))\n")
            return
        }
        let result = try await engine.checkIn(account: account, at: date, facts: reported)
        if let launch = result.launch {
            var writer = JSONWriter()
            DecisionEncoding.write(
                .launch(launch), to: &writer,
                trailer: { writer in
                    if let decisionID = result.decisionID {
                        writer.key("decisionId")
                        writer.value(decisionID)
                    }
                    writer.key("wiped")
                    writer.value(result.wipe != nil)
                })
            StandardOutput.write(String(decoding: writer.bytes, as: UTF8.self) + "\n")
            if launch.outcome == .wipe {
                if let wipe = result.wipe {
                    StandardError.write(
                        "\(result.account.owner): wiped (conditional launch): \(wipe.keyVersions) key version\(wipe.keyVersions == 1 ? "" : "s"), \(wipe.secrets) secret\(wipe.secrets == 1 ? "" : "s")\n"
                    )
                } else if engine.bundleInForce?.isOverride == true {
                    StandardError.write(
                        "note: --bundle names a bundle for this command alone, not the policy in force: the wipe is reported, not carried out\n"
                    )
                } else {
                    StandardError.write(
                        "note: the installation does not act on launch outcomes (custody apply --act-on-launch): the wipe is reported, not carried out\n"
                    )
                }
            }
        }
    }

    /// Reads and checks the facts before the state is opened: a bad file changes nothing, and
    /// is an error (exit status 1), not a usage error.
    private func readLaunchFacts(_ path: String) throws -> LaunchFacts {
        do {
            return try parseLaunchFacts(path)
        } catch let error as FactsError {
            StandardError.write("error: --facts \(path)\(error.message)\n")
            throw ExitCode.failure
        }
    }

    private struct FactsError: Error {
        let message: String
    }

    private func parseLaunchFacts(_ path: String) throws -> LaunchFacts {
        let descriptor = path == "-" ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw FactsError(message: ": cannot be read (\(String(cString: strerror(errno))))")
        }
        defer { if path != "-" { close(descriptor) } }
        let bytes: [UInt8]
        switch Descriptor.readToEnd(descriptor, maximum: 64 * 1024) {
        case .success(let read): bytes = read
        case .failure(let error): throw FactsError(message: ": cannot be read (\(error))")
        }
        guard bytes.count <= 64 * 1024 else { throw FactsError(message: ": larger than 64 KiB") }
        do {
            let document = try JSONDocument(parsing: bytes)
            return try LaunchFacts(json: document.root)
        } catch let error as QueryError {
            throw FactsError(message: ": \(error)")
        } catch let error as JSONSyntaxError {
            let position = JSONText.lineAndColumn(ofOffset: error.offset, in: bytes)
            throw FactsError(message: ":\(position.line):\(position.column): \(error.message)")
        }
    }
}

/// `custody audit`: show or switch the audit log.
struct AuditCommand: AsyncParsableCommand, StateCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract:
            "Print the audit log of applied and rejected bundles, wipes, key rotations, secret changes and decisions, or switch it.",
        discussion: """
            The log records applied and rejected bundles (kind bundle: apply or reject, with the \
            revision and source), wipes (kind wipe: what was deleted under which identifiers), \
            key rotations (kind key), secret changes (kind secret: identifiers only, never \
            values), token and trust changes (kinds token, trust), the log or decision auditing \
            switched on or off (kind audit: the log's last entry before it goes off, its first \
            once on again), and, when decision auditing is on, every decision `custody decide` \
            and `custody receive` answer (kind decision: account, action, allowed or blocked, \
            reason), written before its answer. The log is on by default; decision auditing is \
            off by default.

            One entry per line, oldest first: time, kind, account, action, result and detail; \
            --json for JSON Lines (with each entry's id, and the decision id an audited answer \
            carried). At most --limit entries are printed; when more follow, a warning on standard \
            error says so and names the --after that prints the next page, which starts exactly \
            where this one stopped.
            """
    )

    @Option(help: ArgumentHelp("Only entries at or after this time (RFC 3339).", valueName: "time"))
    var since: String?

    @Option(
        help: ArgumentHelp(
            "Only entries after the one with this id (the id --json prints; the warning of a page that stops short names it).",
            valueName: "id"))
    var after: Int64 = 0

    @Flag(help: "One JSON object per entry, per line.")
    var json = false

    @Option(help: ArgumentHelp("Print at most this many entries, oldest first (1 to 1000000).", valueName: "count"))
    var limit = 10_000

    @Option(
        help: ArgumentHelp(
            "Switch the audit log on or off (kept in the state database) instead of printing.", valueName: "on|off"))
    var set: String?

    @Option(help: ArgumentHelp("Switch auditing of every decision on or off instead of printing.", valueName: "on|off"))
    var decisions: String?

    @Option(
        help: ArgumentHelp(
            "Delete the entries older than this age (30d, 12h, 2w; 1h to 36600d) instead of printing; the deletion is itself an entry. serve --audit-retention does it every hour.",
            valueName: "age"))
    var pruneOlderThan: String?

    @OptionGroup var stateOptions: StateOptions
    @OptionGroup var loggingOptions: LoggingOptions

    func validate() throws {
        for (option, value) in [("--set", set), ("--decisions", decisions)] {
            if let value, value != "on", value != "off" { throw ValidationError("\(option) takes on or off") }
        }
        guard (1...1_000_000).contains(limit) else { throw ValidationError("--limit must be from 1 to 1000000") }
        guard after >= 0 else { throw ValidationError("--after must be an entry id, 0 or more") }
        if let pruneOlderThan { _ = try retentionAge(pruneOlderThan, option: "--prune-older-than") }
    }

    func run() async throws {
        if let pruneOlderThan {
            let age = try retentionAge(pruneOlderThan, option: "--prune-older-than")
            let engine = try await openEngine(
                state: stateOptions, logging: loggingOptions, access: .existing, restoring: false)
            let pruned = try await engine.pruneAuditLog(olderThan: age)
            StandardOutput.write(
                "pruned \(pruned) audit entr\(pruned == 1 ? "y" : "ies") older than \(pruneOlderThan)\n")
            return
        }
        if set != nil || decisions != nil {
            let engine = try await openEngine(
                state: stateOptions, logging: loggingOptions, access: .readWrite, restoring: false)
            try await engine.setAuditing(set.map { $0 == "on" }, decisions: decisions.map { $0 == "on" })
            if let set { StandardOutput.write("auditing is \(set)\n") }
            if let decisions { StandardOutput.write("decision auditing is \(decisions)\n") }
            return
        }
        let since = try since.map { try parseTime($0, option: "--since") }
        let engine = try await openEngine(
            state: stateOptions, logging: loggingOptions, access: .reading, restoring: false)
        // One more than printed, to know whether more follow.
        let entries = try await engine.auditEntries(since: since, after: after, limit: limit + 1)
        for entry in entries.prefix(limit) {
            if json {
                StandardOutput.write(try JSONLine.encode(AuditLine(entry)))
            } else {
                let result = entry.allowed.map { $0 ? "allowed" : "blocked" } ?? "-"
                // Accounts and details came from input once: escaped, one entry per line.
                let line =
                    "\(formatTime(entry.at))  \(entry.kind.rawValue)  \(entry.account ?? "-")  \(entry.action)  \(result)  \(entry.detail ?? "")"
                StandardOutput.write(line.escapingControlCharacters + "\n")
            }
        }
        if entries.count > limit, let last = entries.dropLast().last {
            StandardError.write(
                "warning: \(limit) \(limit == 1 ? "entry" : "entries") printed; more follow: the next page is --after \(last.id) (or raise --limit)\n"
            )
        }
    }
}

/// An RFC 3339 time given on the command line (read by hand: no Foundation formatter, whose
/// time-zone data would weigh on every command that links this file).
func parseTime(_ text: String, option: String) throws -> Date {
    guard let since = RFC3339.durationSinceEpoch(text) else {
        throw ValidationError("\(option) must be an RFC 3339 time such as 2026-11-21T09:30:00Z, not '\(text)'")
    }
    return Date(
        timeIntervalSince1970: Double(since.components.seconds) + Double(since.components.attoseconds) / 1e18)
}

/// `date` as an RFC 3339 UTC time to the second (`2026-11-21T09:30:00Z`).
func formatTime(_ date: Date) -> String {
    secondsTime(date)
}

/// One audit entry as `custody audit --json` prints it: one JSON object a line; a missing
/// account, result or detail is `null`, never left out.
struct AuditLine: Encodable {
    /// The entry's id: `--after` takes it.
    var id: Int64
    var at: String
    var kind: String
    @Nullable var account: String?
    var action: String
    @Nullable var allowed: Bool?
    @Nullable var detail: String?
    /// The id an audited decision's answer carried (`decisionId`), null for other entries.
    @Nullable var decisionId: String?
    /// What an audited decision was asked (the query line), the revision and context it was
    /// decided under, the recorded launch facts it used and a launch's outcome: what `custody
    /// replay` decides again. Null where the entry does not keep them.
    @Nullable var query: String?
    @Nullable var context: String?
    @Nullable var facts: String?
    @Nullable var outcome: String?

    init(_ entry: AuditEntry) {
        id = entry.id
        at = formatTime(entry.at)
        kind = entry.kind.rawValue
        account = entry.account
        action = entry.action
        allowed = entry.allowed
        detail = entry.detail
        decisionId = entry.decisionID
        query = entry.asked?.line
        context = entry.asked?.context
        facts = entry.asked?.recordedFacts
        outcome = entry.asked?.outcome
    }

}
