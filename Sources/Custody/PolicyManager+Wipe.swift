public import CustodyPolicy
public import CustodyProtection
public import CustodyStore
public import Foundation
import Logging

/// What a selective wipe removed.
public struct WipeReport: Sendable, Hashable {
    public let account: AccountID
    /// The owner identifier whose keys were deleted.
    public let owner: OwnerIdentifier
    /// Key versions deleted: the account's envelopes can no longer be opened.
    public let keyVersions: Int
    /// Files and directories deleted under the account's managed roots.
    public let removedPaths: [String]
}

/// Why a wipe could not finish. What was done before the failure stays done; calling `wipe`
/// again finishes the rest.
public struct WipeError: Error, Sendable, CustomStringConvertible {
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

    /// Selective wipe: deletes every version of `account`'s key (its envelopes become
    /// unreadable), its secrets and check-in, in one transaction of the state database; then
    /// the files registered under its managed roots; records it in the audit log and announces
    /// `wipeCompleted`. Other accounts are untouched.
    @discardableResult
    public func wipe(account: AccountID, reason: String = "requested") throws(WipeError) -> WipeReport {
        let owner = owner(of: account)
        var versions = 0
        do {
            if let database {
                versions = try database.wipe(owner: owner.rawValue, checkInKey: owner.rawValue, reason: reason, at: clock())
            }
            // Drops the keys from memory (and from a store other than the database).
            if let keyRing { versions += try keyRing.wipe(owner) }
        } catch {
            throw WipeError(account: account, message: "\(error)")
        }
        var removed: [String] = []
        for root in managedRoots[owner]?.sorted() ?? [] where FileManager.default.fileExists(atPath: root) {
            do {
                try FileManager.default.removeItem(atPath: root)
                removed.append(root)
            } catch {
                throw WipeError(account: account, message: "the keys are gone, but \(root) could not be deleted: \(error.localizedDescription)")
            }
        }
        offlineWipeAnnounced.remove(owner)
        logger.notice("account wiped", metadata: ["owner": "\(owner)", "keyVersions": "\(versions)", "paths": "\(removed.count)"])
        hub.publish([.wipeCompleted(account: account), .secretsChanged(account: account, identifiers: [])])
        return WipeReport(account: account, owner: owner, keyVersions: versions, removedPaths: removed)
    }

    // MARK: Check-ins and offline grace

    /// Records a successful policy sync for `account` (now, by default).
    public func checkIn(account: AccountID, at date: Date? = nil) throws(StoreError) {
        let owner = owner(of: account)
        try database?.checkIn(account: owner.rawValue, at: date ?? clock())
        offlineWipeAnnounced.remove(owner)
    }

    /// How long `account` has gone without a check-in at `date`; nil when it never checked in
    /// (or there is no database).
    public nonisolated func offlineDuration(of account: AccountID, at date: Date) -> Duration? {
        guard let database, let last = try? database.lastCheckIn(account: owner(of: account).rawValue) else { return nil }
        return .seconds(max(0, date.timeIntervalSince(last)))
    }

    /// Whether `account` may reach its data at `date`: blocked past
    /// `periodOfflineBeforeAccessCheck`, wipe required past `periodOfflineBeforeWipeIsEnforced`
    /// (see `PolicySnapshot.offlineAccess`). An account that never checked in counts as online.
    public nonisolated func offlineAccess(account: AccountID, at date: Date) -> Decision {
        snapshot.offlineAccess(account: account, offlineFor: offlineDuration(of: account, at: date) ?? .zero)
    }

    /// Looks at every account that checked in: announces `wipeRequired` (once, until it checks
    /// in again) for each past its policy's `periodOfflineBeforeWipeIsEnforced`, and wipes it
    /// when `wipesWhenOfflineTooLong`. Returns the events published.
    @discardableResult
    public func evaluateOffline(at date: Date? = nil) -> [PolicyEvent] {
        guard let database, let checkIns = try? database.checkIns() else { return [] }
        let now = date ?? clock()
        var events: [PolicyEvent] = []
        for (key, last) in checkIns.sorted(by: { $0.key < $1.key }) {
            guard let owner = OwnerIdentifier(rawValue: key), !offlineWipeAnnounced.contains(owner) else { continue }
            let account = owner.account
            let decision = snapshot.offlineAccess(account: account, offlineFor: .seconds(max(0, now.timeIntervalSince(last))))
            guard decision.offlineState == .wipeRequired else { continue }
            offlineWipeAnnounced.insert(owner)
            events.append(.wipeRequired(account: account, reason: decision.reason))
        }
        hub.publish(events)
        if wipesWhenOfflineTooLong {
            for case .wipeRequired(let account, let reason) in events {
                do {
                    try wipe(account: account, reason: reason)
                } catch {
                    logger.error("offline wipe failed", metadata: ["error": "\(error)"])
                }
            }
        }
        return events
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
