import CustodyPolicy
import CustodyProtection
import CustodyStore
public import Foundation
import Logging

/// How current one replica is with the state it shares with others: the last change it
/// applied, whether it hears of new ones, and when it last reached the state.
public struct ReplicaStatus: Sendable, Hashable {
    /// The revision of the last change applied here (0: none since the log began).
    public var revision: Int64
    /// The newest revision this replica has heard of (from a notice or a read).
    public var newestKnown: Int64
    /// Whether it is listening for changes now (always true for a store that is polled and
    /// answered the last poll).
    public var listening: Bool
    /// When the state last answered.
    public var lastContact: Date?
    /// Why the state cannot be reached now, if it cannot.
    public var problem: String?
    /// How long without contact makes it stale.
    public var staleAfter: Duration

    /// Stale: it may be missing changes (its listener is down, or the state has not answered
    /// within `staleAfter`). It keeps answering from the policy in force, and says so.
    public func isStale(at now: Date = Date()) -> Bool {
        guard listening, let lastContact else { return true }
        return now.timeIntervalSince(lastContact) > Double(staleAfter.components.seconds) + Double(staleAfter.components.attoseconds) / 1e18
    }
}

/// Applies the state's change log to one engine, in order, once each.
actor ChangeApplier {
    let state: any StateStore
    let keyRing: KeyRing?
    let tokenCache: TokenCache
    let auditSetting: DecisionAuditSetting
    let manager: PolicyManager
    let replica: Locked<ReplicaStatus>
    private(set) var revision: Int64

    init(
        state: any StateStore, keyRing: KeyRing?, tokenCache: TokenCache, auditSetting: DecisionAuditSetting, manager: PolicyManager,
        replica: Locked<ReplicaStatus>
    ) {
        self.state = state
        self.keyRing = keyRing
        self.tokenCache = tokenCache
        self.auditSetting = auditSetting
        self.manager = manager
        self.replica = replica
        self.revision = replica.withLock { $0.revision }
    }

    /// Reads the changes after the last applied and acts on each; returns how many. When the
    /// log no longer holds them all (pruned past its retention), reloads everything instead.
    func apply() async throws(StoreError) -> Int {
        let bounds = try state.changeBounds()
        replica.withLock { $0.newestKnown = max($0.newestKnown, bounds.newest) }
        guard bounds.newest > revision else {
            // Events other processes recorded without a change (a bundle they refused, an
            // offline wipe announced) still reach this engine's event-log readers.
            await manager.catchUp()
            return 0
        }
        if let oldest = bounds.oldest, oldest > revision + 1 {
            manager.logger.warning(
                "the change log no longer holds every change since this replica's last; reloading everything",
                metadata: ["applied": "\(revision)", "oldest": "\(oldest)"])
            await reloadAll()
            revision = bounds.newest
            replica.withLock { $0.revision = bounds.newest }
            return 1
        }
        var applied = 0
        while true {
            let changes = try state.changes(after: revision, limit: 1_000)
            guard !changes.isEmpty else { break }
            var bundleChanged = false
            for change in changes {
                switch change.kind {
                case .bundle: bundleChanged = true
                case .wipe, .key: keyRing?.forget(change.subjects.compactMap(OwnerIdentifier.init(rawValue:)))
                case .token: tokenCache.forget()
                case .setting: auditSetting.reset()
                default: break
                }
            }
            if bundleChanged { await manager.adoptStoredBundle() }
            revision = changes[changes.count - 1].revision
            applied += changes.count
            replica.withLock { $0.revision = revision }
        }
        await manager.catchUp()
        return applied
    }

    /// After missing changes the log no longer holds: the bundle in force, every cached key
    /// and token, the audit setting, all read afresh.
    private func reloadAll() async {
        keyRing?.forgetAll()
        tokenCache.forget()
        auditSetting.reset()
        await manager.adoptStoredBundle()
    }
}

extension CustodyEngine {
    /// How current this replica is with the shared state.
    public var replicaStatus: ReplicaStatus { replica.withLock { $0 } }

    /// Applies every change other processes recorded since the last one applied here: a bundle
    /// applied elsewhere is put in force, a wipe or key change drops the account's cached
    /// keys, a token change forgets verified tokens. Returns how many changes it applied.
    /// - Throws: `CustodyError` `.state` when the state cannot be read (the replica is then
    ///   marked as not reaching it).
    @discardableResult
    public func applyChanges() async throws(CustodyError) -> Int {
        do {
            let count = try await applier.apply()
            replica.withLock { status in
                status.lastContact = configuration.now()
                status.problem = nil
                if !database.notifiesChanges { status.listening = true }
            }
            return count
        } catch {
            replica.withLock { status in
                status.problem = error.message
                if !database.notifiesChanges { status.listening = false }
            }
            throw CustodyError(.state, "\(error)", underlying: error)
        }
    }

    /// Follows the state until cancelled: listens for change notices where the store sends
    /// them (PostgreSQL), catching up from the last applied revision whenever it (re)connects,
    /// and reads the log every `pollInterval` besides (the only way for SQLite; a safety net
    /// and the staleness probe for PostgreSQL). A replica that loses the state keeps answering
    /// from the policy in force, marked stale after `staleAfter` (see `replicaStatus`).
    public func follow(pollInterval: Duration = .seconds(1), staleAfter: Duration = .seconds(3)) async {
        replica.withLock { $0.staleAfter = staleAfter }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.poll(every: pollInterval) }
            if let notifying = database as? any ChangeNotifying {
                group.addTask { await self.listen(to: notifying) }
            }
            await group.waitForAll()
        }
    }

    private func poll(every interval: Duration) async {
        while !Task.isCancelled {
            _ = try? await applyChanges()
            try? await Task.sleep(for: interval)
        }
    }

    private func listen(to store: any ChangeNotifying) async {
        var backoff: Duration = .milliseconds(50)
        while !Task.isCancelled {
            do {
                for try await revision in store.changeNotifications() {
                    let wasListening = replica.withLock { status in
                        defer {
                            status.listening = true
                            status.newestKnown = max(status.newestKnown, revision)
                        }
                        return status.listening
                    }
                    if !wasListening {
                        configuration.logger.notice("listening for changes to the state", metadata: ["revision": "\(revision)"])
                    }
                    backoff = .milliseconds(50)
                    // Every notice (and the first element, on each connection) catches up from
                    // the last revision applied: nothing is lost across a reconnect.
                    _ = try? await applyChanges()
                }
            } catch {
                replica.withLock { $0.problem = "\(error)" }
                configuration.logger.warning("stopped hearing of changes to the state; reconnecting", metadata: ["error": "\(error)"])
            }
            replica.withLock { $0.listening = false }
            try? await Task.sleep(for: backoff)
            backoff = min(backoff * 2, .seconds(2))
        }
    }
}
