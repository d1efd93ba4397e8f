import ArgumentParser
import Custody
import CustodyPolicy
import Foundation

/// `custody decide`: JSON Lines queries in, one JSON decision per line out.
struct DecideCommand: AsyncParsableCommand, StateCommand {
    /// The most threads `--jobs` may ask for: more only costs memory (a session each).
    static let maximumJobs = 1_024

    static let configuration = CommandConfiguration(
        commandName: "decide",
        abstract: "Answer JSON Lines queries on standard input, one decision per line.",
        discussion: """
            Each input line is one query object; each output line answers the input line of the \
            same number. Queries (field names exact; an account A is a UPN, an OID, an \
            {"oid","upn"} object or null; a time T is RFC 3339, such as "2026-11-20T08:00:00Z"):

              {"action":"saveTo","owner":A,"location":L,"locationAccount":A|null}
              {"action":"openFrom","receiver":A,"location":L,"locationAccount":A|null}
              {"action":"share","owner":A,"targets":["app id", ...]}
              {"action":"receive","receiver":A,"dataOwner":A|null}
              {"action":"copyOut","owner":A,"destinationManaged":true,"length":12}
              {"action":"pasteIn","owner":A,"sourceManaged":false}
              {"action":"print"|"backup"|"screenCapture","account":A}
              {"action":"encryptionRequired"|"notifications"|"accountAllowed","account":A}
              {"action":"appSharing"|"appIntents"|"contactSync","account":A}
              {"action":"writingTools"|"genmoji"|"widgetContentSync","account":A}
              {"action":"thirdPartyKeyboard","account":A,"keyboard":"com.example.kb"|null}
              {"action":"openURL","account":A,"url":"tel:+15550100"}
              {"action":"offlineAccess","account":A,"offlineFor":"PT13H"}
              {"action":"offlineAccess","account":A,"lastCheckIn":T,"now":T}
              {"action":"launch","account":A,"facts":{...},"missingFacts":"ignore","now":T}

            Launch facts (conditional launch; a fact left out is missing): osVersion, appVersion, \
            sdkVersion, patchVersion ("2026-09-01"), companyPortalVersion (versions as strings of \
            numbers, compared number by number: 1.10 is later than 1.9), deviceModel, \
            deviceManufacturer, threatLevel (secured, low, medium, high), lastCheckIn (RFC 3339; \
            the state's check-in when left out), accountState (active, disabled, deleted), \
            pinFailures, jailbroken (or rooted), clockedOut, deviceLockSet, passcodeComplexity \
            (none, low, medium, high), deviceIntegrity (none, basicIntegrity, \
            basicIntegrityAndDeviceCertification), integrityEvaluationType (basic, hardwareBacked), \
            appsVerified, knoxAttested, companyPortalVersionAgeDays. With a state, the \
            facts a query leaves out are taken from those `custody checkin --facts` recorded. A \
            launch answer has "outcome" (allow, warn, block or wipe: a wipe beats a block beats a \
            warn), "checks" (each check that failed or lacked its fact: setting, value, \
            requirement, fact, reported, missing, outcome, policy, counts) and "missingFacts"; a \
            check whose fact is missing counts as failed unless "missingFacts":"ignore", and blocks \
            at most: a missing fact never wipes. A lastCheckIn \
            more than 5 minutes after "now" is not believed: it blocks. openURL answers \
            "outcome" allowed, redirect (with "redirect", the app's URL scheme or package id) or \
            blocked: tel: by dialerRestrictionLevel, sms: by protectedMessagingRedirectAppType, \
            http(s): by managedBrowserToOpenLinksRequired, any other scheme by the send rule.

            A view showing data of several accounts at once asks with "accounts":[A, ...] (or \
            "owners" for share, copyOut and pasteIn) instead of "account" ("owner"): it gets the \
            most restrictive of the accounts' answers, with "account" naming the deciding one and \
            "accounts" each account's own answer.

            Save locations: other, oneDriveForBusiness, sharePoint, box, dropbox, googleDrive, \
            localDrive, cameraRoll, accountDocument, iManage, egnyte. Open locations: other, \
            oneDriveForBusiness, sharePoint, camera, localStorage, photos, accountDocument, box, \
            iManage, egnyte.

            Every answer has "allowed" and "reason", plus "setting" and "policies" naming what \
            decided; notifications add "restriction", offlineAccess "state", encryptionRequired \
            "required" (the same as "allowed"), share "targets" with a decision per target (and \
            "filtersShareSheet" under Open-In/Share filtering), receive and openFrom of data \
            without an owner that becomes the receiver's "protectAsReceiver". --explain adds \
            "rule", "basis" (documented or inferred) and "source". A decision is for one \
            platform: a bundle with iOS and Android policies needs --platform (or one recorded \
            by `custody apply`). A line \
            that cannot be read is answered {"error": "line N, column C: ...", "line": N, "code": "invalid-query"} and the \
            following lines are still answered.

            Decisions use the bundle in force in the state (see `custody apply`), or --bundle for \
            this command alone; with neither, the command stops with an error. Contradictory \
            accounts (an OID and a UPN the tenant records for different accounts) are line \
            errors. With decision auditing on (`custody audit --decisions on`), every decision is \
            written to the audit log before its answer.

            Exit status: 0 when every line was answered, 1 when there is no policy, the bundle \
            does not load, auditing failed, or any line was an error.
            """
    )

    @OptionGroup var policyOptions: PolicyOptions
    @OptionGroup var stateOptions: StateOptions
    @OptionGroup var loggingOptions: LoggingOptions

    @Flag(
        help:
            "Answer queries naming an account the tenant does not know with an error, instead of treating it as unmanaged."
    )
    var strictAccounts = false

    @Flag(
        help:
            "Add the rule behind each answer: its name, whether Microsoft documents it or Custody infers it, and the source."
    )
    var explain = false

    @Option(
        help: ArgumentHelp(
            "json: one JSON object per line (the contract); text: one line per answer for people, ending with the decision id when decisions are audited.",
            valueName: "json|text"))
    var format: DecisionStream.Format = .json

    @Option(
        help: ArgumentHelp(
            "Answer on this many threads, 1 to 1,024 (one per core by default). Output order does not depend on it.",
            valueName: "n"))
    var jobs: Int = ProcessInfo.processInfo.activeProcessorCount

    @Option(help: .hidden)
    var blockBytes: Int = 1 << 20

    @Option(
        help: ArgumentHelp(
            "A longer line is answered with an error in its place, without being read into memory.",
            valueName: "bytes"))
    var maxLineBytes: Int = DecisionRunner.defaultMaximumLineBytes

    func validate() throws {
        guard maxLineBytes >= 1 else { throw ValidationError("--max-line-bytes must be at least 1") }
        guard (1...DecideCommand.maximumJobs).contains(jobs) else {
            throw ValidationError("--jobs must be between 1 and \(DecideCommand.maximumJobs)")
        }
        guard blockBytes >= 1 else { throw ValidationError("--block-bytes must be at least 1") }
    }

    func run() async throws {
        let engine = try await openEngine(
            state: stateOptions, policy: policyOptions, logging: loggingOptions, access: .readOnly)
        var options = DecisionStream.Options(strictAccounts: strictAccounts, format: format, explain: explain) {
            .seconds(Date().timeIntervalSince1970)
        }
        // A launch line's missing facts come from those the account last reported here.
        options.recordedFacts = engine.recordedLaunchFactsWaiting
        let runner = try await engine.decisionRunner(
            options: options, jobs: jobs, blockBytes: blockBytes, maximumLineBytes: maxLineBytes)
        let summary = await runner.run(descriptor: 0) { StandardOutput.write($0) }
        if let failure = summary.auditFailure {
            StandardError.write(
                "error: writing the audit log failed, so answering stopped after line \(summary.lines): \(failure)\n")
            throw ExitCode.failure
        }
        if let failure = summary.readFailure {
            StandardError.write("error: reading standard input failed after line \(summary.lines): \(failure)\n")
            throw ExitCode.failure
        }
        if summary.errors > 0 { throw ExitCode.failure }
    }
}
