import Benchmark
import BenchmarkData
import Custody
import CustodyPolicy
import Foundation
import Synchronization

// Targets (issue 4): change-to-delivery latency for 1,000 subscribers ≤ 10 ms median (from
// the swap to the last subscriber); decisions through PolicyManager within 20% of the bare
// snapshot figure ("saveTo decision, 10k-account bundle").

func runtimeBenchmarks(tenant: SyntheticTenant, saves: [(AccountID, SaveLocation, AccountID?)]) {
    let bundle = try! tenant.bundle()
    let manager = blocking {
        let manager = await PolicyManager(context: EvaluationContext(platform: .ios))
        await manager.apply(bundle, source: "benchmark")
        return manager
    }

    Benchmark("saveTo decision through PolicyManager, 10k-account bundle", configuration: .init(scalingFactor: .kilo)) { benchmark in
        var index = 0
        for _ in benchmark.scaledIterations {
            let (owner, location, holder) = saves[index & 4_095]
            blackHole(manager.saveTo(location, locationAccount: holder, owner: .account(owner)))
            index &+= 1
        }
    }

    // The same decision through an installation: the bundle applied to a state, then a new
    // engine opened on that state (as each process does), deciding with the bundle in force.
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("custody-bench-\(UUID().uuidString)").path
    try! FileManager.default.createDirectory(atPath: directory + "/bundle", withIntermediateDirectories: true)
    try! Data(tenant.tenantJSON()).write(to: URL(fileURLWithPath: directory + "/bundle/tenant.json"))
    try! Data(tenant.policiesJSON()).write(to: URL(fileURLWithPath: directory + "/bundle/policies.json"))
    let engineReady = DispatchSemaphore(value: 0)
    nonisolated(unsafe) var opened: CustodyEngine?
    Task {
        let configuration = CustodyConfiguration(state: .path(directory + "/state.sqlite"), context: EvaluationContext(platform: .ios))
        try! await CustodyEngine.open(configuration).apply(bundleDirectory: directory + "/bundle")
        opened = try! await CustodyEngine.open(configuration)
        engineReady.signal()
    }
    engineReady.wait()
    let engine = opened!
    try? FileManager.default.removeItem(atPath: directory)

    Benchmark("saveTo decision through CustodyEngine (bundle in force restored), 10k-account bundle", configuration: .init(scalingFactor: .kilo)) {
        benchmark in
        var index = 0
        for _ in benchmark.scaledIterations {
            let (owner, location, holder) = saves[index & 4_095]
            blackHole(engine.saveTo(location, locationAccount: holder, owner: .account(owner)))
            index &+= 1
        }
    }

    // Two small bundles that differ in one setting of the one policy: every apply publishes one
    // policyChanged event, which 1,000 subscribers must all receive.
    func small(printBlocked: Bool) -> PolicyBundle {
        let tenant = #"{"accounts": [{"oid": "a0000000-0000-4000-8000-000000000001", "upn": "a@contoso.com", "groups": []}]}"#
        let policy = ##"{"value": [{"@odata.type": "#microsoft.graph.iosManagedAppProtection", "id": "T_1", "displayName": "P", "printBlocked": \##(printBlocked)}]}"##
        return try! PolicyBundle.load(
            tenant: PolicyBundle.File(name: "tenant.json", bytes: Array(tenant.utf8)),
            documents: [PolicyBundle.File(name: "policies.json", bytes: Array(policy.utf8))])
    }
    let before = small(printBlocked: false)
    let after = small(printBlocked: true)
    Benchmark(
        "change to delivery, 1,000 subscribers (swap to last receipt)",
        configuration: .init(metrics: [.wallClock], maxDuration: .seconds(20), maxIterations: 200)
    ) { benchmark in
        let manager = await PolicyManager(context: EvaluationContext(platform: .ios))
        await manager.apply(before, source: "benchmark")
        let received = Counter()
        let tasks = (0..<1_000).map { _ in
            let events = manager.events()
            return Task {
                for await _ in events { received.increment() }
            }
        }
        benchmark.startMeasurement()
        await manager.apply(after, source: "benchmark")
        while received.value < 1_000 { await Task.yield() }
        benchmark.stopMeasurement()
        manager.finish()
        for task in tasks { await task.value }
    }
}

/// A count several tasks add to.
final class Counter: Sendable {
    private let count = Atomic<Int>(0)
    var value: Int { count.load(ordering: .acquiring) }
    func increment() { count.add(1, ordering: .releasing) }
}
