import ArgumentParser
import CustodyPolicy
import Foundation

/// `custody decide`: JSON Lines queries in, one JSON decision per line out.
struct DecideCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decide",
        abstract: "Answer JSON Lines queries on standard input, one decision per line.",
        discussion: """
            Each input line is one query object; each output line answers the input line of the \
            same number. Queries (field names exact; an account is a UPN, an OID, an \
            {"oid","upn"} object or null):

              {"action":"saveTo","owner":A,"location":L,"locationAccount":A|null}
              {"action":"openFrom","receiver":A,"location":L,"locationAccount":A|null}
              {"action":"share","owner":A,"targets":["app id", ...]}
              {"action":"receive","receiver":A,"dataOwner":A|null}
              {"action":"copyOut","owner":A,"destinationManaged":true,"length":12}
              {"action":"pasteIn","owner":A,"sourceManaged":false}
              {"action":"print"|"backup"|"screenCapture"|"encryptionRequired"|"notifications"|"accountAllowed","account":A}
              {"action":"offlineAccess","account":A,"offlineFor":"PT13H"}
              {"action":"offlineAccess","account":A,"lastCheckIn":"2026-11-20T08:00:00Z","now":"2026-11-21T08:00:00Z"}

            Save locations: other, oneDriveForBusiness, sharePoint, box, dropbox, googleDrive, \
            localDrive, cameraRoll, accountDocument, iManage, egnyte. Open locations: other, \
            oneDriveForBusiness, sharePoint, camera, localStorage, photos, accountDocument, box, \
            iManage, egnyte.

            Every answer has "allowed" and "reason", plus "setting" and "policies" naming what \
            decided; notifications add "restriction", offlineAccess "state", encryptionRequired \
            "required" (the same as "allowed"), share "targets" with a decision per target. A line \
            that cannot be read is answered {"error": "line N, column C: ...", "line": N} and the \
            following lines are still answered.

            Exit status: 0 when every line was answered, 1 when the bundle does not load or any \
            line was an error.
            """
    )

    @OptionGroup var bundleOptions: BundleOptions
    @OptionGroup var loggingOptions: LoggingOptions

    @Flag(help: "Answer queries naming an account the tenant does not know with an error, instead of treating it as unmanaged.")
    var strictAccounts = false

    @Option(help: ArgumentHelp("json: one JSON object per line (the contract); text: one line per answer for people.", valueName: "json|text"))
    var format: DecisionStream.Format = .json

    func run() throws {
        let snapshot = try bundleOptions.loadSnapshot(logger: loggingOptions.makeLogger())
        let options = DecisionStream.Options(strictAccounts: strictAccounts, format: format) {
            .seconds(Date().timeIntervalSince1970)
        }
        var stream = DecisionStream(snapshot: snapshot, options: options)
        var output: [UInt8] = []
        output.reserveCapacity(1 << 18)
        var reader = LineReader(descriptor: 0)
        let completed = reader.forEachLine { line in
            stream.answer(line: line, into: &output)
            if output.count >= 1 << 18 {
                StandardOutput.write(output)
                output.removeAll(keepingCapacity: true)
            }
        }
        StandardOutput.write(output)
        guard completed else {
            StandardError.write("error: reading standard input failed after line \(stream.lineNumber)\n")
            throw ExitCode.failure
        }
        if stream.errorCount > 0 { throw ExitCode.failure }
    }
}
