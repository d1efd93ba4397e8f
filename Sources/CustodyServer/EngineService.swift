import Custody
import Logging
import ServiceLifecycle

/// The engine's background work while the service runs: applying the bundle directory as it
/// changes, evaluating offline grace, and catching up with what other processes record in the
/// state. On shutdown it stops both and ends every event
/// stream (each client gets a final `shutdown` event).
struct EngineService: Service {
    let engine: CustodyEngine
    let configuration: CustodyServerConfiguration
    let logger: Logger

    func run() async throws {
        let watch: CustodyEngine.Watch?
        do {
            watch = try engine.watch(
                bundleDirectory: configuration.bundleDirectory, interval: configuration.watchInterval,
                offlineCheckInterval: configuration.offlineCheckInterval)
            logger.info("watching the bundle directory", metadata: ["directory": "\(watch?.directory ?? "")"])
        } catch {
            // Nothing to watch: the policy comes from PUT /v1/bundle (and the state).
            logger.notice("no bundle directory to watch; bundles come from PUT /v1/bundle")
            watch = nil
        }
        // What other processes do to the state (a custody apply, a wipe, their events) reaches
        // this service within a second.
        let follower = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                await engine.manager.catchUp()
            }
        }
        try? await gracefulShutdown()
        follower.cancel()
        watch?.cancel()
        engine.manager.finish()
    }
}
