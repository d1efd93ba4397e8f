/// Every decision one account's policy makes, as a table: what an administrator reads before
/// rollout (`custody matrix table`), and what `custody matrix diff` compares between bundles.
///
/// Rows: every save-to and open-from location × the location accounts that matter (the same
/// account, another managed account, an unmanaged account, none); receiving data of each of
/// those; sharing to a policy-managed and an unmanaged app; copying out and pasting in with
/// managed and unmanaged apps; print, backup, screen capture, notifications, encryption, and
/// whether the account is allowed.
public struct DecisionTable: Sendable {
    /// The accounts that stand for each kind of counterpart.
    public struct Counterparts: Sendable, Hashable {
        /// Another account of the tenant that a policy manages; nil when there is none.
        public var otherManaged: AccountID?
        /// An account no policy manages: a tenant account without policy, or one outside it.
        public var unmanaged: AccountID
        /// An app the account's policy manages, for share rows; nil when it names none.
        public var managedApp: String?
        /// An app no policy manages.
        public var unmanagedApp: String

        /// Chooses counterparts for `account` from `snapshot`'s tenant (first in tenant order).
        public init(for account: AccountID, in snapshot: PolicySnapshot) {
            self.init(for: account, in: snapshot, sample: Sample(snapshot))
        }

        init(for account: AccountID, in snapshot: PolicySnapshot, sample: Sample) {
            otherManaged = sample.managed.first { !snapshot.isSameAccount($0, account) }
            unmanaged =
                sample.unmanaged.first { !snapshot.isSameAccount($0, account) } ?? AccountID(
                    upn: "someone@unmanaged.invalid")!
            managedApp = snapshot.effectivePolicy(for: account)?.managedApps.first
            unmanagedApp = "com.example.unmanaged"
        }

        /// The first two managed and the first two unmanaged accounts of a tenant: whoever asks,
        /// one of each pair is someone else. Found once, so a diff of every account stays linear.
        struct Sample {
            var managed: [AccountID] = []
            var unmanaged: [AccountID] = []

            init(_ snapshot: PolicySnapshot) {
                for account in snapshot.bundle.tenant.accounts.map(\.id) where managed.count < 2 || unmanaged.count < 2
                {
                    if snapshot.isManaged(account) {
                        if managed.count < 2 { managed.append(account) }
                    } else if unmanaged.count < 2 {
                        unmanaged.append(account)
                    }
                }
            }
        }
    }

    /// One question and its answer.
    public struct Row: Sendable {
        /// The action (`saveTo`, `print`, ...).
        public let action: DecisionAction
        /// What the action acts on: a location, an app, or "" when nothing.
        public let target: String
        /// Who is on the other side, in words: `same account`, `another managed account`,
        /// `an unmanaged account`, `no account`, or "" when nobody.
        public let counterpart: String
        public let query: DecisionQuery
        public let answer: DecisionAnswer

        /// What identifies the row across bundles.
        public var key: String { "\(action.rawValue)|\(target)|\(counterpart)" }
    }

    public let account: AccountID
    public let counterparts: Counterparts
    public let rows: [Row]
    /// The policy the table was decided with.
    public let snapshot: PolicySnapshot

    /// The table of `account` under `snapshot`, with counterparts chosen from it unless given
    /// (a diff uses the same counterparts for both bundles).
    public init(snapshot: PolicySnapshot, account: AccountID, counterparts: Counterparts? = nil) {
        let counterparts = counterparts ?? Counterparts(for: account, in: snapshot)
        self.snapshot = snapshot
        self.account = account
        self.counterparts = counterparts
        var parties: [(String, AccountID?)] = [("same account", account)]
        if let other = counterparts.otherManaged { parties.append(("another managed account", other)) }
        parties += [("an unmanaged account", counterparts.unmanaged), ("no account", nil)]

        var rows: [Row] = []
        func add(_ action: DecisionAction, _ target: String, _ counterpart: String, _ query: DecisionQuery) {
            rows.append(
                Row(
                    action: action, target: target, counterpart: counterpart, query: query,
                    answer: snapshot.answer(query)))
        }
        for location in SaveLocation.allCases {
            for (label, other) in parties {
                add(
                    .saveTo, location.rawValue, label,
                    .saveTo(owner: account, location: location, locationAccount: other))
            }
        }
        for location in OpenLocation.allCases {
            for (label, other) in parties {
                add(
                    .openFrom, location.rawValue, label,
                    .openFrom(receiver: account, location: location, locationAccount: other))
            }
        }
        for (label, other) in parties {
            add(.receive, "", label, .receive(receiver: account, dataOwner: other))
        }
        if let app = counterparts.managedApp {
            add(.share, app, "a policy-managed app", .share(owner: account, targets: [app]))
        }
        add(
            .share, counterparts.unmanagedApp, "an unmanaged app",
            .share(owner: account, targets: [counterparts.unmanagedApp]))
        for managed in [true, false] {
            add(
                .copyOut, "", managed ? "a managed app" : "an unmanaged app",
                .copyOut(owner: account, destinationManaged: managed, length: nil))
        }
        for managed in [true, false] {
            add(
                .pasteIn, "", managed ? "a managed app" : "an unmanaged app",
                .pasteIn(owner: account, sourceManaged: managed))
        }
        add(.print, "", "", .print(account: account))
        add(.backup, "", "", .backup(account: account))
        add(.screenCapture, "", "", .screenCapture(account: account))
        add(.notifications, "", "", .notifications(account: account))
        add(.encryptionRequired, "", "", .encryptionRequired(account: account))
        add(.appSharing, "", "", .appSharing(account: account))
        add(.appIntents, "", "", .appIntents(account: account))
        add(.contactSync, "", "", .contactSync(account: account))
        add(.accountAllowed, "", "", .accountAllowed(account: account))
        self.rows = rows
    }

    /// A row's decision in words: `allow`/`block` (`required`/`not required` for encryption),
    /// with a notification restriction when there is one.
    public static func verdict(_ row: Row) -> String {
        if row.action == .encryptionRequired { return row.answer.isAllowed ? "required" : "not required" }
        if case .single(let decision) = row.answer, let restriction = decision.notificationRestriction {
            return restriction.rawValue
        }
        return row.answer.isAllowed ? "allow" : "block"
    }
}

/// The decisions that differ between two bundles, account by account.
public struct DecisionDiff: Sendable {
    public struct Change: Sendable {
        public let account: AccountID
        public let before: DecisionTable.Row
        public let after: DecisionTable.Row
    }

    public let changes: [Change]

    /// Compares the tables of `accounts` (by default every account either tenant lists) under
    /// `old` and `new`, with the same counterparts on both sides (chosen from `new`).
    public init(old: PolicySnapshot, new: PolicySnapshot, accounts: [AccountID]? = nil) {
        var chosen = accounts ?? new.bundle.tenant.accounts.map(\.id)
        if accounts == nil {
            // Accounts only the old tenant lists (the new one does not know them).
            for account in old.bundle.tenant.accounts.map(\.id) where new.tenantAccount(for: account) == nil {
                chosen.append(account)
            }
        }
        var changes: [Change] = []
        let sample = DecisionTable.Counterparts.Sample(new)
        for account in chosen {
            let counterparts = DecisionTable.Counterparts(for: account, in: new, sample: sample)
            let before = DecisionTable(snapshot: old, account: account, counterparts: counterparts)
            let after = DecisionTable(snapshot: new, account: account, counterparts: counterparts)
            for (first, second) in zip(before.rows, after.rows)
            where DecisionTable.verdict(first) != DecisionTable.verdict(second) {
                changes.append(Change(account: account, before: first, after: second))
            }
        }
        self.changes = changes
    }
}
