public import CustodyPolicy
import CustodyStore
import Foundation
import Logging

extension CustodyEngine {
    /// Audit entries a replay reads at a time: its memory is a page or two, whatever the window.
    static let replayPage = 8_192

    /// Decides every audited decision in `scope` again under `candidate`, with the query,
    /// context and recorded facts each was made with, and reports what would differ
    /// (`ImpactReport`). The candidate is resolved with the precedence in force; its signature
    /// is not checked (nothing is applied). A query that gave no `now` is decided at its
    /// entry's time. Pages of the log are read while the last one is decided, on the state's
    /// threads; the decisions run on `jobs` tasks.
    /// - Parameter progress: called after each page.
    /// - Throws: `CustodyError` `.bundle` with the candidate's diagnostics when it does not
    ///   load; `.state` when the log cannot be read or holds a damaged entry; `.cancelled` when
    ///   the task is cancelled.
    public func replay(
        candidate: BundleFiles, scope: ReplayScope, jobs: Int = 2,
        progress: @Sendable (ReplayProgress) -> Void = { _ in }
    ) async throws(CustodyError) -> ImpactReport {
        let bundle: PolicyBundle
        do {
            // As applying it would: a bundle that manages no account is no candidate.
            bundle = try candidate.load()
        } catch {
            throw CustodyError(
                .bundle, "the candidate bundle does not load, so nothing is replayed: \(error.errors.count) error(s)",
                diagnostics: error.diagnostics)
        }
        let inForce = manager.slot.current
        let precedence = inForce.snapshot.precedence
        let snapshots = CandidateSnapshots(bundle: bundle, precedence: precedence, logger: logger)
        // The revisions the decisions were made under, as the state keeps them: a flip's
        // setting is the one that blocks, before or after. Nil for one the state no longer keeps.
        var originals: [String: CandidateSnapshots?] = [:]
        let accounts = try ReplayAccounts(
            scope: scope, tenants: [bundle.tenant] + (inForce.bundle == nil ? [] : [inForce.snapshot.bundle.tenant]))
        var tally = ReplayTally()
        var after: Int64 = 0
        var read = 0
        let database = self.database
        let cancelled = CustodyError(.cancelled, "the replay was cancelled")
        @Sendable func page(after id: Int64) async throws(CustodyError) -> [AuditEntry] {
            guard !Task.isCancelled else { throw cancelled }
            do {
                return try await CustodyError.fromState {
                    try await database.auditDecisions(
                        from: scope.from, to: scope.to, action: scope.action?.rawValue, after: id,
                        limit: Self.replayPage)
                }
            } catch  where Task.isCancelled {
                // A read cut short by the cancellation is the cancellation, not the state's fault.
                throw cancelled
            }
        }
        // The window's size, for the progress (read through the time index).
        let total: Int
        do throws(CustodyError) {
            guard !Task.isCancelled else { throw cancelled }
            total = try await CustodyError.fromState {
                try await database.auditDecisionCount(from: scope.from, to: scope.to, action: scope.action?.rawValue)
            }
        } catch  where Task.isCancelled {
            throw cancelled
        }
        var entries = try await page(after: 0)
        while !entries.isEmpty {
            after = entries[entries.count - 1].id
            read += entries.count
            // The next page is read while this one is decided.
            let next = Task { [after] () -> Result<[AuditEntry], CustodyError> in
                do throws(CustodyError) { return .success(try await page(after: after)) } catch {
                    return .failure(error)
                }
            }
            // Entries in a row share their context (one text per context, as the log reads it).
            var previous: String?
            for entry in entries {
                guard let text = entry.asked?.context, text != previous else { continue }
                previous = text
                let revision = try DecisionContext(json: text).revision
                guard originals[revision] == nil else { continue }
                let kept = try? await keptBundle(revision)
                originals[revision] = kept?.files().flatMap { try? $0.load(allowingEmpty: true) }.map {
                    CandidateSnapshots(bundle: $0, precedence: precedence, logger: logger)
                }
            }
            let decided: ReplayTally
            do throws(CustodyError) {
                decided = try await Self.decide(
                    entries, snapshots: snapshots, originals: originals.compactMapValues { $0 }, accounts: accounts,
                    jobs: jobs)
            } catch {
                next.cancel()
                throw error
            }
            tally.merge(decided)
            // A row that does not say what was decided fails the replay: counted as anything,
            // it would make up a flip (or hide one).
            if tally.damaged > 0 {
                next.cancel()
                throw CustodyError(
                    .state,
                    "the audit log holds decisions whose outcome it does not say (no allowed, or a launch outcome it does not know), so the replay stops rather than guess: entries \(tally.damagedSamples.map(String.init).joined(separator: ", "))"
                )
            }
            progress(
                ReplayProgress(
                    read: read, decided: tally.decided, flipped: tally.flipped,
                    fraction: total > 0 ? min(Double(read) / Double(total), 1) : 1))
            // Checked here, in the replay's own task, before each page but the first (whose read
            // checked it): the next pages are read in tasks of their own.
            guard !Task.isCancelled else {
                next.cancel()
                throw cancelled
            }
            entries = try await next.value.get()
        }
        return tally.report(candidate: candidate.contentHash, scope: scope)
    }

    /// Decides `entries` on up to `jobs` tasks, a slice each, and merges what they found.
    private static func decide(
        _ entries: [AuditEntry], snapshots: CandidateSnapshots, originals: [String: CandidateSnapshots],
        accounts: ReplayAccounts, jobs: Int
    ) async throws(CustodyError) -> ReplayTally {
        let jobs = max(1, min(jobs, entries.count / 512 + 1))
        if jobs == 1 {
            var worker = ReplayWorker(snapshots: snapshots, originals: originals, accounts: accounts)
            return try worker.decide(entries[...])
        }
        let size = (entries.count + jobs - 1) / jobs
        let results = await withTaskGroup(of: (Int, Result<ReplayTally, CustodyError>).self) { group in
            for index in 0..<jobs {
                let slice = entries[(index * size)..<min(entries.count, (index + 1) * size)]
                group.addTask {
                    var worker = ReplayWorker(snapshots: snapshots, originals: originals, accounts: accounts)
                    do throws(CustodyError) {
                        return (index, .success(try worker.decide(slice)))
                    } catch {
                        return (index, .failure(error))
                    }
                }
            }
            var results: [(Int, Result<ReplayTally, CustodyError>)] = []
            for await result in group { results.append(result) }
            return results.sorted { $0.0 < $1.0 }.map(\.1)
        }
        var merged = ReplayTally()
        for result in results { merged.merge(try result.get()) }
        return merged
    }
}

/// A candidate resolved for each evaluation context decisions were made in (at most
/// `capacity` at a time), shared by the tasks that decide under it: a replay's workers, a
/// shadow's.
final class CandidateSnapshots: Sendable {
    let bundle: PolicyBundle
    let precedence: PolicyPrecedence
    let logger: Logger
    let capacity: Int
    private let cache = Locked<[EvaluationContext: PolicySnapshot]>([:])

    init(bundle: PolicyBundle, precedence: PolicyPrecedence, logger: Logger, capacity: Int = 64) {
        self.bundle = bundle
        self.precedence = precedence
        self.logger = logger
        self.capacity = capacity
    }

    /// The candidate for the context an audit entry keeps (its JSON text), and that context.
    func snapshot(for text: String) throws(CustodyError) -> (DecisionContext, PolicySnapshot) {
        let context = try DecisionContext(json: text)
        return (context, snapshot(for: context.context))
    }

    /// The candidate resolved for `context`.
    func snapshot(for context: EvaluationContext) -> PolicySnapshot {
        if let cached = cache.withLock({ $0[context] }) { return cached }
        let resolved = PolicySnapshot(bundle: bundle, context: context, precedence: precedence, logger: logger)
        cache.withLock { cache in
            if cache.count >= capacity { cache.removeAll() }
            cache[context] = resolved
        }
        return resolved
    }
}

/// The forms (lowercased) of the accounts a replay's scope names, or nil for every account.
struct ReplayAccounts: Sendable {
    let forms: Set<String>?

    init(scope: ReplayScope, tenants: [Tenant]) throws(CustodyError) {
        guard scope.account != nil || scope.group != nil else {
            forms = nil
            return
        }
        /// The forms of the tenants' accounts that `includes` picks, lowercased.
        func accountForms(where includes: (TenantAccount) -> Bool) -> Set<String> {
            var found = Set<String>()
            for tenant in tenants {
                for account in tenant.accounts where includes(account) {
                    for form in [account.id.upn, account.id.oid] { if let form { found.insert(form.lowercased()) } }
                }
            }
            return found
        }
        var picked = Set<String>()
        if let name = scope.account {
            let wanted = name.lowercased()
            picked = accountForms { $0.id.upn?.lowercased() == wanted || $0.id.oid?.lowercased() == wanted }
            picked.insert(wanted)
        }
        if let group = scope.group {
            let members = accountForms { $0.groups.contains { $0.caseInsensitiveCompare(group) == .orderedSame } }
            guard !members.isEmpty else {
                throw CustodyError(
                    .notFound,
                    "no account of the tenant in force or of the candidate is a member of the group '\(group)'")
            }
            // An account and a group: the account, when it is a member.
            picked = scope.account == nil ? members : picked.intersection(members)
        }
        forms = picked
    }

    func admits(_ account: String?) -> Bool {
        guard let forms else { return true }
        guard let account else { return false }
        return forms.contains(account.lowercased())
    }
}

/// Decides audited decisions again, one slice at a time (one per task).
struct ReplayWorker {
    let snapshots: CandidateSnapshots
    /// The kept revisions, by revision.
    let originals: [String: CandidateSnapshots]
    let accounts: ReplayAccounts
    private var document = try! JSONDocument(parsing: Array("null".utf8))
    private var context: (text: String, decision: DecisionContext, snapshot: PolicySnapshot)?

    init(snapshots: CandidateSnapshots, originals: [String: CandidateSnapshots], accounts: ReplayAccounts) {
        self.snapshots = snapshots
        self.originals = originals
        self.accounts = accounts
    }

    /// Recorded facts that are `facts` whoever asks.
    static func always(_ facts: LaunchFacts) -> (AccountID) throws(QueryError) -> LaunchFacts? {
        { _ in facts }
    }

    mutating func decide(_ entries: ArraySlice<AuditEntry>) throws(CustodyError) -> ReplayTally {
        var tally = ReplayTally()
        for entry in entries where accounts.admits(entry.account) {
            guard let asked = entry.asked else {
                tally.notReplayable += 1
                continue
            }
            if context?.text != asked.context {
                let (decision, snapshot) = try snapshots.snapshot(for: asked.context)
                context = (asked.context, decision, snapshot)
            }
            let (decisionContext, snapshot) = (context!.decision, context!.snapshot)
            let at = Duration.milliseconds(Int64((entry.at.timeIntervalSince1970 * 1_000).rounded()))
            let query: DecisionQuery
            var recorded: LaunchFacts?
            var line = asked.line
            let parsed = line.withUTF8 { bytes in (try? document.reparse(UnsafeRawBufferPointer(bytes))) != nil }
            do throws(QueryError) {
                guard parsed else { throw QueryError(message: "not JSON", column: 1) }
                query = try DecisionQuery(json: document.root, currentTime: { at })
                if let facts = asked.recordedFacts {
                    guard let document = try? JSONDocument(parsing: Array(facts.utf8)) else {
                        throw QueryError(message: "recorded facts not JSON", column: 1)
                    }
                    recorded = try LaunchFacts(json: document.root)
                }
            } catch {
                tally.unreadable += 1
                continue
            }
            let facts = recorded.map(Self.always)
            let answer: DecisionAnswer
            do throws(QueryError) {
                answer = try snapshot.answer(query, recordedFacts: facts).answer
            } catch {
                tally.unreadable += 1
                continue
            }
            // Under the revision it was made under, for a flip only: the setting that blocked.
            let original = { () -> DecisionAnswer? in
                guard let kept = self.originals[decisionContext.revision]?.snapshot(for: decisionContext.context) else {
                    return nil
                }
                return try? kept.answer(query, recordedFacts: facts).answer
            }
            // Counted by revision a run of entries of one context at a time (nothing hashed per
            // entry).
            tally.count(revision: decisionContext.revision)
            tally.count(
                AuditedDecision(entry: entry, asked: asked), app: decisionContext.context.appID ?? "-", query: query,
                answer: answer, original: original)
        }
        tally.flushRun()
        return tally
    }
}

/// A decision made before, as a replay or a shadow compares it with the candidate's answer.
protocol DecidedBefore {
    /// The audit entry's id (a replay); the decision's number on its replica (a shadow).
    var number: Int64 { get }
    var account: String? { get }
    var action: String { get }
    /// The outcome it was made with, in words (`ReplayTally.outcome`); nil when it cannot say
    /// (a damaged row).
    var before: String? { get }
    /// A sample of it, decided again as `answer`.
    func sample(after answer: DecisionAnswer) -> ImpactReport.Sample
}

/// An audited decision, as a replay reads it.
struct AuditedDecision: DecidedBefore {
    let entry: AuditEntry
    let asked: AuditedQuery

    var number: Int64 { entry.id }
    var account: String? { entry.account }
    var action: String { entry.action }
    var before: String? { ReplayTally.recordedOutcome(entry, asked) }

    func sample(after answer: DecisionAnswer) -> ImpactReport.Sample {
        ImpactReport.Sample(
            entry: entry.id, at: secondsTime(entry.at), account: entry.account, query: asked.line,
            reasonBefore: entry.detail, reasonAfter: answer.reason)
    }
}

/// What a replay (or a shadow) has found so far: counts, and flips grouped, in bounded memory
/// (past `capacity` distinct keys a group counts in the totals only, and the report says it is
/// truncated). Tallies of slices merge in order.
struct ReplayTally: Codable {
    static let capacity = 10_000

    struct Tie: Hashable, Codable {
        var flipped = 0
        var loosened = 0
    }

    struct FlipKey: Hashable, Codable {
        var action: String
        var app: String
        var setting: String
        var before: String
        var after: String
    }

    struct FlipCount: Codable {
        var count: Int
        var loosens: Bool
        var sample: ImpactReport.Sample
    }

    var decided = 0
    var unchanged = 0
    var loosened = 0
    var tightened = 0
    var refused = 0
    var notReplayable = 0
    /// Entries whose row does not say what was decided (`recordedOutcome`), and the first ids.
    var damaged = 0
    var damagedSamples: [Int64] = []
    var unreadable = 0
    var truncated = false
    var revisions: [String: Int] = [:]
    var bySetting: [String: Tie] = [:]
    var byApp: [String: Tie] = [:]
    var byAction: [String: Tie] = [:]
    var byAccount: [String: Tie] = [:]
    var flips: [FlipKey: FlipCount] = [:]
    var refusals: [ImpactReport.Sample] = []

    var flipped: Int { loosened + tightened }

    /// The revision of the run of entries being counted, and how many of them so far.
    private var run: (revision: String, count: Int)?
    /// What a tally keeps in JSON (a shadow's replicas record theirs in the state): everything
    /// but the run being counted.
    enum CodingKeys: String, CodingKey {
        case decided, unchanged, loosened, tightened, refused, notReplayable, damaged, damagedSamples, unreadable
        case truncated, revisions, bySetting, byApp, byAction, byAccount, flips, refusals
    }

    /// An entry of `revision` read, to be decided (or found unreadable).
    mutating func count(revision: String) {
        if let run, run.revision == revision {
            self.run!.count += 1
            return
        }
        flushRun()
        run = (revision, 1)
    }

    /// Adds the run counted so far to `revisions`.
    mutating func flushRun() {
        guard let run else { return }
        Self.add(run.count, to: &revisions, run.revision, truncated: &truncated)
        self.run = nil
    }

    /// A decision decided again under the candidate.
    /// - Parameters:
    ///   - app: the app of the context it was made in (`-` when none was named).
    ///   - original: the answer under the revision it was made under, when known (asked for
    ///     flips only).
    /// - Returns: for a flip, its kind, and whether it is the first of that kind counted here.
    @discardableResult
    mutating func count<Decision: DecidedBefore>(
        _ decision: Decision, app: String, query: DecisionQuery, answer: DecisionAnswer,
        original: () -> DecisionAnswer? = { nil }
    ) -> (flip: FlipKey, first: Bool)? {
        guard let before = decision.before else {
            damaged += 1
            if damagedSamples.count < ImpactReport.listed { damagedSamples.append(decision.number) }
            return nil
        }
        decided += 1
        if answer.isRefusal {
            refused += 1
            if refusals.count < ImpactReport.listed { refusals.append(decision.sample(after: answer)) }
            return nil
        }
        let after = Self.outcome(
            action: query.action.rawValue, allowed: answer.isAllowed, launch: answer.launchOutcome?.rawValue)
        guard before != after else {
            unchanged += 1
            return nil
        }
        let loosens = Self.loosens(action: decision.action, from: before, to: after)
        if loosens { loosened += 1 } else { tightened += 1 }
        // The setting that blocks: the candidate's when it tightens, the kept revision's when it
        // loosens (the candidate's when that revision is not kept).
        let setting = (loosens ? original()?.decidingSetting : nil) ?? answer.decidingSetting ?? "-"
        let tie = Tie(flipped: 1, loosened: loosens ? 1 : 0)
        Self.add(tie, to: &bySetting, setting, truncated: &truncated)
        Self.add(tie, to: &byApp, app, truncated: &truncated)
        Self.add(tie, to: &byAction, decision.action, truncated: &truncated)
        Self.add(tie, to: &byAccount, decision.account ?? "-", truncated: &truncated)
        let key = FlipKey(action: decision.action, app: app, setting: setting, before: before, after: after)
        if flips[key] != nil {
            flips[key]!.count += 1
            return (key, false)
        } else if flips.count < Self.capacity {
            flips[key] = FlipCount(count: 1, loosens: loosens, sample: decision.sample(after: answer))
            return (key, true)
        } else {
            truncated = true
            return (key, false)
        }
    }

    /// The outcome an entry records, in words; nil when the entry cannot say (a decision
    /// without `allowed`; a launch without an outcome that `LaunchOutcome` names, or an outcome
    /// on another action): a damaged row.
    static func recordedOutcome(_ entry: AuditEntry, _ asked: AuditedQuery) -> String? {
        guard let allowed = entry.allowed else { return nil }
        let isLaunch = entry.action == DecisionAction.launch.rawValue
        if let outcome = asked.outcome {
            guard isLaunch, let launch = LaunchOutcome(rawValue: outcome), launch.letsUserIn == allowed else {
                return nil
            }
            return outcome
        }
        guard !isLaunch else { return nil }
        return outcome(action: entry.action, allowed: allowed, launch: nil)
    }

    /// An outcome in words: a launch's outcome; `required` or `optional` for encryption;
    /// else `allow` or `block`.
    static func outcome(action: String, allowed: Bool, launch: String?) -> String {
        if let launch { return launch }
        if action == DecisionAction.encryptionRequired.rawValue { return allowed ? "required" : "optional" }
        return allowed ? "allow" : "block"
    }

    /// Whether going from `before` to `after` lets through more: a launch outcome made milder,
    /// encryption no longer required, a block made an allow.
    static func loosens(action: String, from before: String, to after: String) -> Bool {
        if let old = LaunchOutcome(rawValue: before), let new = LaunchOutcome(rawValue: after),
            action == DecisionAction.launch.rawValue
        {
            return new < old
        }
        if action == DecisionAction.encryptionRequired.rawValue { return before == "required" }
        return before == "block"
    }

    private static func add<Value: Mergeable>(
        _ value: Value, to groups: inout [String: Value], _ key: String, truncated: inout Bool
    ) {
        if let old = groups[key] {
            groups[key] = old.merged(with: value)
        } else if groups.count < capacity {
            groups[key] = value
        } else {
            truncated = true
        }
    }

    /// Adds `other`, a tally of entries that came after this one's.
    mutating func merge(_ other: ReplayTally) {
        decided += other.decided
        unchanged += other.unchanged
        loosened += other.loosened
        tightened += other.tightened
        refused += other.refused
        notReplayable += other.notReplayable
        unreadable += other.unreadable
        damaged += other.damaged
        damagedSamples += other.damagedSamples.prefix(ImpactReport.listed - damagedSamples.count)
        truncated = truncated || other.truncated
        for (key, value) in other.revisions { Self.add(value, to: &revisions, key, truncated: &truncated) }
        for (key, value) in other.bySetting { Self.add(value, to: &bySetting, key, truncated: &truncated) }
        for (key, value) in other.byApp { Self.add(value, to: &byApp, key, truncated: &truncated) }
        for (key, value) in other.byAction { Self.add(value, to: &byAction, key, truncated: &truncated) }
        for (key, value) in other.byAccount { Self.add(value, to: &byAccount, key, truncated: &truncated) }
        for (key, value) in other.flips {
            if let old = flips[key] {
                // The sample stays the earlier one's: this tally's entries came first.
                flips[key]!.count = old.count + value.count
            } else if flips.count < Self.capacity {
                flips[key] = value
            } else {
                truncated = true
            }
        }
        refusals += other.refusals.prefix(ImpactReport.listed - refusals.count)
    }

    func report(candidate: String, scope: ReplayScope) -> ImpactReport {
        func top(_ groups: [String: Tie]) -> [ImpactReport.Group] {
            groups.map { ImpactReport.Group(key: $0.key, flipped: $0.value.flipped, loosened: $0.value.loosened) }
                .sorted { ($1.loosened, $1.flipped, $0.key) < ($0.loosened, $0.flipped, $1.key) }
                .prefix(ImpactReport.listed).map { $0 }
        }
        let listed = flips.map { key, value in
            ImpactReport.Flip(
                action: key.action, app: key.app, setting: key.setting, before: key.before, after: key.after,
                loosens: value.loosens, count: value.count, sample: value.sample)
        }.sorted { lhs, rhs in
            if lhs.loosens != rhs.loosens { return lhs.loosens }
            if lhs.count != rhs.count { return lhs.count > rhs.count }
            return lhs.sample.entry < rhs.sample.entry
        }
        return ImpactReport(
            candidate: candidate, from: secondsTime(scope.from), to: secondsTime(scope.to),
            decided: decided, unchanged: unchanged,
            flipped: flipped, loosened: loosened, tightened: tightened, refused: refused,
            notReplayable: notReplayable, unreadable: unreadable,
            revisions: revisions.map { ImpactReport.Count(revision: $0.key, decisions: $0.value) }
                .sorted { ($1.decisions, $0.revision) < ($0.decisions, $1.revision) },
            bySetting: top(bySetting), byApp: top(byApp), byAction: top(byAction), byAccount: top(byAccount),
            flips: Array(listed.prefix(ImpactReport.listed)), refusals: refusals, truncated: truncated)
    }
}

/// A count that adds up.
protocol Mergeable {
    func merged(with other: Self) -> Self
}

extension Int: Mergeable {
    func merged(with other: Int) -> Int { self + other }
}

extension ReplayTally.Tie: Mergeable {
    func merged(with other: Self) -> Self {
        Self(flipped: flipped + other.flipped, loosened: loosened + other.loosened)
    }
}
