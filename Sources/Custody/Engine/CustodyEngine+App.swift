public import CustodyPolicy
public import CustodyProtection
public import Foundation

/// What an app asks of the engine about its own accounts, in the style of the Intune App SDK's
/// policy calls and Apple's ManagedApp framework: which account is in effect, what it may do
/// with its data, its configuration, and the streams that say when any of that changes.
///
/// Each call decides on the policy in force, from memory: none reads the state, none waits.
/// The account is the one named, else the task's (`withAccount(_:operation:)`), else the
/// process default (`setProcessAccount(_:)`); a level that is explicitly unmanaged decides as
/// unmanaged.
extension CustodyEngine {
    // MARK: The account in effect

    /// The process-wide default account (nil: not set).
    @inlinable public var processAccount: AccountScope? { manager.processAccount }

    /// Sets (or, with nil, clears) the process-wide default account.
    @inlinable public func setProcessAccount(_ scope: AccountScope?) { manager.setProcessAccount(scope) }

    /// The account in effect: `explicit` if given, else the task's, else the process default;
    /// nil when the level that decides is unmanaged or none is set.
    @inlinable public func account(_ explicit: AccountScope? = nil) -> AccountID? { manager.account(explicit) }

    /// The key `account`'s check-ins, keys and files are kept under: the tenant's object id for
    /// it when the policy in force knows it, so every form of the account shares one record.
    @inlinable public func owner(of account: AccountID) -> OwnerIdentifier { manager.owner(of: account) }

    // MARK: Decisions for the account in effect

    /// May data of the account in effect be saved to `location`? See `PolicySnapshot.saveTo`.
    @inlinable public func saveTo(_ location: SaveLocation, locationAccount: AccountID?, owner: AccountScope? = nil)
        -> Decision
    {
        manager.saveTo(location, locationAccount: locationAccount, owner: owner)
    }

    /// May data be opened from `location` into the account in effect's documents?
    @inlinable public func openFrom(
        _ location: OpenLocation, locationAccount: AccountID?, receiver: AccountScope? = nil
    )
        -> Decision
    {
        manager.openFrom(location, locationAccount: locationAccount, receiver: receiver)
    }

    /// May the account in effect's data go to `targets`?
    @inlinable public func share(to targets: [String], owner: AccountScope? = nil) -> ShareDecision {
        manager.share(to: targets, owner: owner)
    }

    /// May the account in effect's data be printed?
    @inlinable public func print(account scope: AccountScope? = nil) -> Decision { manager.print(account: scope) }

    /// Must the account in effect's data be encrypted?
    @inlinable public func encryptionRequired(account scope: AccountScope? = nil) -> Decision {
        manager.encryptionRequired(account: scope)
    }

    /// Is the account in effect allowed in the app?
    @inlinable public func accountAllowed(_ scope: AccountScope? = nil) -> Decision { manager.accountAllowed(scope) }

    // MARK: Configuration

    /// The app configuration that reaches the account in effect: nil when it is unmanaged,
    /// empty when no configuration policy reaches it. Intune's
    /// `IntuneMAMAppConfigManager.appConfig(forIdentity:)`.
    @inlinable public func appConfiguration(for scope: AccountScope? = nil) -> AppConfiguration? {
        manager.appConfiguration(for: scope)
    }

    /// The account's configuration decoded as `type` now, then after every change of it:
    /// Apple ManagedApp's `configurations(_:)` (see `PolicyManager.configurations(_:for:)`).
    public func configurations<Configuration: Decodable & Sendable>(
        _ type: Configuration.Type, for scope: AccountScope? = nil
    ) -> AsyncStream<Configuration?> {
        manager.configurations(type, for: scope)
    }

    // MARK: Changes

    /// Every change from now on, one stream per subscriber; it finishes when the subscriber's
    /// task is cancelled or it stops iterating.
    public func events() -> AsyncStream<PolicyEvent> { manager.events() }

    /// The tenant's allowed accounts now (nil: every account), then after every change.
    public func allowedAccounts() -> AsyncStream<[String]?> { manager.allowedAccounts() }

    /// `account`'s effective policy now (nil: unmanaged), then each time it decides something
    /// differently.
    public func effectivePolicy(for account: AccountID) -> AsyncStream<EffectivePolicy?> {
        manager.effectivePolicy(for: account)
    }

    // MARK: Offline grace

    /// How long `account` has gone without a check-in at `date`, counted from its last
    /// check-in under any of its identifiers, else from when the installation first saw it; nil
    /// when the state knows of neither.
    /// - Throws: `CustodyError` `.state` when the state cannot be read: never counted as online.
    public func offlineDuration(of account: AccountID, at date: Date) async throws(CustodyError) -> Duration? {
        try await CustodyError.fromState { try await manager.offlineDuration(of: account, at: date) }
    }

    /// Whether `account` may reach its data at `date` after its time offline: blocked past its
    /// policy's `periodOfflineBeforeAccessCheck`, wipe required past
    /// `periodOfflineBeforeWipeIsEnforced`. An account the state knows nothing of counts as
    /// online.
    /// - Throws: `CustodyError` `.state` when the state cannot be read (never an answer then).
    public func offlineAccess(account: AccountID, at date: Date) async throws(CustodyError) -> Decision {
        try await CustodyError.fromState { try await manager.offlineAccess(account: account, at: date) }
    }

    /// Looks at every managed account of the tenant in force, announces `wipeRequired` for each
    /// past its offline grace (and wipes it when the engine was opened to), and returns the
    /// events published.
    @discardableResult
    public func evaluateOffline(at date: Date? = nil) async -> [PolicyEvent] {
        await manager.evaluateOffline(at: date)
    }

    // MARK: Files an account owns

    /// Registers `path` as a directory of `account`'s data: a wipe of the account removes it.
    public func registerManagedRoot(_ path: String, for account: AccountID) async {
        await manager.registerManagedRoot(path, for: account)
    }

    /// The directories registered for `account` (`registerManagedRoot(_:for:)`).
    public func managedRoots(for account: AccountID) async -> [String] {
        await manager.managedRoots(for: account)
    }
}
