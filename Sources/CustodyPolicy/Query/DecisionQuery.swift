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
    case appSharing(account: AccountID?)
    case appIntents(account: AccountID?)
    case contactSync(account: AccountID?)
    case writingTools(account: AccountID?)
    case genmoji(account: AccountID?)
    /// `keyboard`: the keyboard's Android package id; nil when the app cannot tell.
    case thirdPartyKeyboard(account: AccountID?, keyboard: String?)
    case widgetContentSync(account: AccountID?)
    case openURL(account: AccountID?, url: String)
    /// Conditional launch: `now` is the time since 1970 that offline grace counts to.
    case launch(account: AccountID?, facts: LaunchFacts, now: Duration, missingFacts: MissingFacts)
    /// The same question about a view that shows data of several accounts at once (a unified
    /// inbox): asked of each account in turn (its account or owner replaced), and answered
    /// with the most restrictive of their answers. Intune's multi-identity rule.
    indirect case view(DecisionQuery, accounts: [AccountID?])

    /// The actions a view of several accounts can ask about: the per-account settings, the
    /// clipboard and sharing. Transfers between two accounts (save, open, receive) name both
    /// sides already.
    public static let viewActions: Set<DecisionAction> = [
        .share, .copyOut, .pasteIn, .print, .backup, .screenCapture, .encryptionRequired, .notifications, .appSharing,
        .appIntents, .contactSync, .writingTools, .genmoji, .thirdPartyKeyboard, .widgetContentSync, .openURL,
    ]

    /// The action the query asks about.
    public var action: DecisionAction {
        switch self {
        case .view(let query, _): query.action
        case .appSharing: .appSharing
        case .appIntents: .appIntents
        case .contactSync: .contactSync
        case .writingTools: .writingTools
        case .genmoji: .genmoji
        case .thirdPartyKeyboard: .thirdPartyKeyboard
        case .widgetContentSync: .widgetContentSync
        case .openURL: .openURL
        case .launch: .launch
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
        case let .openFrom(receiver, _, locationAccount):
            named = [(.receiver, receiver), (.locationAccount, locationAccount)]
        case let .share(owner, _), let .copyOut(owner, _, _), let .pasteIn(owner, _): named = [(.owner, owner)]
        case let .receive(receiver, dataOwner): named = [(.receiver, receiver), (.dataOwner, dataOwner)]
        case let .print(account), let .backup(account), let .screenCapture(account), let .encryptionRequired(account),
            let .notifications(account), let .accountAllowed(account), let .offlineAccess(account, _),
            let .appSharing(account),
            let .appIntents(account), let .contactSync(account), let .writingTools(account), let .genmoji(account),
            let .thirdPartyKeyboard(account, _), let .widgetContentSync(account), let .openURL(account, _),
            let .launch(account, _, _, _):
            named = [(.account, account)]
        case let .view(query, accounts):
            let role: AccountRole = [.share, .copyOut, .pasteIn].contains(query.action) ? .owner : .account
            named = accounts.map { (role, $0) }
        }
        return named.compactMap { role, account in account.map { (role, $0) } }
    }

    /// The most targets a share query may name: each gets its own decision and reason.
    public static let maximumTargets = 1_000

    /// The first of `accounts`, without building the list (an audit entry names it).
    public var firstAccount: AccountID? {
        switch self {
        case let .saveTo(first, _, second), let .openFrom(first, _, second), let .receive(first, second):
            first ?? second
        case let .share(account, _), let .copyOut(account, _, _), let .pasteIn(account, _), let .print(account),
            let .backup(account), let .screenCapture(account), let .encryptionRequired(account),
            let .notifications(account), let .accountAllowed(account), let .offlineAccess(account, _),
            let .appSharing(account), let .appIntents(account), let .contactSync(account), let .writingTools(account),
            let .genmoji(account), let .thirdPartyKeyboard(account, _), let .widgetContentSync(account),
            let .openURL(account, _), let .launch(account, _, _, _):
            account
        case let .view(_, accounts):
            accounts.lazy.compactMap { $0 }.first
        }
    }

    /// The query with its owner (share, clipboard) or account (per-account settings) replaced:
    /// one account's part of a view.
    func replacingSubject(with account: AccountID?) -> DecisionQuery {
        switch self {
        case let .share(_, targets): .share(owner: account, targets: targets)
        case let .copyOut(_, destinationManaged, length):
            .copyOut(owner: account, destinationManaged: destinationManaged, length: length)
        case let .pasteIn(_, sourceManaged): .pasteIn(owner: account, sourceManaged: sourceManaged)
        case .print: .print(account: account)
        case .backup: .backup(account: account)
        case .screenCapture: .screenCapture(account: account)
        case .encryptionRequired: .encryptionRequired(account: account)
        case .notifications: .notifications(account: account)
        case .accountAllowed: .accountAllowed(account: account)
        case let .offlineAccess(_, offlineFor): .offlineAccess(account: account, offlineFor: offlineFor)
        case .appSharing: .appSharing(account: account)
        case .appIntents: .appIntents(account: account)
        case .contactSync: .contactSync(account: account)
        case .writingTools: .writingTools(account: account)
        case .genmoji: .genmoji(account: account)
        case let .thirdPartyKeyboard(_, keyboard): .thirdPartyKeyboard(account: account, keyboard: keyboard)
        case .widgetContentSync: .widgetContentSync(account: account)
        case let .openURL(_, url): .openURL(account: account, url: url)
        case .saveTo, .openFrom, .receive, .view, .launch: self
        }
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
            return
                "copyOut \(length.map { "\($0) characters " } ?? "")to \(destinationManaged ? "a managed" : "an unmanaged") app: owner \(name(owner))"
        case let .pasteIn(owner, sourceManaged):
            return "pasteIn from \(sourceManaged ? "a managed" : "an unmanaged") app: owner \(name(owner))"
        case let .offlineAccess(account, offlineFor):
            return "offlineAccess after \(PolicyDuration(max(offlineFor, .zero))): account \(name(account))"
        case let .print(account), let .backup(account), let .screenCapture(account), let .encryptionRequired(account),
            let .notifications(account), let .accountAllowed(account), let .appSharing(account),
            let .appIntents(account),
            let .contactSync(account), let .writingTools(account), let .genmoji(account),
            let .widgetContentSync(account):
            return "\(action): account \(name(account))"
        case let .thirdPartyKeyboard(account, keyboard):
            return "thirdPartyKeyboard \(keyboard ?? "(none named)"): account \(name(account))"
        case let .openURL(account, url):
            return "openURL \(url): account \(name(account))"
        case let .launch(account, facts, _, _):
            return "launch with \(facts.given.count) fact\(facts.given.count == 1 ? "" : "s"): account \(name(account))"
        case let .view(query, accounts):
            let subject = String(query.description.prefix { $0 != ":" })
            return "\(subject) in a view of \(accounts.map(name).joined(separator: ", "))"
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
                var error = QueryError(
                    message:
                        "contradictory account (\(role.phrase)): \(directory.contradiction(of: account)); name the account by one form, or by both as the tenant records them",
                    column: 1)
                error.isAmbiguousAccount = true
                throw error
            case AccountDirectory.unknown where strict:
                throw QueryError(
                    message:
                        "unknown account '\(account)' (\(role.phrase)): not in the tenant; without --strict-accounts it counts as unmanaged",
                    column: 1)
            default: continue
            }
        }
    }

    /// Checks that the snapshot can decide: a bundle with policies for several platforms needs
    /// a platform in the context.
    /// - Throws: `QueryError` saying which platforms and how to name one.
    public func checkPlatform() throws(QueryError) {
        guard isPlatformAmbiguous else { return }
        do {
            _ = try bundle.platform(for: context)
        } catch {
            throw QueryError(message: error.description, column: 1)
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
        case let .appSharing(account): .single(appSharing(account: account))
        case let .appIntents(account): .single(appIntents(account: account))
        case let .contactSync(account): .single(contactSync(account: account))
        case let .writingTools(account): .single(writingTools(account: account))
        case let .genmoji(account): .single(genmoji(account: account))
        case let .thirdPartyKeyboard(account, keyboard):
            .single(thirdPartyKeyboard(account: account, keyboard: keyboard))
        case let .widgetContentSync(account): .single(widgetContentSync(account: account))
        case let .openURL(account, url): .single(openURL(account: account, url: url))
        case let .launch(account, facts, now, missingFacts):
            .launch(launch(account: account, facts: facts, now: now, missingFacts: missingFacts))
        case let .view(query, accounts): .view(view(query, accounts: accounts))
        }
    }

    /// Answers a query as a decision stream does: a launch whose checks lacked a fact is
    /// answered again with the account's recorded facts filling the gaps, when `recordedFacts`
    /// has some (read only then: it may read the state).
    /// - Returns: the query answered (with the recorded facts filled in), its answer, and the
    ///   recorded facts used (nil when none were).
    /// - Throws: what `recordedFacts` throws.
    package func answer(
        _ query: DecisionQuery, recordedFacts: ((AccountID) throws(QueryError) -> LaunchFacts?)?
    ) throws(QueryError) -> (query: DecisionQuery, answer: DecisionAnswer, recorded: LaunchFacts?) {
        let answer = answer(query)
        guard case .launch(let launch) = answer, launch.checks.contains(where: \.isMissing),
            case let .launch(account?, facts, now, missing) = query, let recordedFacts,
            let recorded = try recordedFacts(account)
        else { return (query, answer, nil) }
        let filled = DecisionQuery.launch(
            account: account, facts: facts.filling(from: recorded), now: now, missingFacts: missing)
        return (filled, self.answer(filled), recorded)
    }

    /// Answers `query` for each of `accounts` and combines the answers, most restrictive
    /// first: blocked when any account's answer blocks (encryption required when any requires
    /// it; the strictest notification restriction); a share target allowed only when every
    /// account's answer allows it.
    public func view(_ query: DecisionQuery, accounts: [AccountID?]) -> ViewDecision {
        let answers = accounts.map { account in (account, answer(query.replacingSubject(with: account))) }
        return ViewDecision(accounts: answers)
    }
}

/// The answer to a question about a view showing data of several accounts: each account's
/// answer, and the one that decides for the view (the most restrictive).
public struct ViewDecision: Sendable, Hashable {
    /// One account of the view and its own answer.
    public struct Account: Sendable, Hashable {
        public let account: AccountID?
        public let answer: DecisionAnswer
    }

    public let accounts: [Account]

    init(accounts: [(AccountID?, DecisionAnswer)]) {
        self.accounts = accounts.map { Account(account: $0.0, answer: $0.1) }
    }

    /// The account whose answer decides for the view: the first that blocks (for encryption,
    /// the first that requires it; for notifications, the strictest restriction); else the
    /// first account.
    public var deciding: Account? {
        guard let first = accounts.first else { return nil }
        switch first.answer {
        case .single(let decision) where decision.action == .encryptionRequired:
            return accounts.first { $0.answer.isAllowed } ?? first
        case .single(let decision) where decision.action == .notifications:
            return accounts.max { lhs, rhs in
                (lhs.answer.notificationRank) < (rhs.answer.notificationRank)
            } ?? first
        default:
            return accounts.first { !$0.answer.isAllowed } ?? first
        }
    }

    /// The view's answer: the deciding account's; for a share, each target decided by the
    /// first account whose answer blocks it.
    public var combined: DecisionAnswer {
        guard let deciding else { return .single(Decision(.print, allowed: false, Finding(.unmanaged(.account), nil))) }
        guard case .share(let first) = deciding.answer else { return deciding.answer }
        var targets: [ShareDecision.Target] = []
        var filters = false
        for (index, target) in first.targets.enumerated() {
            var chosen = target
            for account in accounts {
                guard case .share(let share) = account.answer else { continue }
                filters = filters || share.filtersShareSheet
                if !share.targets[index].decision.isAllowed {
                    chosen = share.targets[index]
                    break
                }
            }
            targets.append(chosen)
        }
        return .share(ShareDecision(targets: targets, filtersShareSheet: filters))
    }

    /// Whether the view may do it.
    public var isAllowed: Bool { combined.isAllowed }
}

/// The answer to a `DecisionQuery`.
public enum DecisionAnswer: Sendable, Hashable {
    case single(Decision)
    case share(ShareDecision)
    indirect case view(ViewDecision)
    case launch(LaunchDecision)

    /// Whether a decision was refused rather than made (a contradictory account; no platform).
    package var isRefusal: Bool {
        switch self {
        case .single(let decision): decision.isRefusal
        case .share(let share): share.targets.contains { $0.decision.isRefusal }
        case .view(let view): view.accounts.contains { $0.answer.isRefusal }
        case .launch(let launch): launch.isRefusal
        }
    }

    /// Whether the action is allowed (for a share: every target; for a view: as its most
    /// restrictive account decides).
    public var isAllowed: Bool {
        switch self {
        case .single(let decision): decision.isAllowed
        case .share(let share): share.isAllowed
        case .view(let view): view.isAllowed
        case .launch(let launch): launch.isAllowed
        }
    }

    /// Why, in words.
    public var reason: String {
        switch self {
        case .single(let decision): return decision.reason
        case .share(let share): return share.targets.map { "\($0.id): \($0.decision.reason)" }.joined(separator: "; ")
        case .launch(let launch): return launch.reason
        case .view(let view):
            guard let deciding = view.deciding else { return "no account" }
            return
                "\(deciding.account?.description ?? "no account") (the most restrictive of \(view.accounts.count) accounts): "
                + deciding.answer.reason
        }
    }

    /// The setting that settled the answer, as the answer's `setting` names it (for a share,
    /// its first blocked target's, else its first target's; for a view, its deciding
    /// account's); nil when no setting did (an unmanaged account).
    public var decidingSetting: String? {
        switch self {
        case .single(let decision): return decision.settingName
        case .share(let share):
            return (share.targets.first { !$0.decision.isAllowed } ?? share.targets.first)?.decision.settingName
        case .view(let view): return view.deciding?.answer.decidingSetting
        case .launch(let launch): return launch.decidingCheck?.setting
        }
    }

    /// A launch's outcome (nil for every other answer).
    public var launchOutcome: LaunchOutcome? {
        guard case .launch(let launch) = self else { return nil }
        return launch.outcome
    }

    /// The rule that settled the answer (for a share, its first blocked target's, else its
    /// first target's; for a view, its deciding account's).
    public var decidingRule: DecisionRule? {
        switch self {
        case .single(let decision): return decision.decidingFinding.rule
        case .share(let share):
            return (share.targets.first { !$0.decision.isAllowed } ?? share.targets.first)?.decision.decidingFinding
                .rule
        case .view(let view): return view.deciding?.answer.decidingRule
        case .launch(let launch):
            if let finding = launch.finding { return finding.rule }
            return launch.checks.first?.isMissing == true ? DecisionRules.launchMissingFacts : DecisionRules.launch
        }
    }

    /// Orders notification answers by restriction (other answers rank 0).
    var notificationRank: Int {
        guard case .single(let decision) = self, let restriction = decision.notificationRestriction else { return 0 }
        return NotificationRestriction.allCases.firstIndex(of: restriction) ?? 0
    }
}
