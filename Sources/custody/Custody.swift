import ArgumentParser
import Logging

/// The `custody` command: validate policy bundles, explain effective policies, answer
/// data-transfer questions.
@main
struct Custody: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "custody",
        abstract: "Decide, per account, where data may go — from the Intune policies administrators export.",
        discussion: """
            Custody reads a policy bundle: a directory holding tenant.json (accounts, groups, allowed \
            accounts) and Microsoft Graph app protection exports (iosManagedAppProtection, \
            androidManagedAppProtection, defaultManagedAppProtection, targetedManagedAppConfiguration). \
            It merges the policies that reach each account, most restrictive first, and answers \
            questions about saving, opening, sharing, clipboard, printing, notifications, \
            encryption and offline access, each answer with the setting and policies that decided it.

            Exit status: 0 on success, 1 when a bundle or query fails, 64 for bad arguments.
            """,
        version: "0.1.0",
        subcommands: [PolicyCommand.self, DecideCommand.self]
    )
}
