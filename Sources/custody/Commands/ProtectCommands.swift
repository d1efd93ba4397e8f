import ArgumentParser
import CustodyPolicy
import CustodyProtection

#if canImport(Glibc)
import Glibc
#endif

/// `custody protect`: seal a file or stream for an account.
struct ProtectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "protect",
        abstract: "Protect a file or a stream for an account.",
        discussion: """
            Writes an envelope that names the owner. The payload is encrypted when the owner's \
            policy requires it (give --bundle) or with --force-encrypt; otherwise it is only tagged. \
            Encrypted envelopes use a fresh data key wrapped by the owner's account key, which is \
            created in the state database (--state) on first use.

            IN is a file, or - for standard input (read as plaintext). OUT is a file, or - for \
            standard output; without OUT a file is protected in place and standard input goes to \
            standard output. Files are written to a temporary file that replaces OUT only once \
            complete, so an interrupted protect leaves OUT as it was. A file that is already \
            protected is opened and sealed again for the new owner.
            """
    )

    @Option(help: ArgumentHelp("The data's owner: a UPN, or an OID in GUID form.", valueName: "account"))
    var owner: String

    @Flag(help: "Encrypt even when the owner's policy does not require it.")
    var forceEncrypt = false

    @OptionGroup var bundleOptions: OptionalBundleOptions
    @OptionGroup var protectionOptions: ProtectionOptions
    @OptionGroup var loggingOptions: LoggingOptions

    @Argument(help: ArgumentHelp("The file to protect, or - for standard input.", valueName: "in"))
    var input: String

    @Argument(help: ArgumentHelp("Where to write the envelope, or - for standard output.", valueName: "out"))
    var output: String?

    func run() throws {
        let account = try parseAccount(owner, option: "--owner")
        let destination = output ?? (input == "-" ? "-" : input)
        if destination == "-", isatty(1) == 1 {
            StandardError.write("error: refusing to write an envelope to a terminal; redirect standard output or give OUT\n")
            throw ExitCode.failure
        }
        let protector = DataProtector(keyRing: try protectionOptions.keyRing(), policy: try bundleOptions.loadSnapshot(logger: loggingOptions.makeLogger()))
        let bar = ProgressBar(label: "protect", total: input == "-" ? nil : fileSize(input))
        try reportingProtectionErrors {
            try protector.protect(
                from: input == "-" ? .stream(0, name: "standard input") : .file(input),
                to: destination == "-" ? .stream(1, name: "standard output") : .file(destination),
                owner: account, forceEncryption: forceEncrypt, progress: bar.update)
        }
        bar.finish()
    }
}

/// `custody unprotect`: the plaintext of an envelope.
struct UnprotectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unprotect",
        abstract: "Write the plaintext of a protected file or stream.",
        discussion: """
            IN is a protected file, or - for standard input. OUT is a file, or - for standard \
            output; without OUT a file is unprotected in place and standard input goes to standard \
            output. A file is replaced only once every chunk authenticated.

            Unlike the library call (which returns data that is not an envelope unchanged, as \
            Intune does), IN must be an envelope: anything else, including a damaged header, exits \
            1 with a message, so a damaged file is never mistaken for a plain one. Written to \
            standard output, plaintext comes out as chunks authenticate; a truncated envelope is \
            found at the end, so check the exit status.
            """
    )

    @OptionGroup var protectionOptions: ProtectionOptions

    @Argument(help: ArgumentHelp("The protected file, or - for standard input.", valueName: "in"))
    var input: String

    @Argument(help: ArgumentHelp("Where to write the plaintext, or - for standard output.", valueName: "out"))
    var output: String?

    func run() throws {
        let destination = output ?? (input == "-" ? "-" : input)
        if input != "-" {
            let info = try reportingProtectionErrors { try DataProtector.protectionInfo(file: input) }
            guard info != nil else {
                StandardError.write("error: \(input): not a protected file (no envelope header); nothing to unprotect\n")
                throw ExitCode.failure
            }
        }
        let protector = DataProtector(keyRing: try protectionOptions.keyRing())
        let bar = ProgressBar(label: "unprotect", total: input == "-" ? nil : fileSize(input))
        try reportingProtectionErrors {
            try protector.unprotect(
                from: input == "-" ? .stream(0, name: "standard input") : .file(input),
                to: destination == "-" ? .stream(1, name: "standard output") : .file(destination),
                progress: bar.update)
        }
        bar.finish()
    }
}

/// `custody info`: what envelopes say about themselves.
struct InfoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "Show the owner and protection of files, without any key.",
        discussion: """
            For each PATH: its owner, whether it is encrypted, the algorithm, the owner's key \
            version and the chunk size; or that it is not protected. With --json, one JSON object \
            per line. Exit status 1 when a file cannot be read or has a damaged header.
            """
    )

    @Flag(help: "One JSON object per path, one per line.")
    var json = false

    @Argument(help: ArgumentHelp("Files to inspect.", valueName: "path"))
    var paths: [String]

    func run() throws {
        var failed = false
        for path in paths {
            do {
                let info = try DataProtector.protectionInfo(file: path)
                StandardOutput.write(json ? Self.json(path: path, info: info) : Self.text(path: path, info: info))
            } catch {
                failed = true
                StandardError.write("error: \(error)\n")
            }
        }
        if failed { throw ExitCode.failure }
    }

    static func text(path: String, info: ProtectionInfo?) -> String {
        guard let info else { return "\(path): not protected\n" }
        let chunk = info.chunkSize >= 1 << 20 ? "\(info.chunkSize >> 20) MiB" : "\(info.chunkSize >> 10) KiB"
        guard info.isEncrypted, let version = info.keyVersion else {
            return "\(path): owned by \(info.owner), not encrypted (tag only), \(chunk) chunks\n"
        }
        return "\(path): owned by \(info.owner), encrypted with \(info.algorithm), key version \(version), \(chunk) chunks\n"
    }

    static func json(path: String, info: ProtectionInfo?) -> String {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("path")
        writer.value(path)
        writer.key("protected")
        writer.value(info != nil)
        if let info {
            writer.key("owner")
            writer.value(info.owner.rawValue)
            writer.key("encrypted")
            writer.value(info.isEncrypted)
            writer.key("algorithm")
            writer.value(info.isEncrypted ? info.algorithm.description : nil)
            writer.key("keyVersion")
            if let version = info.keyVersion { writer.value(Int(version)) } else { writer.null() }
            writer.key("chunkSize")
            writer.value(info.chunkSize)
        }
        writer.endObject()
        writer.newline()
        return writer.string
    }
}
