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
    public nonisolated func saveTo(_ location: SaveLocation, locationAccount: AccountID?, owner: AccountScope? = nil)
        -> Decision
    {
        deciding(for: owner) { $0.saveTo(owner: $1, location: location, locationAccount: locationAccount) }
    }

    /// May data be opened from `location` into the account in effect's documents?
    public nonisolated func openFrom(
        _ location: OpenLocation, locationAccount: AccountID?, receiver: AccountScope? = nil
    ) -> Decision {
        deciding(for: receiver) { $0.openFrom(receiver: $1, location: location, locationAccount: locationAccount) }
    }

    /// May the account in effect's data go to `targets`?
    public nonisolated func share(to targets: [String], owner: AccountScope? = nil) -> ShareDecision {
        deciding(for: owner) { $0.share(owner: $1, targets: targets) }
    }

    /// May the account in effect's data be printed?
    public nonisolated func print(account scope: AccountScope? = nil) -> Decision {
        deciding(for: scope) { $0.print(account: $1) }
    }

    /// Must the account in effect's data be encrypted?
    public nonisolated func encryptionRequired(account scope: AccountScope? = nil) -> Decision {
        deciding(for: scope) { $0.encryptionRequired(account: $1) }
    }

    /// Is the account in effect allowed in the app?
    public nonisolated func accountAllowed(_ scope: AccountScope? = nil) -> Decision {
        deciding(for: scope) { $0.accountAllowed($1) }
    }

    /// Runs a snapshot decision for the account `explicit` names, or else the account in
    /// effect, on the snapshot in force. The explicit cases are spelled out so that the hot path
    /// copies nothing it does not need (decisions through the manager must cost what they cost
    /// on a snapshot, within 20%).
    @inline(__always)
    private nonisolated func deciding<Result>(
        for explicit: AccountScope?, _ decide: (PolicySnapshot, AccountID?) -> Result
    ) -> Result {
        switch explicit {
        case .account(let account): slot.withSnapshot { decide($0, account) }
        case .unmanaged: slot.withSnapshot { decide($0, nil) }
        case nil: slot.withSnapshot { [account = account()] in decide($0, account) }
        }
    }
}
