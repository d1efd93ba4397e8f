import Custody
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

    func run() async throws {
        let watch = engine.watch(
            bundleDirectory: configuration.bundleDirectory, interval: configuration.watchInterval,
            offlineCheckInterval: configuration.offlineCheckInterval)
        if let directory = watch.directory {
            logger.info("watching the bundle directory", metadata: ["directory": "\(directory)"])
        } else {
            logger.notice("no bundle directory to watch: the policy in force is the state's (custody apply, PUT /v1/bundle, another replica)")
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
        engine.manager.finish()
    }
}
