import Atomics
public import CustodyPolicy
public import CustodyProtection
public import CustodyStore
public import Foundation
public import Logging

/// The one object an app or service asks everything: the policy in force, decisions, and
/// notifications when the policy changes.
///
/// Writes (`apply`) are serialized by the actor. Reads are not: `snapshot` and every decision
/// read the current immutable `PolicySnapshot` from a `SnapshotSlot` (one atomic load of an
/// integer, and a per-thread cache), without awaiting and without a lock, so decisions through
/// the manager cost about what they cost on a snapshot. A new
/// bundle is validated and resolved completely before it is swapped in, in one atomic store:
/// no decision ever sees a half-loaded policy, and a bundle that fails leaves the old one in
/// force and is announced as `bundleRejected`.
public actor PolicyManager {
    /// The evaluation context every snapshot is resolved for.
    public nonisolated let context: EvaluationContext
    /// Where bundles, check-ins and the audit log are recorded; nil: nowhere.
    public nonisolated let database: CustodyDatabase?
    nonisolated let logger: Logger
    nonisolated let slot: SnapshotSlot
    nonisolated let hub = EventHub<PolicyEvent>()
    nonisolated let processScope = Locked<AccountScope?>(nil)
    let clock: @Sendable () -> Date
    /// Deletes keys at wipe time (and drops them from memory); nil: the database alone.
    public nonisolated let keyRing: KeyRing?
    /// Passwords, certificates and identities for the app, per account or app-wide; there
    /// when the manager has both a database and a key ring. Its changes are published as
    /// `secretsChanged`.
    public nonisolated let secrets: SecretsProvider?
    /// Wipe accounts past `periodOfflineBeforeWipeIsEnforced` rather than only announce it.
    public let wipesWhenOfflineTooLong: Bool
    /// Directories and files that hold each owner's data, deleted at wipe.
    var managedRoots: [OwnerIdentifier: Set<String>] = [:]
    /// Owners whose `wipeRequired` was announced since their last check-in.
    var offlineWipeAnnounced: Set<OwnerIdentifier> = []

    /// A manager with no bundle yet: every account is unmanaged until the first `apply`.
    /// - Parameters:
    ///   - context: platform, app and management level to evaluate for.
    ///   - database: records applied and rejected bundles (and, later, check-ins and audits).
    ///   - now: the clock (tests inject one).
    ///   - keyRing: the account keys a wipe deletes (and forgets).
    ///   - wipesWhenOfflineTooLong: wipe an account past its offline wipe period, not only
    ///     announce `wipeRequired`.
    public init(
        context: EvaluationContext = EvaluationContext(), database: CustodyDatabase? = nil, keyRing: KeyRing? = nil,
        wipesWhenOfflineTooLong: Bool = false, logger: Logger = Logger(label: "custody.manager"),
        now: @escaping @Sendable () -> Date = Date.init
    ) {
        self.context = context
        self.database = database
        self.keyRing = keyRing
        self.wipesWhenOfflineTooLong = wipesWhenOfflineTooLong
        self.logger = logger
        self.clock = now
        let empty = PolicyBundle(tenant: Tenant(), protectionPolicies: [], appConfigurations: [], warnings: [])
        let slot = SnapshotSlot(SnapshotBox(PolicySnapshot(bundle: empty, context: context), version: 0, contentHash: nil))
        self.slot = slot
        if let database, let keyRing {
            let processScope = processScope
            self.secrets = SecretsProvider(
                database: database, keyRing: keyRing, hub: hub, logger: logger, now: now,
                resolveAccount: { explicit in (explicit ?? AccountScope.current ?? processScope.withLock { $0 })?.account },
                ownerOf: { OwnerIdentifier($0, policy: slot.current.snapshot) })
        } else {
            self.secrets = nil
        }
    }

    // MARK: Reading

    /// The policy in force: immutable, safe to keep and share.
    public nonisolated var snapshot: PolicySnapshot { slot.current.snapshot }

    /// How many bundles have been applied (0 before the first).
    public nonisolated var version: Int { slot.current.version }

    // MARK: Applying bundles

    /// Validates `bundle` fully, resolves it, then makes it the policy in force and tells every
    /// subscriber what changed. Returns the events published (empty when nothing changed).
    @discardableResult
    public func apply(_ bundle: PolicyBundle, source: String, contentHash: String? = nil) -> [PolicyEvent] {
        apply(bundle, source: source, contentHash: contentHash, files: [])
    }

    private func apply(_ bundle: PolicyBundle, source: String, contentHash: String?, files: [(name: String, bytes: [UInt8])]) -> [PolicyEvent] {
        let old = slot.current
        let snapshot = PolicySnapshot(bundle: bundle, context: context, logger: logger)
        let events = PolicyChanges.events(from: old.version == 0 ? nil : old.snapshot, to: snapshot)
        slot.store(SnapshotBox(snapshot, version: old.version + 1, contentHash: contentHash))
        record(contentHash: contentHash ?? "", source: source, result: .applied, message: nil, files: files)
        hub.publish(events)
        return events
    }

    /// Loads the bundle in `directory` and applies it. A bundle that does not load (a
    /// malformed document, a missing tenant) leaves the policy in force unchanged, is recorded
    /// as rejected, announced as `bundleRejected`, and thrown. An applied bundle's files are
    /// kept in the state database, for `restore()`.
    @discardableResult
    public func apply(bundleDirectory directory: String) throws(BundleRejection) -> [PolicyEvent] {
        // The files read before and after loading agree unless they changed meanwhile; then the
        // load is retried (a few times: a directory that never settles is applied as last
        // read, and the next watch round catches up).
        var read = BundleDigest.read(directory)
        var bundle: PolicyBundle
        do {
            var attempts = 0
            while true {
                bundle = try PolicyBundle.load(directory: directory)
                let after = BundleDigest.read(directory)
                attempts += 1
                if after?.hash == read?.hash || attempts == 5 {
                    read = after
                    break
                }
                read = after
            }
        } catch {
            let rejection = BundleRejection(source: directory, message: error.description)
            logger.error("bundle rejected", metadata: ["source": "\(directory)", "errors": "\(error.errors.count)"])
            record(contentHash: read?.hash ?? "", source: directory, result: .rejected, message: error.description, files: [])
            hub.publish([.bundleRejected(error: rejection)])
            throw rejection
        }
        return apply(bundle, source: directory, contentHash: read?.hash, files: read?.files ?? [])
    }

    /// Makes the last bundle applied through `apply(bundleDirectory:)` (by any process using
    /// this database) the policy in force again, without events: what a restarted service does
    /// before anything else. Returns false when there is none, or it no longer loads (logged).
    @discardableResult
    public func restore() -> Bool {
        guard let database, let (record, files) = (try? database.lastAppliedBundleFiles()) ?? nil else { return false }
        let tenant = files.first { $0.name == "tenant.json" }.map { PolicyBundle.File(name: $0.name, bytes: $0.bytes) }
        let documents = files.filter { $0.name != "tenant.json" }.map { PolicyBundle.File(name: $0.name, bytes: $0.bytes) }
        do {
            let bundle = try PolicyBundle.load(tenant: tenant, documents: documents)
            let old = slot.current
            slot.store(
                SnapshotBox(PolicySnapshot(bundle: bundle, context: context, logger: logger), version: old.version + 1, contentHash: record.contentHash))
            return true
        } catch {
            logger.error("the stored bundle does not load", metadata: ["source": "\(record.source)", "error": "\(error)"])
            return false
        }
    }

    private func record(contentHash: String, source: String, result: BundleRecord.Result, message: String?, files: [(name: String, bytes: [UInt8])]) {
        guard let database else { return }
        do {
            try database.recordBundle(contentHash: contentHash, source: source, result: result, message: message, files: files, at: clock())
        } catch {
            // The policy is in force either way; a history that cannot be written is logged.
            logger.error("cannot record the bundle in the state database", metadata: ["error": "\(error)"])
        }
    }

    // MARK: Subscribing

    /// Every change from now on, as one stream per subscriber. The stream finishes when the
    /// subscriber's task is cancelled or it stops iterating, and nothing is kept for it after.
    public nonisolated func events() -> AsyncStream<PolicyEvent> {
        hub.subscribe()
    }

    /// How many event streams are subscribed now.
    public nonisolated var subscriberCount: Int { hub.subscriberCount }

    /// The tenant's allowed accounts now (nil: every account), then after every change.
    public nonisolated func allowedAccounts() -> AsyncStream<[String]?> {
        let events = hub.subscribe { [slot] in
            [.allowedAccountsChanged(old: nil, new: slot.current.snapshot.bundle.tenant.allowedAccounts)]
        }
        return Self.values(of: events) { event in
            if case .allowedAccountsChanged(_, let new) = event { return .some(new) }
            return nil
        }
    }

    /// `account`'s effective policy now (nil: unmanaged), then each time it decides something
    /// differently.
    public nonisolated func effectivePolicy(for account: AccountID) -> AsyncStream<EffectivePolicy?> {
        // The first event stands for "now": the loop below reads the policy in force.
        let events = hub.subscribe { [.policyChanged(accounts: [account])] }
        let slot = self.slot
        let (stream, continuation) = AsyncStream.makeStream(of: EffectivePolicy?.self)
        let task = Task {
            var last: EffectivePolicy??
            for await event in events {
                guard case .policyChanged(let accounts) = event, accounts.contains(account) else { continue }
                let policy = slot.current.snapshot.effectivePolicy(for: account)
                if let previous = last, Self.same(previous, policy) { continue }
                last = .some(policy)
                continuation.yield(policy)
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// Stops every stream (for shutdown).
    public nonisolated func finish() {
        hub.finish()
    }

    private static func same(_ first: EffectivePolicy?, _ second: EffectivePolicy?) -> Bool {
        switch (first, second) {
        case (nil, nil): true
        case (let first?, let second?): first.decidesAlike(second)
        default: false
        }
    }

    /// The values `transform` picks out of `events`, in a stream that ends when either side
    /// stops.
    private static func values<Value: Sendable>(
        of events: AsyncStream<PolicyEvent>, _ transform: @escaping @Sendable (PolicyEvent) -> Value??
    ) -> AsyncStream<Value?> {
        let (stream, continuation) = AsyncStream.makeStream(of: Value?.self)
        let task = Task {
            for await event in events {
                if let value = transform(event) { continuation.yield(value) }
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}

/// The snapshot in force, with how many bundles came before it.
final class SnapshotBox: AtomicReference, Sendable {
    let snapshot: PolicySnapshot
    let version: Int
    let contentHash: String?

    init(_ snapshot: PolicySnapshot, version: Int, contentHash: String?) {
        self.snapshot = snapshot
        self.version = version
        self.contentHash = contentHash
    }
}
