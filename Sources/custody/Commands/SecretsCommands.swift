import ArgumentParser
import Custody
import CustodyPolicy
import CustodyProtection
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `custody secrets`: passwords, certificates and identities for the app, sealed in the state.
struct SecretsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "secrets",
        abstract: "Store, list and remove the app's secrets, per account or app-wide.",
        discussion: """
            Secrets are sealed with the account's key (app-wide ones with an app key) in the \
            state database; a wipe of the account deletes them. An account is resolved through \
            the policy in force (or --bundle), so its UPN and OID find the same secrets; an \
            account the installation does not know is an error. Values are never printed, \
            logged or audited, and never taken from the command line.
            """,
        subcommands: [AddPassword.self, AddCertificate.self, AddIdentity.self, List.self, Remove.self]
    )

    struct Options: ParsableArguments {
        @Option(
            help: ArgumentHelp(
                "The account the secret belongs to (a UPN, or an OID in GUID form); app-wide without it.",
                valueName: "account"))
        var account: String?

        @OptionGroup var policyOptions: PolicyOptions
        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var masterKeyOptions: MasterKeyOptions
        @OptionGroup var loggingOptions: LoggingOptions

        /// The provider, and the account resolved to the form its secrets are kept under (nil:
        /// app-wide).
        func provider() async throws -> (SecretsProvider, AccountID?) {
            let account = try account.map { try parseAccount($0, option: "--account") }
            let engine = try await openEngine(
                state: stateOptions, policy: policyOptions, masterKey: masterKeyOptions, logging: loggingOptions,
                access: .readWrite)
            var resolved: AccountID?
            if let account { resolved = try await engine.resolve(account).id }
            return (try engine.secrets(), resolved)
        }
    }

    /// `custody secrets add-password ID [--account A]`
    struct AddPassword: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add-password",
            abstract: "Store a password read from standard input (a terminal does not echo it).",
            discussion: "One trailing line break is removed. The password never appears on the command line."
        )

        @Argument(help: ArgumentHelp("The secret's identifier.", valueName: "id"))
        var identifier: String

        @OptionGroup var options: Options

        func run() async throws {
            let (provider, account) = try await options.provider()
            var bytes = try readPassword()
            defer { SecureMemory.zero(&bytes) }
            guard let password = String(validating: bytes, as: UTF8.self) else {
                StandardError.write("error: the password is not UTF-8 text\n")
                throw ExitCode.failure
            }
            try await provider.storePassword(password, identifier: identifier, for: account)
            StandardOutput.write("stored password \(identifier) for \(holder(account))\n")
        }

        /// Standard input, with echo off on a terminal, without its last line break.
        private func readPassword() throws -> [UInt8] {
            var bytes: [UInt8]
            if isatty(STDIN_FILENO) == 1 {
                StandardError.write("password: ")
                var original = termios()
                tcgetattr(STDIN_FILENO, &original)
                var silent = original
                silent.c_lflag &= ~tcflag_t(ECHO)
                tcsetattr(STDIN_FILENO, TCSANOW, &silent)
                defer {
                    tcsetattr(STDIN_FILENO, TCSANOW, &original)
                    StandardError.write("\n")
                }
                bytes = Array((readLine(strippingNewline: true) ?? "").utf8)
            } else {
                switch Descriptor.readToEnd(STDIN_FILENO) {
                case .success(let read): bytes = read
                case .failure(let error):
                    StandardError.write("error: reading the password from standard input failed: \(error)\n")
                    throw ExitCode.failure
                }
                if bytes.last == 0x0A { bytes.removeLast() }
                if bytes.last == 0x0D { bytes.removeLast() }
            }
            return bytes
        }
    }

    /// `custody secrets add-certificate ID FILE [--account A]`
    struct AddCertificate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add-certificate",
            abstract: "Store an X.509 certificate (PEM or DER), checked before it is stored."
        )

        @Argument(help: ArgumentHelp("The secret's identifier.", valueName: "id"))
        var identifier: String

        @Argument(help: ArgumentHelp("The certificate file.", valueName: "file"))
        var file: String

        @OptionGroup var options: Options

        func run() async throws {
            let (provider, account) = try await options.provider()
            let bytes = try readFile(file)
            let certificate = try await provider.storeCertificate(bytes, identifier: identifier, for: account)
            StandardOutput.write("stored certificate \(identifier) for \(holder(account)): \(certificate)\n")
        }
    }

    /// `custody secrets add-identity ID --certificate FILE --key FILE [--account A]`
    struct AddIdentity: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add-identity",
            abstract: "Store a certificate with its private key (PEM: P-256, P-384, P-521, Ed25519 or RSA).",
            discussion: "The key must belong to the certificate. The key file is read, never echoed."
        )

        @Argument(help: ArgumentHelp("The secret's identifier.", valueName: "id"))
        var identifier: String

        @Option(help: ArgumentHelp("The certificate file (PEM or DER).", valueName: "file"))
        var certificate: String

        @Option(help: ArgumentHelp("The private key file (PEM: PKCS#8, SEC1 or PKCS#1).", valueName: "file"))
        var key: String

        @OptionGroup var options: Options

        func run() async throws {
            let (provider, account) = try await options.provider()
            let certificateBytes = try readFile(certificate)
            var keyBytes = try readFile(key)
            defer { SecureMemory.zero(&keyBytes) }
            let identity = try await provider.storeIdentity(
                certificate: certificateBytes, privateKey: keyBytes, identifier: identifier, for: account)
            StandardOutput.write("stored identity \(identifier) for \(holder(account)): \(identity.certificate)\n")
        }
    }

    /// `custody secrets list [--account A] [--json]`
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract:
                "List the stored secrets of an account (or the app-wide ones): identifiers and kinds, never values."
        )

        @OptionGroup var options: Options

        @Flag(help: "Print JSON.")
        var json = false

        func run() async throws {
            let (provider, account) = try await options.provider()
            let secrets = try await provider.list(for: account)
            if json {
                StandardOutput.write(try JSONLine.encode(secrets.map(ListedSecret.init)))
            } else {
                for secret in secrets {
                    StandardOutput.write(
                        "\(secret.identifier)\t\(secret.kind.rawValue)\t\(formatTime(secret.updated))\n")
                }
            }
        }
    }

    /// `custody secrets remove ID [--account A]`
    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "remove", abstract: "Remove a secret; exit 1 when there is none.")

        @Argument(help: ArgumentHelp("The secret's identifier.", valueName: "id"))
        var identifier: String

        @OptionGroup var options: Options

        func run() async throws {
            let (provider, account) = try await options.provider()
            guard try await provider.remove(identifier: identifier, for: account) else {
                StandardError.write("error: no secret '\(identifier)' for \(holder(account))\n")
                throw ExitCode.failure
            }
            StandardOutput.write("removed \(identifier)\n")
        }
    }
}

/// Whose a secret is, in words: the account, or the app for app-wide secrets.
private func holder(_ account: AccountID?) -> String {
    account.map { "\($0)" } ?? "the app"
}

/// A file's bytes, or a message and exit 1.
private func readFile(_ path: String) throws -> [UInt8] {
    guard let data = FileManager.default.contents(atPath: path) else {
        StandardError.write("error: cannot read \(path)\n")
        throw ExitCode.failure
    }
    return [UInt8](data)
}

/// One secret as `custody secrets list --json` prints it (never its value).
struct ListedSecret: Encodable {
    var identifier: String
    var kind: String
    /// The account it belongs to; null for an app-wide secret.
    @Nullable var owner: String?
    var updated: String

    init(_ secret: SecretsProvider.Summary) {
        identifier = secret.identifier
        kind = secret.kind.rawValue
        owner = secret.owner?.rawValue
        updated = formatTime(secret.updated)
    }
}

/// A `secrets` subcommand: its state is the one its shared options name.
protocol SecretsSubcommand: StateCommand {
    var options: SecretsCommand.Options { get }
}

extension SecretsSubcommand {
    var stateOptions: StateOptions { options.stateOptions }
}

extension SecretsCommand.AddPassword: SecretsSubcommand {}
extension SecretsCommand.AddCertificate: SecretsSubcommand {}
extension SecretsCommand.AddIdentity: SecretsSubcommand {}
extension SecretsCommand.List: SecretsSubcommand {}
extension SecretsCommand.Remove: SecretsSubcommand {}
