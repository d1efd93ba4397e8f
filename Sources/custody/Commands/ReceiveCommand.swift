import ArgumentParser
import Custody
import CustodyPolicy
import Foundation

/// `custody receive`: may shared files be received into an account, by their own protection tag?
struct ReceiveCommand: AsyncParsableCommand, StateCommand {
    static let configuration = CommandConfiguration(
        commandName: "receive",
        abstract:
            "Decide whether shared files may be received into an account, reading each file's owner from its envelope.",
        discussion: """
            For each FILE, reads its envelope header (not the data) and decides the receive \
            query {"action":"receive","receiver":R,"dataOwner":<the owner it names>}, as Intune's \
            canReceiveSharedFile: does: the receiver's allowedInboundDataTransferSources, then the \
            owner's send rule. A file that is not an envelope is untagged data (no owner).

            An encrypted envelope's owner is verified when a master key is available (the data \
            key's wrap must open under that owner's key): a changed header, or an owner whose keys \
            were wiped, is an error. An unencrypted envelope's owner is a claim anyone can write: \
            the file is received only when it may be both as that owner's data and as untagged data.

            Prints one JSON object per file, one per line: the decision's members (see `custody \
            decide --help`) with "file", "dataOwner" and "ownerVerified". Exit status: 0 when every \
            file may be received, 1 when one may not or cannot be read.
            """
    )

    @OptionGroup var policyOptions: PolicyOptions
    @OptionGroup var stateOptions: StateOptions
    @OptionGroup var masterKeyOptions: MasterKeyOptions
    @OptionGroup var loggingOptions: LoggingOptions

    @Option(help: ArgumentHelp("The receiving account: a UPN, or an OID in GUID form.", valueName: "account"))
    var receiver: String

    @Argument(help: ArgumentHelp("The shared files.", valueName: "file"))
    var files: [String]

    func run() async throws {
        let receiver = try parseAccount(receiver, option: "--receiver")
        let engine = try await openEngine(
            state: stateOptions, policy: policyOptions, masterKeyIfPresent: masterKeyOptions, logging: loggingOptions,
            access: .readOnly)
        var failed = false
        for file in files {
            do throws(CustodyError) {
                let result = try await engine.receive(receiver: receiver, file: file)
                if !result.decision.isAllowed { failed = true }
                StandardOutput.write(result.json(file: file, includingRevision: false))
            } catch {
                failed = true
                report(error, state: stateOptions)
            }
        }
        if failed { throw ExitCode.failure }
    }
}
