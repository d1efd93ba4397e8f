import Benchmark
import BenchmarkData
import CustodyPolicy
import Foundation

// Targets (issue 2): a save-to or open-from decision on a loaded 10,000-account bundle at
// ≤ 100 ns median; the JSON Lines stream at ≥ 500,000 decisions/s with parsing and printing;
// a 100,000-account, 50-policy bundle loaded and resolved in ≤ 2 s.

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal],
        warmupIterations: 3,
        maxDuration: .seconds(5),
        maxIterations: 1_000)

    protectionBenchmarks()

    // MARK: In-process decisions, 10,000 accounts

    let tenant = SyntheticTenant(accounts: 10_000, policies: 50)
    let snapshot = PolicySnapshot(bundle: try! tenant.bundle(), context: EvaluationContext(platform: .ios))
    var random = SplitMix(seed: 42)
    func account() -> AccountID {
        let index = random.next(tenant.accountCount)
        return AccountID(random.next(4) == 0 ? SyntheticTenant.oid(index) : SyntheticTenant.upn(index))!
    }
    let saves: [(AccountID, SaveLocation, AccountID?)] = (0..<4_096).map { _ in
        (account(), SaveLocation.allCases[random.next(SaveLocation.allCases.count)], random.next(3) == 0 ? nil : account())
    }
    let opens: [(AccountID, OpenLocation, AccountID?)] = (0..<4_096).map { _ in
        (account(), OpenLocation.allCases[random.next(OpenLocation.allCases.count)], random.next(3) == 0 ? nil : account())
    }

    // The regression gate of `make check` (scripts/bench-gate.sh) checks this one against the
    // static thresholds in Benchmarks/Thresholds/: its p90 wall time may reach twice the figure
    // kept there (a relative tolerance of 100%), not more; its p90 allocations for 1,000
    // decisions (none today) may grow by fewer than 1,000, so a decision that allocates fails.
    let gate: [BenchmarkMetric: BenchmarkThresholds] = [
        .wallClock: BenchmarkThresholds(relative: [.p90: 100]),
        .mallocCountTotal: BenchmarkThresholds(relative: [.p90: 100], absolute: [.p90: 999]),
    ]
    Benchmark(
        "saveTo decision, 10k-account bundle", configuration: .init(scalingFactor: .kilo, thresholds: gate)
    ) { benchmark in
        var index = 0
        for _ in benchmark.scaledIterations {
            let (owner, location, holder) = saves[index & 4_095]
            blackHole(snapshot.saveTo(owner: owner, location: location, locationAccount: holder))
            index &+= 1
        }
    }

    Benchmark("openFrom decision, 10k-account bundle", configuration: .init(scalingFactor: .kilo)) { benchmark in
        var index = 0
        for _ in benchmark.scaledIterations {
            let (receiver, location, holder) = opens[index & 4_095]
            blackHole(snapshot.openFrom(receiver: receiver, location: location, locationAccount: holder))
            index &+= 1
        }
    }

    // Issue 27: a launch decision with five facts on a policy with Level 3's conditions (OS
    // minimum and maximum, threat level, account state, PIN retries, jailbreak) and offline
    // grace: ≤ 500 ns in process.
    let launchPolicy = """
        {"@odata.type": "#microsoft.graph.iosManagedAppProtection", "displayName": "Launch",
         "minimumRequiredOsVersion": "14.8", "maximumRequiredOsVersion": "26.0", "minimumWarningAppVersion": "5.0",
         "maximumAllowedDeviceThreatLevel": "secured", "appActionIfUnableToAuthenticateUser": "block",
         "pinRequired": true, "maximumPinRetries": 5, "deviceComplianceRequired": true,
         "appActionIfDeviceComplianceRequired": "wipe"}
        """
    let launchTenant = #"{"accounts": [{"oid": "0a000000-0000-4000-8000-000000000001", "upn": "alice@contoso.com"}]}"#
    let launchSnapshot = PolicySnapshot(
        bundle: try! PolicyBundle.load(
            tenant: PolicyBundle.File(name: "tenant.json", bytes: Array(launchTenant.utf8)),
            documents: [PolicyBundle.File(name: "p.json", bytes: Array(launchPolicy.utf8))]),
        context: EvaluationContext(platform: .ios))
    let launchAccount = AccountID("alice@contoso.com")!
    var launchFacts = LaunchFacts()
    launchFacts.osVersion = SoftwareVersion("17.4.1")
    launchFacts.appVersion = SoftwareVersion("5.2")
    launchFacts.jailbroken = false
    launchFacts.threatLevel = .secured
    launchFacts.lastCheckIn = .seconds(1_800_000_000 - 600)
    Benchmark("launch decision, five facts", configuration: .init(scalingFactor: .kilo)) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(
                launchSnapshot.launch(
                    account: launchAccount, facts: launchFacts, now: .seconds(1_800_000_000), missingFacts: .ignore))
        }
    }

    Benchmark("saveTo decision with its reason text, 10k-account bundle", configuration: .init(scalingFactor: .kilo)) { benchmark in
        var index = 0
        for _ in benchmark.scaledIterations {
            let (owner, location, holder) = saves[index & 4_095]
            blackHole(snapshot.saveTo(owner: owner, location: location, locationAccount: holder).reason)
            index &+= 1
        }
    }

    runtimeBenchmarks(tenant: tenant, saves: saves)

    // MARK: The JSON Lines stream, 1,000,000 queries

    let lines = tenant.queries(1_000_000)
    Benchmark(
        "decide stream, 1M JSON Lines (parse, decide, print)",
        configuration: .init(metrics: [.wallClock, .throughput], scalingFactor: .mega, maxDuration: .seconds(30), maxIterations: 10)
    ) { benchmark in
        // As `custody decide` does: answers written out in 256 KiB blocks (here, discarded).
        var stream = DecisionStream(snapshot: snapshot, options: .init(currentTime: { .zero }))
        benchmark.startMeasurement()
        lines.withUnsafeBytes { bytes in
            stream.answer(lines: bytes, blockSize: 1 << 18) { blackHole($0) }
        }
        benchmark.stopMeasurement()
        precondition(stream.lineNumber == 1_000_000 && stream.errorCount == 0)
    }

    // MARK: Loading and resolving 100,000 accounts and 50 policies

    let large = SyntheticTenant(accounts: 100_000, policies: 50)
    let directory = NSTemporaryDirectory() + "custody-bench-\(ProcessInfo.processInfo.processIdentifier)"
    try! FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    try! Data(large.tenantJSON()).write(to: URL(fileURLWithPath: directory + "/tenant.json"))
    try! Data(large.policiesJSON()).write(to: URL(fileURLWithPath: directory + "/policies.json"))

    Benchmark(
        "load and resolve bundle, 100k accounts, 50 policies",
        configuration: .init(metrics: [.wallClock, .peakMemoryResident], maxDuration: .seconds(30), maxIterations: 10)
    ) { benchmark in
        let bundle = try PolicyBundle.load(path: directory)
        let resolved = PolicySnapshot(bundle: bundle, context: EvaluationContext(platform: .ios))
        precondition(bundle.tenant.accounts.count == 100_000 && bundle.protectionPolicies.count == 50)
        blackHole(resolved)
    }

    // MARK: Scenario matrices: 100,000 generated cases (issue 6: under 2 s)

    let matrixDirectory = directory + "/matrix"
    try! FileManager.default.createDirectory(atPath: matrixDirectory + "/bundle", withIntermediateDirectories: true)
    try! Data(tenant.tenantJSON()).write(to: URL(fileURLWithPath: matrixDirectory + "/bundle/tenant.json"))
    try! Data(tenant.policiesJSON()).write(to: URL(fileURLWithPath: matrixDirectory + "/bundle/policies.json"))
    let matrixFile = matrixDirectory + "/generated.matrix.json"
    try! Data(tenant.matrixJSON(owners: 2_500, bundle: "bundle", snapshot: snapshot)).write(to: URL(fileURLWithPath: matrixFile))

    Benchmark(
        "matrix run, 100,000 generated cases (load bundle and matrix, expand, decide, check)",
        configuration: .init(metrics: [.wallClock, .peakMemoryResident], maxDuration: .seconds(30), maxIterations: 10)
    ) { benchmark in
        let run = ScenarioRun(files: [matrixFile])
        precondition(run.passed == 100_000 && run.failed == 0, "\(run.files.first?.diagnostics ?? [])")
        blackHole(run)
    }
}
