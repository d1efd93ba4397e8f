import ArgumentParser
import Custody
import CustodyStore
import CustodyPolicy

/// `custody apply`: make a bundle the installation's policy in force.
struct ApplyCommand: AsyncParsableCommand, StateCommand {
    static let configuration = CommandConfiguration(
        commandName: "apply",
        abstract: "Validate a bundle directory and make it the policy in force of this state.",
        discussion: """
            The bundle is read once (at most 256 MiB of *.json files; CUSTODY_MAX_BUNDLE_BYTES \
            raises the limit), loaded and resolved completely first; one with errors is \
            recorded as rejected (the policy in force stays) and its errors are printed as \
            file:line:column, exit status 1. An applied bundle's files, content hash and accounts \
            are stored in the state database in one transaction with its history entry and an \
            audit entry. From then on every command on this state (decide, protect, wipe, keys, \
            checkin, secrets, config, policy show, matrix table) decides with it unless given \
            --bundle, and a service that starts later resumes exactly this policy, even if the \
            directory changes or vanishes. Prints the bundle's revision (its content hash); \
            applying the bundle already in force changes nothing.

            A bundle under which no account of its tenant is reached by an app protection policy \
            (an empty directory, a tenant alone, policies without a tenant, drafts only) manages no \
            account, so every decision under it would allow: it is refused unless --allow-empty \
            says that clearing the policy is meant.

            --platform, --app, --management-level and --precedence given here are recorded as the \
            installation's evaluation context: later commands on this state use them unless they \
            name their own. A decision is always for one platform, so a bundle with iOS and \
            Android policies needs a platform, recorded here or named on each command. \
            --act-on-launch (or --no-act-on-launch) is recorded the same way: whether custody \
            checkin --facts carries out a wipe that the facts call for, or only reports it.
            """
    )

    @Option(
        name: .long,
        help: ArgumentHelp("The policy bundle directory (tenant.json plus Graph JSON exports).", valueName: "dir"))
    var bundle: String

    @Flag(help: "Apply a bundle with no tenant.json and no protection policy: every account becomes unmanaged.")
    var allowEmpty = false

    @Flag(
        inversion: .prefixedNo,
        help: ArgumentHelp(
            "Whether a check-in whose launch facts call for a wipe wipes the account (recorded for this state; off until set)."
        ))
    var actOnLaunch: Bool?

    @OptionGroup var contextOptions: ContextOptions
    @OptionGroup var stateOptions: StateOptions
    @OptionGroup var historyOptions: BundleHistoryOptions
    @OptionGroup var loggingOptions: LoggingOptions

    func validate() throws {
        try refuseEmptyPath(bundle, named: "--bundle", give: "the bundle directory")
    }

    func run() async throws {
        let engine = try await openEngine(
            state: stateOptions, logging: loggingOptions, access: .readWrite, context: contextOptions.context,
            precedence: contextOptions.precedence,
            restoring: false, history: historyOptions)
        // What this apply records for every replica's event stream is the change from the
        // bundle in force, when it loads.
        await engine.restoreBundleInForceIfItLoads()
        let result = try await engine.apply(
            bundleDirectory: bundle, allowingEmpty: allowEmpty,
            provenance: BundleProvenance(appliedBy: commandLineOperator))
        try await engine.recordContext(contextOptions.context, precedence: contextOptions.precedence)
        if let actOnLaunch, try await engine.setActingOnLaunch(actOnLaunch, by: commandLineOperator) {
            StandardError.write(
                actOnLaunch
                    ? "acting on launch: a check-in whose reported facts call for a wipe now wipes the account\n"
                    : "no longer acting on launch: wipe outcomes of check-ins are reported only\n")
        }
        StandardOutput.write(
            "\(result.unchanged ? "already in force" : "applied") \(bundle): \(result.bundle.revision)\n")
        if let platform = engine.context.platform {
            StandardError.write("decisions on this state are for \(platform) unless a command names another platform\n")
        } else if (try? engine.policy()) == nil {
            StandardError.write(
                "note: the bundle holds iOS and Android policies; decisions need --platform (give it here to record it for this state)\n"
            )
        }
    }
}
