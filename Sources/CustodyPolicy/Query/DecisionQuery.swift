/// A question for a `PolicySnapshot`, as `custody decide`, scenario matrices and the decision
/// service receive it.
public enum DecisionQuery: Sendable, Hashable, CustomStringConvertible {
    case saveTo(owner: AccountID?, location: SaveLocation, locationAccount: AccountID?)
    case openFrom(receiver: AccountID?, location: OpenLocation, locationAccount: AccountID?)
    case share(owner: AccountID?, targets: [String])
    case receive(receiver: AccountID?, dataOwner: AccountID?)
    case copyOut(owner: AccountID?, destinationManaged: Bool, length: Int?)
    case pasteIn(owner: AccountID?, sourceManaged: Bool)
    case print(account: AccountID?)
    case backup(account: AccountID?)
    case screenCapture(account: AccountID?)
    case encryptionRequired(account: AccountID?)
    case notifications(account: AccountID?)
    case accountAllowed(account: AccountID?)
    case offlineAccess(account: AccountID?, offlineFor: Duration)

    /// The action the query asks about.
    public var action: DecisionAction {
        switch self {
        case .saveTo: .saveTo
        case .openFrom: .openFrom
        case .share: .share
        case .receive: .receive
        case .copyOut: .copyOut
        case .pasteIn: .pasteIn
        case .print: .print
        case .backup: .backup
        case .screenCapture: .screenCapture
        case .encryptionRequired: .encryptionRequired
        case .notifications: .notifications
        case .accountAllowed: .accountAllowed
        case .offlineAccess: .offlineAccess
        }
    }

    /// Every account the query names, with the role it plays.
    public var accounts: [(role: AccountRole, account: AccountID)] {
        let named: [(AccountRole, AccountID?)]
        switch self {
        case let .saveTo(owner, _, locationAccount): named = [(.owner, owner), (.locationAccount, locationAccount)]
        case let .openFrom(receiver, _, locationAccount): named = [(.receiver, receiver), (.locationAccount, locationAccount)]
        case let .share(owner, _), let .copyOut(owner, _, _), let .pasteIn(owner, _): named = [(.owner, owner)]
        case let .receive(receiver, dataOwner): named = [(.receiver, receiver), (.dataOwner, dataOwner)]
        case let .print(account), let .backup(account), let .screenCapture(account), let .encryptionRequired(account),
            let .notifications(account), let .accountAllowed(account), let .offlineAccess(account, _):
            named = [(.account, account)]
        }
        return named.compactMap { role, account in account.map { (role, $0) } }
    }

    /// A one-line summary for people, such as `saveTo dropbox: owner alice@contoso.com, location account none`.
    public var description: String {
        func name(_ account: AccountID?) -> String { account?.description ?? "none" }
        switch self {
        case let .saveTo(owner, location, locationAccount):
            return "saveTo \(location): owner \(name(owner)), location account \(name(locationAccount))"
        case let .openFrom(receiver, location, locationAccount):
            return "openFrom \(location): receiver \(name(receiver)), location account \(name(locationAccount))"
        case let .share(owner, targets):
            return "share to \(targets.joined(separator: ", ")): owner \(name(owner))"
        case let .receive(receiver, dataOwner):
            return "receive: receiver \(name(receiver)), item owner \(name(dataOwner))"
        case let .copyOut(owner, destinationManaged, length):
            return "copyOut \(length.map { "\($0) characters " } ?? "")to \(destinationManaged ? "a managed" : "an unmanaged") app: owner \(name(owner))"
        case let .pasteIn(owner, sourceManaged):
            return "pasteIn from \(sourceManaged ? "a managed" : "an unmanaged") app: owner \(name(owner))"
        case let .offlineAccess(account, offlineFor):
            return "offlineAccess after \(PolicyDuration(max(offlineFor, .zero))): account \(name(account))"
        case let .print(account), let .backup(account), let .screenCapture(account), let .encryptionRequired(account),
            let .notifications(account), let .accountAllowed(account):
            return "\(action): account \(name(account))"
        }
    }
}

extension PolicySnapshot {
    /// Checks the accounts a query names: an account whose OID and UPN the tenant records for
    /// different accounts is always an error (never a silent pick of one form); with `strict`,
    /// so is an account the tenant does not know (otherwise it counts as unmanaged).
    /// - Throws: `QueryError` naming the account and its role.
    public func checkAccounts(of query: DecisionQuery, strict: Bool) throws(QueryError) {
        for (role, account) in query.accounts {
            switch directory.find(account) {
            case AccountDirectory.contradictory:
                throw QueryError(
                    message: "contradictory account (\(role.phrase)): \(directory.contradiction(of: account)); name the account by one form, or by both as the tenant records them",
                    column: 1)
            case AccountDirectory.unknown where strict:
                throw QueryError(
                    message: "unknown account '\(account)' (\(role.phrase)): not in the tenant; without --strict-accounts it counts as unmanaged",
                    column: 1)
            default: continue
            }
        }
    }

    /// Answers a query. Share queries answer with one decision per target; every other query
    /// with one decision.
    public func answer(_ query: DecisionQuery) -> DecisionAnswer {
        switch query {
        case let .saveTo(owner, location, locationAccount):
            .single(saveTo(owner: owner, location: location, locationAccount: locationAccount))
        case let .openFrom(receiver, location, locationAccount):
            .single(openFrom(receiver: receiver, location: location, locationAccount: locationAccount))
        case let .share(owner, targets): .share(share(owner: owner, targets: targets))
        case let .receive(receiver, dataOwner): .single(receive(receiver: receiver, dataOwner: dataOwner))
        case let .copyOut(owner, destinationManaged, length):
            .single(copyOut(owner: owner, destinationManaged: destinationManaged, length: length))
        case let .pasteIn(owner, sourceManaged): .single(pasteIn(owner: owner, sourceManaged: sourceManaged))
        case let .print(account): .single(print(account: account))
        case let .backup(account): .single(backup(account: account))
        case let .screenCapture(account): .single(screenCapture(account: account))
        case let .encryptionRequired(account): .single(encryptionRequired(account: account))
        case let .notifications(account): .single(notifications(account: account))
        case let .accountAllowed(account): .single(accountAllowed(account))
        case let .offlineAccess(account, offlineFor): .single(offlineAccess(account: account, offlineFor: offlineFor))
        }
    }
}

/// The answer to a `DecisionQuery`.
public enum DecisionAnswer: Sendable, Hashable {
    case single(Decision)
    case share(ShareDecision)

    /// Whether a decision was refused because an account's forms contradict each other.
    var refusesContradictoryAccount: Bool {
        switch self {
        case .single(let decision): decision.primary.isContradiction
        case .share(let share): share.targets.contains { $0.decision.primary.isContradiction }
        }
    }

    /// Whether the action is allowed (for a share: every target).
    public var isAllowed: Bool {
        switch self {
        case .single(let decision): decision.isAllowed
        case .share(let share): share.isAllowed
        }
    }

    /// Why, in words.
    public var reason: String {
        switch self {
        case .single(let decision): decision.reason
        case .share(let share): share.targets.map { "\($0.id): \($0.decision.reason)" }.joined(separator: "; ")
        }
    }
}
