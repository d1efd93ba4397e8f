public import CustodyPolicy

/// Every decision about one account's data the policy in force makes, as a grid: each action
/// down the side, each location or target app across (`GET /v1/accounts/{account}/grid`, the
/// console's grid). The domain is finite, so the grid is exhaustive for locations; share
/// targets are the apps the account's policy names, plus one app no policy names.
///
/// Each cell is the answer `POST /v1/decisions` gives its query (the same decision, reason and
/// rule), with the query, so a caller can ask it again.
public struct DecisionGrid: Sendable, Encodable {
    /// One query and its answer.
    public struct Cell: Sendable, Encodable {
        /// What the column stands for: a location, a target app, "to a managed app".
        public var column: String
        public var query: Query
        public var allowed: Bool
        public var reason: String
        /// The setting that decided, and the policies it came from.
        public var setting: String?
        public var policies: [String]
        public var rule: String?
        /// `documented` or `inferred`.
        public var basis: String?
        public var source: String?
    }

    /// A query as `POST /v1/decisions` takes it (members a query does not take are left out).
    public struct Query: Sendable, Encodable {
        public var action: String
        public var account: String?
        public var owner: String?
        public var receiver: String?
        public var location: String?
        public var locationAccount: String?
        public var targets: [String]?
        public var destinationManaged: Bool?
        public var sourceManaged: Bool?
        public var dataOwner: String?
    }

    /// One action (or one side of it) and its cells.
    public struct Row: Sendable, Encodable {
        public var action: String
        /// The row as a person reads it ("Save to", "Copy out").
        public var label: String
        public var cells: [Cell]
    }

    /// The grid of one platform's policy.
    public struct Platform: Sendable, Encodable {
        /// The platform decided for (nil: the bundle names none).
        public var platform: String?
        public var managed: Bool
        public var rows: [Row]
    }

    public var account: String
    public var revision: String
    public var eventId: Int64
    /// One grid per platform when the bundle holds policies for several and the context names
    /// none; else one.
    public var platforms: [Platform]

    /// How many cells, over every platform.
    public var cellCount: Int { platforms.reduce(0) { $0 + $1.rows.reduce(0) { $0 + $1.cells.count } } }

    /// The name of the target standing for an app no policy names.
    public static let unlistedApp = "com.example.app-no-policy-names"

    static func make(account: AccountID, snapshot: PolicySnapshot) -> Platform {
        let name = account.description
        let policy = snapshot.effectivePolicy(for: account)
        var rows: [Row] = []
        func cell(_ column: String, _ query: Query, _ decisionQuery: DecisionQuery) -> Cell {
            let answer = snapshot.answer(decisionQuery)
            let decision: Decision? =
                switch answer {
                case .single(let decision): decision
                case .share(let share): share.targets.first?.decision
                case .view: nil
                }
            let finding = decision?.decidingFinding
            let rule = answer.decidingRule
            return Cell(
                column: column, query: query, allowed: answer.isAllowed, reason: decision?.reason ?? answer.reason,
                setting: finding?.settingName, policies: finding?.sources.map(\.name) ?? [], rule: rule?.id,
                basis: rule?.basis.rawValue, source: rule?.source)
        }
        rows.append(
            Row(
                action: DecisionAction.saveTo.rawValue, label: "Save to",
                cells: SaveLocation.allCases.map { location in
                    cell(
                        location.rawValue,
                        Query(action: "saveTo", owner: name, location: location.rawValue, locationAccount: name),
                        .saveTo(owner: account, location: location, locationAccount: account))
                }))
        rows.append(
            Row(
                action: DecisionAction.openFrom.rawValue, label: "Open from",
                cells: OpenLocation.allCases.map { location in
                    cell(
                        location.rawValue,
                        Query(action: "openFrom", receiver: name, location: location.rawValue, locationAccount: name),
                        .openFrom(receiver: account, location: location, locationAccount: account))
                }))
        var targets = Array((policy?.managedApps ?? []).prefix(8))
        targets += (policy?.exemptedAppProtocols.value.sorted() ?? []).prefix(4)
        targets += (policy?.exemptedAppPackages.value.sorted() ?? []).prefix(4)
        targets.append(unlistedApp)
        rows.append(
            Row(
                action: DecisionAction.share.rawValue, label: "Share to",
                cells: targets.map { target in
                    cell(
                        target == unlistedApp ? "an app no policy names" : target,
                        Query(action: "share", owner: name, targets: [target]),
                        .share(owner: account, targets: [target]))
                }))
        rows.append(
            Row(
                action: "clipboard", label: "Clipboard",
                cells: [
                    cell(
                        "copy to a managed app", Query(action: "copyOut", owner: name, destinationManaged: true),
                        .copyOut(owner: account, destinationManaged: true, length: nil)),
                    cell(
                        "copy to an unmanaged app", Query(action: "copyOut", owner: name, destinationManaged: false),
                        .copyOut(owner: account, destinationManaged: false, length: nil)),
                    cell(
                        "paste from a managed app", Query(action: "pasteIn", owner: name, sourceManaged: true),
                        .pasteIn(owner: account, sourceManaged: true)),
                    cell(
                        "paste from an unmanaged app", Query(action: "pasteIn", owner: name, sourceManaged: false),
                        .pasteIn(owner: account, sourceManaged: false)),
                ]))
        rows.append(
            Row(
                action: DecisionAction.receive.rawValue, label: "Receive",
                cells: [
                    cell(
                        "its own data", Query(action: "receive", receiver: name, dataOwner: name),
                        .receive(receiver: account, dataOwner: account)),
                    cell(
                        "untagged data", Query(action: "receive", receiver: name),
                        .receive(receiver: account, dataOwner: nil)),
                ]))
        let perAccount: [(DecisionAction, String, DecisionQuery)] = [
            (.accountAllowed, "account allowed", .accountAllowed(account: account)),
            (.print, "print", .print(account: account)),
            (.backup, "backup", .backup(account: account)),
            (.screenCapture, "screen capture", .screenCapture(account: account)),
            (.notifications, "notifications in full", .notifications(account: account)),
            (.encryptionRequired, "encryption required", .encryptionRequired(account: account)),
            (.appSharing, "app sharing", .appSharing(account: account)),
            (.appIntents, "app intents", .appIntents(account: account)),
            (.contactSync, "contact sync", .contactSync(account: account)),
        ]
        rows.append(
            Row(
                action: "account", label: "The account",
                cells: perAccount.map { action, column, query in
                    cell(column, Query(action: action.rawValue, account: name), query)
                }))
        return Platform(platform: snapshot.context.platform?.rawValue, managed: policy != nil, rows: rows)
    }
}

extension CustodyEngine {
    /// Every decision about `account`'s data the policy in force makes for `context`, as a
    /// grid (see `DecisionGrid`).
    /// - Throws: `CustodyError` as `policyReport(for:context:)`: `.account` for an account the
    ///   tenant does not list or names ambiguously, `.noPolicy`, `.platform`.
    public func decisionGrid(for account: AccountID, context: EvaluationContext? = nil) throws(CustodyError)
        -> DecisionGrid
    {
        let eventID = lastEventID
        let revision = bundleInForce?.revision ?? ""
        let snapshots = try policyReport(for: account, context: context)
        let id = snapshots[0].tenantAccount(for: account)?.id ?? account
        return DecisionGrid(
            account: id.upn ?? id.description, revision: revision, eventId: eventID,
            platforms: snapshots.map { DecisionGrid.make(account: id, snapshot: $0) })
    }
}
