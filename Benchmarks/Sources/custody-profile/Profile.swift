import ArgumentParser
import BenchmarkData
import Custody
import CustodyPolicy
import CustodyProtection
import Foundation

/// Runs one workload in a loop, for sampling profilers:
/// `perf record -g .build/release/custody-profile save-to`.
@main
struct Profile: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "custody-profile",
        abstract: "Loop a Custody workload for a sampling profiler (perf, valgrind).")

    enum Workload: String, ExpressibleByArgument, CaseIterable {
        case saveTo = "save-to"
        case managerSaveTo = "manager-save-to"
        case stream
        case load
        case protect1K = "protect-1k"
    }

    @Argument(help: "save-to, manager-save-to, stream, load or protect-1k.")
    var workload: Workload

    @Option(help: "Repetitions.")
    var repeats = 20

    func run() async throws {
        let tenant = SyntheticTenant(accounts: workload == .load ? 100_000 : 10_000, policies: 50)
        switch workload {
        case .saveTo:
            let snapshot = PolicySnapshot(bundle: try tenant.bundle(), context: EvaluationContext(platform: .ios))
            var random = SplitMix(seed: 42)
            let accounts = (0..<4_096).map { _ in AccountID(SyntheticTenant.upn(random.next(tenant.accountCount)))! }
            var allowed = 0
            for round in 0..<(repeats * 1_000_000) {
                let decision = snapshot.saveTo(
                    owner: accounts[round & 4_095], location: SaveLocation.allCases[round % 11],
                    locationAccount: accounts[(round >> 3) & 4_095])
                if decision.isAllowed { allowed += 1 }
            }
            print(allowed)
        case .managerSaveTo:
            let manager = await PolicyManager(context: EvaluationContext(platform: .ios))
            await manager.apply(try tenant.bundle(), source: "profile")
            var random = SplitMix(seed: 42)
            let accounts = (0..<4_096).map { _ in AccountID(SyntheticTenant.upn(random.next(tenant.accountCount)))! }
            var allowed = 0
            for round in 0..<(repeats * 1_000_000) {
                let decision = manager.saveTo(
                    SaveLocation.allCases[round % 11], locationAccount: accounts[(round >> 3) & 4_095],
                    owner: .account(accounts[round & 4_095]))
                if decision.isAllowed { allowed += 1 }
            }
            print(allowed)
        case .stream:
            let snapshot = PolicySnapshot(bundle: try tenant.bundle(), context: EvaluationContext(platform: .ios))
            let lines = tenant.queries(1_000_000)
            var bytes = 0
            for _ in 0..<repeats {
                var stream = DecisionStream(snapshot: snapshot, options: .init(currentTime: { .zero }))
                lines.withUnsafeBytes { input in
                    stream.answer(lines: input, blockSize: 1 << 18) { bytes += $0.count }
                }
            }
            print(bytes)
        case .protect1K:
            let directory = "/tmp/custody-profile-keys"
            try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let keyRing = try await KeyRing(
                store: FileKeyStore(directory: directory + "/state"),
                masterKey: .keyFile(path: directory + "/master.key"))
            let protector = DataProtector(keyRing: keyRing)
            let owner = AccountID(oid: "5a1e0000-0000-4000-8000-000000000001")!
            let data = [UInt8](repeating: 1, count: 1_024)
            var total = 0
            for _ in 0..<(repeats * 100_000) {
                total += try await protector.unprotect(try await protector.protect(data, owner: owner, encrypt: true))
                    .count
            }
            print(total)
        case .load:
            let tenantBytes = tenant.tenantJSON()
            let policyBytes = tenant.policiesJSON()
            for _ in 0..<repeats {
                let bundle = try PolicyBundle.load(
                    tenant: PolicyBundle.File(name: "tenant.json", bytes: tenantBytes),
                    documents: [PolicyBundle.File(name: "policies.json", bytes: policyBytes)])
                print(PolicySnapshot(bundle: bundle).distinctEffectivePolicies.count)
            }
        }
    }
}
