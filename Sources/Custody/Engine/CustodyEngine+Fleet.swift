import CustodyPolicy
import CustodyProtection
import CustodyStore
public import Foundation
import Logging
import Synchronization

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
    /// Why the policy in force here is not the state's although the state answers: the bundle
    /// last applied to it (by another replica) does not load here. Nil when it does.
    public var divergence: String?

    /// Whether it hears from the state: it is listening (where the state sends notices) and the
    /// state answered within `staleAfter`. A replica that does not can vouch for nothing the
    /// state may have changed since, a wipe included.
    public func reachesState(at now: Date = Date()) -> Bool {
        guard listening, let lastContact else { return false }
        return now.timeIntervalSince(lastContact) <= staleAfter.inSeconds
    }

    /// Stale: it may be missing changes (it does not reach the state, see `reachesState`), or it
    /// could not put the state's bundle in force (`divergence`). It keeps answering decisions
    /// from the policy in force, and says so.
    public func isStale(at now: Date = Date()) -> Bool {
        !reachesState(at: now) || divergence != nil
    }
}

/// Applies the state's change log to one engine, in order, once each.
actor ChangeApplier {
    let state: any StateStore
    let keyRing: KeyRing?
    let tokenCache: TokenCache
    let auditSetting: DecisionAuditSetting
    let manager: PolicyManager
    let shadows: ShadowHost
    let replica: Locked<ReplicaStatus>
    private(set) var revision: Int64

    init(
        state: any StateStore, keyRing: KeyRing?, tokenCache: TokenCache, auditSetting: DecisionAuditSetting,
        manager: PolicyManager, shadows: ShadowHost,
        replica: Locked<ReplicaStatus>
    ) {
        self.state = state
        self.shadows = shadows
        self.keyRing = keyRing
        self.tokenCache = tokenCache
        self.auditSetting = auditSetting
        self.manager = manager
        self.replica = replica
        self.revision = replica.withLock { $0.revision }
    }

    /// Reads the changes after the last applied and acts on each, in order; returns how many,
    /// and whether a setting changed among them. When the log no longer holds them all (pruned
    /// past its retention), reloads everything instead. A change is counted as applied only
    /// once acted on: when the state cannot be read midway, this throws and the next call
    /// starts again from the first change not applied.
    func apply() async throws(StoreError) -> (count: Int, settingChanged: Bool) {
        let bounds = try await state.changeBounds()
        replica.withLock { $0.newestKnown = max($0.newestKnown, bounds.newest) }
        guard bounds.newest > revision else {
            // Events other processes recorded without a change (a bundle they refused, an
            // offline wipe announced) still reach this engine's event-log readers.
            await manager.catchUp()
            return (0, false)
        }
        if let oldest = bounds.oldest, oldest > revision + 1 {
            manager.logger.warning(
                "the change log no longer holds every change since this replica's last; reloading everything",
                metadata: ["applied": "\(revision)", "oldest": "\(oldest)"])
            try await reloadAll(at: bounds.newest)
            revision = bounds.newest
            replica.withLock { $0.revision = bounds.newest }
            return (1, true)
        }
        var applied = 0
        var settingChanged = false
        while true {
            let changes = try await state.changes(after: revision, limit: 1_000)
            guard let last = changes.last else { break }
            var bundleChanged = false
            var shadowChanged = false
            for change in changes {
                switch change.kind {
                case .bundle: bundleChanged = true
                case .wipe, .key: keyRing?.forget(change.subjects.compactMap(OwnerIdentifier.init(rawValue:)))
                case .token: tokenCache.forget(ids: change.subjects)
                case .setting:
                    auditSetting.reset()
                    settingChanged = true
                case .shadow: shadowChanged = true
                default: break
                }
            }
            // Forgetting is safe to repeat; the bundle is read before the revision moves.
            if bundleChanged { try await adoptBundle(at: last.revision) }
            // The shadow is read again by its host (which keeps the one running if it cannot),
            // without holding up the changes after it.
            if shadowChanged { shadows.reloadSoon() }
            revision = last.revision
            applied += changes.count
            replica.withLock { $0.revision = last.revision }
        }
        await manager.catchUp()
        return (applied, settingChanged)
    }

    /// After missing changes the log no longer holds: every cached key and token and the audit
    /// setting forgotten (read afresh when next needed), the bundle in force read again.
    private func reloadAll(at change: Int64) async throws(StoreError) {
        keyRing?.forgetAll()
        tokenCache.forget()
        auditSetting.reset()
        try await adoptBundle(at: change)
        shadows.reloadSoon()
    }

    /// Puts the state's last applied bundle in force here. One that does not load here leaves
    /// the policy in force and marks the replica stale (`divergence`) until a later one loads.
    private func adoptBundle(at change: Int64) async throws(StoreError) {
        if let rejection = try await manager.adoptStoredBundle() {
            let reason =
                "the bundle applied to the state at change \(change) does not load here (\(rejection.message)); the policy in force before it stays"
            manager.logger.error(
                "a bundle applied elsewhere does not load here; this replica is stale until one that loads is applied",
                metadata: ["change": "\(change)"])
            replica.withLock { $0.divergence = reason }
        } else {
            replica.withLock { $0.divergence = nil }
        }
    }
}

extension CustodyEngine {
    /// Whether this engine follows the state's change log now (`follow` is running).
    var isFollowing: Bool { followers.load(ordering: .relaxed) > 0 }

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
            let (count, settingChanged) = try await applier.apply()
            replica.withLock { status in
                status.lastContact = configuration.now()
                status.problem = nil
                if !database.notifiesChanges { status.listening = true }
            }
            // Read the new audit setting now, so that decisions do not have to.
            if settingChanged { _ = try? await auditSetting.isOn(database, following: isFollowing) }
            return count
        } catch {
            replica.withLock { status in
                status.problem = error.message
                if !database.notifiesChanges { status.listening = false }
            }
            throw CustodyError(state: error)
        }
    }

    /// Follows the state until cancelled: listens for change notices where the store sends
    /// them (PostgreSQL), catching up from the last applied revision whenever it (re)connects,
    /// and reads the log every `pollInterval` besides (the only way for SQLite; a safety net
    /// and the staleness probe for PostgreSQL). A replica that loses the state keeps answering
    /// from the policy in force, marked stale after `staleAfter` (see `replicaStatus`).
    ///
    /// While it runs, decisions and the verification of tokens already seen never read the
    /// state: what they depend on (the audit setting, tokens) is kept until the log says it
    /// changed. Its own reads of the state run on `StateExecutor`'s threads.
    public func follow(pollInterval: Duration = .seconds(1), staleAfter: Duration = .seconds(3)) async {
        replica.withLock { $0.staleAfter = staleAfter }
        followers.add(1, ordering: .relaxed)
        defer {
            followers.subtract(1, ordering: .relaxed)
            // Values kept while following are read afresh (and kept a second at most) from now on.
            tokenCache.forget()
            auditSetting.reset()
        }
        await StateExecutor.run {
            _ = try? await auditSetting.isOn(database, following: true)
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.poll(every: pollInterval) }
                if let notifying = database as? any ChangeNotifying {
                    group.addTask { await self.listen(to: notifying) }
                }
                await group.waitForAll()
            }
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
                    let (wasListening, applied) = replica.withLock { status in
                        defer {
                            status.listening = true
                            status.newestKnown = max(status.newestKnown, revision)
                        }
                        return (status.listening, status.revision)
                    }
                    if !wasListening {
                        configuration.logger.notice(
                            "listening for changes to the state", metadata: ["revision": "\(revision)"])
                    }
                    backoff = .milliseconds(50)
                    // A notice of a newer revision, and the first answer on each connection,
                    // catch up from the last revision applied: nothing is lost across a
                    // reconnect. (Heartbeats that bring nothing new cost nothing more.)
                    if !wasListening || revision > applied { _ = try? await applyChanges() }
                }
            } catch  where !Task.isCancelled {
                // The reason, not the state's address (`/readyz` shows it to anyone; the log
                // below has the whole error).
                replica.withLock { $0.problem = (error as? StoreError)?.message ?? "\(error)" }
                configuration.logger.warning(
                    "stopped hearing of changes to the state; reconnecting", metadata: ["error": "\(error)"])
            } catch {}
            replica.withLock { $0.listening = false }
            try? await Task.sleep(for: backoff)
            backoff = min(backoff * 2, .seconds(2))
        }
    }
}
