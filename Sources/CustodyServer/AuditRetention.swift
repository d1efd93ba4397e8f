import Custody
import Logging
import ServiceLifecycle

/// `custody serve --audit-retention AGE`: deletes the audit log's entries older than `age` at
/// start and then every `interval`, so that the log (one entry a decision, with decision
/// auditing on) cannot grow without bound. Each deletion is recorded in the log itself. A
/// state that cannot be reached is tried again at the next round; on a shared PostgreSQL
/// state every replica prunes, which deletes each entry once (a replica finding nothing to
/// delete records nothing).
struct AuditRetention: Service {
    let engine: CustodyEngine
    let age: Duration
    let interval: Duration
    let logger: Logger

    func run() async throws {
        let (engine, age, interval, logger) = (engine, age, interval, logger)
        let pruning = Task {
            while !Task.isCancelled {
                do {
                    let pruned = try await StateExecutor.run { () async throws(CustodyError) -> Int in
                        try await engine.pruneAuditLog(olderThan: age)
                    }
                    if pruned > 0 {
                        logger.notice("audit log pruned", metadata: ["entries": "\(pruned)", "olderThan": "\(age)"])
                    }
                } catch {
                    logger.warning(
                        "the audit log was not pruned; tried again in \(interval)", metadata: ["error": "\(error)"])
                }
                try? await Task.sleep(for: interval)
            }
        }
        try? await gracefulShutdown()
        pruning.cancel()
    }
}
