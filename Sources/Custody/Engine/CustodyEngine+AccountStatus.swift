public import CustodyPolicy
import CustodyProtection
import CustodyStore
public import Foundation

/// What the state knows of one account besides its policy: its key versions under each
/// identifier it has or had, when it was wiped, its last check-in, and where it stands with
/// offline grace (`GET /v1/accounts/{account}/status`, the console's account page).
public struct AccountStatus: Sendable, Encodable {
    /// One identifier of the account and what is kept under it.
    public struct Identifier: Sendable, Encodable {
        public var identifier: String
        /// The versions of its key in the state, oldest first (none: no key yet, or wiped).
        public var keyVersions: [UInt32]
        @Nullable package var wipedAt: String?
        @Nullable package var lastCheckIn: String?
    }

    /// Offline grace now, as an `offlineAccess` decision counts it.
    public struct Offline: Sendable, Encodable {
        /// `online`, `accessBlocked` or `wipeRequired`.
        public var state: String
        /// Seconds since the last check-in (else since the installation first saw the account);
        /// null when the state knows neither.
        @Nullable package var offlineForSeconds: Int?
        public var reason: String
    }

    public var account: String
    /// The canonical identifier keys are kept under.
    public var owner: String
    public var identifiers: [Identifier]
    @Nullable package var firstSeen: String?
    @Nullable package var lastCheckIn: String?
    public var offline: Offline
}

extension CustodyEngine {
    /// What the state knows of `account` now (see `AccountStatus`). Read from the state, never
    /// guessed: when it cannot be read this throws rather than report an account as online.
    /// - Throws: `CustodyError` `.account` for an account the installation cannot resolve,
    ///   `.state` when the state cannot be read.
    /// - Parameter context: the platform (and app) whose policy counts the offline grace; nil:
    ///   the engine's.
    public func accountStatus(for account: AccountID, context: EvaluationContext? = nil, at date: Date? = nil)
        async
        throws(CustodyError) -> AccountStatus
    {
        let resolved = try await resolve(account)
        let now = date ?? configuration.now()
        var identifiers: [AccountStatus.Identifier] = []
        var lastCheckIn: Date?
        let firstSeen = try await CustodyError.fromState {
            for identifier in resolved.identifiers {
                let versions = try await database.accountKeys(owner: identifier.rawValue).map(\.version)
                let checkIn = try await database.lastCheckIn(account: identifier.rawValue)
                if let checkIn, lastCheckIn.map({ checkIn > $0 }) ?? true { lastCheckIn = checkIn }
                identifiers.append(
                    AccountStatus.Identifier(
                        identifier: identifier.rawValue, keyVersions: versions,
                        wipedAt: try await database.wipeRecord(of: identifier.rawValue).map { answerTime($0.at) },
                        lastCheckIn: checkIn.map(answerTime)))
            }
            return try await database.account(owner: resolved.owner.rawValue)?.firstSeen
        }
        let since = lastCheckIn ?? firstSeen
        let offlineFor = since.map { Swift.max(0, Int(now.timeIntervalSince($0))) }
        let snapshot = try context.map { context throws(CustodyError) in try policyAndRevision(for: context).snapshot }
        let decision = (snapshot ?? manager.snapshot).offlineAccess(
            account: resolved.id, offlineFor: .seconds(offlineFor ?? 0))
        return AccountStatus(
            account: resolved.id.upn ?? resolved.id.description, owner: resolved.owner.rawValue,
            identifiers: identifiers, firstSeen: firstSeen.map(answerTime), lastCheckIn: lastCheckIn.map(answerTime),
            offline: AccountStatus.Offline(
                state: (decision.offlineState ?? .online).rawValue, offlineForSeconds: offlineFor,
                reason: decision.reason))
    }
}
