import ArgumentParser
import Custody
import CustodyPolicy
import CustodyStore

/// `custody apply`: make a bundle the policy in force in the state database.
struct ApplyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apply",
        abstract: "Validate a bundle directory and record it, with its files, as the policy in force.",
        discussion: """
            The bundle is loaded and resolved completely first; one with errors is recorded as \
            rejected (the policy in force stays) and its errors are printed as \
            file:line:column, exit status 1. An applied bundle's files are stored in the state \
            database in one transaction with its history entry, so a service that starts later \
            (PolicyManager.restore) resumes exactly this policy. Prints the bundle's content hash.
            """
    )

    @OptionGroup var bundleOptions: BundleOptions
    @OptionGroup var stateOptions: StateOptions
    @OptionGroup var loggingOptions: LoggingOptions

    func run() async throws {
        let manager = PolicyManager(context: bundleOptions.contextOptions.context, database: try stateOptions.database(), logger: loggingOptions.makeLogger())
        do {
            try await manager.apply(bundleDirectory: bundleOptions.bundle)
        } catch {
            StandardError.write("error: \(error)\n")
            throw ExitCode.failure
        }
        let hash = (try? manager.database?.lastAppliedBundle()?.contentHash) ?? nil
        StandardOutput.write("applied \(bundleOptions.bundle): \(hash ?? "")\n")
    }
}
