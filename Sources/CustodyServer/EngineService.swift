import Custody
import Logging
import ServiceLifecycle

/// The engine's background work while the service runs: applying the bundle directory as it
/// changes, and evaluating offline grace. On shutdown it stops both and ends every event
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
        try? await gracefulShutdown()
        watch?.cancel()
        engine.manager.finish()
    }
}
