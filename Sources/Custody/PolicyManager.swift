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
    /// How several policies reaching one account combine (see `PolicyPrecedence`).
    public nonisolated let precedence: PolicyPrecedence.Rule
    /// Where bundles, check-ins and the audit log are recorded; nil: nowhere.
    public nonisolated let database: (any StateStore)?
    /// One write of the installation's own at a time (apply, restore, adopt, wipe, check-in,
    /// offline evaluation), from its first read of the state to its last write: while one
    /// awaits the state, another call may run on this actor, and without the gate two applies
    /// would interleave. Operations that call one another go on inside it (`runHolding`); every
    /// operation enters it through `serially`.
    nonisolated let writes = SerialGate()

    /// Runs `body` through `writes` (`runHolding`), with when it asked on record
    /// (`StateRequest.writeBegan`): its transactions' deadline counts from then, not from when
    /// the writes ahead of it let it in. An operation called from inside another counts from its
    /// own call, as it waits for nothing.
    func serially<T, Failure: Error>(_ body: () async throws(Failure) -> T) async throws(Failure) -> T {
        let result: Result<T, Failure> = await StateRequest.$writeBegan.withValue(.now) {
            do throws(Failure) {
                return .success(try await writes.runHolding(body))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }
    nonisolated let logger: Logger
    nonisolated let slot: SnapshotSlot
    /// Records every event in the state's event log and delivers it, in order.
    nonisolated let journal: EventJournal
    nonisolated var hub: EventHub<PolicyEvent> { journal.hub }
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
    /// How many bundle history rows the state keeps (see `StateStore.recordBundle`).
    public nonisolated let retainedBundles: Int
    /// Directories and files that hold each owner's data, deleted at wipe.
    var managedRoots: [OwnerIdentifier: Set<String>] = [:]
    /// Owners whose `wipeRequired` was announced since their last check-in.
    var offlineWipeAnnounced: Set<OwnerIdentifier> = []
    /// The last bundle this process refused since one was last put in force: when, from where,
    /// why. What `/readyz` warns of (a tampered or unsigned bundle directory, say).
    nonisolated let lastRejection = Locked<(at: Date, source: String, revision: String, message: String)?>(nil)
    /// Raised when what was refused may now go in (a freeze lifted): a watched directory is
    /// offered again, changed or not.
    nonisolated let offerGeneration = Locked(0)

    /// Offers a watched directory again at its next look (a freeze was lifted: the edit it
    /// refused is due now).
    public nonisolated func offerAgain() {
        offerGeneration.withLock { $0 += 1 }
    }
    /// Accounts known to be in the state's registry, with the identifiers recorded for them.
    nonisolated let registered = Locked<[String: Set<String>]>([:])

    /// A manager with no bundle yet: every account is unmanaged until the first `apply`.
    /// - Parameters:
    ///   - context: platform, app and management level to evaluate for.
    ///   - database: records applied and rejected bundles (and, later, check-ins and audits).
    ///   - now: the clock (tests inject one).
    ///   - keyRing: the account keys a wipe deletes (and forgets).
    ///   - wipesWhenOfflineTooLong: wipe an account past its offline wipe period, not only
    ///     announce `wipeRequired`.
    ///   - precedence: how several policies reaching one account combine; `incumbent` needs
    ///     the database's record of when each policy first reached each account.
    ///   - retainedBundles: how many bundle history rows the state keeps (the newest; the one
    ///     in force always).
    public init(
        context: EvaluationContext = EvaluationContext(), database: (any StateStore)? = nil, keyRing: KeyRing? = nil,
        wipesWhenOfflineTooLong: Bool = false, precedence: PolicyPrecedence.Rule = .mostRestrictive,
        retainedBundles: Int = BundleRecord.defaultRetained,
        logger: Logger = Logger(label: "custody.manager"), now: @escaping @Sendable () -> Date = Date.init
    ) async {
        self.retainedBundles = max(retainedBundles, 1)
        self.context = context
        self.precedence = precedence
        self.database = database
        self.keyRing = keyRing
        self.wipesWhenOfflineTooLong = wipesWhenOfflineTooLong
        self.logger = logger
        self.clock = now
        let journal = await EventJournal(database: database, clock: now, logger: logger)
        self.journal = journal
        let empty = PolicyBundle(tenant: Tenant(), protectionPolicies: [], appConfigurations: [], warnings: [])
        let slot = SnapshotSlot(SnapshotBox(PolicySnapshot(bundle: empty, context: context), version: 0, bundle: nil))
        self.slot = slot
        if let database, let keyRing {
            let processScope = processScope
            self.secrets = SecretsProvider(
                database: database, keyRing: keyRing, journal: journal, logger: logger, now: now,
                resolveAccount: { explicit in
                    (explicit ?? AccountScope.current ?? processScope.withLock { $0 })?.account
                },
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

    /// Where the policy in force came from and its revision; nil before the first bundle.
    public nonisolated var bundleInForce: BundleInForce? { slot.current.bundle }

    /// The bundle in force, its snapshot and its version, read together (nil before the first
    /// bundle): what describes the policy in force without reading the state.
    public nonisolated var inForce: (bundle: BundleInForce, snapshot: PolicySnapshot, version: Int)? {
        let box = slot.current
        return box.bundle.map { ($0, box.snapshot, box.version) }
    }

    // MARK: Applying bundles

    /// Validates `bundle` fully, resolves it, then makes it the policy in force and tells every
    /// subscriber what changed. Returns the events published (empty when nothing changed).
    ///
    /// The bundle is recorded in the history of the state database, if there is one, without
    /// its files: `restore()` cannot resume it (a failure to record is logged). Apply files
    /// (`apply(_:source:)` with `BundleFiles`) to make a bundle the installation's policy.
    @discardableResult
    public func apply(_ bundle: PolicyBundle, source: String, contentHash: String? = nil) async -> [PolicyEvent] {
        await serially { () async -> [PolicyEvent] in
            let inForce = BundleInForce(
                revision: contentHash ?? "", source: source, appliedAt: clock(), isOverride: false)
            let reach = bundle.assignmentReach()
            let snapshot: PolicySnapshot
            do {
                snapshot = try await makeSnapshot(bundle, reach: reach, at: inForce.appliedAt!)
            } catch {
                // Nothing is put in force; the policy in force stays, and the log says why.
                logger.error(
                    "the bundle is not applied: when policies first reached accounts cannot be read from the state",
                    metadata: ["source": "\(source)", "error": "\(error)"])
                return []
            }
            return await install(snapshot, inForce) { events in
                do {
                    return try await record(
                        inForce, result: .applied, message: nil, files: nil, accounts: Self.accounts(of: bundle),
                        reach: reach, events: events)
                } catch {
                    // The policy is in force either way; a history that cannot be written is logged.
                    logger.error("cannot record the bundle in the state database", metadata: ["error": "\(error)"])
                    return []
                }
            }
        }
    }

    /// Loads the bundle in `directory` (each file read once, see `BundleFiles`) and applies it
    /// (see `apply(_:source:allowingEmpty:)`).
    @discardableResult
    public func apply(
        bundleDirectory directory: String, allowingEmpty: Bool = false, provenance: BundleProvenance = .none
    ) async throws(BundleRejection) -> [PolicyEvent] {
        try await serially { () async throws(BundleRejection) -> [PolicyEvent] in
            // Recorded as an absolute path: a relative one would name another directory for a
            // process started elsewhere.
            let directory = URL(fileURLWithPath: directory).standardizedFileURL.path
            let files: BundleFiles
            do throws(BundleError) {
                files = try BundleFiles.read(directory: directory)
            } catch {
                throw await reject(
                    source: directory, contentHash: "", message: error.description, diagnostics: error.diagnostics,
                    offeredBy: provenance)
            }
            return try await apply(files, source: directory, allowingEmpty: allowingEmpty, provenance: provenance)
        }
    }

    /// Makes `files` the installation's policy: loads and resolves them fully, records them (the
    /// files, the accounts their tenant lists, an audit entry) in the state database in one
    /// transaction, then swaps the new snapshot in and tells every subscriber what changed.
    /// Files with the revision already in force change nothing and publish nothing.
    ///
    /// A bundle that does not load, or that the state database cannot record, leaves the
    /// policy in force unchanged, is recorded as rejected (when it can be), announced as
    /// `bundleRejected`, and thrown: the policy in force and the state never disagree. So is a
    /// bundle that knows nothing (no `tenant.json`, no protection policy), unless
    /// `allowingEmpty`: it would leave every account unmanaged.
    ///
    /// Once the state trusts a signing key, the files must carry a signature file that a
    /// trusted, unrevoked key made over exactly these files (`BundleVerifier`), with a
    /// sequence above every one applied before; and no bundle goes in while the policy in force
    /// is frozen. A bundle that fails is refused like one that does not load.
    /// - Parameters:
    ///   - provenance: who applies it, and why; a rollback (`isRollback`) passes the freeze and
    ///     the sequence rule, never the trust rule.
    ///   - inForceFrom: apply only while the state's bundle in force came from this source and
    ///     is not a rollback, checked as the state records it (a watch that follows the bundle
    ///     in force, racing another writer): otherwise nothing changes, a notice says why, and
    ///     nothing is returned.
    @discardableResult
    public func apply(
        _ files: BundleFiles, source: String, allowingEmpty: Bool = false, provenance: BundleProvenance = .none,
        inForceFrom: String? = nil
    ) async throws(BundleRejection) -> [PolicyEvent] {
        try await serially { () async throws(BundleRejection) -> [PolicyEvent] in
            let given = provenance
            // The revision in force already is recognised before anything is parsed (a watcher's
            // or a Graph sync's unchanged round costs a hash and a read). Unchanged only if the
            // state agrees: another writer may have put a bundle in force that this manager has not
            // adopted yet. A state that cannot be read is tried below.
            // Once the state trusts keys, the same files under another signature file (a garbage
            // one, or a newer signature) are not "unchanged": they are checked, and a valid newer
            // signature is recorded.
            if let current = bundleInForce, !current.isOverride, current.revision == files.contentHash {
                guard let database else { return [] }
                if let stored = try? await database.lastAppliedBundle(), stored.contentHash == files.contentHash {
                    let trusting = (try? await database.trustedKeys().isEmpty == false) ?? true
                    if !trusting || files.signature == current.provenance.signature
                        || files.signature == stored.provenance.signature
                    {
                        lastRejection.withLock { if $0?.source == source { $0 = nil } }
                        return []
                    }
                }
            }
            let provenance = try await admit(files, source: source, provenance: given)
            let bundle: PolicyBundle
            do throws(BundleError) {
                bundle = try files.load(allowingEmpty: allowingEmpty)
            } catch {
                throw await reject(
                    source: source, contentHash: files.contentHash, message: error.description,
                    diagnostics: error.diagnostics, offeredBy: provenance)
            }
            let reach = bundle.assignmentReach()
            // The state's policy in force already (this manager did not restore it): put it in
            // force here without recording it again.
            if bundleInForce == nil, let stored = try? await database?.lastAppliedBundle(),
                stored.contentHash == files.contentHash
            {
                let inForce = BundleInForce(
                    revision: stored.contentHash, source: stored.source, appliedAt: stored.appliedAt, isOverride: false,
                    entries: files.entries, provenance: stored.provenance)
                return await install(
                    try resolvedSnapshot(bundle, reach: reach, at: stored.appliedAt, files: files, source: source),
                    inForce
                ) {
                    _ in []
                }
            }
            let inForce = BundleInForce(
                revision: files.contentHash, source: source, appliedAt: clock(), isOverride: false,
                entries: files.entries,
                provenance: provenance)
            let snapshot = try await resolvedSnapshot(
                bundle, reach: reach, at: inForce.appliedAt!, files: files, source: source)
            // Managing someone on some platform is not enough: under the installation's own context
            // (its platform, app and management level) the bundle must reach an account, or every
            // decision made here would allow.
            if !allowingEmpty, !snapshot.managesSomeAccount {
                let policies = bundle.protectionPolicies.count
                let accounts = bundle.tenant.accounts.count
                let diagnostic = Diagnostic.emptyBundle(
                    " in this installation's context (\(context)): none of its \(policies) app protection polic\(policies == 1 ? "y" : "ies") reaches any of its \(accounts) account\(accounts == 1 ? "" : "s") there",
                    at: source)
                throw await reject(
                    source: source, contentHash: files.contentHash, message: diagnostic.description,
                    diagnostics: [diagnostic] + bundle.warnings, offeredBy: provenance)
            }
            do throws(StoreError) {
                // Another writer may have put these very files in force since the check above
                // (`custody apply` racing the service's watch): the state then says so as it
                // records, and this is the unchanged apply it would have been a moment later:
                // the policy is put in force here with that writer's record, announced to this
                // process alone (as a bundle adopted from the state is), and nothing is returned.
                var existing: BundleRecord?
                let events = try await install(snapshot, inForce) { events throws(StoreError) in
                    let outcome = try await recorded(
                        inForce, result: .applied, message: nil,
                        files: files.entries.map { StoredFile(name: $0.name, bytes: $0.bytes) }, provenance: provenance,
                        accounts: Self.accounts(of: bundle),
                        reach: reach, events: events, inForceFrom: inForceFrom)
                    if outcome?.alreadyApplied == true { existing = outcome?.record }
                    return outcome?.eventIDs ?? []
                }
                guard let existing else { return events }
                let current = slot.current
                slot.store(
                    SnapshotBox(
                        current.snapshot, version: current.version + 1,
                        bundle: BundleInForce(
                            revision: existing.contentHash, source: existing.source, appliedAt: existing.appliedAt,
                            isOverride: false, entries: files.entries, provenance: existing.provenance)))
                return []
            } catch  where error.code == .conflict && inForceFrom != nil {
                // Another writer put a bundle in force since this one was offered: it stays.
                logger.notice(
                    "not applied: the bundle in force no longer comes from where this one was offered",
                    metadata: ["source": "\(source)", "revision": "\(files.contentHash)", "reason": "\(error.message)"])
                return []
            } catch  where error.code == .refused {
                // The state's own rules, checked as it recorded: another writer froze the policy,
                // applied a higher sequence or revoked the key since `admit` looked.
                throw await reject(
                    source: source, contentHash: files.contentHash, message: error.message,
                    diagnostics: [Self.refusal(error.message, files: files, source: source)], offeredBy: given)
            } catch {
                // Not a refusal of the bundle: the state failed. When the commit's outcome is not
                // known, the state says what happened: the bundle is in force there, or not.
                if error.code == .outcomeUnknown, let stored = try? await database?.lastAppliedBundle(),
                    stored.contentHash == files.contentHash
                {
                    logger.warning(
                        "the state did not confirm the bundle's commit, but holds it: it is in force",
                        metadata: ["revision": "\(files.contentHash)"])
                    let confirmed = BundleInForce(
                        revision: stored.contentHash, source: stored.source, appliedAt: stored.appliedAt,
                        isOverride: false,
                        entries: files.entries, provenance: stored.provenance)
                    return await install(
                        try resolvedSnapshot(bundle, reach: reach, at: stored.appliedAt, files: files, source: source),
                        confirmed
                    ) { _ in [] }
                }
                logger.error(
                    "the state could not record the bundle",
                    metadata: ["source": "\(source)", "revision": "\(files.contentHash)", "error": "\(error)"])
                let outcome =
                    error.code == .outcomeUnknown
                    ? "the state did not confirm whether it recorded the bundle; check GET /v1/bundle (or custody policy) for revision \(files.contentHash)"
                    : "the state could not record the bundle, so it is not applied"
                throw BundleRejection(
                    source: source, message: "\(outcome): \(error)", stateFailure: error, revision: files.contentHash)
            }
        }
    }

    /// Makes `files` the policy this manager decides with, without recording it anywhere and
    /// without events: a one-off policy for one command (`--bundle`), not the installation's.
    /// - Throws: the bundle's `BundleError` when it does not load, or knows nothing (see
    ///   `BundleFiles.load(allowingEmpty:)`).
    public func use(_ files: BundleFiles, source: String) async throws(BundleError) {
        try await serially { () async throws(BundleError) in
            let bundle = try files.load()
            let inForce = BundleInForce(
                revision: files.contentHash, source: source, appliedAt: nil, isOverride: true, entries: files.entries)
            let snapshot = try await snapshot(bundle, at: clock(), source: source)
            let old = slot.current
            slot.store(SnapshotBox(snapshot, version: old.version + 1, bundle: inForce))
        }
    }

    /// Makes the last bundle applied with its files (by any process using this database) the
    /// policy in force again, without events: what a restarted service does before anything
    /// else. Returns false when there is none.
    /// - Throws: `BundleRejection` when the stored bundle no longer loads or cannot be read: a
    ///   policy in force that cannot be restored is an error, never an empty policy.
    @discardableResult
    public func restore() async throws(BundleRejection) -> Bool {
        try await serially { () async throws(BundleRejection) -> Bool in
            guard let database else { return false }
            let stored: StoredBundle?
            do {
                stored = try await database.lastAppliedBundleFiles()
            } catch {
                throw BundleRejection(
                    source: database.path ?? "the state database",
                    message: "the bundle in force cannot be read: \(error)")
            }
            guard let stored else { return false }
            try await putInForce(stored, announcing: false)
            return true
        }
    }

    /// Puts the bundle last applied to the state (by any process or replica) in force here, if
    /// it is not in force already (a one-off override stays), and tells this process's
    /// subscribers what changed for them (`events()` and the typed streams; the process that
    /// applied it recorded its own events in the log).
    /// - Returns: why the stored bundle does not load here, when it does not; the policy in
    ///   force then stays as it was.
    /// - Throws: `StoreError` when the state cannot be read; nothing changed.
    public func adoptStoredBundle() async throws(StoreError) -> BundleRejection? {
        try await serially { () async throws(StoreError) -> BundleRejection? in
            guard let database, bundleInForce?.isOverride != true else { return nil }
            guard let record = try await database.lastAppliedBundle(), record.contentHash != bundleInForce?.revision,
                let stored = try await database.lastAppliedBundleFiles(),
                stored.record.contentHash != bundleInForce?.revision
            else { return nil }
            do throws(BundleRejection) {
                try await putInForce(stored, announcing: true)
                return nil
            } catch {
                return error
            }
        }
    }

    /// Loads a stored bundle and swaps it in. With `announcing`, this process's subscribers are
    /// told what changed (`PolicyChanges`, for this manager's context).
    private func putInForce(_ stored: StoredBundle, announcing: Bool) async throws(BundleRejection) {
        let record = stored.record
        // The revision the state recorded for these files when they were applied: files that no
        // longer hash to it are damaged, never a policy.
        guard let files = stored.files() else {
            logger.error(
                "the stored bundle's files do not hash to its revision", metadata: ["source": "\(record.source)"])
            throw BundleRejection(
                source: record.source,
                message:
                    "the files the state keeps for the bundle in force (revision \(record.contentHash), applied \(formatted(record.appliedAt))) do not hash to that revision: the state is damaged, and they are not put in force"
            )
        }
        let bundle: PolicyBundle
        do {
            // Applied once, so accepted then, even if it knows nothing (applied on purpose).
            bundle = try files.load(allowingEmpty: true)
        } catch {
            logger.error(
                "the stored bundle does not load",
                metadata: ["source": "\(record.source)", "errors": "\(error.errors.count)"])
            throw BundleRejection(
                source: record.source,
                message: "the bundle in force (applied \(formatted(record.appliedAt))) no longer loads",
                diagnostics: error.diagnostics)
        }
        let snapshot = try await resolvedSnapshot(
            bundle, reach: bundle.assignmentReach(), at: record.appliedAt, files: files, source: record.source)
        let inForce = BundleInForce(
            revision: record.contentHash, source: record.source, appliedAt: record.appliedAt, isOverride: false,
            entries: files.entries, provenance: record.provenance)
        // The slot changes only on this actor: what it holds now is what is replaced.
        let old = slot.current
        let events =
            announcing
            ? PolicyChanges.events(from: old.version == 0 ? nil : old.snapshot, to: snapshot)
                + [.bundleApplied(revision: inForce.revision, source: inForce.source)] : []
        await journal.announce(events) {
            slot.store(SnapshotBox(snapshot, version: old.version + 1, bundle: inForce))
            // A refusal told of before this bundle was applied (elsewhere) is past, as an apply
            // here makes it (`/readyz` kept warning of it after another process's apply).
            lastRejection.withLock { if let refused = $0, refused.at <= record.appliedAt { $0 = nil } }
        }
    }

    /// `bundle` resolved for the manager's context and precedence. Under `incumbent`, the pairs
    /// of `reach` the state has not recorded yet count as reaching their account at `time`; a
    /// history that cannot be read is an error (see `precedence(for:at:)`).
    nonisolated func makeSnapshot(_ bundle: PolicyBundle, reach: [(account: String, policies: [String])], at time: Date)
        async
        throws(StoreError) -> PolicySnapshot
    {
        PolicySnapshot(
            bundle: bundle, context: context, precedence: try await precedence(for: reach, at: time), logger: logger)
    }

    /// `makeSnapshot` over the bundle's own reach, for a one-off override (`use`): a reach
    /// history that cannot be read is the bundle's error, located at its source, with the code
    /// `state`.
    private nonisolated func snapshot(_ bundle: PolicyBundle, at time: Date, source: String) async throws(BundleError)
        -> PolicySnapshot
    {
        do {
            return try await makeSnapshot(bundle, reach: bundle.assignmentReach(), at: time)
        } catch {
            throw BundleError(diagnostics: [
                Diagnostic(
                    severity: .error, code: Diagnostic.Code(rawValue: "state"),
                    message:
                        "when policies first reached accounts cannot be read from the state, so incumbent precedence cannot be decided: \(error)",
                    location: DocumentLocation(file: source, line: 1, column: 1))
            ])
        }
    }

    /// `makeSnapshot` for a bundle offered from `source`, or the stored one put back in force: a
    /// history that cannot be read refuses it.
    private func resolvedSnapshot(
        _ bundle: PolicyBundle, reach: [(account: String, policies: [String])], at time: Date, files: BundleFiles,
        source: String
    ) async throws(BundleRejection) -> PolicySnapshot {
        do {
            return try await makeSnapshot(bundle, reach: reach, at: time)
        } catch {
            throw BundleRejection(
                source: source,
                message:
                    "when policies first reached accounts cannot be read from the state, so under incumbent precedence the bundle is not applied: \(error)",
                stateFailure: error, revision: files.contentHash)
        }
    }

    /// The precedence of the manager's rule over `reach`. Under `incumbent`, a history that
    /// cannot be read is an error: merging every policy instead is not the more restrictive
    /// answer (a conflicting number merges to the value Microsoft recommends, which may be
    /// longer than the incumbent's).
    nonisolated func precedence(for reach: [(account: String, policies: [String])], at time: Date)
        async
        throws(StoreError) -> PolicyPrecedence
    {
        guard precedence == .incumbent else { return .mostRestrictive }
        var firstReached: [String: [String: Double]] = [:]
        if let database {
            for (account, policies) in try await database.policyReach() {
                firstReached[account] = policies.mapValues(\.timeIntervalSince1970)
            }
        }
        let now = time.timeIntervalSince1970
        for (account, policies) in reach {
            for policy in policies where firstReached[account]?[policy] == nil {
                firstReached[account, default: [:]][policy] = now
            }
        }
        return PolicyPrecedence(rule: .incumbent, firstReached: firstReached)
    }

    /// Swaps in a resolved snapshot and publishes what changed: `recording` stores the bundle
    /// with the events (returning their ids) first; when it throws, nothing changes.
    private func install<E: Error>(
        _ snapshot: PolicySnapshot, _ inForce: BundleInForce, recording: ([EventRecord]) async throws(E) -> [Int64]
    ) async throws(E) -> [PolicyEvent] {
        let old = slot.current
        // A bundle with a revision is announced as such; an in-memory one without is not.
        let events =
            PolicyChanges.events(from: old.version == 0 ? nil : old.snapshot, to: snapshot)
            + (inForce.revision.isEmpty ? [] : [.bundleApplied(revision: inForce.revision, source: inForce.source)])
        let result: Result<Void, E> = await journal.publish(events) { records in
            do throws(E) {
                let ids = try await recording(records)
                slot.store(SnapshotBox(snapshot, version: old.version + 1, bundle: inForce))
                lastRejection.withLock { $0 = nil }
                return (.success(()), ids)
            } catch {
                return (.failure(error), [])
            }
        }
        try result.get()
        return events
    }

    /// Records and announces a refused bundle; returns the error to throw.
    func reject(
        source: String, contentHash: String, message: String, diagnostics: [Diagnostic], recording: Bool = true,
        offeredBy provenance: BundleProvenance = .none
    ) async -> BundleRejection {
        let rejection = BundleRejection(source: source, message: message, diagnostics: diagnostics)
        let refusedAt = clock()
        logger.error(
            "bundle rejected",
            metadata: ["source": "\(source)", "errors": "\(diagnostics.filter { $0.severity == .error }.count)"])
        let refused = BundleInForce(revision: contentHash, source: source, appliedAt: refusedAt, isOverride: false)
        await journal.publish([.bundleRejected(error: rejection)]) { events in
            // Told (`/readyz`, the console) once the history has it, before it is announced: what
            // the live service says and what the state holds agree.
            defer { lastRejection.withLock { $0 = (refusedAt, source, contentHash, message) } }
            guard recording else { return ((), []) }
            do {
                return (
                    (),
                    try await record(
                        refused, result: .rejected, message: message, files: nil,
                        provenance: BundleProvenance(
                            sequence: provenance.sequence, signers: provenance.signers,
                            appliedBy: provenance.appliedBy, reason: provenance.reason,
                            isRollback: provenance.isRollback),
                        accounts: [], events: events)
                )
            } catch {
                logger.error("cannot record the rejected bundle in the state database", metadata: ["error": "\(error)"])
                return ((), [])
            }
        }
        return rejection
    }

    /// Records a bundle (and the events it brings) in the state; returns the events' ids
    /// (none without a database).
    private func record(
        _ bundle: BundleInForce, result: BundleRecord.Result, message: String?,
        files: [StoredFile]?, provenance: BundleProvenance = .none,
        accounts: [SeenAccount], reach: [(account: String, policies: [String])] = [],
        events: [EventRecord]
    ) async throws(StoreError) -> [Int64] {
        try await recorded(
            bundle, result: result, message: message, files: files, provenance: provenance, accounts: accounts,
            reach: reach, events: events)?.eventIDs ?? []
    }

    /// `record`, with what the state made of it (nil without a state).
    private func recorded(
        _ bundle: BundleInForce, result: BundleRecord.Result, message: String?,
        files: [StoredFile]?, provenance: BundleProvenance = .none,
        accounts: [SeenAccount], reach: [(account: String, policies: [String])] = [],
        events: [EventRecord], inForceFrom: String? = nil
    ) async throws(StoreError) -> RecordedBundle? {
        try await database?.recordBundle(
            contentHash: bundle.revision, source: bundle.source, result: result, message: message, files: files,
            provenance: provenance, accounts: accounts,
            reach: reach.map { PolicyReach(account: $0.account, policies: $0.policies) }, events: events,
            retaining: retainedBundles, inForceFrom: inForceFrom, at: bundle.appliedAt ?? clock())
    }

    /// Each tenant account's canonical identifier and its aliases, for the state's registry.
    static func accounts(of bundle: PolicyBundle) -> [SeenAccount] {
        bundle.tenant.accounts.map { account in
            SeenAccount(
                owner: OwnerIdentifier(account.id).rawValue,
                aliases: ResolvedAccount.identifiers(of: account.id).map(\.rawValue))
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
                guard case .policyChanged(let accounts, _) = event, accounts.contains(account) else { continue }
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

    /// Every change from now on with its id in the state's event log (see `events()`). With a
    /// `limit`, a subscriber that falls that many events behind is dropped: its stream ends and
    /// the subscription says so (it can resume from the log, `CustodyEngine.events(after:)`).
    public nonisolated func loggedEvents(limit: Int? = nil) -> (
        events: AsyncStream<LoggedEvent>, subscription: EventSubscription
    ) {
        let (stream, subscription) = journal.logged.subscribe(limit: limit)
        return (stream, subscription)
    }

    /// The newest event id each time events are recorded, keeping only the newest for a
    /// subscriber that has not looked yet: a reader then reads what it missed with
    /// `CustodyEngine.eventPage(after:limit:)`. It never overflows.
    public nonisolated func eventNotifications() -> AsyncStream<Int64> {
        journal.notifications.subscribeNewest()
    }

    /// Catches up with the events other processes recorded in the state: readers of the event
    /// log are woken to read them. Cheap when nothing changed (one read). (A bundle they applied
    /// comes through the change log: `adoptStoredBundle()`.)
    ///
    /// Nonisolated, and never waits for a bundle being recorded here: the follower that calls
    /// it keeps the replica's contact with the state current meanwhile.
    public nonisolated func catchUp() async {
        guard let database, let newest = try? await database.eventBounds().newest, newest > journal.lastID else {
            return
        }
        journal.advance(to: newest)
    }

    /// How many streams of logged events or event notifications are subscribed now.
    public nonisolated var eventStreamCount: Int {
        journal.logged.subscriberCount + journal.notifications.subscriberCount
    }

    /// The id of the newest event in the log this manager knows of (0 before any): what a
    /// decision is made "at".
    public nonisolated var lastEventID: Int64 { journal.lastID }

    /// Stops every stream (for shutdown).
    public nonisolated func finish() {
        journal.finish()
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

/// The snapshot in force, with how many bundles came before it and where it came from.
final class SnapshotBox: AtomicReference, Sendable {
    let snapshot: PolicySnapshot
    let version: Int
    let bundle: BundleInForce?

    init(_ snapshot: PolicySnapshot, version: Int, bundle: BundleInForce?) {
        self.snapshot = snapshot
        self.version = version
        self.bundle = bundle
    }
}

/// Which bundle a manager decides with: its revision and where it came from.
public struct BundleInForce: Sendable, Hashable {
    /// The bundle's content hash (`BundleFiles.contentHash`); empty for a bundle applied from
    /// values without one.
    public let revision: String
    /// Where it came from: its directory, or another description.
    public let source: String
    /// When it was applied; nil for a one-off policy (`PolicyManager.use`).
    public let appliedAt: Date?
    /// A one-off policy for one command, not the installation's policy in force.
    public let isOverride: Bool
    /// Its files' names and sizes, in load order (none for a bundle applied from values):
    /// known without reading the state.
    public let files: [FileSummary]

    /// One file of a bundle: its name and how many bytes it holds.
    public struct FileSummary: Sendable, Hashable {
        public let name: String
        public let bytes: Int
    }

    /// Its signed sequence and signers, who applied it and why, as the state recorded them.
    public let provenance: BundleProvenance

    init(
        revision: String, source: String, appliedAt: Date?, isOverride: Bool, files: [FileSummary] = [],
        provenance: BundleProvenance = .none
    ) {
        self.revision = revision
        self.source = source
        self.appliedAt = appliedAt
        self.isOverride = isOverride
        self.files = files
        self.provenance = provenance
    }

    init(
        revision: String, source: String, appliedAt: Date?, isOverride: Bool, entries: [BundleFiles.Entry],
        provenance: BundleProvenance = .none
    ) {
        self.init(
            revision: revision, source: source, appliedAt: appliedAt, isOverride: isOverride,
            files: entries.map { FileSummary(name: $0.name, bytes: $0.bytes.count) }, provenance: provenance)
    }
}

/// RFC 3339 in UTC, seconds.
func formatted(_ date: Date) -> String {
    var formatter = Date.ISO8601FormatStyle()
    formatter.timeZone = .gmt
    return formatter.format(date)
}
