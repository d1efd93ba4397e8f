import Custody
import CustodyGraph
import CustodyStore
import Foundation
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle
import UnixSignals

/// What the service tells its service manager, and what it does on `SIGHUP`:
/// - once it listens (`listening` yields the address) and a policy is in force, `READY=1` and
///   `STATUS=` naming the revision; while none is in force it is not ready, and `STATUS=` says
///   why (decisions answer 503 until one is applied);
/// - on `SIGHUP` (`systemctl reload`, or `kill -HUP`, with or without systemd): `RELOADING=1`,
///   the policy read again (the bundle directory applied now, or a sync from Microsoft Graph),
///   then `READY=1` and `STATUS=` with what the reload came to; a reload refused leaves the
///   policy in force, and says so;
/// - `WATCHDOG=1` every half `WatchdogSec=`, from a task on the cooperative pool, so that a
///   process whose tasks no longer run is restarted;
/// - `STOPPING=1` when it begins to stop.
/// Without a service manager (`notifier` nil) only `SIGHUP` is acted on.
struct SystemdService: Service {
    let engine: CustodyEngine
    let notifier: ServiceNotifier?
    let graph: GraphSyncRunner?
    /// The bundle directory the service watches (set by `EngineService` once it knows it).
    let watched: WatchedDirectory
    let listening: AsyncStream<String>
    let logger: Logger

    func run() async throws {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.announceReady() }
            group.addTask { await self.reloadOnHangUp() }
            if let notifier, let interval = notifier.watchdogInterval {
                group.addTask {
                    while !Task.isCancelled {
                        notifier.notify(["WATCHDOG=1"])
                        try? await Task.sleep(for: interval)
                    }
                }
            }
            try? await gracefulShutdown()
            notifier?.notify(["STOPPING=1", "STATUS=stopping: requests in flight finish"])
            group.cancelAll()
        }
    }

    /// `READY=1` once listening with a policy in force.
    private func announceReady() async {
        var address: String?
        for await bound in listening {
            address = bound
            break
        }
        guard let address, !Task.isCancelled else { return }
        var said = false
        while !Task.isCancelled {
            if let inForce = engine.bundleInForce {
                notifier?.notify(["READY=1", "STATUS=serving revision \(inForce.revision) on \(address)"])
                break
            }
            if !said {
                notifier?.notify([
                    "STATUS=listening on \(address); no policy in force: decisions answer 503 until a bundle is applied"
                ])
                said = true
            }
            try? await Task.sleep(for: .milliseconds(250))
        }
        // A revision put in force since (the watched directory, another replica, PUT
        // /v1/bundle) is said in STATUS=, within a second.
        var shown = engine.bundleInForce?.revision
        while notifier != nil, !Task.isCancelled {
            try? await Task.sleep(for: .seconds(1))
            let now = engine.bundleInForce?.revision
            if now != shown, let now {
                notifier?.notify(["STATUS=serving revision \(now) on \(address)"])
                shown = now
            }
        }
    }

    private func reloadOnHangUp() async {
        for await _ in await UnixSignalsSequence(trapping: UnixSignal.sighup) {
            notifier?.notify(["RELOADING=1", "MONOTONIC_USEC=\(ServiceNotifier.monotonicMicroseconds())"])
            let status = await reload()
            logger.notice("reloaded on SIGHUP", metadata: ["outcome": "\(status)"])
            notifier?.notify(["READY=1", "STATUS=\(status)"])
        }
    }

    /// Reads the policy again; what it came to, in a sentence.
    func reload() async -> String {
        if let graph {
            switch await graph.sync(.request) {
            case .busy: return "reload: another replica is syncing from Microsoft Graph; its result follows"
            case .synced(let sync):
                let revision = engine.bundleInForce?.revision ?? "none"
                return sync.status == .failed
                    ? "reload: the sync from Microsoft Graph failed (\(sync.error ?? "no reason given")); revision \(revision) stays in force"
                    : "reload: synced from Microsoft Graph; serving revision \(revision)"
            }
        }
        guard let directory = watched.directory else {
            return
                "reload: no bundle directory is watched, nothing to read; serving revision \(engine.bundleInForce?.revision ?? "none")"
        }
        do throws(CustodyError) {
            let result = try await engine.apply(
                bundleDirectory: directory, provenance: BundleProvenance(appliedBy: "reload (SIGHUP)"))
            return result.unchanged
                ? "reload: \(directory) unchanged; serving revision \(result.bundle.revision)"
                : "reload: applied \(directory); serving revision \(result.bundle.revision)"
        } catch {
            return
                "reload: \(directory) refused (\(error.message)); revision \(engine.bundleInForce?.revision ?? "none") stays in force"
        }
    }
}

/// The bundle directory the service watches, once `EngineService` has started its watch: the
/// watch's own, read when asked (a watch that follows the bundle in force moves).
final class WatchedDirectory: Sendable {
    private let watch = NIOLockedValueBox<CustodyEngine.Watch?>(nil)

    var directory: String? { watch.withLockedValue { $0 }?.directory }

    func follow(_ watch: CustodyEngine.Watch) {
        self.watch.withLockedValue { $0 = watch }
    }
}
