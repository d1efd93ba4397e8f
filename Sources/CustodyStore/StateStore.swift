public import CustodyProtection
public import Foundation

/// Custody's state, whichever engine keeps it: account keys (wrapped), sealed secrets,
/// check-ins, accounts and their aliases, wiped identifiers, bundle history with the files of
/// applied bundles, the audit log, the event log, service tokens, settings, and the change log
/// that replicas follow.
///
/// Two implementations: `CustodyDatabase` (SQLite, embedded, the default) and
/// `PostgresState` (module `CustodyPostgres`, for a fleet of replicas on one PostgreSQL). Both
/// apply the same named, append-only migrations, throw the same `StoreError`s, and pass one
/// shared test suite. Every method is synchronous and thread-safe; a write is one transaction.
///
/// **The change log.** Every write that changes what another replica must know (a bundle
/// applied, a wipe, an account key added or deleted, a token created or revoked, a secret
/// saved or removed, a setting changed) appends a `StateChange` in the same transaction, with
/// the next revision. Replicas read the log after the last revision they applied
/// (`changes(after:limit:)`) and act on each change in order.
public protocol StateStore: AnyObject, Sendable {
    /// Where the state is, for messages: the SQLite file, or the PostgreSQL URL without its
    /// password; nil for a state in memory.
    var path: String? { get }
    /// Opened for reading only: every write fails.
    var isReadOnly: Bool { get }

    // MARK: Accounts and wipes

    /// Records that the installation sees these accounts now (see `CustodyDatabase`).
    func recordAccounts(_ accounts: [SeenAccount], at date: Date) async throws(StoreError)
    /// The account recorded under `owner`, if any.
    func account(owner: String) async throws(StoreError) -> AccountRecord?
    /// The aliases of the account recorded under `owner`, sorted; nil when no account is. What
    /// resolving an account needs, and nothing more: a time recorded with it that cannot be
    /// read does not stop a wipe.
    func aliases(ofAccount owner: String) async throws(StoreError) -> [String]?
    /// The canonical identifiers of the accounts `identifier` names, sorted.
    func owners(named identifier: String) async throws(StoreError) -> [String]
    /// When each recorded account was first seen.
    func accountsFirstSeen() async throws(StoreError) -> [String: Date]
    /// Selective wipe of one account under all its identifiers, in one transaction.
    @discardableResult
    func wipe(identifiers: [String], account: String, reason: String, events: [EventRecord], at date: Date)
        async throws(StoreError) -> WipeCounts
    /// When `identifier`'s keys were wiped, and as which account; nil when never.
    func wipeRecord(of identifier: String) async throws(StoreError) -> WipeRecord?

    // MARK: Account keys and the master key record

    /// Every version of `owner`'s key, oldest first.
    func accountKeys(owner: String) async throws(StoreError) -> [WrappedAccountKey]
    /// Adds a key version; `.conflict` when that version exists.
    func addAccountKey(_ key: WrappedAccountKey) async throws(StoreError)
    /// Deletes every version of `owner`'s key; returns how many there were.
    @discardableResult
    func removeAccountKeys(owner: String) async throws(StoreError) -> Int
    /// Every owner with at least one key, sorted.
    func accountKeyOwners() async throws(StoreError) -> [String]
    /// The master key record; nil before first use.
    func masterKeyRecord() async throws(StoreError) -> MasterKeyRecord?
    /// Saves the master key record; `.conflict` when one exists.
    func saveMasterKeyRecord(_ record: MasterKeyRecord) async throws(StoreError)
    /// A counter that moves whenever any process adds or removes a key.
    func keyGeneration() async throws(StoreError) -> Int64

    // MARK: Secrets

    func saveSecret(_ secret: SealedSecret) async throws(StoreError)
    func secret(scope: String, identifier: String) async throws(StoreError) -> SealedSecret?
    func secrets(scope: String) async throws(StoreError) -> [SealedSecret]
    @discardableResult
    func removeSecret(scope: String, identifier: String) async throws(StoreError) -> Bool
    @discardableResult
    func removeSecrets(scope: String) async throws(StoreError) -> Int

    // MARK: Check-ins

    func checkIn(account: String, at date: Date) async throws(StoreError)
    func lastCheckIn(account: String) async throws(StoreError) -> Date?
    func checkIns() async throws(StoreError) -> [String: Date]
    func removeCheckIn(account: String) async throws(StoreError)
    /// Records the launch facts `account` reported (a JSON object), replacing earlier ones.
    func recordLaunchFacts(account: String, facts: String, at date: Date) async throws(StoreError)
    /// The launch facts `account` last reported, and when.
    func launchFacts(account: String) async throws(StoreError) -> StoredLaunchFacts?
    /// Whether a `wipe` launch outcome of a check-in wipes the account (`custody apply
    /// --act-on-launch`); off by default.
    func isActingOnLaunch() async throws(StoreError) -> Bool
    func setActingOnLaunch(_ acting: Bool) async throws(StoreError)

    // MARK: Bundle history

    /// Records a bundle applied or rejected (see `CustodyDatabase.recordBundle`): `files` nil
    /// keeps no files (never restorable, no change); the history keeps its newest `retaining`
    /// applied rows and as many refused ones, and the files of the revisions they name. An
    /// applied bundle's sequence raises the state's highest sequence (`bundleSequence()`),
    /// unless it is a rollback.
    ///
    /// With `inForceFrom`, an applied bundle is recorded only while the state's bundle in force
    /// (its newest applied row) came from that source and is not a rollback; otherwise nothing
    /// is written and `StoreError.conflict` is thrown. It is checked under the same lock as the
    /// state's other rules, so a watch of a directory cannot put an edit there in force over a
    /// bundle another writer applied a moment before.
    @discardableResult
    func recordBundle(
        contentHash: String, source: String, result: BundleRecord.Result, message: String?,
        files: [StoredFile]?, provenance: BundleProvenance,
        accounts: [SeenAccount], reach: [PolicyReach],
        events: [EventRecord],
        retaining: Int, inForceFrom: String?, at date: Date
    ) async throws(StoreError) -> RecordedBundle
    func policyReach() async throws(StoreError) -> [String: [String: Date]]
    func bundleHistory(limit: Int) async throws(StoreError) -> [BundleRecord]
    func lastAppliedBundleFiles() async throws(StoreError) -> StoredBundle?
    func lastApplication(ofRevision contentHash: String) async throws(StoreError) -> Int64?
    func lastAppliedBundle() async throws(StoreError) -> BundleRecord?
    /// The revisions whose files the state keeps, each with the bytes of its files.
    func storedBundleRevisions() async throws(StoreError) -> [String: Int]
    /// A kept revision's files with the newest history row that applied it; nil when none.
    func storedBundle(revision contentHash: String) async throws(StoreError) -> StoredBundle?
    /// The highest sequence of a signed bundle ever applied (not lowered by a rollback); 0
    /// when none was.
    func bundleSequence() async throws(StoreError) -> Int64
    /// Sets the highest sequence to `sequence` (0: none) in one transaction with an audit entry
    /// naming the reason and who; the history before it no longer counts. Returns the highest
    /// sequence before.
    func resetBundleSequence(to sequence: Int64, reason: String, by who: String?, at date: Date)
        async throws(StoreError) -> Int64

    // MARK: Trust, freezing and replicas

    /// Every key the state was told to trust, revoked ones included, oldest first.
    func trustedKeys() async throws(StoreError) -> [TrustedKeyRecord]
    /// Trusts a key (audited, a change); `.conflict` when the state knows it already.
    func addTrustedKey(_ key: TrustedKeyRecord) async throws(StoreError)
    /// Revokes a key (audited, a change); false when no unrevoked key has that id.
    @discardableResult
    func revokeTrustedKey(id: String, at date: Date) async throws(StoreError) -> Bool
    /// The freeze in force, if any.
    func bundleFreeze() async throws(StoreError) -> BundleFreeze?
    /// Freezes (or, with nil, unfreezes; false when there was no freeze), audited with `by`,
    /// a change.
    @discardableResult
    func setBundleFreeze(_ freeze: BundleFreeze?, by: String?, at date: Date) async throws(StoreError) -> Bool
    /// Records what a replica says about itself, replacing what it said before.
    func recordReplica(_ status: ReplicaRecord) async throws(StoreError)
    /// Every replica recorded, by id.
    func replicas() async throws(StoreError) -> [ReplicaRecord]
    /// Forgets replicas last heard from before `date`, and the one named `id`; returns how many.
    @discardableResult
    func forgetReplicas(lastContactBefore date: Date, id: String?) async throws(StoreError) -> Int

    // MARK: Shadow mode

    /// The shadow running, or the last one ended (until another is set); nil when none was set.
    func shadow() async throws(StoreError) -> StoredShadow?
    /// Sets `shadow` beside the bundle in force, replacing any other (whose tallies go with it),
    /// audited (kind bundle, action shadow), a change (`.shadow`).
    func setShadow(_ shadow: StoredShadow, at date: Date) async throws(StoreError)
    /// Ends the running shadow (`stopped` by `by`): its files are dropped, its tallies kept for
    /// `shadow()` to report; audited, a change. False when none is running. Applying a bundle of
    /// the shadow's revision ends it too (`promoted`), in the same transaction.
    @discardableResult
    func endShadow(by: String?, at date: Date) async throws(StoreError) -> Bool
    /// Records `replica`'s count of the decisions of shadow `id`, replacing its last; false
    /// (nothing written) when `id` is not the state's shadow any more.
    @discardableResult
    func recordShadowTally(shadow id: String, replica: String, tally: String, at date: Date)
        async throws(StoreError) -> Bool
    /// Every replica's count of the decisions of shadow `id`, by replica.
    func shadowTallies(shadow id: String) async throws(StoreError) -> [ShadowTallyRecord]

    // MARK: Audit and settings

    func isAuditEnabled() async throws(StoreError) -> Bool
    func setAuditEnabled(_ enabled: Bool) async throws(StoreError)
    func isDecisionAuditEnabled() async throws(StoreError) -> Bool
    func setDecisionAuditEnabled(_ enabled: Bool) async throws(StoreError)
    @discardableResult
    func audit(_ records: [AuditRecord]) async throws(StoreError) -> Int
    /// Audit entries at or after `since` (all when nil) whose id is above `id` (0: all), oldest
    /// first: a page of the log, the next one after the last entry's id.
    func auditEntries(since: Date?, after id: Int64, limit: Int) async throws(StoreError) -> [AuditEntry]
    /// Decision entries from `from` up to (not including) `to`, of `action` when given, whose
    /// id is above `id`, oldest first: a page of the decisions a replay decides again.
    func auditDecisions(from: Date, to: Date, action: String?, after id: Int64, limit: Int) async throws(StoreError)
        -> [AuditEntry]
    /// How many decision entries `auditDecisions` would give for the window and action, all
    /// pages together.
    func auditDecisionCount(from: Date, to: Date, action: String?) async throws(StoreError) -> Int
    /// Deletes up to `limit` audit entries older than `date`, oldest first, in one transaction
    /// that also records an `audit` entry saying how many and from before when (none when it
    /// deleted none); returns how many it deleted.
    func pruneAudit(before date: Date, limit: Int, at now: Date) async throws(StoreError) -> Int
    func installationContext() async throws(StoreError) -> InstallationContext
    func recordInstallationContext(platform: String?, appID: String?, managementLevel: String?, precedence: String?)
        async throws(StoreError)

    // MARK: The event log

    @discardableResult
    func appendEvents(_ records: [EventRecord], at date: Date) async throws(StoreError) -> [Int64]
    func events(after id: Int64, limit: Int) async throws(StoreError) -> [StoredEvent]
    func eventBounds() async throws(StoreError) -> LogBounds
    func setEventRetention(_ count: Int64) async throws(StoreError)

    // MARK: Tokens

    func addToken(_ token: TokenRecord) async throws(StoreError)
    @discardableResult
    func revokeToken(id: String, at date: Date) async throws(StoreError) -> Bool
    /// Issues `successor` and makes the valid token `id` expire at `expires` (or sooner, if it
    /// already did), in one transaction; false, with nothing stored, when `id` names no token
    /// valid at `successor.created`, or one rotated already.
    func rotateToken(id: String, successor: TokenRecord, expires: Date) async throws(StoreError) -> Bool
    /// Records that token `id` authenticated a request at `date` (kept only when later than
    /// the use recorded).
    func recordTokenUse(id: String, at date: Date) async throws(StoreError)
    func token(id: String) async throws(StoreError) -> TokenRecord?
    func tokens() async throws(StoreError) -> [TokenRecord]
    func tokenGeneration() async throws(StoreError) -> Int64

    // MARK: The change log

    /// Changes after `revision`, oldest first, at most `limit`.
    func changes(after revision: Int64, limit: Int) async throws(StoreError) -> [StateChange]
    /// The oldest revision the log still holds (nil when empty) and the newest ever written
    /// (0 before any): a reader whose last revision is below `oldest - 1` missed changes the
    /// log no longer holds, and must reload everything.
    func changeBounds() async throws(StoreError) -> LogBounds
    /// How many changes the log keeps (the oldest are pruned past it).
    func setChangeRetention(_ count: Int64) async throws(StoreError)
    /// After a wipe: makes sure deleted rows leave no copy behind that the store controls
    /// (SQLite truncates its write-ahead log). Nothing to do where the engine keeps no such copy.
    func purgeDeletedRows() async throws(StoreError)

    // MARK: Leases

    /// Takes the lease `name` for this process unless another process (or replica, or another
    /// caller here) holds it: nil then. Held until released or until this process ends
    /// (SQLite: an `flock` on a file beside the database; PostgreSQL: a session advisory lock
    /// on a connection of its own, freed by the server when that connection goes). For work
    /// one replica at a time should do, such as syncing from Microsoft Graph.
    /// - Throws: `unavailable` when the state cannot be reached to take it.
    func lease(_ name: String) async throws(StoreError) -> (any StateLease)?

    // MARK: Caches

    /// The text kept under `name` by `saveCache`, nil when none: what work done for the
    /// installation keeps between runs (the Graph connector's group members and delta links).
    /// Not in the change log: whoever needs it reads it.
    func cache(_ name: String) async throws(StoreError) -> String?
    /// Keeps `text` under `name` (nil: forgets it).
    func saveCache(_ name: String, _ text: String?) async throws(StoreError)
}

/// A lease taken with `StateStore.lease(_:)`.
public protocol StateLease: Sendable {
    /// Gives the lease up: once it returns, another taker can have it. Later calls do nothing.
    func release() async
}

/// A write that has been in progress for a while: what it does and since when.
public struct PendingWrite: Sendable, Hashable {
    /// What the write does ("recording a bundle").
    public let what: String
    /// How long it has been under way.
    public let elapsed: Duration

    public init(what: String, elapsed: Duration) {
        self.what = what
        self.elapsed = elapsed
    }
}

/// A store that can say which of its writes has been waiting longest (PostgreSQL's: a write
/// may wait for another replica's lock, or for a slow link), so that readiness can say writes
/// are held up while decisions go on from memory.
public protocol WriteReporting: StateStore {
    /// The write in progress for the longest time, if any is.
    var oldestPendingWrite: PendingWrite? { get }
}

/// A store that tells listeners of new revisions as they commit (PostgreSQL's LISTEN/NOTIFY).
public protocol ChangeNotifying: StateStore {
    /// Listens on a connection of its own and yields each committed revision (possibly
    /// coalesced, never reordered) until the connection fails (the stream then throws) or the
    /// task is cancelled. The first element is yielded once listening has started, with the
    /// newest revision at that moment, so a caller catches up from there without a gap; the
    /// newest revision is yielded again at every heartbeat of the connection, and a heartbeat
    /// not answered in time ends the stream with `unavailable` (a connection the network
    /// silently dropped is found, not listened to forever).
    func changeNotifications() -> AsyncThrowingStream<Int64, any Error>
}

extension StateStore {
    /// Whether this store pushes new revisions (`ChangeNotifying`) rather than being polled.
    public var notifiesChanges: Bool { self is any ChangeNotifying }

    // Conveniences with the usual defaults.

    public func auditEntries(since: Date? = nil) async throws(StoreError) -> [AuditEntry] {
        try await auditEntries(since: since, after: 0, limit: 10_000)
    }
    public func auditEntries(since: Date?, limit: Int) async throws(StoreError) -> [AuditEntry] {
        try await auditEntries(since: since, after: 0, limit: limit)
    }
    public func events(after id: Int64) async throws(StoreError) -> [StoredEvent] {
        try await events(after: id, limit: 1_000)
    }
    public func bundleHistory() async throws(StoreError) -> [BundleRecord] { try await bundleHistory(limit: 100) }
    public func changes(after revision: Int64) async throws(StoreError) -> [StateChange] {
        try await changes(after: revision, limit: 1_000)
    }

    /// Appends one entry when auditing is on; returns whether it was written.
    @discardableResult
    public func audit(
        _ kind: AuditEntry.Kind, account: String?, action: String, allowed: Bool? = nil, detail: String? = nil,
        at date: Date
    ) async throws(StoreError) -> Bool {
        try await audit([
            AuditRecord(kind, account: account, action: action, allowed: allowed, detail: detail, at: date)
        ])
            == 1
    }

    public func recordInstallationContext(platform: String?, appID: String?, managementLevel: String?)
        async throws(StoreError)
    {
        try await recordInstallationContext(
            platform: platform, appID: appID, managementLevel: managementLevel, precedence: nil)
    }

    @discardableResult
    public func wipe(identifiers: [String], account: String, reason: String, at date: Date) async throws(StoreError)
        -> WipeCounts
    {
        try await wipe(identifiers: identifiers, account: account, reason: reason, events: [], at: date)
    }

    @discardableResult
    public func recordBundle(
        contentHash: String, source: String, result: BundleRecord.Result, message: String? = nil,
        files: [StoredFile]? = nil,
        accounts: [SeenAccount] = [], at date: Date
    ) async throws(StoreError) -> RecordedBundle {
        try await recordBundle(
            contentHash: contentHash, source: source, result: result, message: message, files: files,
            provenance: .none, accounts: accounts, reach: [], events: [],
            retaining: BundleRecord.defaultRetained, inForceFrom: nil, at: date)
    }

    /// `recordBundle` whatever bundle is in force (no `inForceFrom`).
    @discardableResult
    public func recordBundle(
        contentHash: String, source: String, result: BundleRecord.Result, message: String?,
        files: [StoredFile]?, provenance: BundleProvenance,
        accounts: [SeenAccount], reach: [PolicyReach],
        events: [EventRecord],
        retaining: Int, at date: Date
    ) async throws(StoreError) -> RecordedBundle {
        try await recordBundle(
            contentHash: contentHash, source: source, result: result, message: message, files: files,
            provenance: provenance, accounts: accounts, reach: reach, events: events, retaining: retaining,
            inForceFrom: nil, at: date)
    }
}

extension BundleRecord {
    /// Why a bundle may not be recorded over this one, the newest applied, when it is to go in
    /// only while the bundle in force came from `source` (`recordBundle(…inForceFrom:…)`); nil
    /// when it may.
    public static func supersession(of last: BundleRecord?, expecting source: String) -> StoreError? {
        guard let last else {
            return StoreError(.conflict, "no bundle is in force on the state: nothing from \(source) to replace")
        }
        if last.provenance.isRollback {
            return StoreError(
                .conflict,
                "the bundle in force on the state (revision \(last.contentHash)) was put back by a rollback since \(source) was applied"
            )
        }
        guard last.source == source else {
            return StoreError(
                .conflict,
                "the bundle in force on the state (revision \(last.contentHash)) comes from \(last.source), not \(source)"
            )
        }
        return nil
    }
}

/// One entry of the change log: what changed, never the data itself.
public struct StateChange: Sendable, Hashable {
    public struct Kind: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// A bundle was applied: the policy in force is the last applied bundle's.
        public static let bundle = Kind(rawValue: "bundle")
        /// An account was wiped: `subjects` are every identifier its keys were deleted under.
        public static let wipe = Kind(rawValue: "wipe")
        /// An account key version was added (created, rotated) or deleted: `subjects` names
        /// the owner.
        public static let key = Kind(rawValue: "key")
        /// A service token was created or revoked: `subjects` names its id.
        public static let token = Kind(rawValue: "token")
        /// A secret was saved or removed: `subjects` names its scope ("" app-wide).
        public static let secret = Kind(rawValue: "secret")
        /// A setting changed (auditing, the installation's context): `subjects` names it.
        public static let setting = Kind(rawValue: "setting")
        /// A shadow bundle was set or ended (`StateStore.shadow()`).
        public static let shadow = Kind(rawValue: "shadow")
    }

    /// Its place in the log: 1, 2, 3…, in commit order (writers of changes are serialized).
    public let revision: Int64
    public let at: Date
    public let kind: Kind
    /// Whom or what it concerns (account identifiers, a token id, a scope); never key material.
    public let subjects: [String]

    public init(revision: Int64, at: Date, kind: Kind, subjects: [String]) {
        self.revision = revision
        self.at = at
        self.kind = kind
        self.subjects = subjects
    }

    /// Subjects as one column: separated by line feeds (no identifier holds one).
    public static func encode(_ subjects: [String]) -> String { subjects.joined(separator: "\n") }
    public static func decode(_ column: String) -> [String] {
        column.isEmpty ? [] : column.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    /// How many changes a log keeps by default.
    public static let defaultRetention: Int64 = 100_000
}
