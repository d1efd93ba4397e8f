import Custody
import CustodyGraph
import CoreMetrics
import CustodyStore
import Logging
import ServiceLifecycle

/// The engine's background work while the service runs: applying the bundle directory as it
/// changes, evaluating offline grace, and following the state's change log (what other
/// processes and replicas record in it). On shutdown it stops both and ends every event
/// stream (each client gets a final `shutdown` event).
struct EngineService: Service {
    let engine: CustodyEngine
    let configuration: CustodyServerConfiguration
    let logger: Logger
    /// Whether the policy comes from Microsoft Graph: then no directory is watched.
    var syncsFromGraph = false
    /// Told which directory is watched (what `SIGHUP` reads again).
    var watched = WatchedDirectory()

    func run() async throws {
        let watch = engine.watch(
            bundleDirectory: configuration.bundleDirectory, recordedDirectory: !syncsFromGraph,
            interval: configuration.watchInterval,
            offlineCheckInterval: configuration.offlineCheckInterval)
        watched.follow(watch)
        if let directory = watch.directory {
            logger.info("watching the bundle directory", metadata: ["directory": "\(directory)"])
        } else if syncsFromGraph {
            logger.notice("no bundle directory to watch: the policy comes from Microsoft Graph (--graph)")
        } else {
            logger.notice(
                "no bundle directory to watch: the policy in force is the state's (custody apply, PUT /v1/bundle, another replica)"
            )
        }
        // What other processes and replicas do to the state (a bundle applied, a wipe, a key
        // rotated, a token revoked, their events) reaches this service: on PostgreSQL as soon
        // as it commits (LISTEN/NOTIFY), and within a poll interval in any case.
        let follower = Task {
            await engine.follow(pollInterval: configuration.statePollInterval, staleAfter: configuration.staleAfter)
        }
        try? await gracefulShutdown()
        follower.cancel()
        watch.cancel()
        engine.finishEventStreams()
    }
}

/// Syncs the policy from Microsoft Graph at start and every `interval` while the service runs;
/// on shutdown it stops (a sync in progress is cancelled: nothing half-applied, the policy in
/// force stays) and closes the Graph client.
struct GraphSyncService: Service {
    let runner: GraphSyncRunner
    let interval: Duration
    let metrics: ServerMetrics

    func run() async throws {
        let metrics = metrics
        let schedule = Task { await runner.run(every: interval) { metrics.graphSynced($0) } }
        try? await gracefulShutdown()
        schedule.cancel()
        _ = await schedule.value
        await runner.sync.shutdown()
    }
}

/// Records this replica's status in the shared state every few seconds (what `GET /v1/fleet`
/// lists), keeps `custody_fleet_replicas_behind` current, and announces replicas that stay
/// behind the newest revision (`replicaBehind`; one replica announces, see
/// `CustodyEngine.announceReplicasBehind`). Every state call runs on the state's threads, never
/// on the cooperative pool. On shutdown the replica's status is removed: it is gone, not stale.
struct FleetService: Service {
    let engine: CustodyEngine
    let behindAfter: Duration
    let metrics: ServerMetrics
    let logger: Logger

    func run() async throws {
        let engine = engine
        let metrics = metrics
        let logger = logger
        let threshold = Double(behindAfter.components.seconds)
        let beat = Task {
            var announced = Set<String>()
            while !Task.isCancelled {
                do {
                    let before = announced
                    announced = try await StateExecutor.run { () throws(CustodyError) -> Set<String> in
                        try await engine.recordReplicaStatus()
                        await metrics.replicasBehind.record(try engine.fleetStatus().behind)
                        return try await engine.announceReplicasBehind(threshold: threshold, announced: before)
                    }
                } catch {
                    logger.debug("cannot record this replica's status", metadata: ["error": "\(error)"])
                }
                try? await Task.sleep(for: FleetStatus.interval)
            }
        }
        try? await gracefulShutdown()
        beat.cancel()
        _ = await beat.value
        await StateExecutor.run { await engine.forgetReplicaStatus() }
    }
}

/// Decides every live decision under the state's shadow bundle too, whenever there is one
/// (`CustodyEngine.runShadow`), counting what it finds in `/metrics`; on shutdown the queued
/// decisions are decided and the counts recorded in the state.
struct ShadowService: Service {
    let engine: CustodyEngine
    let metrics: ServerMetrics

    func run() async throws {
        let (engine, metrics) = (engine, metrics)
        let shadow = Task { await engine.runShadow { metrics.shadowObserved($0) } }
        try? await gracefulShutdown()
        shadow.cancel()
        await shadow.value
    }
}
