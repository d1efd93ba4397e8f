import ArgumentParser
import Custody
import CustodyPolicy
import CustodyProtection
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// `custody protect`: seal a file or stream for an account.
struct ProtectCommand: AsyncParsableCommand, StateCommand {
    static let configuration = CommandConfiguration(
        commandName: "protect",
        abstract: "Protect a file, a directory tree or a stream for an account.",
        discussion: """
            Writes an envelope that names the owner. The payload is encrypted unless the owner's \
            policy in force says encryption is not required (then it is only tagged, and a note \
            on standard error says so). The policy is the bundle in force in the state (see \
            `custody apply`), or --bundle for this command alone; with neither, nothing is \
            written. An owner the policy does not know is an error unless --unmanaged (tag only, \
            the Intune behaviour for unmanaged accounts) or --force-encrypt (sealed under a key \
            of its own, which a wipe of that account deletes). --unmanaged is refused for an \
            account whose policy requires encryption. Encrypted envelopes use a data key of their \
            own, derived from the owner's account key (created in the state on first use) and a \
            random salt.

            IN is a file, or - for standard input (read as plaintext). OUT is a file, or - for \
            standard output; without OUT a file is protected in place and standard input goes to \
            standard output. Files are written to a temporary file that replaces OUT only once \
            complete, so an interrupted protect leaves OUT as it was. A file that is already \
            protected is opened and sealed again for the new owner, unless --verify.

            IN may be a directory: every regular file in it and below it is protected in place \
            (one progress bar for the tree), files already protected for the owner are left as \
            they are, and the owner is recorded in the directory (.custody-owner) for files \
            created there later. Skipped files (already protected, symbolic links, devices) are \
            listed on standard error with the reason; a file that fails is named and left as it \
            was, the others are still done, and the exit status is 1.
            """
    )

    @Option(help: ArgumentHelp("The data's owner: a UPN, or an OID in GUID form.", valueName: "account"))
    var owner: String

    @Flag(help: "Encrypt even when the owner's policy does not require it, or the policy does not know the owner.")
    var forceEncrypt = false

    @Flag(help: "Tag the data with an owner the policy does not manage, without encrypting it.")
    var unmanaged = false

    @Flag(
        help:
            "Leave a file that is already protected for the owner as it is, and say so (Intune's verifyAndProtect); protects in place. Directories are always protected this way."
    )
    var verify = false

    @OptionGroup var policyOptions: PolicyOptions
    @OptionGroup var stateOptions: StateOptions
    @OptionGroup var masterKeyOptions: MasterKeyOptions
    @OptionGroup var loggingOptions: LoggingOptions

    @Argument(help: ArgumentHelp("The file or directory to protect, or - for standard input.", valueName: "in"))
    var input: String

    @Argument(help: ArgumentHelp("Where to write the envelope, or - for standard output.", valueName: "out"))
    var output: String?

    func validate() throws {
        if forceEncrypt && unmanaged { throw ValidationError("--force-encrypt and --unmanaged exclude each other") }
        if verify && (input == "-" || (output != nil && output != input)) {
            throw ValidationError("--verify protects a file in place: give IN alone, a file or a directory")
        }
    }

    func run() async throws {
        let account = try parseAccount(owner, option: "--owner")
        let mode: ProtectionMode = forceEncrypt ? .forceEncryption : unmanaged ? .unmanaged : .policy
        if input != "-", isDirectory(input) {
            guard output == nil || output == input else {
                throw ValidationError("a directory is protected in place: give no OUT")
            }
            let engine = try await openEngine(
                state: stateOptions, policy: policyOptions, masterKey: masterKeyOptions, logging: loggingOptions,
                access: .readWrite)
            let bar = TreeProgressBar(label: "protect")
            let protected = try await engine.protect(directory: input, owner: account, mode: mode, progress: bar.update)
            bar.finish()
            let plan = protected.plan
            let how = plan.encrypted ? "encrypted" : "tagged, not encrypted (\(plan.reason))"
            try render(protected.report, done: "protected for \(plan.owner), \(how)")
            return
        }
        if verify {
            let engine = try await openEngine(
                state: stateOptions, policy: policyOptions, masterKey: masterKeyOptions, logging: loggingOptions,
                access: .readWrite)
            let bar = ProgressBar(label: "protect", total: fileSize(input))
            let verified = try await engine.verifyAndProtect(
                file: input, owner: account, mode: mode, progress: bar.update)
            bar.finish()
            let plan = verified.plan
            if let skipped = verified.skipped {
                StandardError.write(
                    "skipped: \(input.escapingControlCharacters): \(skipped.escapingControlCharacters)\n")
            } else if !plan.encrypted {
                StandardError.write("note: \(input) is tagged for \(plan.owner) but not encrypted: \(plan.reason)\n")
            }
            return
        }
        let destination = output ?? (input == "-" ? "-" : input)
        if destination == "-", isatty(1) == 1 {
            StandardError.write(
                "error: refusing to write an envelope to a terminal; redirect standard output or give OUT\n")
            throw ExitCode.failure
        }
        let engine = try await openEngine(
            state: stateOptions, policy: policyOptions, masterKey: masterKeyOptions, logging: loggingOptions,
            access: .readWrite)
        let bar = ProgressBar(label: "protect", total: input == "-" ? nil : fileSize(input))
        let plan = try await Self.namingModes(mode) { () throws(CustodyError) in
            try await engine.protect(
                from: input == "-" ? .stream(0, name: "standard input") : .file(input),
                to: destination == "-" ? .stream(1, name: "standard output") : .file(destination),
                owner: account, mode: mode, progress: bar.update)
        }
        bar.finish()
        if !plan.encrypted {
            StandardError.write(
                "note: \(destination == "-" ? "the envelope" : destination) is tagged for \(plan.owner) but not encrypted: \(plan.reason)\n"
            )
        }
    }
}

/// `custody unprotect`: the plaintext of an envelope.
struct UnprotectCommand: AsyncParsableCommand, StateCommand {
    static let configuration = CommandConfiguration(
        commandName: "unprotect",
        abstract: "Write the plaintext of a protected file, directory tree or stream.",
        discussion: """
            IN is a protected file, or - for standard input. OUT is a file, or - for standard \
            output; without OUT a file is unprotected in place and standard input goes to standard \
            output. A file is replaced only once every chunk authenticated.

            IN may be a directory: every protected file in it and below it is replaced by its \
            plaintext (one progress bar for the tree) and the directory's owner record is \
            removed. Files that are not protected are skipped; a file that fails is named and \
            left as it was, the others are still done, and the exit status is 1.

            Opening needs only the owner's key in the state: no policy is consulted (a wiped \
            account's keys are gone, and its data is reported as wiped). Unlike the library call \
            (which returns data that is not an envelope unchanged, as Intune does), IN must be an \
            envelope: anything else exits 1 with a message, unless --pass-through, which copies \
            data that does not start like an envelope to OUT unchanged (a file unprotected in \
            place is then left as it is). A header damaged after its first four bytes (the magic \
            number) is an error either way; an envelope whose magic number itself was damaged no \
            longer starts like one, and --pass-through copies it as it is: ciphertext, never \
            plaintext. Written to standard output, plaintext \
            comes out as chunks authenticate; a truncated envelope is found at the end, so check \
            the exit status.
            """
    )

    @OptionGroup var stateOptions: StateOptions
    @OptionGroup var masterKeyOptions: MasterKeyOptions
    @OptionGroup var loggingOptions: LoggingOptions

    @Flag(
        help:
            "Copy data that is not an envelope to OUT unchanged instead of refusing it (Intune's behaviour for data never protected)."
    )
    var passThrough = false

    @Argument(help: ArgumentHelp("The protected file or directory, or - for standard input.", valueName: "in"))
    var input: String

    @Argument(help: ArgumentHelp("Where to write the plaintext, or - for standard output.", valueName: "out"))
    var output: String?

    func run() async throws {
        let destination = output ?? (input == "-" ? "-" : input)
        let engine = try await openEngine(
            state: stateOptions, masterKey: masterKeyOptions, logging: loggingOptions, access: .reading)
        if input != "-", isDirectory(input) {
            guard destination == input else {
                throw ValidationError("a directory is unprotected in place: give no OUT")
            }
            let bar = TreeProgressBar(label: "unprotect")
            let report = try await engine.unprotect(directory: input, progress: bar.update)
            bar.finish()
            try render(report, done: "unprotected")
            return
        }
        let bar = ProgressBar(label: "unprotect", total: input == "-" ? nil : fileSize(input))
        let wasEnvelope = try await engine.unprotect(
            from: input == "-" ? .stream(0, name: "standard input") : .file(input),
            to: destination == "-" ? .stream(1, name: "standard output") : .file(destination),
            passThrough: passThrough, progress: bar.update)
        bar.finish()
        if !wasEnvelope {
            let source = input == "-" ? "standard input" : input
            let what = destination == input && input != "-" ? "left as it is" : "passed through unchanged"
            StandardError.write("note: \(source.escapingControlCharacters) is not protected: \(what)\n")
        }
    }
}

/// `custody info`: what envelopes say about themselves.
struct InfoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "Show the owner and protection of files, without any key.",
        discussion: """
            For each PATH: its owner, whether it is encrypted, the algorithm, the owner's key \
            version and the chunk size; or that it is not protected. PATH - reads standard input \
            (no more than a header). With --json, one JSON object per line. Exit status 1 when a \
            file cannot be read or has a damaged header.
            """
    )

    @Flag(help: "One JSON object per path, one per line.")
    var json = false

    @Argument(help: ArgumentHelp("Files to inspect, or - for standard input.", valueName: "path"))
    var paths: [String]

    func run() throws {
        var failed = false
        for path in paths {
            do {
                let info = try DataProtector.protectionInfo(
                    from: path == "-" ? .stream(0, name: "standard input") : .file(path))
                let name = path == "-" ? "standard input" : path
                StandardOutput.write(
                    json
                        ? Self.json(path: name, info: info)
                        : Self.text(path: name, info: info).escapingControlCharacters + "\n")
            } catch {
                failed = true
                StandardError.write("error: \(error)\n")
            }
        }
        if failed { throw ExitCode.failure }
    }

    static func text(path: String, info: ProtectionInfo?) -> String {
        guard let info else { return "\(path): not protected" }
        let chunk = info.chunkSize >= 1 << 20 ? "\(info.chunkSize >> 20) MiB" : "\(info.chunkSize >> 10) KiB"
        guard info.isEncrypted, let version = info.keyVersion else {
            return "\(path): owned by \(info.owner), not encrypted (tag only), \(chunk) chunks"
        }
        return
            "\(path): owned by \(info.owner), encrypted with \(info.algorithm), key version \(version), \(chunk) chunks"
    }

    static func json(path: String, info: ProtectionInfo?) -> String {
        String(decoding: (try? JSONLine.encode(EnvelopeInfo(path: path, info: info))) ?? [], as: UTF8.self)
    }

    /// `custody info --json`: what one file's envelope says about itself; the envelope's
    /// members only when it is one.
    struct EnvelopeInfo: Encodable {
        var path: String
        var protected: Bool
        var owner: String?
        var encrypted: Bool?
        @Nullable var algorithm: String?
        @Nullable var keyVersion: UInt32?
        var chunkSize: Int?

        init(path: String, info: ProtectionInfo?) {
            self.path = path
            protected = info != nil
            guard let info else { return }
            owner = info.owner.rawValue
            encrypted = info.isEncrypted
            algorithm = info.isEncrypted ? info.algorithm.description : nil
            keyVersion = info.keyVersion
            chunkSize = info.chunkSize
        }

        private enum CodingKeys: String, CodingKey {
            case path, protected, owner, encrypted, algorithm, keyVersion, chunkSize
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(path, forKey: .path)
            try container.encode(protected, forKey: .protected)
            // A file that is not an envelope has none of the envelope's members.
            guard protected else { return }
            try container.encode(owner, forKey: .owner)
            try container.encode(encrypted, forKey: .encrypted)
            try container.encode(_algorithm, forKey: .algorithm)
            try container.encode(_keyVersion, forKey: .keyVersion)
            try container.encode(chunkSize, forKey: .chunkSize)
        }
    }
}

/// Whether `path` is a directory, or a link to one (which the tree operations then refuse by
/// name).
private func isDirectory(_ path: String) -> Bool {
    var isDirectory: ObjCBool = false
    return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue
}

/// Prints what a tree operation did on standard error; exits 1 when any file failed.
private func render(_ report: DirectoryReport, done: String) throws {
    let size =
        report.bytes >= 1 << 20
        ? "\(report.bytes >> 20) MiB" : report.bytes >= 1 << 10 ? "\(report.bytes >> 10) KiB" : "\(report.bytes) bytes"
    var text = "\(report.written.count) file\(report.written.count == 1 ? "" : "s") (\(size)) \(done)"
    text += report.skipped.isEmpty ? "\n" : "; \(report.skipped.count) skipped:\n"
    for skipped in report.skipped {
        text += "  \(skipped.path.escapingControlCharacters): \(skipped.reason.escapingControlCharacters)\n"
    }
    for failure in report.failed { text += "error: \(failure.message.escapingControlCharacters)\n" }
    StandardError.write(text)
    if !report.failed.isEmpty {
        StandardError.write(
            "error: \(report.failed.count) file\(report.failed.count == 1 ? "" : "s") could not be done and \(report.failed.count == 1 ? "was" : "were") left as \(report.failed.count == 1 ? "it was" : "they were")\n"
        )
        throw ExitCode.failure
    }
}

extension ProtectCommand {
    /// `body`, its refusal of an account the policy does not manage ending with the options that
    /// protect such data anyway, when the policy decided the protection.
    static func namingModes<Result>(_ mode: ProtectionMode, _ body: () async throws(CustodyError) -> Result)
        async throws(CustodyError) -> Result
    {
        do {
            return try await body()
        } catch  where error.code == .account && mode == .policy {
            throw CustodyError(
                error.code, error.message + " (--unmanaged or --force-encrypt)", underlying: error.underlying)
        }
    }
}
