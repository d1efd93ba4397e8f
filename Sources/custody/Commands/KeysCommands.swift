import ArgumentParser
import Custody
import CustodyPolicy
import CustodyProtection

/// `custody keys`: account keys in the state database.
struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Rotate, rewrap and list account keys.",
        subcommands: [Rotate.self, Rewrap.self, List.self]
    )

    /// `custody keys rotate --account A`
    struct Rotate: AsyncParsableCommand, StateCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate",
            abstract: "Add a new version of an account's key.",
            discussion: """
                The account is resolved through the policy in force (or --bundle), so a UPN and an \
                OID of one account name the same keys; an account the installation does not know is \
                an error. New envelopes for the account use the new version; existing ones still \
                open with theirs. Run `custody keys rewrap` to move files to the new version. The \
                rotation is written to the audit log. Prints the account's key identifier and the \
                new version (with --json, as POST /v1/accounts/{account}/keys/rotate answers).
                """
        )

        @Option(help: ArgumentHelp("The account: a UPN, or an OID in GUID form.", valueName: "account"))
        var account: String

        @Flag(help: "Print the answer as JSON: {\"owner\": …, \"version\": …}.")
        var json = false

        @OptionGroup var policyOptions: PolicyOptions
        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var masterKeyOptions: MasterKeyOptions
        @OptionGroup var loggingOptions: LoggingOptions

        func run() async throws {
            let account = try parseAccount(account, option: "--account")
            let engine = try await openEngine(
                state: stateOptions, policy: policyOptions, masterKey: masterKeyOptions, logging: loggingOptions,
                access: .readWrite)
            let rotation = try await engine.rotateKey(account: account)
            if json {
                StandardOutput.write(try JSONLine.encode(rotation))
            } else {
                StandardOutput.write("\(rotation.owner): key version \(rotation.version)\n")
            }
        }
    }

    /// `custody keys rewrap PATH...`
    struct Rewrap: AsyncParsableCommand, StateCommand {
        static let configuration = CommandConfiguration(
            commandName: "rewrap",
            abstract: "Re-seal protected files under their owners' newest key versions.",
            discussion:
                "Files already on the newest version, files not encrypted and files not protected are left alone."
        )

        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var masterKeyOptions: MasterKeyOptions
        @OptionGroup var loggingOptions: LoggingOptions

        @Argument(help: ArgumentHelp("Protected files.", valueName: "path"))
        var paths: [String]

        func run() async throws {
            let engine = try await openEngine(
                state: stateOptions, masterKey: masterKeyOptions, logging: loggingOptions, access: .existing)
            var failed = false
            for path in paths {
                do {
                    switch try await engine.rewrap(file: path) {
                    case .rewrapped(let from, let to): StandardOutput.write("\(path): key version \(from) → \(to)\n")
                    case .alreadyNewest: StandardOutput.write("\(path): already on the newest key version\n")
                    case .notEncrypted: StandardOutput.write("\(path): not encrypted\n")
                    case .notProtected: StandardOutput.write("\(path): not protected\n")
                    }
                } catch {
                    failed = true
                    StandardError.write("error: \(error.message.hasPrefix(path) ? "" : "\(path): ")\(error.message)\n")
                }
            }
            if failed { throw ExitCode.failure }
        }
    }

    /// `custody keys list`
    struct List: AsyncParsableCommand, StateCommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract: "List the accounts that have keys, and their key versions.",
            discussion:
                "One line per key identifier; the account's UPN follows when the policy in force knows it. Needs no master key."
        )

        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var loggingOptions: LoggingOptions

        func run() async throws {
            let engine = try await openEngine(state: stateOptions, logging: loggingOptions, access: .reading)
            for owner in try await engine.keyOwners() {
                let name = owner.account.flatMap(\.upn).map { " (\($0))" } ?? ""
                StandardOutput.write(
                    "\(owner.owner)\(name): versions \(owner.versions.map(String.init).joined(separator: ", "))\n")
            }
        }
    }
}

/// `custody wipe --account A`: crypto-shred an account's data.
struct WipeCommand: AsyncParsableCommand, StateCommand {
    static let configuration = CommandConfiguration(
        commandName: "wipe",
        abstract: "Delete every version of an account's keys: its encrypted data can never be opened again.",
        discussion: """
            Selective wipe by crypto-shredding. The account is resolved to one account of this \
            installation through the policy in force (or --bundle), which links its UPN and OID, \
            or through the state, which remembers every identifier the account has had here \
            (keys written under an earlier UPN included). Every version of its keys under every \
            one of those identifiers, its secrets and its check-ins are deleted from the state \
            database in one transaction (deleted rows are overwritten and the write-ahead log \
            truncated), so every envelope encrypted for it becomes unreadable wherever it is. \
            The wipe is written to the audit log and what was removed is printed. Other \
            accounts' data is untouched. There is no undo. Needs no master key.

            An account the installation cannot resolve (neither the policy nor the state knows \
            it), or whose OID and UPN name different accounts, is an error, exit status 1: \
            nothing is reported wiped that was not.
            """
    )

    @Option(help: ArgumentHelp("The account: a UPN, or an OID in GUID form.", valueName: "account"))
    var account: String

    @Flag(help: "Print the answer as JSON, as POST /v1/accounts/{account}/wipe answers.")
    var json = false

    @OptionGroup var policyOptions: PolicyOptions
    @OptionGroup var stateOptions: StateOptions
    @OptionGroup var loggingOptions: LoggingOptions

    func run() async throws {
        let account = try parseAccount(account, option: "--account")
        let engine = try await openEngine(
            state: stateOptions, policy: policyOptions, logging: loggingOptions, access: .existing)
        let report = try await engine.wipe(account: account, reason: "custody wipe")
        if json {
            StandardOutput.write(try JSONLine.encode(WipeAnswer(report, eventID: engine.lastEventID)))
            return
        }
        let searched = report.resolved.identifiers.map(\.rawValue).joined(separator: ", ")
        let versions = report.keyVersions == 1 ? "1 key version" : "\(report.keyVersions) key versions"
        let under = report.keyVersionsByIdentifier.sorted { $0.key.rawValue < $1.key.rawValue }.map {
            "\($0.key): \($0.value)"
        }
        let secrets = report.secrets == 1 ? "1 secret" : "\(report.secrets) secrets"
        if report.keyVersions == 0 {
            StandardOutput.write("\(report.owner): no keys to wipe under \(searched); \(secrets) removed\n")
        } else {
            StandardOutput.write(
                "\(report.owner): wiped \(versions) (\(under.joined(separator: ", "))) and \(secrets)\n")
        }
    }
}
