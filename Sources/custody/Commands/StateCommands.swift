import ArgumentParser
import Custody
import CustodyPolicy
import CustodyProtection
import CustodyStore
import Foundation

/// `custody watch`: apply a bundle directory as it changes and print each event.
struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Apply a bundle directory whenever it changes, printing each change as one JSON line.",
        discussion: """
            Applies the bundle at once, then polls its *.json files every --interval and applies \
            them again once edits have settled. Each event is one JSON object per line on \
            standard output: allowedAccountsChanged, policyChanged (only accounts whose policy \
            decides something differently), dataProtectionChanged (encryption requirement \
            flipped: re-protect that account's data), bundleRejected (the policy in force is \
            unchanged; the errors are file:line:column). Applied and rejected bundles are \
            recorded in the state database. Runs until interrupted.
            """
    )

    @OptionGroup var bundleOptions: BundleOptions
    @OptionGroup var stateOptions: StateOptions

    @Option(help: ArgumentHelp("How often to look at the files, in milliseconds.", valueName: "ms"))
    var interval = 1_000

    @OptionGroup var loggingOptions: LoggingOptions

    func run() async throws {
        guard interval > 0 else { throw ValidationError("--interval must be positive") }
        let manager = PolicyManager(context: bundleOptions.contextOptions.context, database: try stateOptions.database(), logger: loggingOptions.makeLogger())
        let events = manager.events()
        let watcher = manager.watch(bundleDirectory: bundleOptions.bundle, interval: .milliseconds(interval))
        defer { watcher.cancel() }
        for await event in events {
            StandardOutput.write(EventJSON.line(event))
        }
    }
}

/// `custody checkin`: record a successful policy sync.
struct CheckInCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "checkin",
        abstract: "Record that an account's policy was synced now (or at --at).",
        discussion: """
            Offline grace counts from the last check-in: past periodOfflineBeforeAccessCheck the \
            account's access is blocked, past periodOfflineBeforeWipeIsEnforced its data is to be \
            wiped. With --bundle, accounts are recorded under their tenant OID.
            """
    )

    @Option(help: ArgumentHelp("The account: a UPN, or an OID in GUID form.", valueName: "account"))
    var account: String

    @Option(help: ArgumentHelp("When the sync happened (RFC 3339, e.g. 2026-11-21T09:30:00Z); default now.", valueName: "time"))
    var at: String?

    @OptionGroup var bundleOptions: OptionalBundleOptions
    @OptionGroup var stateOptions: StateOptions
    @OptionGroup var loggingOptions: LoggingOptions

    func run() throws {
        let account = try parseAccount(account, option: "--account")
        let date = try at.map { try parseTime($0, option: "--at") } ?? Date()
        let snapshot = try bundleOptions.loadSnapshot(logger: loggingOptions.makeLogger())
        let owner = OwnerIdentifier(account, policy: snapshot)
        let database = try stateOptions.database()
        try reportingStoreErrors { try database.checkIn(account: owner.rawValue, at: date) }
        StandardOutput.write("\(owner): checked in at \(formatTime(date))\n")
    }
}

/// `custody audit`: show or switch the audit log.
struct AuditCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract: "Print the audit log of wipes, bundles, secret changes and decisions, or switch it on or off.",
        discussion: "One entry per line, oldest first: time, kind, account, action, result and detail; --json for JSON Lines."
    )

    @Option(help: ArgumentHelp("Only entries at or after this time (RFC 3339).", valueName: "time"))
    var since: String?

    @Flag(help: "One JSON object per entry, per line.")
    var json = false

    @Option(help: ArgumentHelp("Switch auditing on or off (kept in the state database) instead of printing.", valueName: "on|off"))
    var set: String?

    @OptionGroup var stateOptions: StateOptions

    func run() throws {
        let database = try stateOptions.database()
        if let set {
            guard set == "on" || set == "off" else { throw ValidationError("--set takes on or off") }
            try reportingStoreErrors { try database.setAuditEnabled(set == "on") }
            StandardOutput.write("auditing is \(set)\n")
            return
        }
        let since = try since.map { try parseTime($0, option: "--since") }
        let entries = try reportingStoreErrors { try database.auditEntries(since: since) }
        for entry in entries {
            if json {
                var writer = JSONWriter()
                writer.beginObject()
                writer.key("at"); writer.value(formatTime(entry.at))
                writer.key("kind"); writer.value(entry.kind.rawValue)
                writer.key("account"); entry.account.map { writer.value($0) } ?? writer.null()
                writer.key("action"); writer.value(entry.action)
                writer.key("allowed"); entry.allowed.map { writer.value($0) } ?? writer.null()
                writer.key("detail"); entry.detail.map { writer.value($0) } ?? writer.null()
                writer.endObject()
                writer.newline()
                StandardOutput.write(writer.bytes)
            } else {
                let result = entry.allowed.map { $0 ? "allowed" : "blocked" } ?? "-"
                StandardOutput.write("\(formatTime(entry.at))  \(entry.kind.rawValue)  \(entry.account ?? "-")  \(entry.action)  \(result)  \(entry.detail ?? "")\n")
            }
        }
    }
}

func parseTime(_ text: String, option: String) throws -> Date {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime]
    if let date = formatter.date(from: text) { return date }
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    if let date = formatter.date(from: text) { return date }
    throw ValidationError("\(option) must be an RFC 3339 time such as 2026-11-21T09:30:00Z, not '\(text)'")
}

func formatTime(_ date: Date) -> String {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime]
    return formatter.string(from: date)
}
