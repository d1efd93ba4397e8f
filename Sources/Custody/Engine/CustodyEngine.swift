public import CustodyPolicy
public import CustodyProtection
public import CustodyStore
import CustodyPostgres
public import Foundation
public import Logging
import Synchronization

/// How to open an installation of Custody.
public struct CustodyConfiguration: Sendable {
    /// Where the installation's state lives.
    public enum State: Sendable, Hashable {
        /// A SQLite database file, or a directory holding `state.sqlite`; created on first use.
        case path(String)
        /// As `path`, but a database that does not exist is not created: the engine starts
        /// with an empty state in memory (for commands that only read).
        case existingPath(String)
        /// As `path`, but a database that does not exist is an error (for commands that act on
        /// what a state holds, such as a wipe: none must succeed on a state that is not there).
        case requiredPath(String)
        /// An existing database, opened for reading only: nothing is created, migrated or
        /// written (the file stays byte for byte as it was); a missing one is an error. For
        /// commands that only read what a state holds (`keys list`, `unprotect`, `audit`), and
        /// for states on read-only storage.
        case readOnlyPath(String)
        /// A throwaway state in memory.
        case inMemory
        /// A PostgreSQL state (`postgres://USER@HOST:PORT/DATABASE?schema=NAME`, see
        /// `PostgresSettings`), shared by a fleet of replicas: its schema is created and
        /// migrated on first use.
        case postgres(String)

        /// The state a `--state` argument names: a `postgres://` URL, else a SQLite path
        /// opened as `path` says.
        public static func named(_ argument: String, _ path: (String) -> State) -> State {
            PostgresSettings.isURL(argument) ? .postgres(argument) : path(argument)
        }
    }

    public var state: State
    /// Where the master key comes from; nil: no key ring (deciding, wiping and reading need
    /// none; protecting, unprotecting, rotating and secrets do).
    public var masterKey: MasterKeySource?
    /// The platform, app and management level every decision is made for; a field left nil
    /// takes the installation's recorded value (`CustodyEngine.recordContext`).
    public var context: EvaluationContext
    /// How several policies reaching one account combine; nil: the installation's recorded
    /// rule, else `mostRestrictive` (see `PolicyPrecedence`).
    public var precedence: PolicyPrecedence.Rule?
    /// A bundle directory to decide with for this engine's life instead of the bundle in
    /// force: a one-off override, never recorded.
    public var bundleOverride: String?
    /// Restore the bundle in force from the state when opening (the default). An engine that
    /// only applies a new bundle need not, so a stored bundle that no longer loads can be
    /// replaced.
    public var restoresBundleInForce: Bool
    /// Wipe an account past its offline wipe period, not only announce `wipeRequired`.
    public var wipesWhenOfflineTooLong: Bool
    /// Open an existing state read-only, and for writing only on the first write, so a
    /// command refused before it writes leaves the database file as it was (for short-lived
    /// commands; off by default, and for a service that keeps the state open).
    public var defersStateWrites = false
    /// How many bundle history rows the state keeps: the newest (the bundle in force always),
    /// with the files of the revisions they name, each revision's files stored once.
    public var retainedBundles = BundleRecord.defaultRetained
    public var logger: Logger
    /// The clock (tests inject one).
    public var now: @Sendable () -> Date

    public init(
        state: State = .path(".custody/state.sqlite"), masterKey: MasterKeySource? = nil,
        context: EvaluationContext = EvaluationContext(),
        precedence: PolicyPrecedence.Rule? = nil, bundleOverride: String? = nil, restoresBundleInForce: Bool = true,
        wipesWhenOfflineTooLong: Bool = false, logger: Logger = Logger(label: "custody"),
        now: @escaping @Sendable () -> Date = Date.init
    ) {
        self.state = state
        self.masterKey = masterKey
        self.context = context
        self.precedence = precedence
        self.bundleOverride = bundleOverride
        self.restoresBundleInForce = restoresBundleInForce
        self.wipesWhenOfflineTooLong = wipesWhenOfflineTooLong
        self.logger = logger
        self.now = now
    }
}

/// One installation of Custody: the one object that owns its state database, its key ring
/// (over the master key), the policy in force, account resolution, secrets, check-ins, the
/// audit log and the event hub. Front ends (the `custody` command, the decision service) open
/// one and call it; they compose nothing themselves.
///
/// The policy in force lives in the state: `apply(bundleDirectory:)` makes a bundle the
/// installation's policy, and every engine opened later on the same state decides with it. A
/// `bundleOverride` decides with another bundle for one engine's life, without recording it.
///
/// Everything fails closed at the seams: an account the installation cannot resolve is an
/// error for a wipe, a check-in, a key rotation; data of an account the policy in force
/// manages is never written unencrypted when the policy requires encryption; with no policy at
/// all, every call that needs one says so.
///
/// Thread-safe: share one engine between tasks (a service opens one per process).
public final class CustodyEngine: Sendable {
    public let configuration: CustodyConfiguration
    /// The state database. The front ends reach it only through the engine's operations.
    let database: any StateStore
    /// The account keys, when a master key was configured.
    let keyRing: KeyRing?
    /// The runtime: the policy in force, decisions, events, identity, wipe and check-ins. The
    /// engine's own calls reach it (`CustodyEngine+App.swift` for an app's); no caller needs it.
    @usableFromInline let manager: PolicyManager
    let logger: Logger
    /// The policy in force resolved for other evaluation contexts.
    let contexts = ContextSnapshots(capacity: 32)
    /// Bearer tokens verified recently.
    let tokenCache = TokenCache()
    let tokenUses = TokenUses()
    /// Whether decisions are audited, as last read.
    let auditSetting = DecisionAuditSetting()
    /// Decision streams of finished sessions.
    let streams = StreamPool()
    /// The tenant in force, ready to search (`searchAccounts`), made once per bundle.
    let searchIndex = Locked<AccountSearchIndex?>(nil)
    /// The comparisons of kept revisions made last, newest first (`bundleDiff(from:to:)`).
    let diffs = Locked<[(key: DiffKey, diff: BundleDiff)]>([])
    /// How current this replica is with the state (see `follow`).
    let replica: Locked<ReplicaStatus>
    /// How many `follow` calls are running: while one is, values read from the state (verified
    /// tokens, the audit setting) are kept until the change log says they changed.
    let followers = Atomic<Int>(0)
    /// Applies the state's change log, once each change, in order.
    let applier: ChangeApplier
    /// This engine as a replica of the fleet (`recordReplicaStatus`).
    public let replicaIdentity: ReplicaIdentity
    /// The shadow bundle live decisions are decided under too, while `runShadow` runs.
    let shadows: ShadowHost

    private init(
        configuration: CustodyConfiguration, database: any StateStore, keyRing: KeyRing?, manager: PolicyManager,
        revision: Int64
    ) {
        self.configuration = configuration
        self.database = database
        self.keyRing = keyRing
        self.manager = manager
        self.logger = configuration.logger
        let replica = Locked(
            ReplicaStatus(
                revision: revision, newestKnown: revision, listening: !database.notifiesChanges,
                lastContact: configuration.now(), problem: nil,
                staleAfter: .seconds(3)))
        self.replica = replica
        let identity = ReplicaIdentity()
        replicaIdentity = identity
        let shadows = ShadowHost(
            database: database, replica: identity.id, precedence: { manager.slot.current.snapshot.precedence },
            logger: configuration.logger)
        self.shadows = shadows
        applier = ChangeApplier(
            state: database, keyRing: keyRing, tokenCache: tokenCache, auditSetting: auditSetting, manager: manager,
            shadows: shadows, replica: replica)
    }

    /// The state `configuration` names, opened and migrated. Opening SQLite is blocking file
    /// I/O: it runs on the state's threads (`StateExecutor`), never on the cooperative pool.
    private static func openState(_ configuration: CustodyConfiguration) async throws(CustodyError) -> any StateStore {
        func sqlite(_ open: () throws -> CustodyDatabase) async throws(CustodyError) -> any StateStore {
            try await StateExecutor.run { () throws(CustodyError) in try CustodyError.fromState(open) }
        }
        let deferring = configuration.defersStateWrites
        switch configuration.state {
        case .path(let state):
            return try await sqlite {
                try CustodyDatabase(path: CustodyDatabase.path(forState: state), deferringWrites: deferring)
            }
        case .existingPath(let state):
            let path = CustodyDatabase.path(forState: state)
            return try await sqlite {
                FileManager.default.fileExists(atPath: path)
                    ? try CustodyDatabase(path: path, deferringWrites: deferring) : try CustodyDatabase()
            }
        case .requiredPath(let state):
            let path = CustodyDatabase.path(forState: state)
            guard FileManager.default.fileExists(atPath: path) else {
                throw CustodyError(.state, "\(path): there is no state here (nothing has ever been stored in it)")
            }
            return try await sqlite { try CustodyDatabase(path: path, deferringWrites: deferring) }
        case .readOnlyPath(let state):
            return try await sqlite { try CustodyDatabase(readingOnly: CustodyDatabase.path(forState: state)) }
        case .inMemory:
            return try await sqlite { try CustodyDatabase() }
        case .postgres(let url):
            return try await CustodyError.fromState { try await PostgresState(url: url, logger: configuration.logger) }
        }
    }

    /// Opens an installation: the state database (migrated), the key ring when a master key
    /// is configured, and the policy in force (the bundle last applied to this state), or the
    /// override bundle.
    /// - Throws: `CustodyError` `.state` when the database cannot be opened, `.masterKey` when
    ///   the master key is unusable, `.bundle` when the override or the stored bundle does not
    ///   load (a policy in force that cannot be restored is never replaced by an empty one).
    public static func open(_ configuration: CustodyConfiguration) async throws(CustodyError) -> CustodyEngine {
        let database = try await openState(configuration)
        let keyRing: KeyRing?
        do throws(ProtectionError) {
            if let source = configuration.masterKey {
                // Each protect and unprotect confirms the keys with the state first (one read):
                // a wipe another process or replica has acknowledged is in force here for the
                // next call, instead of after a notice or the ring's interval (found from
                // outside: a replica sealed new data under a key wiped a moment before).
                keyRing = try await KeyRing(
                    store: StateKeyStore(state: database), masterKey: source, confirmsEachUse: true)
            } else {
                keyRing = nil
            }
        } catch {
            throw CustodyError(.masterKey, "\(error)", underlying: error)
        }
        // Read before the bundle in force is: a change committed meanwhile is applied later,
        // never missed.
        let (revision, recorded) = try await CustodyError.fromState {
            (try await database.changeBounds().newest, try await database.installationContext())
        }
        let context = Self.context(configuration.context, recorded: recorded)
        let precedence =
            configuration.precedence ?? recorded.precedence.flatMap(PolicyPrecedence.Rule.init(rawValue:))
            ?? .mostRestrictive
        let manager = await PolicyManager(
            context: context, database: database, keyRing: keyRing,
            wipesWhenOfflineTooLong: configuration.wipesWhenOfflineTooLong,
            precedence: precedence, retainedBundles: configuration.retainedBundles, logger: configuration.logger,
            now: configuration.now)
        if let directory = configuration.bundleOverride {
            do {
                try await manager.use(try BundleFiles.read(directory: directory), source: directory)
            } catch {
                throw CustodyError(
                    .bundle, "the bundle \(directory) does not load", diagnostics: error.diagnostics, underlying: error)
            }
        } else if configuration.restoresBundleInForce {
            do {
                try await manager.restore()
            } catch {
                throw CustodyError(.bundle, error.message, diagnostics: error.diagnostics, underlying: error)
            }
        }
        return CustodyEngine(
            configuration: configuration, database: database, keyRing: keyRing, manager: manager, revision: revision)
    }

    // MARK: The installation's context

    /// `given`, each field it leaves nil taken from `recorded`.
    static func context(_ given: EvaluationContext, recorded: InstallationContext) -> EvaluationContext {
        var context = given
        if context.platform == nil { context.platform = recorded.platform.flatMap(Platform.init(rawValue:)) }
        if context.appID == nil { context.appID = recorded.appID }
        if context.managementLevel == nil {
            context.managementLevel = recorded.managementLevel.flatMap(AppManagementLevel.init(rawValue:))
        }
        return context
    }

    /// The context decisions are made for: the configuration's, completed by the installation's.
    public var context: EvaluationContext { manager.context }

    /// How several policies reaching one account combine: the configuration's, else the
    /// installation's (recorded by `recordContext`), else `mostRestrictive`.
    public var precedence: PolicyPrecedence.Rule { manager.precedence }

    /// Records the fields `context` names as the installation's evaluation context: every later
    /// engine on this state evaluates with them unless its configuration names its own. (A
    /// bundle with iOS and Android policies needs a platform for every decision; recording one
    /// at `custody apply` saves naming it on every command.)
    public func recordContext(_ context: EvaluationContext, precedence: PolicyPrecedence.Rule? = nil)
        async
        throws(CustodyError)
    {
        try await CustodyError.fromState {
            try await database.recordInstallationContext(
                platform: context.platform?.rawValue, appID: context.appID,
                managementLevel: context.managementLevel?.rawValue,
                precedence: precedence?.rawValue)
        }
    }

    // MARK: The policy in force

    /// The bundle decisions are made with (the override, when one was given); nil when none.
    public var bundleInForce: BundleInForce? { manager.bundleInForce }

    /// The policy to decide with.
    /// - Throws: `CustodyError` `.noPolicy` when no bundle is in force and none was given;
    ///   `.platform` when the bundle holds policies for several platforms and the engine's
    ///   context names none (decisions are always for one platform).
    public func policy() throws(CustodyError) -> PolicySnapshot {
        guard manager.bundleInForce != nil else {
            throw CustodyError(.noPolicy, "no policy: no bundle is in force in this state, and no bundle was given")
        }
        return try Self.deciding(manager.snapshot)
    }

    /// The policy to report on: the one `policy()` gives, or, when the bundle holds policies
    /// for several platforms and none is named, one per platform (iOS first), each resolved
    /// for its platform. For `custody policy show` and `matrix table`, which answer per
    /// platform rather than refuse.
    /// - Parameter context: the evaluation context; nil: the engine's.
    public func policyPerPlatform(for context: EvaluationContext? = nil) throws(CustodyError) -> [PolicySnapshot] {
        do {
            return [try policy(for: context)]
        } catch  where error.code == .platform {
            let snapshot = manager.snapshot
            return try snapshot.bundle.policyPlatforms.sorted { $0.rawValue > $1.rawValue }.map {
                platform throws(CustodyError) in
                var resolved = context ?? snapshot.context
                resolved.platform = platform
                return try policy(for: resolved)
            }
        }
    }

    /// The policy for `context` (`policy(for:)`), or the engine's own when it is nil (`policy()`).
    public func policy(for context: EvaluationContext?) throws(CustodyError) -> PolicySnapshot {
        guard let context else { return try policy() }
        return try policy(for: context)
    }

    /// `snapshot`, when it can decide: its context names a platform or its bundle implies one.
    static func deciding(_ snapshot: PolicySnapshot) throws(CustodyError) -> PolicySnapshot {
        guard snapshot.isPlatformAmbiguous else { return snapshot }
        do {
            _ = try snapshot.bundle.platform(for: snapshot.context)
            return snapshot
        } catch {
            throw CustodyError(.platform, error.description, underlying: error)
        }
    }

    /// What `apply(bundleDirectory:)` did.
    public struct ApplyResult: Sendable {
        /// The bundle in force now.
        public let bundle: BundleInForce
        /// Whether the same revision was in force already (in the state, or applied by another
        /// writer while this apply was under way).
        public let unchanged: Bool
        /// What subscribers were told.
        public let events: [PolicyEvent]
    }

    /// Makes the bundle in `directory` the installation's policy: validated and resolved
    /// completely, then stored in the state with its files, content hash and accounts, in one
    /// transaction, and put in force. Every engine opened on this state later decides with it.
    /// - Parameter allowingEmpty: accept a bundle with no `tenant.json` and no protection
    ///   policy (one that manages no account, so allows everything): refused otherwise.
    /// - Throws: `CustodyError` `.bundle` with located diagnostics when it does not load (it is
    ///   then recorded as rejected, and the policy in force stays).
    @discardableResult
    public func apply(
        bundleDirectory directory: String, allowingEmpty: Bool = false, provenance: BundleProvenance = .none
    ) async throws(CustodyError) -> ApplyResult {
        let source = URL(fileURLWithPath: directory).standardizedFileURL.path
        // What the state had in force (another writer may be ahead of this engine).
        let before = await (try? database.lastAppliedBundle()?.contentHash) ?? manager.bundleInForce?.revision
        let events: [PolicyEvent]
        do {
            events = try await manager.apply(
                bundleDirectory: source, allowingEmpty: allowingEmpty, provenance: provenance)
        } catch {
            throw Self.applyError(error, naming: "the bundle \(directory)", hadPolicy: manager.bundleInForce != nil)
        }
        let now = manager.bundleInForce!
        return ApplyResult(bundle: now, unchanged: before == now.revision || events.isEmpty, events: events)
    }

    /// Makes `files` (from a request, say) the installation's policy, as
    /// `apply(bundleDirectory:)` does: validated, stored with its revision, put in force; a
    /// bundle that does not load is recorded as rejected and the policy in force stays.
    @discardableResult
    public func apply(
        files: BundleFiles, source: String, allowingEmpty: Bool = false, provenance: BundleProvenance = .none
    ) async throws(CustodyError) -> ApplyResult {
        // What the state had in force (another writer may be ahead of this engine).
        let before = await (try? database.lastAppliedBundle()?.contentHash) ?? manager.bundleInForce?.revision
        let events: [PolicyEvent]
        do {
            events = try await manager.apply(
                files, source: source, allowingEmpty: allowingEmpty, provenance: provenance)
        } catch {
            throw Self.applyError(error, naming: "the bundle", hadPolicy: manager.bundleInForce != nil)
        }
        let now = manager.bundleInForce!
        return ApplyResult(bundle: now, unchanged: before == now.revision || events.isEmpty, events: events)
    }

    /// The error for a bundle that was not put in force: `.bundle` when it was refused, `.state`
    /// when the state could not record it, `.outcomeUnknown` when the state did not confirm.
    static func applyError(_ rejection: BundleRejection, naming bundle: String, hadPolicy: Bool = true) -> CustodyError
    {
        let stays = hadPolicy ? "the policy in force is unchanged" : "no policy is in force"
        if let failure = rejection.stateFailure {
            return CustodyError(
                failure.code == .outcomeUnknown ? .outcomeUnknown : .state, rejection.message, underlying: rejection)
        }
        if let refusal = rejection.diagnostics.first,
            [.untrusted, .replayed, .frozen].contains(refusal.code)
        {
            return CustodyError(
                .untrusted, "\(bundle) is refused; \(stays): \(refusal.message)",
                diagnostics: rejection.diagnostics, underlying: rejection)
        }
        return CustodyError(
            .bundle,
            rejection.diagnostics.isEmpty
                ? rejection.message : "\(bundle) does not load; \(stays)",
            diagnostics: rejection.diagnostics, underlying: rejection)
    }

    /// Whether the policy in force is `revision` or one applied after it: what a caller that
    /// requires at least that revision needs. False for a revision this state never applied.
    public func hasReached(revision: String) async throws(CustodyError) -> Bool {
        guard let current = bundleInForce else { return false }
        if current.revision == revision { return true }
        // Another revision: the bundle history says which came first (read on the state's threads).
        return try await StateExecutor.run { () throws(CustodyError) in
            return try await CustodyError.fromState {
                guard let wanted = try await database.lastApplication(ofRevision: revision),
                    let now = try await database.lastApplication(ofRevision: current.revision)
                else { return false }
                return wanted <= now
            }
        }
    }

    /// The files of the bundle in force as the state keeps them (empty for a one-off override).
    public func filesInForce() async throws(CustodyError) -> [BundleFiles.Entry] {
        guard let inForce = bundleInForce, !inForce.isOverride else { return [] }
        return try await CustodyError.fromState {
            guard let stored = try await database.lastAppliedBundleFiles(),
                stored.record.contentHash == inForce.revision
            else { return [] }
            return stored.files.map { BundleFiles.Entry(name: $0.name, bytes: $0.bytes) }
        }
    }

    // MARK: The event log

    /// Events after `id`, oldest first, at most `limit`: from the newest ones kept in memory
    /// when they hold every event after `id`, else from the state's log; `reset` when the log
    /// no longer holds them all either (pruned past its retention): the caller missed some and
    /// must read the state afresh. Events are encoded once, whoever reads them.
    /// The log is read on `StateExecutor`'s threads; the newest events come from memory.
    public func eventPage(after id: Int64, limit: Int = 1_000) async throws(CustodyError) -> EventPage {
        if let recent = manager.journal.recent(after: id, limit: limit) {
            return EventPage(events: recent, reset: false)
        }
        return try await StateExecutor.run { () throws(CustodyError) in try await events(after: id, limit: limit) }
    }

    /// Events in the state's log after `id`, oldest first, at most `limit`; `reset` when the
    /// log no longer holds every event after `id` (pruned past its retention): the caller
    /// missed some and must read the state afresh.
    public func events(after id: Int64, limit: Int = 1_000) async throws(CustodyError) -> EventPage {
        return try await CustodyError.fromState {
            let bounds = try await database.eventBounds()
            if id < bounds.newest, let oldest = bounds.oldest, id < oldest - 1 {
                return EventPage(events: [], reset: true)
            }
            if id < bounds.newest, bounds.oldest == nil { return EventPage(events: [], reset: true) }
            return EventPage(events: try await database.events(after: id, limit: limit), reset: false)
        }
    }

    // MARK: Accounts

    /// Resolves an account to one account of this installation (see `PolicyManager.resolve`).
    /// - Throws: `CustodyError` `.account` for an unknown or ambiguous account.
    public func resolve(_ account: AccountID) async throws(CustodyError) -> ResolvedAccount {
        try await CustodyError.mapping(otherwise: .account) { try await manager.resolve(account) }
    }

    /// Records a policy sync of `account` (offline grace counts from it).
    /// - Throws: `CustodyError` `.invalidArgument` for a time more than
    ///   `PolicySnapshot.clockSkew` ahead of now: a check-in in the future would hold off offline
    ///   grace for as long as it lies ahead.
    @discardableResult
    public func checkIn(account: AccountID, at date: Date? = nil) async throws(CustodyError) -> ResolvedAccount {
        if let date, date.timeIntervalSince(configuration.now()) > Double(PolicySnapshot.clockSkew.components.seconds) {
            throw CustodyError(
                .invalidArgument,
                "a check-in cannot be in the future: \(RFC3339.format(.seconds(date.timeIntervalSince1970))) is more than \(PolicySnapshot.clockSkew.components.seconds / 60) minutes ahead of this machine's clock"
            )
        }
        return try await CustodyError.mapping(otherwise: .account) {
            try await manager.checkIn(account: account, at: date)
        }
    }

    /// What a check-in with launch facts decided and did.
    public struct CheckInResult: Sendable {
        public let account: ResolvedAccount
        /// The launch decision with the facts reported (and those recorded before); nil when
        /// no facts were given.
        public let launch: LaunchDecision?
        /// The wipe a confirmed `wipe` outcome carried out, when the installation acts on launch.
        public let wipe: WipeReport?
        /// Whether the installation acts on launch outcomes (`custody apply --act-on-launch`).
        public let acting: Bool
        /// With decision auditing on, the id of the launch decision's audit entry (stored
        /// before the result was returned, and before any wipe it called for).
        public let decisionID: String?
    }

    /// Records a policy sync of `account` with the launch facts its app reported, decides
    /// conditional launch with them, and, when the outcome is a wipe that reported facts call
    /// for (not one assumed for a missing fact) and the installation acts on launch, wipes the
    /// account (audited and announced like any wipe).
    /// - Throws: `CustodyError` as `checkIn(account:at:)` and `wipe(account:reason:)` do;
    ///   `.noPolicy` with no policy in force (the facts are recorded first).
    public func checkIn(account: AccountID, at date: Date, facts: LaunchFacts) async throws(CustodyError)
        -> CheckInResult
    {
        let resolved = try await checkIn(account: account, at: date)
        // This check-in is the account's last: a lastCheckIn among the facts is not kept and
        // not used (the account is checking in now, not offline since then).
        var reported = facts
        reported.lastCheckIn = nil
        try await CustodyError.fromState {
            try await database.recordLaunchFacts(account: resolved.owner.rawValue, facts: reported.jsonObject, at: date)
        }
        let (snapshot, revision) = try policyAndRevision(for: nil)
        let checkedIn = try await CustodyError.fromState {
            try await database.lastCheckIn(account: resolved.owner.rawValue)
        }
        reported.lastCheckIn = .seconds((checkedIn ?? date).timeIntervalSince1970)
        let launch = snapshot.launch(
            account: resolved.id, facts: reported, now: .seconds(date.timeIntervalSince1970))
        // A bundle given for this command alone (`--bundle`) is not the policy in force: its
        // outcome is reported, never acted on.
        let acting =
            try await CustodyError.fromState { try await database.isActingOnLaunch() }
            && manager.bundleInForce?.isOverride != true
        let asked = AuditedQuery.launch(
            account: resolved.id, facts: reported, at: date,
            context: DecisionContext(revision: revision, context: snapshot.context), outcome: launch.outcome)
        let decisionID = try await auditDecision(
            account: resolved.id, action: .launch, allowed: launch.isAllowed, reason: launch.reason, asked: asked)
        // A live decision: the shadow, when one runs here, decides it too.
        shadows.current.withLock { $0 }?.offer(
            ShadowBatch(
                snapshot: snapshot,
                items: [
                    ShadowItem(
                        line: Array(asked.line.utf8), recordedFacts: nil,
                        at: .seconds(Int64(date.timeIntervalSince1970)), allowed: launch.isAllowed,
                        launch: launch.outcome)
                ]))
        guard acting, launch.wipeIsConfirmed else {
            return CheckInResult(account: resolved, launch: launch, wipe: nil, acting: acting, decisionID: decisionID)
        }
        let because = launch.checks.first { $0.outcome == .wipe && !$0.isMissing }
        let report = try await wipe(
            account: resolved.id,
            reason:
                "conditional launch: \(because.map { "\($0.fact) \($0.reported ?? "") fails \($0.setting)" } ?? "wipe")"
        )
        return CheckInResult(account: resolved, launch: launch, wipe: report, acting: acting, decisionID: decisionID)
    }

    /// With decision auditing on, stores one decision's audit entry and returns its id (which
    /// the answer must carry); nil when decisions are not audited. For the decisions made one
    /// at a time, outside a `DecisionSession`: a shared item's receive, a check-in's launch.
    /// - Throws: `CustodyError` `.state` when the entry cannot be stored: the decision must
    ///   then not be given.
    /// - Parameter asked: the query that asks the same, to decide it again (`replay`); nil
    ///   when no one query does.
    func auditDecision(
        account: AccountID?, action: DecisionAction, allowed: Bool, reason: String, asked: AuditedQuery? = nil
    ) async throws(CustodyError) -> String? {
        guard try await auditSetting.isOn(database, following: isFollowing) else { return nil }
        let id = DecisionIDs.next()
        let entry = AuditRecord(
            .decision, account: account?.description, action: action.rawValue, allowed: allowed, detail: reason,
            decisionID: id, asked: asked, at: configuration.now())
        try await AuditBuffer.store([entry], in: database)
        return id
    }

    /// Sets whether check-ins act on a `wipe` launch outcome (see `checkIn(account:at:facts:)`);
    /// a change is audited (kind bundle, action act-on-launch). Returns whether it changed.
    @discardableResult
    public func setActingOnLaunch(_ acting: Bool, by: String? = nil) async throws(CustodyError) -> Bool {
        try await CustodyError.fromState {
            guard try await database.isActingOnLaunch() != acting else { return false }
            try await database.setActingOnLaunch(acting)
            try await database.audit(
                .bundle, account: nil, action: "act-on-launch",
                detail: (acting
                    ? "on: a confirmed wipe outcome of a check-in wipes the account"
                    : "off: launch outcomes are reported only")
                    + (by.map { " by \($0)" } ?? ""),
                at: configuration.now())
            return true
        }
    }

    /// Selective wipe of `account` under every identifier it has or had here (see
    /// `PolicyManager.wipe`). Needs no master key.
    /// - Throws: `CustodyError` `.account` for an account the installation cannot resolve
    ///   (never a silent success), `.state` when the state cannot be reached (nothing was
    ///   wiped), `.wipe` when the state or a managed root fails otherwise.
    @discardableResult
    public func wipe(account: AccountID, reason: String = "requested") async throws(CustodyError) -> WipeReport {
        do {
            return try await manager.wipe(account: account, reason: reason)
        } catch {
            let code: CustodyError.Code =
                switch error.reason {
                case .unknownAccount, .ambiguousAccount: .account
                case .stateUnavailable: .state
                case .storage, .files: .wipe
                }
            throw CustodyError(code, error.reason == .files ? error.description : error.message, underlying: error)
        }
    }

    // MARK: The audit log

    /// Deletes the audit log's entries older than `age` (as of `now`), oldest first, in
    /// transactions of at most `pruneBatch` entries, each recorded in the log itself (`audit
    /// prune`, how many and from before when); returns how many. What `serve --audit-retention`
    /// runs every hour, and `custody audit --prune-older-than`.
    /// - Throws: `.invalidArgument` for an age that is not positive; `.state` when the log
    ///   cannot be written (what was deleted before stays deleted, and recorded).
    @discardableResult
    public func pruneAuditLog(olderThan age: Duration, now: Date = Date()) async throws(CustodyError) -> Int {
        guard age > .zero else { throw CustodyError(.invalidArgument, "an audit retention must be positive") }
        let cutoff = now.addingTimeInterval(-age.inSeconds)
        var total = 0
        while true {
            let deleted = try await CustodyError.fromState {
                try await database.pruneAudit(before: cutoff, limit: Self.pruneBatch, at: now)
            }
            total += deleted
            if deleted < Self.pruneBatch { return total }
        }
    }

    /// Entries one pruning transaction deletes at most: a write of a few hundred milliseconds,
    /// which holds the state's writer (and an audited decision behind it) no longer.
    static let pruneBatch = 10_000

    /// Switches the audit log on or off, and decision auditing with it when given.
    public func setAuditing(_ enabled: Bool? = nil, decisions: Bool? = nil) async throws(CustodyError) {
        try await CustodyError.fromState {
            if let enabled { try await database.setAuditEnabled(enabled) }
            if let decisions { try await database.setDecisionAuditEnabled(decisions) }
            auditSetting.reset()
        }
    }

    /// Whether decisions are audited now (the audit log on, and decision auditing with it), as
    /// a decision session reads it.
    /// - Throws: `CustodyError` `.state` when the setting cannot be read.
    public func isAuditingDecisions() async throws(CustodyError) -> Bool {
        try await auditSetting.isOn(database, following: isFollowing)
    }

    /// Audit entries at or after `since` whose id is above `id` (0: from the first), oldest first.
    public func auditEntries(since: Date? = nil, after id: Int64 = 0, limit: Int = 10_000) async throws(CustodyError)
        -> [AuditEntry]
    {
        return try await CustodyError.fromState {
            try await database.auditEntries(since: since, after: id, limit: limit)
        }
    }

    // MARK: Secrets

    /// The secrets provider: the manager's, over the state and the key ring.
    /// - Throws: `CustodyError` `.masterKey` when no master key was configured.
    public func secrets() throws(CustodyError) -> SecretsProvider {
        guard let secrets = manager.secrets else { throw Self.noMasterKey("secrets are sealed under account keys") }
        return secrets
    }

    /// The key ring.
    /// - Throws: `CustodyError` `.masterKey` when no master key was configured.
    ///
    /// An engine that follows the state (`follow`) and does not reach it now uses no key: it
    /// could not know of a wipe made elsewhere meanwhile.
    /// - Throws: `.masterKey` without a master key; `.state` while the state is out of reach.
    public func requireKeyRing(_ purpose: String) throws(CustodyError) -> KeyRing {
        guard let keyRing else { throw Self.noMasterKey(purpose) }
        if isFollowing {
            let status = replicaStatus
            guard status.reachesState() else {
                let since = status.lastContact.map { " since \(formatted($0))" } ?? ""
                throw CustodyError(
                    .state,
                    "this replica has not reached the state\(since)\(status.problem.map { " (\($0))" } ?? ""), so it uses no account key: it cannot know of a wipe made elsewhere meanwhile"
                )
            }
        }
        return keyRing
    }

    static func noMasterKey(_ purpose: String) -> CustodyError {
        CustodyError(.masterKey, "no master key was given, and \(purpose)")
    }
}

extension CustodyEngine {
    /// A running watch: the events it publishes, until cancelled.
    public struct Watch: Sendable {
        /// The bundle directory watched now; nil when none is (offline grace is evaluated all the
        /// same). A watch of the directory the bundle in force came from moves with it.
        public var directory: String? { watched.withLock { $0 } }
        private let watched: Locked<String?>
        /// Every event of the engine from the start of the watch.
        public let events: AsyncStream<PolicyEvent>
        private let tasks: [Task<Void, Never>]
        /// Kept alive for as long as the watch: its manager does the work.
        private let engine: CustodyEngine

        init(
            directory: Locked<String?>, events: AsyncStream<PolicyEvent>, tasks: [Task<Void, Never>],
            engine: CustodyEngine
        ) {
            self.watched = directory
            self.events = events
            self.tasks = tasks
            self.engine = engine
        }

        /// Stops watching and evaluating offline grace.
        public func cancel() {
            for task in tasks { task.cancel() }
        }
    }

    /// Evaluates offline grace every `offlineCheckInterval` (announcing `wipeRequired`, and
    /// wiping when the configuration says so), and applies a bundle directory now and whenever
    /// it changes (see `PolicyManager.watch`): `directory` when given; otherwise the directory
    /// the bundle in force came from, when the state is this machine's own (SQLite) and that
    /// directory is here.
    ///
    /// On a state that replicas share (PostgreSQL) no directory is watched unless one is given:
    /// the policy in force is the state's, and the directory another process applied it from
    /// is that process's. A copy at the same path here may hold another version, which would
    /// be put in force for every replica. Nor is one watched with `recordedDirectory` false:
    /// for a service whose policy comes from elsewhere (Microsoft Graph). Nor when a rollback
    /// put the policy in force: its directory holds what was rolled back from, and watching it
    /// would undo the rollback at the next start (a notice says so).
    ///
    /// Without `directory`, the watch follows the bundle in force as it runs, so that it
    /// watches what a restart would: a bundle applied from another directory (`custody apply`,
    /// another process on the same state) moves it there, and a rollback, or a bundle from no
    /// directory here (PUT /v1/bundle), ends it. The directory left is not read again: an edit
    /// there no longer replaces a bundle put in force since.
    public func watch(
        bundleDirectory directory: String? = nil, recordedDirectory: Bool = true, interval: Duration = .seconds(1),
        offlineCheckInterval: Duration = .seconds(60)
    ) -> Watch {
        let follows = directory == nil && recordedDirectory
        let watched = directory ?? (recordedDirectory ? recordedBundleDirectory : nil)
        if follows, let inForce = bundleInForce, inForce.provenance.isRollback {
            manager.logger.notice(
                "the policy in force was put back by a rollback: the directory it came from is not watched (apply it, or serve --bundle it, to resume from it)",
                metadata: ["revision": "\(inForce.revision)", "directory": "\(inForce.source)"])
        }
        let events = manager.events()
        let current = Locked(watched)
        var tasks = [manager.startOfflineChecks(every: offlineCheckInterval)]
        if follows {
            tasks.append(followBundleInForce(from: watched, current: current, interval: interval))
        } else if let watched {
            tasks.append(manager.watch(bundleDirectory: watched, interval: interval))
        }
        return Watch(directory: current, events: events, tasks: tasks, engine: self)
    }

    /// Watches the directory the bundle in force came from (`recordedBundleDirectory`), and
    /// moves the watch when that changes; looks every `interval`. Its watcher applies an edit
    /// only while the bundle in force is still its directory's, so an edit made in the moment
    /// before a move is not put in force over the bundle that caused it.
    private func followBundleInForce(from start: String?, current: Locked<String?>, interval: Duration) -> Task<
        Void, Never
    > {
        let manager = manager
        func watcher(_ directory: String) -> Task<Void, Never> {
            manager.watch(bundleDirectory: directory, interval: interval, onlyWhileInForce: true)
        }
        return Task(executorPreference: StateExecutor.shared) { [weak self] in
            var watching = start
            var task = start.map(watcher)
            defer { task?.cancel() }
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                guard let self, !Task.isCancelled else { return }
                // A process that does not follow the state (`custody watch`) reads its change
                // log here, or it would never hear of a bundle another process applied.
                if !self.isFollowing { _ = try? await self.applyChanges() }
                let now = self.recordedBundleDirectory
                guard now != watching else { continue }
                task?.cancel()
                manager.logger.notice(
                    now == nil
                        ? "no directory is watched now: the bundle in force was put back by a rollback, came from no directory, or its directory is not here any more"
                        : "the bundle in force comes from another directory: watching it instead",
                    metadata: [
                        "was": "\(watching ?? "none")", "now": "\(now ?? "none")",
                        "revision": "\(self.bundleInForce?.revision ?? "none")",
                    ])
                watching = now
                current.withLock { $0 = now }
                task = now.map(watcher)
            }
        }
    }

    /// The directory the bundle in force was applied from, when it is a directory on this
    /// machine and the state is this machine's own; nil otherwise (see `watch`).
    var recordedBundleDirectory: String? {
        guard !database.notifiesChanges, let inForce = bundleInForce, !inForce.isOverride,
            !inForce.provenance.isRollback
        else { return nil }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: inForce.source, isDirectory: &isDirectory), isDirectory.boolValue
        else { return nil }
        return inForce.source
    }
}

/// Two revisions compared, in order.
struct DiffKey: Hashable, Sendable {
    let from: String
    let to: String
}
