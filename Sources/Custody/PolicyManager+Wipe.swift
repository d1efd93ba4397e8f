public import CustodyPolicy
public import CustodyProtection
public import CustodyStore
public import Foundation
import Logging

/// What a selective wipe removed.
public struct WipeReport: Sendable, Hashable {
    /// The account as asked for.
    public let account: AccountID
    /// The account it resolved to.
    public let resolved: ResolvedAccount
    /// The canonical identifier whose keys were deleted.
    public var owner: OwnerIdentifier { resolved.owner }
    /// Key versions deleted, in all: the account's envelopes can no longer be opened.
    public let keyVersions: Int
    /// Key versions deleted per identifier that had some (keys made under an alias, such as
    /// a UPN before the tenant linked it to an OID, included).
    public let keyVersionsByIdentifier: [OwnerIdentifier: Int]
    /// Secrets deleted.
    public let secrets: Int
    /// Files and directories deleted under the account's managed roots.
    public let removedPaths: [String]
}

/// Why a wipe could not be done. What was done before the failure stays done; calling `wipe`
/// again finishes the rest. Nothing is reported wiped that was not.
public struct WipeError: Error, Sendable, CustomStringConvertible {
    public enum Reason: String, Sendable {
        /// Neither the tenant in force nor the state knows the account.
        case unknownAccount
        /// The account's forms name different accounts.
        case ambiguousAccount
        /// The state database failed.
        case storage
        /// The state could not be reached: nothing was read or wiped, and the same wipe may
        /// succeed later.
        case stateUnavailable
        /// The keys are gone but a managed root could not be deleted.
        case files
    }

    public let reason: Reason
    public let account: AccountID
    public let message: String
    public var description: String { "wiping \(account) failed: \(message)" }
}

extension PolicyManager {
    /// The key under which `account`'s check-ins and keys are kept: the tenant's OID for it
    /// when the policy knows it, so every form of the account shares one record.
    public nonisolated func owner(of account: AccountID) -> OwnerIdentifier {
        OwnerIdentifier(account, policy: snapshot)
    }

    // MARK: Managed roots

    /// Registers a directory (or file) that holds `account`'s data: a wipe of the account
    /// deletes it. Registrations last for the manager's life; an app registers its roots when
    /// it starts.
    public func registerManagedRoot(_ path: String, for account: AccountID) {
        managedRoots[owner(of: account), default: []].insert((path as NSString).standardizingPath)
    }

    /// The roots registered for `account`.
    public func managedRoots(for account: AccountID) -> [String] {
        managedRoots[owner(of: account)].map { $0.sorted() } ?? []
    }

    // MARK: Wipe

    /// Selective wipe: resolves `account` to one account of this installation (see
    /// `resolve(_:)`), deletes every version of its key under every identifier it has or had
    /// here (its envelopes become unreadable), its secrets and check-ins, in one transaction of
    /// the state database with an audit entry; then the files registered under its managed
    /// roots; and announces `wipeCompleted`. Other accounts are untouched.
    ///
    /// - Throws: `WipeError` for an account the installation cannot resolve (unknown, or
    ///   ambiguous), never a silent success; or when the state or a managed root fails.
    @discardableResult
    public func wipe(account: AccountID, reason: String = "requested") async throws(WipeError) -> WipeReport {
        try await serially { () async throws(WipeError) -> WipeReport in
            let resolved: ResolvedAccount
            do throws(AccountError) {
                resolved = try await resolve(account)
            } catch {
                let reason: WipeError.Reason =
                    switch error.code {
                    case .unknown: .unknownAccount
                    case .ambiguous: .ambiguousAccount
                    case .storage: error.stateCode == .unavailable ? .stateUnavailable : .storage
                    }
                throw WipeError(reason: reason, account: account, message: error.message)
            }
            var byIdentifier: [OwnerIdentifier: Int] = [:]
            var secrets = 0
            let announced: [PolicyEvent] = [
                .wipeCompleted(account: resolved.id), .secretsChanged(account: resolved.id, identifiers: []),
            ]
            do {
                if let database {
                    let counts = try await journal.publish(announced) { events throws(StoreError) in
                        let counts = try await database.wipe(
                            identifiers: resolved.identifiers.map(\.rawValue), account: resolved.owner.rawValue,
                            reason: reason, events: events, at: clock())
                        return (counts, counts.eventIDs)
                    }
                    for (name, count) in counts.keyVersions {
                        if let identifier = OwnerIdentifier(rawValue: name) { byIdentifier[identifier] = count }
                    }
                    secrets = counts.secrets
                }
                if let keyRing {
                    if let store = keyRing.store as? StateKeyStore, store.state === database {
                        keyRing.forget(resolved.identifiers)
                    } else {
                        // Keys in a store of their own: delete them there too.
                        for identifier in resolved.identifiers {
                            let count = try await keyRing.wipe(identifier)
                            if count > 0 { byIdentifier[identifier, default: 0] += count }
                        }
                    }
                }
            } catch let error as StoreError {
                throw WipeError(
                    reason: error.code == .unavailable ? .stateUnavailable : .storage, account: account,
                    message: "\(error)"
                )
            } catch {
                throw WipeError(reason: .storage, account: account, message: "\(error)")
            }
            var removed: [String] = []
            let roots = resolved.identifiers.flatMap { managedRoots[$0] ?? [] }
            for root in Set(roots).sorted() where FileManager.default.fileExists(atPath: root) {
                do {
                    try FileManager.default.removeItem(atPath: root)
                    removed.append(root)
                } catch {
                    throw WipeError(
                        reason: .files, account: account,
                        message: "the keys are gone, but \(root) could not be deleted: \(error.localizedDescription)")
                }
            }
            for identifier in resolved.identifiers { offlineWipeAnnounced.remove(identifier) }
            let versions = byIdentifier.values.reduce(0, +)
            logger.notice(
                "account wiped",
                metadata: ["owner": "\(resolved.owner)", "keyVersions": "\(versions)", "paths": "\(removed.count)"])
            if database == nil { await journal.publish(announced) }
            return WipeReport(
                account: account, resolved: resolved, keyVersions: versions, keyVersionsByIdentifier: byIdentifier,
                secrets: secrets, removedPaths: removed)
        }
    }

    // MARK: Check-ins and offline grace

    /// Records a successful policy sync for `account` (now, by default), under its canonical
    /// identifier. Returns the account it resolved to.
    /// - Throws: `AccountError` for an account the installation cannot resolve, or `.storage`.
    @discardableResult
    public func checkIn(account: AccountID, at date: Date? = nil) async throws(AccountError) -> ResolvedAccount {
        try await serially { () async throws(AccountError) -> ResolvedAccount in
            let resolved = try await resolve(account)
            do {
                try await database?.checkIn(account: resolved.owner.rawValue, at: date ?? clock())
            } catch {
                throw AccountError(
                    code: .storage, account: account, message: "cannot record the check-in of \(account): \(error)")
            }
            for identifier in resolved.identifiers { offlineWipeAnnounced.remove(identifier) }
            return resolved
        }
    }

    /// How long `account` has gone without a check-in at `date`, counted from its last
    /// check-in under any of its identifiers, else from when the installation first saw it;
    /// nil when the state knows neither (or there is no database).
    /// - Throws: `StoreError` when the state cannot be read: an account whose last check-in is
    ///   unknown is never counted as online.
    public nonisolated func offlineDuration(of account: AccountID, at date: Date) async throws(StoreError) -> Duration?
    {
        guard let database else { return nil }
        let identifiers: [OwnerIdentifier]
        do {
            identifiers = try await resolve(account).identifiers
        } catch  where error.code == .storage {
            throw StoreError(error.stateCode ?? .unavailable, error.message, path: database.path)
        } catch {
            // Unknown or ambiguous here: counted under the identifier it is kept under.
            identifiers = [owner(of: account)]
        }
        var since: Date?
        for identifier in identifiers {
            if let last = try await database.lastCheckIn(account: identifier.rawValue), since.map({ last > $0 }) ?? true
            {
                since = last
            }
        }
        if since == nil { since = try await database.account(owner: identifiers[0].rawValue)?.firstSeen }
        return since.map { .seconds(max(0, date.timeIntervalSince($0))) }
    }

    /// Whether `account` may reach its data at `date`: blocked past
    /// `periodOfflineBeforeAccessCheck`, wipe required past `periodOfflineBeforeWipeIsEnforced`
    /// (see `PolicySnapshot.offlineAccess`), counted as `offlineDuration` says. An account the
    /// state knows nothing of counts as online.
    /// - Throws: `StoreError` when the state cannot be read (never an answer then).
    public nonisolated func offlineAccess(account: AccountID, at date: Date) async throws(StoreError) -> Decision {
        snapshot.offlineAccess(account: account, offlineFor: try await offlineDuration(of: account, at: date) ?? .zero)
    }

    /// Looks at every managed account of the tenant in force: announces `wipeRequired` (once,
    /// until it checks in again) for each past its policy's `periodOfflineBeforeWipeIsEnforced`,
    /// counting from its last check-in or, when it never checked in, from when the
    /// installation first saw it (the apply that first listed it); and wipes it when
    /// `wipesWhenOfflineTooLong`. Returns the events published.
    @discardableResult
    public func evaluateOffline(at date: Date? = nil) async -> [PolicyEvent] {
        await serially { () async -> [PolicyEvent] in
            guard let database else { return [] }
            // Every check-in and first-seen time in two reads. When one row cannot be read, each
            // account is read on its own instead, so that the damage stops only its account's
            // evaluation (logged), never every other account's.
            var checkIns: [String: Date]?
            var firstSeen: [String: Date]?
            do {
                (checkIns, firstSeen) = await (try database.checkIns(), try database.accountsFirstSeen())
            } catch {
                logger.error(
                    "cannot read every check-in at once to evaluate offline grace; reading each account on its own",
                    metadata: ["error": "\(error)"])
            }
            let snapshot = self.snapshot
            let appliedAt = bundleInForce?.appliedAt
            let now = date ?? clock()
            var events: [PolicyEvent] = []
            for account in snapshot.bundle.tenant.accounts where snapshot.isManaged(account.id) {
                let owner = OwnerIdentifier(account.id)
                guard !offlineWipeAnnounced.contains(owner) else { continue }
                let identifiers = ResolvedAccount.identifiers(of: account.id).map(\.rawValue)
                let lastCheckIn: Date?
                let seen: Date?
                if let checkIns, let firstSeen {
                    lastCheckIn = identifiers.compactMap { checkIns[$0] }.max()
                    seen = firstSeen[owner.rawValue]
                } else {
                    do {
                        var times: [Date] = []
                        for identifier in identifiers {
                            if let time = try await database.lastCheckIn(account: identifier) { times.append(time) }
                        }
                        lastCheckIn = times.max()
                        seen = lastCheckIn == nil ? try await database.account(owner: owner.rawValue)?.firstSeen : nil
                    } catch {
                        logger.error(
                            "offline grace is not evaluated for an account whose check-in the state cannot read",
                            metadata: ["account": "\(account.id)", "error": "\(error)"])
                        continue
                    }
                }
                guard let since = lastCheckIn ?? seen ?? appliedAt else { continue }
                let decision = snapshot.offlineAccess(
                    account: account.id, offlineFor: .seconds(max(0, now.timeIntervalSince(since))))
                guard decision.offlineState == .wipeRequired else { continue }
                offlineWipeAnnounced.insert(owner)
                events.append(.wipeRequired(account: account.id, reason: decision.reason))
            }
            await journal.publish(events)
            if wipesWhenOfflineTooLong {
                for case .wipeRequired(let account, let reason) in events {
                    do {
                        try await wipe(account: account, reason: reason)
                    } catch {
                        logger.error("offline wipe failed", metadata: ["error": "\(error)"])
                    }
                }
            }
            return events
        }
    }

    /// Evaluates offline grace every `interval` until the returned task is cancelled.
    public nonisolated func startOfflineChecks(every interval: Duration) -> Task<Void, Never> {
        Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                guard let self, !Task.isCancelled else { return }
                await self.evaluateOffline()
            }
        }
    }
}
