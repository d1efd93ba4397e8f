public import CustodyPolicy
import CustodyProtection

extension PolicyManager {
    /// The process-wide default account: what decisions use when neither an argument nor the
    /// task's scope names one. Nil: not set.
    public nonisolated var processAccount: AccountScope? {
        processScope.withLock { $0 }
    }

    /// Sets (or, with nil, clears) the process-wide default account.
    public nonisolated func setProcessAccount(_ scope: AccountScope?) {
        processScope.withLock { $0 = scope }
    }

    /// The account in effect: `explicit` if given, else the task's (`withAccount`), else the
    /// process default; nil when the level that decides is unmanaged or none is set.
    public nonisolated func account(_ explicit: AccountScope? = nil) -> AccountID? {
        (explicit ?? AccountScope.current ?? processAccount)?.account
    }

    // MARK: Decisions for the account in effect

    /// May data of the account in effect be saved to `location`? See `PolicySnapshot.saveTo`.
    public nonisolated func saveTo(_ location: SaveLocation, locationAccount: AccountID?, owner: AccountScope? = nil) -> Decision {
        snapshot.saveTo(owner: account(owner), location: location, locationAccount: locationAccount)
    }

    /// May data be opened from `location` into the account in effect's documents?
    public nonisolated func openFrom(_ location: OpenLocation, locationAccount: AccountID?, receiver: AccountScope? = nil) -> Decision {
        snapshot.openFrom(receiver: account(receiver), location: location, locationAccount: locationAccount)
    }

    /// May the account in effect's data go to `targets`?
    public nonisolated func share(to targets: [String], owner: AccountScope? = nil) -> ShareDecision {
        snapshot.share(owner: account(owner), targets: targets)
    }

    /// May the account in effect's data be printed?
    public nonisolated func print(account scope: AccountScope? = nil) -> Decision {
        snapshot.print(account: account(scope))
    }

    /// Must the account in effect's data be encrypted?
    public nonisolated func encryptionRequired(account scope: AccountScope? = nil) -> Decision {
        snapshot.encryptionRequired(account: account(scope))
    }

    /// Is the account in effect allowed in the app?
    public nonisolated func accountAllowed(_ scope: AccountScope? = nil) -> Decision {
        snapshot.accountAllowed(account(scope))
    }
}
