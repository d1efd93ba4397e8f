public import CustodyPolicy
package import CustodyStore
import Logging

/// What the front ends (the `custody` command, the decision service) ask of an installation
/// besides decisions and protection: the policy and configuration reports of one account, the
/// position of the policy in force and of the event log, the event streams. Both ask here, so
/// the same question gets the same answer, and the same refusal, from either.
extension CustodyEngine {
    // MARK: Reports on one account

    /// The policy `account` receives, to report on (`custody policy show`,
    /// `GET /v1/accounts/{account}/policy`): one snapshot, or one per platform when the bundle
    /// holds policies for several and `context` names none (see `policyPerPlatform(for:)`).
    /// - Throws: `CustodyError` `.account` when the tenant in force does not list the account
    ///   (an unknown account is unmanaged: no policy to report) or names it ambiguously (its
    ///   OID and UPN are two accounts); `.noPolicy`, `.platform` as `policy(for:)` does.
    public func policyReport(for account: AccountID, context: EvaluationContext? = nil) throws(CustodyError)
        -> [PolicySnapshot]
    {
        let snapshots = try policyPerPlatform(for: context)
        switch snapshots[0].resolveAccount(account) {
        case .tenant: return snapshots
        case .unknown:
            let source = bundleInForce.map { " (revision \(PolicyManager.shortRevision($0.revision)))" } ?? ""
            throw CustodyError(
                .account,
                "\(account) is not in the tenant of the policy in force\(source); unknown accounts are unmanaged (no policy applies)",
                underlying: AccountError(code: .unknown, account: account, message: "\(account) is not in the tenant"))
        case .contradictory(let why):
            throw Self.ambiguous(account, why)
        }
    }

    /// The app configuration `account` receives (`custody config show`,
    /// `GET /v1/accounts/{account}/configuration`); nil when the account is unmanaged (the
    /// tenant does not list it) or no configuration targets it.
    /// - Throws: `CustodyError` `.account` when the account is named ambiguously (as a decision
    ///   for it would be refused); `.noPolicy`, `.platform` as `policy(for:)` does.
    public func appConfigurationReport(for account: AccountID, context: EvaluationContext? = nil)
        throws(CustodyError) -> AppConfiguration?
    {
        let snapshot = try policy(for: context)
        if case .contradictory(let why) = snapshot.resolveAccount(account) { throw Self.ambiguous(account, why) }
        return snapshot.appConfiguration(for: account)
    }

    private static func ambiguous(_ account: AccountID, _ why: String) -> CustodyError {
        let message = "\(account) is ambiguous: \(why)"
        return CustodyError(
            .account, message, underlying: AccountError(code: .ambiguous, account: account, message: message))
    }

    // MARK: Before applying

    /// Puts the state's bundle in force here, when one is stored and loads, for an engine
    /// opened without restoring it (`CustodyConfiguration.restoresBundleInForce` off, as
    /// `custody apply` opens, so that a stored bundle that no longer loads can be replaced).
    /// Then what a later `apply` records and announces is the change from that bundle, as a
    /// running service's would be, not every account as if nothing had been in force. Returns
    /// whether a bundle was put in force; one that does not load, or cannot be read, is left
    /// (and logged), and the apply records changes from nothing as before.
    @discardableResult
    public func restoreBundleInForceIfItLoads() async -> Bool {
        guard manager.bundleInForce == nil else { return true }
        do {
            return try await manager.restore()
        } catch {
            logger.notice(
                "the bundle in force does not load here; what this apply records is the change from no policy",
                metadata: ["reason": "\(error.message)"])
            return false
        }
    }

    // MARK: Where the installation stands

    /// The policy in force with the snapshot it decides with and its version (how many times a
    /// policy was put in force in this process); nil when none is. Answered from memory.
    public var policyInForce: PolicyInForce? {
        manager.inForce.map { PolicyInForce(bundle: $0.bundle, snapshot: $0.snapshot, version: $0.version) }
    }

    /// How many times a policy was put in force in this process (0: none yet).
    public var policyVersion: Int { manager.version }

    /// The id of the newest event in the state's log this engine knows of (0 before any): what
    /// an answer is given "at".
    public var lastEventID: Int64 { manager.lastEventID }

    /// The id of the newest event in the state's log, read now; when it is newer than this
    /// engine knew (another replica or process recorded it, and this one has not heard yet),
    /// readers of the log are woken for it. For a caller naming an event this engine has not
    /// heard of: a replica a moment behind must not call an event that exists unknown.
    /// - Throws: `CustodyError` `.state` when the state cannot be read.
    public func newestEventID() async throws(CustodyError) -> Int64 {
        let newest = try await CustodyError.mapping(otherwise: .state) {
            try await StateExecutor.run { () throws(StoreError) in try await database.eventBounds().newest }
        }
        // What was just read wakes the log's readers; the state is not read a second time.
        manager.journal.advance(to: newest)
        return newest
    }

    /// Where the state is kept.
    public var stateBackend: StateBackend { database.notifiesChanges ? .postgres : .sqlite }

    /// The write to the state under way longest, where the state reports it (PostgreSQL);
    /// read from memory, never waiting for the state.
    package var pendingStateWrite: PendingWrite? { (database as? any WriteReporting)?.oldestPendingWrite }

    /// The newest revision in the state's change log, read now.
    /// - Throws: `CustodyError` `.state` when the state cannot be read.
    public func newestChangeRevision() async throws(CustodyError) -> Int64 {
        return try await CustodyError.fromState { try await database.changeBounds().newest }
    }

    // MARK: Event streams

    /// The newest event id, each time events are recorded or learned of from the state (only
    /// the newest is kept for a reader that has not looked yet): for readers that follow the log
    /// by id (`eventPage(after:limit:)`).
    public func eventNotifications() -> AsyncStream<Int64> { manager.eventNotifications() }

    /// How many event streams are subscribed now.
    public var eventStreamCount: Int { manager.eventStreamCount }

    /// Ends every event stream (for shutdown).
    public func finishEventStreams() { manager.finish() }
}

/// Where an installation's state is kept.
public enum StateBackend: String, Sendable, Hashable {
    /// A file (`CustodyConfiguration.State.path`), read by this process's followers every poll.
    case sqlite
    /// A PostgreSQL database shared by replicas, which hear of changes as they commit.
    case postgres
}

// MARK: For the Graph connector (a library of this package)

extension CustodyEngine {
    /// Takes the state's lease `name` (see `StateStore.lease(_:)`); nil when another process
    /// or replica holds it.
    package func lease(_ name: String) async throws(StoreError) -> (any StateLease)? { try await database.lease(name) }

    /// The text kept under `name` in the state's cache (see `StateStore.cache(_:)`).
    package func cache(_ name: String) async throws(StoreError) -> String? { try await database.cache(name) }

    /// Keeps `text` under `name` in the state's cache (nil removes it).
    package func saveCache(_ name: String, _ text: String?) async throws(StoreError) {
        try await database.saveCache(name, text)
    }

    /// Records a policy sync in the event log and tells subscribers (`PolicyManager.announce`).
    package func announce(_ sync: PolicySync) async { await manager.announce(sync) }
}

extension CustodyEngine {
    /// The tenant's accounts whose UPN, object id or display name contains `query` (see
    /// `AccountSearch`), in the tenant's order: at most `limit` of them, from the account after
    /// `after` (a UPN or object id an earlier page's `next` gave; nil: from the first).
    /// - Throws: `.noPolicy` with no bundle in force; `.invalidArgument` when `after` is no
    ///   account of the tenant in force (a page of another bundle: start again).
    public func searchAccounts(_ query: String, after: String? = nil, limit: Int) throws(CustodyError)
        -> AccountSearch
    {
        guard let snapshot = policyInForce?.snapshot else {
            throw CustodyError(.noPolicy, "no bundle is in force")
        }
        let accounts = snapshot.bundle.tenant.accounts
        let index = searchIndex.withLock { cached in
            if let cached, cached.snapshot === snapshot { return cached }
            let made = AccountSearchIndex(snapshot)
            cached = made
            return made
        }
        var start = 0
        if let after {
            // The account as the tenant resolves any name of it, and where it stands there.
            guard let named = AccountID(after), let account = snapshot.tenantAccount(for: named),
                let position = accounts.firstIndex(where: { $0.id == account.id })
            else {
                throw CustodyError(
                    .invalidArgument,
                    "'\(after.escapingControlCharacters)' is not an account of the tenant in force (a page of another bundle: search again from the first page)"
                )
            }
            start = position + 1
        }
        let (found, matched, more) = index.matches(query, from: start, limit: limit)
        let last = found.last.map { accounts[$0].id }
        return AccountSearch(
            accounts: found.map { accounts[$0] }, matched: matched, total: accounts.count,
            next: more ? last.flatMap { $0.upn ?? $0.oid } : nil)
    }
}

/// One page of a search of the tenant's accounts (`CustodyEngine.searchAccounts`).
public struct AccountSearch: Sendable {
    /// The page: matching accounts in the tenant's order.
    public let accounts: [TenantAccount]
    /// How many accounts match in all (every page).
    public let matched: Int
    /// How many accounts the tenant has.
    public let total: Int
    /// What to pass as `after` for the next page; nil on the last.
    public let next: String?
}

/// A tenant's accounts as lower-cased text to search (UPN, object id and display name of each),
/// made once per bundle in force: a search then costs a byte search per account, not a
/// lower-casing of every name of a 100,000-account tenant.
final class AccountSearchIndex: Sendable {
    let snapshot: PolicySnapshot
    private let texts: [[UInt8]]

    init(_ snapshot: PolicySnapshot) {
        self.snapshot = snapshot
        texts = snapshot.bundle.tenant.accounts.map { account in
            let name = account.displayName.map { $0.split(whereSeparator: \.isWhitespace).joined(separator: " ") }
            let fields = [account.id.upn, account.id.oid, name].compactMap { $0 }
            return Array(fields.joined(separator: "\n").lowercased().utf8)
        }
    }

    /// The indices of the accounts whose text holds `query` (ignoring case and spaces at either
    /// end, a run of spaces as one; every account for an empty one), in the tenant's order, from
    /// index `start` on, at most `limit`; how many match in all, and whether more match after
    /// the last one given.
    func matches(_ query: String, from start: Int = 0, limit: Int) -> (found: [Int], matched: Int, more: Bool) {
        // Spaces at either end, and runs of them, are not what anyone searches for.
        let words = query.lowercased().split(whereSeparator: \.isWhitespace)
        let needle = Array(words.joined(separator: " ").utf8)
        let start = min(max(start, 0), texts.count)
        if needle.isEmpty {
            let end = min(start + limit, texts.count)
            return (Array(start..<end), texts.count, end < texts.count)
        }
        var found: [Int] = []
        var matched = 0
        var more = false
        for (index, text) in texts.enumerated() where Self.contains(text, needle) {
            matched += 1
            guard index >= start else { continue }
            if found.count < limit { found.append(index) } else { more = true }
        }
        return (found, matched, more)
    }

    private static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard needle.count <= haystack.count else { return false }
        return haystack.withUnsafeBufferPointer { text in
            needle.withUnsafeBufferPointer { part in
                let first = part[0]
                var start = 0
                let last = text.count - part.count
                while start <= last {
                    if text[start] == first {
                        var matched = 1
                        while matched < part.count && text[start + matched] == part[matched] { matched += 1 }
                        if matched == part.count { return true }
                    }
                    start += 1
                }
                return false
            }
        }
    }
}
