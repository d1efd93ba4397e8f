import ArgumentParser
import Foundation
import CustodyPolicy
import CustodyProtection
import CustodyStore

/// `custody keys`: account keys in the state database.
struct KeysCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Rotate, rewrap and list account keys.",
        subcommands: [Rotate.self, Rewrap.self, List.self]
    )

    /// `custody keys rotate --account A`
    struct Rotate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a new version of an account's key.",
            discussion: """
                New envelopes for the account use the new version; existing ones still open with \
                theirs. Run `custody keys rewrap` to move files to the new version. Prints the \
                account's key identifier and the new version.
                """
        )

        @OptionGroup var options: AccountKeyOptions

        func run() throws {
            let (protector, owner, _) = try options.protectorAndOwner()
            let version = try reportingProtectionErrors { try protector.keyRing.rotate(owner) }
            StandardOutput.write("\(owner): key version \(version)\n")
        }
    }

    /// `custody keys rewrap PATH...`
    struct Rewrap: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Re-seal protected files under their owners' newest key versions.",
            discussion: "Files already on the newest version, files not encrypted and files not protected are left alone."
        )

        @OptionGroup var protectionOptions: ProtectionOptions

        @Argument(help: ArgumentHelp("Protected files.", valueName: "path"))
        var paths: [String]

        func run() throws {
            let protector = DataProtector(keyRing: try protectionOptions.keyRing())
            var failed = false
            for path in paths {
                do {
                    let before = try DataProtector.protectionInfo(file: path)
                    if try protector.rewrap(file: path) {
                        let after = try DataProtector.protectionInfo(file: path)
                        StandardOutput.write("\(path): key version \(before?.keyVersion ?? 0) → \(after?.keyVersion ?? 0)\n")
                    } else {
                        let state = before == nil ? "not protected" : before?.isEncrypted == true ? "already on the newest key version" : "not encrypted"
                        StandardOutput.write("\(path): \(state)\n")
                    }
                } catch {
                    failed = true
                    StandardError.write("error: \(error.path == nil ? "\(path): " : "")\(error)\n")
                }
            }
            if failed { throw ExitCode.failure }
        }
    }

    /// `custody keys list`
    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the accounts that have keys, and their key versions.")

        @OptionGroup var protectionOptions: ProtectionOptions

        func run() throws {
            let keyRing = try protectionOptions.keyRing()
            try reportingProtectionErrors {
                for owner in try keyRing.store.owners() {
                    let versions = try keyRing.versions(of: owner).map(String.init).joined(separator: ", ")
                    StandardOutput.write("\(owner): versions \(versions)\n")
                }
            }
        }
    }
}

/// `custody wipe --account A`: crypto-shred an account's data.
struct WipeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wipe",
        abstract: "Delete every version of an account's key: its encrypted data can never be opened again.",
        discussion: """
            Selective wipe by crypto-shredding: every version of the account's key, its secrets and \
            its check-in are deleted from the state database in one transaction (deleted rows are \
            overwritten and the write-ahead log truncated), so every envelope encrypted for it \
            becomes unreadable wherever it is. The wipe is written to the audit log. Other \
            accounts' data is untouched. There is no undo.
            """
    )

    @OptionGroup var options: AccountKeyOptions

    func run() throws {
        let (protector, owner, database) = try options.protectorAndOwner()
        var count = try reportingStoreErrors {
            try database.wipe(owner: owner.rawValue, checkInKey: owner.rawValue, reason: "custody wipe", at: Date())
        }
        count += try reportingProtectionErrors { try protector.keyRing.wipe(owner) }
        StandardOutput.write(count == 0 ? "\(owner): no keys to wipe\n" : "\(owner): wiped \(count) key version\(count == 1 ? "" : "s")\n")
    }
}

/// The options of commands that act on one account's keys.
struct AccountKeyOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The account: a UPN, or an OID in GUID form.", valueName: "account"))
    var account: String

    @OptionGroup var bundleOptions: OptionalBundleOptions
    @OptionGroup var protectionOptions: ProtectionOptions
    @OptionGroup var loggingOptions: LoggingOptions

    /// A protector over the state's keys (and the bundle's policy, if given), the identifier
    /// the account's keys are kept under, and the state database the keys are in.
    func protectorAndOwner() throws -> (protector: DataProtector, owner: OwnerIdentifier, database: CustodyDatabase) {
        let account = try parseAccount(account, option: "--account")
        let (database, keyRing) = try protectionOptions.stateAndKeyRing()
        let protector = DataProtector(keyRing: keyRing, policy: try bundleOptions.loadSnapshot(logger: loggingOptions.makeLogger()))
        return (protector, protector.ownerIdentifier(for: account), database)
    }
}
