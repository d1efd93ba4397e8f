import ArgumentParser
import BenchmarkData
import CustodyPolicy
import Foundation

/// Writes a synthetic bundle directory and a JSON Lines query file, for timing the `custody`
/// binary end to end (`scripts/bench-decide.sh`).
@main
struct BenchGen: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "custody-benchgen",
        abstract: "Write a deterministic synthetic bundle and query stream for benchmarks.")

    @Option(help: "Directory to write the bundle into (created).")
    var bundle: String

    @Option(help: "File to write the queries into.")
    var queries: String

    @Option(help: "Number of tenant accounts.")
    var accounts = 10_000

    @Option(help: "Number of protection policies.")
    var policies = 50

    @Option(help: "Number of query lines.")
    var count = 1_000_000

    @Option(help: "Also write a scenario matrix here: owners × 10 locations × 4 location accounts cases over the bundle.")
    var matrix: String?

    @Option(help: "Owners in the matrix (cases = 40 × owners).")
    var matrixOwners = 2_500

    func run() throws {
        let tenant = SyntheticTenant(accounts: accounts, policies: policies)
        try FileManager.default.createDirectory(atPath: bundle, withIntermediateDirectories: true)
        try Data(tenant.tenantJSON()).write(to: URL(fileURLWithPath: bundle + "/tenant.json"))
        try Data(tenant.policiesJSON()).write(to: URL(fileURLWithPath: bundle + "/policies.json"))
        try Data(tenant.queries(count)).write(to: URL(fileURLWithPath: queries))
        if let matrix {
            let snapshot = PolicySnapshot(bundle: try tenant.bundle(), context: EvaluationContext(platform: .ios))
            let bundlePath = URL(fileURLWithPath: bundle).standardizedFileURL.path
            try Data(tenant.matrixJSON(owners: matrixOwners, bundle: bundlePath, snapshot: snapshot)).write(to: URL(fileURLWithPath: matrix))
        }
    }
}
