import ArgumentParser
import CustodyPolicy
import Logging

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The `custody` command: validate policy bundles, explain effective policies, answer
/// data-transfer questions.
@main
struct Custody: AsyncParsableCommand {
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

            It also protects data per account: envelopes that name the owner, encrypted under \
            per-account keys (libsodium) when the owner's policy requires it, and a selective wipe \
            that crypto-shreds one account's data.

            And it delivers managed app configuration (Intune targetedManagedAppConfiguration, \
            checked against the spec an app publishes) and secrets (passwords, certificates, \
            identities) per account, sealed at rest; and runs scenario matrices that state, as \
            data, what a policy should allow, and shows what a policy change would change.

            Exit status: 0 on success, 1 when a bundle or query fails, 64 for bad arguments.
            """,
        version: "0.1.0",
        subcommands: [
            PolicyCommand.self, DecideCommand.self, ProtectCommand.self, UnprotectCommand.self, InfoCommand.self,
            KeysCommand.self,
            WipeCommand.self, ApplyCommand.self, WatchCommand.self, CheckInCommand.self, AuditCommand.self,
            ConfigCommand.self,
            SpecCommand.self, SecretsCommand.self, MatrixCommand.self, ServeCommand.self, TokensCommand.self,
            ReceiveCommand.self, GraphCommand.self, BundleCommand.self, TrustCommand.self, FleetCommand.self,
            ReplayCommand.self,
        ]
    )

    /// ArgumentParser's entry point, except for what a clean exit prints (help, `--version`,
    /// completion scripts): ArgumentParser prints it with `print`, whose failure nobody sees,
    /// so `custody --help > /dev/full` exited 0. It is written as every command's output is
    /// (`StandardOutput`): a write that fails is said, and the exit status is 1.
    ///
    /// And for a `ValidationError` a command throws once it runs (an argument that only the
    /// file system or the state can judge): ArgumentParser shows the root's usage for it, not
    /// the command's, as it does for one thrown while parsing.
    static func main() async {
        refuseUndecodableArguments()
        refuseHelpForUnknownCommand()
        do {
            var command = try await asyncParseAsRoot()
            do {
                if var asyncCommand = command as? any AsyncParsableCommand {
                    try await asyncCommand.run()
                } else {
                    try command.run()
                }
            } catch let error as ValidationError {
                refuse(error, of: type(of: command))
            } catch {
                // The one place a command's errors are printed (`reported(_:by:)`); any other
                // error is ArgumentParser's, below.
                guard reported(error, by: command) else { throw error }
                exit(withError: ExitCode.failure)
            }
        } catch {
            guard exitCode(for: error) == .success else { exit(withError: error) }
            let text = fullMessage(for: error)
            if !text.isEmpty {
                fflush(nil)
                StandardOutput.write(text + "\n")
            }
            exit(withError: nil)
        }
    }

    /// Refuses an argument that is not UTF-8 text (exit 64). Swift would hand the command the
    /// argument with each bad byte replaced by U+FFFD, so different bytes given would name one
    /// account or file; the service refuses such a parameter too.
    private static func refuseUndecodableArguments() {
        for index in 1..<Int(CommandLine.argc) {
            guard let argument = CommandLine.unsafeArgv[index], String(validatingCString: argument) == nil else {
                continue
            }
            let shown = String(cString: argument).escapingControlCharacters
            refuse(ValidationError("argument \(index) is not valid UTF-8 text: \(shown)"), of: self)
        }
    }

    /// Refuses `custody help NAME…` when NAME… is no command (exit 64, naming it).
    /// ArgumentParser prints the root's help for it and exits 0, as if the help asked for had
    /// been given: a script checking `custody help sign` would take it for a command.
    private static func refuseHelpForUnknownCommand() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard arguments.first == "help" else { return }
        var command: any ParsableCommand.Type = self
        var path = ["custody"]
        for name in arguments.dropFirst() where !name.hasPrefix("-") {
            if let next = subcommand(named: name, of: command) {
                command = next
                path.append(name)
                continue
            }
            let known = command.configuration.subcommands.compactMap { $0.configuration.commandName }
            var message = "'\(path.joined(separator: " "))' has no subcommand '\(name.escapingControlCharacters)'"
            if !known.isEmpty { message += "; it has " + known.joined(separator: ", ") }
            refuse(ValidationError(message), of: command)
        }
    }

    /// The subcommand of `command` called `name` (or with `name` as an alias).
    private static func subcommand(named name: String, of command: any ParsableCommand.Type)
        -> (any ParsableCommand.Type)?
    {
        for subcommand in command.configuration.subcommands {
            let configuration = subcommand.configuration
            if configuration.commandName == name || configuration.aliases.contains(name) { return subcommand }
        }
        return nil
    }

    /// Says what ArgumentParser says of a `ValidationError` found while parsing `command`'s
    /// arguments, with that command's usage, and exits 64.
    private static func refuse(_ error: ValidationError, of command: any ParsableCommand.Type) -> Never {
        let path = (commandPath(to: command, from: self) ?? []).joined(separator: " ")
        fflush(nil)
        StandardError.write(
            """
            Error: \(error.message)
            Usage: \(usageString(for: command))
              See 'custody \(path.isEmpty ? "" : path + " ")--help' for more information.

            """)
        exit(withError: ExitCode.validationFailure)
    }

    /// The subcommand names that lead from `root` to `command`, or nil when none does.
    private static func commandPath(
        to command: any ParsableCommand.Type, from root: any ParsableCommand.Type
    ) -> [String]? {
        if ObjectIdentifier(command) == ObjectIdentifier(root) { return [] }
        for subcommand in root.configuration.subcommands {
            if let rest = commandPath(to: command, from: subcommand) {
                return [subcommand.configuration.commandName ?? ""] + rest
            }
        }
        return nil
    }
}
