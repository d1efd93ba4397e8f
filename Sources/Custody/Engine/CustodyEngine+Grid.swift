public import CustodyPolicy
import Foundation

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

    /// The share targets a grid has columns for: the apps `policy` names (at most 8 managed
    /// apps and 4 of each exemption list), in that order.
    static func targets(of policy: EffectivePolicy?) -> [String] {
        var targets = Array((policy?.managedApps ?? []).prefix(8))
        targets += (policy?.exemptedAppProtocols.value.sorted() ?? []).prefix(4)
        targets += (policy?.exemptedAppPackages.value.sorted() ?? []).prefix(4)
        return targets
    }

    /// `account`'s grid; share columns for `targets` (nil: those its own policy names), then an
    /// app no policy names.
    static func make(account: AccountID, snapshot: PolicySnapshot, targets given: [String]? = nil) -> Platform {
        let name = account.description
        let policy = snapshot.effectivePolicy(for: account)
        var rows: [Row] = []
        func cell(_ column: String, _ query: Query, _ decisionQuery: DecisionQuery) -> Cell {
            let answer = snapshot.answer(decisionQuery)
            let decision: Decision? =
                switch answer {
                case .single(let decision): decision
                case .share(let share): share.targets.first?.decision
                case .view, .launch: nil
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
        let targets = (given ?? Self.targets(of: policy)) + [unlistedApp]
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

/// The grid of a group's members: each cell of `DecisionGrid`, counted over the members (how
/// many it allows, how many it blocks, which ones block and why), so that an administrator sees
/// where a group's members are not all treated alike (`GET /v1/groups/{group}/grid`).
public struct GroupGrid: Sendable, Encodable {
    /// One cell over the members.
    public struct Cell: Sendable, Encodable {
        public var column: String
        /// The query with the member's place left as `"{member}"`.
        public var query: DecisionGrid.Query
        public var allowed: Int
        public var blocked: Int
        /// The first members it blocks (at most 20), for encryption the first that do not
        /// require it.
        public var blockedMembers: [String]
        /// Each reason given, with how many members got it (most first, at most 10).
        public var reasons: [Reason]
    }

    public struct Reason: Sendable, Encodable {
        public var reason: String
        public var members: Int
    }

    public struct Row: Sendable, Encodable {
        public var action: String
        public var label: String
        public var cells: [Cell]
    }

    public struct Platform: Sendable, Encodable {
        @Nullable package var platform: String?
        public var rows: [Row]
    }

    public var group: String
    public var revision: String
    public var eventId: Int64
    /// How many accounts of the tenant are members.
    public var members: Int
    /// How many of them the grid counts (the first `limit` in the tenant's order).
    public var counted: Int
    public var platforms: [Platform]

    /// Most members counted.
    public static let limit = 1_000
}

extension CustodyEngine {
    /// Every decision of `DecisionGrid` over the members of `group` (its object id, as the
    /// tenant's accounts list it), counted (see `GroupGrid`). Share columns are the apps any
    /// member's policy names (at most 16), then an app no policy names.
    /// - Throws: `CustodyError` `.notFound` when no account of the tenant in force is a member;
    ///   `.noPolicy`, `.platform` as `policy(for:)`.
    public func groupGrid(for group: String, context: EvaluationContext? = nil) throws(CustodyError) -> GroupGrid {
        let eventID = lastEventID
        let revision = bundleInForce?.revision ?? ""
        let snapshots = try policyPerPlatform(for: context)
        let members = snapshots[0].bundle.tenant.accounts.filter { account in
            account.groups.contains { $0.caseInsensitiveCompare(group) == .orderedSame }
        }
        guard !members.isEmpty else {
            throw CustodyError(.notFound, "no account of the tenant in force is a member of the group '\(group)'")
        }
        let counted = Array(members.prefix(GroupGrid.limit))
        let platforms = snapshots.map { snapshot -> GroupGrid.Platform in
            var targets: [String] = []
            var seen = Set<String>()
            for member in counted where targets.count < 16 {
                for target in DecisionGrid.targets(of: snapshot.effectivePolicy(for: member.id))
                where seen.insert(target).inserted && targets.count < 16 {
                    targets.append(target)
                }
            }
            var rows: [GroupGrid.Row] = []
            var reasons: [[[String: Int]]] = []
            for member in counted {
                let grid = DecisionGrid.make(account: member.id, snapshot: snapshot, targets: targets)
                let name = member.id.upn ?? member.id.description
                if rows.isEmpty {
                    rows = grid.rows.map { row in
                        GroupGrid.Row(
                            action: row.action, label: row.label,
                            cells: row.cells.map { cell in
                                GroupGrid.Cell(
                                    column: cell.column, query: Self.memberQuery(cell.query, member: name),
                                    allowed: 0, blocked: 0, blockedMembers: [], reasons: [])
                            })
                    }
                    reasons = grid.rows.map { Array(repeating: [:], count: $0.cells.count) }
                }
                for (r, row) in grid.rows.enumerated() {
                    for (c, cell) in row.cells.enumerated() {
                        if cell.allowed {
                            rows[r].cells[c].allowed += 1
                        } else {
                            rows[r].cells[c].blocked += 1
                            if rows[r].cells[c].blockedMembers.count < 20 {
                                rows[r].cells[c].blockedMembers.append(name)
                            }
                        }
                        reasons[r][c][cell.reason, default: 0] += 1
                    }
                }
            }
            for r in rows.indices {
                for c in rows[r].cells.indices {
                    rows[r].cells[c].reasons = reasons[r][c].sorted { ($1.value, $0.key) < ($0.value, $1.key) }
                        .prefix(10).map { GroupGrid.Reason(reason: $0.key, members: $0.value) }
                }
            }
            return GroupGrid.Platform(platform: snapshot.context.platform?.rawValue, rows: rows)
        }
        return GroupGrid(
            group: group, revision: revision, eventId: eventID, members: members.count, counted: counted.count,
            platforms: platforms)
    }

    /// A member's query with the member's place named `{member}`.
    private static func memberQuery(_ query: DecisionGrid.Query, member: String) -> DecisionGrid.Query {
        var query = query
        func replaced(_ value: String?) -> String? { value == member ? "{member}" : value }
        query.account = replaced(query.account)
        query.owner = replaced(query.owner)
        query.receiver = replaced(query.receiver)
        query.locationAccount = replaced(query.locationAccount)
        query.dataOwner = replaced(query.dataOwner)
        return query
    }
}
