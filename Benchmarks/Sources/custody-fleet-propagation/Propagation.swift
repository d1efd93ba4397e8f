import ArgumentParser
import Custody
import CustodyPolicy
import Foundation

/// How long a change committed through one replica takes to be in force on every replica of a
/// fleet on one PostgreSQL state. The replicas are separate engines in this process, each with
/// its own connections and listener (as separate processes would have), following the state
/// (`CustodyEngine.follow`). Changes go through each replica in turn.
///
/// Three kinds of change, in turn: a bundle applied (in force = every replica decides with its
/// revision; each replica reads the bundle's files from the state and loads them), a token
/// created (in force = every replica has applied its change-log revision), and a wipe (in force
/// = every replica refuses to open an envelope of the account that it opened just before, from
/// its cached key). Latency is measured from the writer's call returning (the commit is done)
/// and, second figure, from the call starting; observers check every 50 µs.
@main
struct Propagation: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "custody-fleet-propagation",
        abstract: "Change propagation across replicas on one PostgreSQL state.")

    @Option(help: "The PostgreSQL state URL (a fresh schema is best).")
    var url: String

    @Option(help: "Two bundle directories with different revisions, applied alternately.")
    var bundle: [String]

    @Option(help: "Master key file shared by the replicas.")
    var masterKey: String

    @Option(help: "Replicas.")
    var replicas = 3

    @Option(help: "Changes of each kind.")
    var changes = 1_000

    func run() async throws {
        guard bundle.count == 2 else { throw ValidationError("give --bundle twice") }
        var engines: [CustodyEngine] = []
        for index in 0..<replicas {
            engines.append(
                try await CustodyEngine.open(
                    CustodyConfiguration(
                        state: .postgres(url + "&application_name=replica\(index)"),
                        masterKey: .keyFile(path: masterKey),
                        context: EvaluationContext(platform: .ios))))
        }
        let followers = engines.map { engine in Task { await engine.follow(pollInterval: .seconds(1)) } }
        defer { for follower in followers { follower.cancel() } }
        while !engines.allSatisfy({ $0.replicaStatus.listening }) { try await Task.sleep(for: .milliseconds(10)) }
        // Warm up: both bundles once.
        for directory in bundle { try await engines[0].apply(bundleDirectory: directory) }
        try await Task.sleep(for: .milliseconds(200))

        var bundleFromReturn: [Double] = []
        var bundleFromCall: [Double] = []
        var tokenFromReturn: [Double] = []
        var tokenFromCall: [Double] = []
        var wipeFromReturn: [Double] = []
        var wipeFromCall: [Double] = []
        guard let account = try engines[0].policy().bundle.tenant.accounts.first?.id else {
            throw ValidationError("the bundle names no account")
        }
        for round in 0..<changes {
            let writer = engines[round % engines.count]
            var start = ContinuousClock.now
            let applied = try await writer.apply(bundleDirectory: bundle[round % 2])
            var committed = ContinuousClock.now
            let revision = applied.bundle.revision
            while !engines.allSatisfy({ $0.bundleInForce?.revision == revision }) {
                try await Task.sleep(for: .microseconds(50))
            }
            var done = ContinuousClock.now
            bundleFromReturn.append(milliseconds(committed.duration(to: done)))
            bundleFromCall.append(milliseconds(start.duration(to: done)))

            start = ContinuousClock.now
            _ = try await writer.createToken(scopes: [.decide], name: "propagation \(round)")
            committed = ContinuousClock.now
            let newest = try await writer.newestChangeRevision()
            while !engines.allSatisfy({ $0.replicaStatus.revision >= newest }) {
                try await Task.sleep(for: .microseconds(50))
            }
            done = ContinuousClock.now
            tokenFromReturn.append(milliseconds(committed.duration(to: done)))
            tokenFromCall.append(milliseconds(start.duration(to: done)))

            // A fresh key for the account (after the last round's wipe), cached on every replica.
            let envelope = try await writer.protect([1, 2, 3], owner: account, mode: .forceEncryption).envelope
            for engine in engines { _ = try await engine.unprotect(envelope) }
            start = ContinuousClock.now
            try await writer.wipe(account: account, reason: "propagation \(round)")
            committed = ContinuousClock.now
            while await anyOpens(envelope, engines) { try await Task.sleep(for: .microseconds(50)) }
            done = ContinuousClock.now
            wipeFromReturn.append(milliseconds(committed.duration(to: done)))
            wipeFromCall.append(milliseconds(start.duration(to: done)))
        }
        print("replicas: \(replicas), changes of each kind: \(changes)")
        report("bundle applied, from commit (call returned)", bundleFromReturn)
        report("bundle applied, from the call", bundleFromCall)
        report("token created, from commit (call returned)", tokenFromReturn)
        report("token created, from the call", tokenFromCall)
        report("wipe, from commit (call returned)", wipeFromReturn)
        report("wipe, from the call", wipeFromCall)
    }

    /// Whether any replica still opens the envelope (its cached key not yet dropped).
    func anyOpens(_ envelope: [UInt8], _ engines: [CustodyEngine]) async -> Bool {
        for engine in engines {
            if (try? await engine.unprotect(envelope)) != nil { return true }
        }
        return false
    }

    func milliseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1_000 + Double(duration.components.attoseconds) / 1e15
    }

    func report(_ label: String, _ samples: [Double]) {
        let sorted = samples.sorted()
        func percentile(_ p: Double) -> Double {
            sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
        }
        print(
            String(
                format: "%@: p50 %.2f ms, p99 %.2f ms, max %.2f ms", label, percentile(0.50), percentile(0.99),
                sorted.last ?? 0))
    }
}
