import Custody
import CustodyPolicy
import CustodyStore
import Foundation

/// What one console view hands its template: a value per name the template reads.
///
/// swift-mustache reads a struct's stored properties by name (through `Mirror`): a property
/// is a `{{name}}`, an array a `{{#name}}` section repeated, a `Bool` a section shown or not,
/// a struct a section whose names are its own, then those around it. An optional that is nil
/// is not there at all, as a missing key of a dictionary was: a section on it is not shown, and
/// a name looked up inside a section goes on to the values around it. So a page's properties
/// are exactly the names its template reads (nothing another value around it could shadow), and
/// one is optional where the template asks whether it is there. Every value is HTML-escaped by
/// the template engine.
protocol ConsolePage: Sendable {
    /// The template (Resources/console/<template>.mustache).
    static var template: String { get }
}

/// The overview (overview.mustache): the policy in force, the freeze, readiness, activity,
/// replicas and the last events.
struct OverviewPage: ConsolePage {
    static let template = "overview"

    /// The bundle in force (GET /v1/bundle).
    struct Bundle: Sendable {
        let revision: String
        let source: String
        let appliedAt: String
        let appliedBy: String?
        let sequence: String?
        let signers: String
        let policies: String

        init(_ policy: PolicyInForce) {
            let inForce = policy.bundle
            let bundle = policy.snapshot.bundle
            revision = inForce.revision
            source = inForce.source
            appliedAt = inForce.appliedAt.map(answerTime) ?? "never (a one-off policy)"
            appliedBy = inForce.provenance.appliedBy
            sequence = inForce.provenance.sequence.map { String($0) }
            signers = inForce.provenance.signers.joined(separator: ", ")
            policies =
                "\(bundle.protectionPolicies.count) app protection policies, \(bundle.tenant.accounts.count) accounts"
        }
    }

    /// The freeze in force (GET /v1/bundle/freeze).
    struct Freeze: Sendable {
        let reason: String
        let by: String
        let at: String

        init(_ freeze: BundleFreeze) {
            reason = freeze.reason
            by = freeze.by ?? "-"
            at = answerTime(freeze.at)
        }
    }

    /// One minute of decisions and refusals (GET /v1/activity).
    struct Minute: Sendable, Equatable {
        let from: String
        let to: String
        /// Decisions a second, to a tenth.
        let rate: String
        let decisions: Int
        let blocked: Int
        let refused: Int
    }

    /// One replica of the fleet (GET /v1/fleet).
    struct Replica: Sendable {
        let id: String
        let revision: String
        let lastContact: String
        let state: String

        init(_ replica: FleetReplica) {
            id = replica.record.id
            revision = replica.record.revision ?? "-"
            lastContact = answerTime(replica.record.lastContact)
            state = replica.isGone ? "gone" : replica.isStale ? "stale" : replica.isBehind ? "behind" : "current"
        }
    }

    /// One event of the change log (GET /v1/events).
    struct Event: Sendable {
        /// How much of an event's body is shown: an event can name every account of the tenant
        /// (a first policyChanged), so its start is shown, and its size, never the whole of it.
        static let shownBytes = 240

        let name: String
        let at: String
        let body: String

        init(_ event: StoredEvent) {
            name = event.name
            at = answerTime(event.at)
            body =
                event.body.count <= Self.shownBytes
                ? String(decoding: event.body, as: UTF8.self)
                : String(decoding: event.body.prefix(Self.shownBytes), as: UTF8.self) + "… (\(event.body.count) bytes)"
        }
    }

    let bundle: Bundle?
    let freeze: Freeze?
    let problems: [String]
    let readiness: String
    let readyClass: String
    let warnings: [String]
    /// The token may act: the freeze, unfreeze and sync buttons are offered.
    let admin: Bool
    /// The service syncs from Microsoft Graph: a sync is offered.
    let graph: Bool
    let activity: [Minute]
    let replicas: [Replica]
    /// Newest first.
    let events: [Event]
}

/// A page of the accounts search (accounts.mustache, GET /v1/accounts).
struct AccountsPage: ConsolePage {
    static let template = "accounts"

    struct Row: Sendable {
        let upn: String
        let oid: String
        let displayName: String
        let groups: String
        /// The account as a path segment of its view.
        let link: String

        init(_ account: TenantAccount) {
            upn = account.id.upn ?? "-"
            oid = account.id.oid ?? "-"
            displayName = account.displayName ?? "-"
            groups = account.groups.joined(separator: ", ")
            link = ConsoleController.pathSegment(account.id.upn ?? account.id.oid ?? account.id.description)
        }
    }

    /// What was searched for. An empty one is still a value to Mustache: its section is shown.
    let query: String
    /// How many accounts this page shows, how many match in all, how many the tenant has.
    let count: Int
    let matched: Int
    let total: Int
    /// This is not the first page.
    let paged: Bool
    /// The first page's address, and the next one's (nil on the last).
    let first: String
    let next: String?
    let accounts: [Row]
}

/// An account's decision grid (grid.mustache, GET /v1/accounts/{account}/grid): a section a
/// platform, a row an action, a cell a query with its answer.
struct GridPage: ConsolePage {
    static let template = "grid"

    struct Cell: Sendable {
        let column: String
        /// `allow` or `block`: the colour of what the cell says.
        let `class`: String
        let verdict: String
        let reason: String
        let setting: String
        /// Shown after "from" even when empty (an empty text is still a value to Mustache).
        let policies: String
        let rule: String
        let basis: String
        /// The query as POST /v1/decisions takes it.
        let query: String
    }

    let account: String
    let link: String
    let revision: String
    let eventId: String
    let platforms: [GridSection<Cell>]

    init(_ grid: DecisionGrid) {
        account = grid.account
        link = ConsoleController.pathSegment(grid.account)
        revision = grid.revision
        eventId = String(grid.eventId)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        platforms = grid.platforms.enumerated().map { index, platform in
            GridSection(
                index: index,
                title: "On \(platform.platform ?? "any platform")"
                    + (platform.managed ? "" : ": not managed (no protection policy reaches it)"),
                rows: platform.rows.map { row in
                    GridRow(
                        label: row.label, action: row.action,
                        cells: row.cells.map { cell in
                            // Encryption is required (green) or not: the other way round of a block.
                            let required = row.action == "account" && cell.query.action == "encryptionRequired"
                            let query = (try? encoder.encode(cell.query)).map { String(decoding: $0, as: UTF8.self) }
                            return Cell(
                                column: cell.column, class: cell.allowed != required ? "allow" : "block",
                                verdict: required
                                    ? (cell.allowed ? "required" : "not required")
                                    : (cell.allowed ? "allowed" : "blocked"),
                                reason: cell.reason, setting: cell.setting ?? "—",
                                policies: cell.policies.joined(separator: ", "), rule: cell.rule ?? "—",
                                basis: cell.basis ?? "", query: query ?? "")
                        })
                })
        }
    }
}

/// One platform's part of a grid (grid.mustache, groupgrid.mustache): a row an action.
struct GridSection<Cell: Sendable>: Sendable {
    let index: Int
    let title: String
    let rows: [GridRow<Cell>]
}

/// One action (or one side of it) of a grid, and its cells.
struct GridRow<Cell: Sendable>: Sendable {
    let label: String
    let action: String
    let cells: [Cell]
}

/// The grid over a group's members (groupgrid.mustache, GET /v1/groups/{group}/grid): each
/// cell coloured by whether the members are treated alike, opening to the members it blocks
/// and why.
struct GroupGridPage: ConsolePage {
    static let template = "groupgrid"

    struct Cell: Sendable {
        let column: String
        /// `allow`, `block` or `mixed`.
        let `class`: String
        let summary: String
        /// Each reason given, with how many members got it.
        let reasons: [GroupGrid.Reason]
        /// The members it blocks, and how many of how many they are; nil when it blocks none.
        let blockedLabel: String?
        let blockedMembers: String?
    }

    let group: String
    let revision: String
    let eventId: String
    let members: Int
    let counted: Int
    /// Not every member is counted (the first `GroupGrid.limit` in the tenant's order are).
    let partial: Bool
    let platforms: [GridSection<Cell>]

    init(_ grid: GroupGrid) {
        group = grid.group
        revision = grid.revision
        eventId = String(grid.eventId)
        members = grid.members
        counted = grid.counted
        partial = grid.counted < grid.members
        // "All" only of every member: on a partial count, of those counted.
        let all = grid.counted < grid.members ? "all \(grid.counted) counted" : "all"
        platforms = grid.platforms.enumerated().map { index, platform in
            GridSection(
                index: index, title: "On \(platform.platform ?? "any platform")",
                rows: platform.rows.map { row in
                    GridRow(label: row.label, action: row.action, cells: row.cells.map { Self.cell($0, all: all) })
                })
        }
    }

    private static func cell(_ cell: GroupGrid.Cell, all: String) -> Cell {
        let required = cell.query.action == "encryptionRequired"
        let (yes, no) = required ? ("require it", "do not") : ("allowed", "blocked")
        // The first few blocked: say how many of how many.
        let shown = cell.blockedMembers.count
        return Cell(
            column: cell.column,
            class: cell.blocked == 0
                ? (required ? "block" : "allow")
                : cell.allowed == 0 ? (required ? "allow" : "block") : "mixed",
            summary: cell.blocked == 0
                ? "\(all) \(yes)"
                : cell.allowed == 0 ? "\(all) \(no)" : "\(cell.allowed) \(yes), \(cell.blocked) \(no)",
            reasons: cell.reasons,
            blockedLabel: shown == 0
                ? nil : shown < cell.blocked ? "Blocked (the first \(shown) of \(cell.blocked))" : "Blocked",
            blockedMembers: shown == 0 ? nil : cell.blockedMembers.joined(separator: ", "))
    }
}

/// The live feed (events.mustache): the page streams GET /v1/events itself (console.js).
struct EventsPage: ConsolePage {
    static let template = "events"

    /// The token may follow events.
    let canStream: Bool
    /// The newest event when the view was made, and the first of the history shown before it.
    let eventId: String
    let historyFrom: String
}
