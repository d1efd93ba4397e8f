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

/// The shadow bundle (shadow.mustache): what it found over every replica's live decisions
/// (GET /v1/bundle/shadow, `ShadowStatus`), and for an admin the forms that set and stop it.
struct ShadowPage: ConsolePage {
    static let template = "shadow"

    /// The shadow, running or the last one ended.
    struct Shadow: Sendable {
        let revision: String
        let short: String
        let source: String
        let by: String
        let since: String
        /// How and when it ended; nil while it runs.
        let ended: String?
        let running: Bool
        let replicas: Int
        /// The live decisions decided under it: `unchanged` agreed.
        let impact: DiffPage.Impact
        let dropped: Int
        /// Why this replica does not decide under it, or that it does not run a shadow now.
        let here: String?
        /// Disagreements that share a setting, or an action.
        let bySetting: [ImpactReport.Group]
        let byAction: [ImpactReport.Group]
        /// Whether there are groups to show (the templates read stored values).
        let hasGroups: Bool

        init(_ status: ShadowStatus) {
            revision = status.revision
            short = String(status.revision.prefix(12))
            source = status.source
            by = status.by ?? "—"
            since = status.since
            ended = status.ended.map { "Ended \($0): \(status.endedHow ?? "ended")." }
            running = status.isRunning
            replicas = status.replicas
            impact = DiffPage.Impact(status.report)
            dropped = status.dropped
            here =
                status.problem.map { "This replica does not decide under it: \($0)." }
                ?? (status.isRunning && !status.decidingHere
                    ? "This replica has not read it yet: it does within a second of the change." : nil)
            bySetting = status.report.bySetting
            byAction = status.report.byAction
            hasGroups = !bySetting.isEmpty
        }
    }

    /// The token may set and stop a shadow.
    let admin: Bool
    let shadow: Shadow?
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

/// An account (account.mustache): its name and groups, what the state knows of it (GET
/// /v1/accounts/{account}/status), and its effective policy per platform with each setting's
/// sources and the conflicts (GET /v1/accounts/{account}/policy, `PolicyReport.Report`).
struct AccountPage: ConsolePage {
    static let template = "account"

    /// A group of the account, linking to the group's grid.
    struct Group: Sendable {
        let name: String
        let link: String
    }

    /// A platform the account can be looked at on.
    struct PlatformChoice: Sendable {
        let name: String
        let link: String
        /// The platform shown.
        let current: Bool
    }

    /// What the state knows of the account (`AccountStatus`).
    struct Status: Sendable {
        struct Identifier: Sendable {
            let identifier: String
            let keys: String
            let wiped: String
            let checkIn: String
        }

        let identifiers: [Identifier]
        let lastCheckIn: String
        let firstSeen: String
        let offline: String
        let offlineClass: String
        let offlineReason: String
        let offlineBasis: String

        init(_ status: AccountStatus) {
            identifiers = status.identifiers.map { identifier in
                Identifier(
                    identifier: identifier.identifier,
                    keys: identifier.keyVersions.isEmpty
                        ? "none" : identifier.keyVersions.map { "v\($0)" }.joined(separator: ", "),
                    wiped: identifier.wipedAt ?? "-", checkIn: identifier.lastCheckIn ?? "-")
            }
            lastCheckIn = status.lastCheckIn ?? "never"
            firstSeen = status.firstSeen ?? "-"
            offline = status.offline.state
            offlineClass = status.offline.state == "online" ? "allow" : "block"
            offlineReason = ConsoleController.spokenDurations(in: status.offline.reason)
            offlineBasis = ConsoleController.offlineBasis(status)
        }
    }

    /// The effective policy on one platform (`PolicyReport.Report`).
    struct Report: Sendable {
        struct Policy: Sendable {
            let name: String
            let type: String
        }

        struct Setting: Sendable {
            let name: String
            let value: String
            let sources: String
        }

        struct Conflict: Sendable {
            let setting: String
            /// The value that applies, and each policy's.
            let value: String
            let values: String
        }

        /// A policy that names the account, and why it does or does not reach it.
        struct Reach: Sendable {
            let name: String
            let reason: String
        }

        let platform: String
        let managedClass: String
        let managedText: String
        let policies: [Policy]
        /// By name.
        let settings: [Setting]
        let conflicts: [Conflict]
        let hasConflicts: Bool
        let reasons: [Reach]
        let hasReasons: Bool
        let notReaching: [Reach]
        let hasNotReaching: Bool
        /// The policies set aside, each as the report's JSON gives it; nil when none is.
        let setAside: String?

        init(_ report: PolicyReport.Report) {
            platform = report.context.platform ?? "any"
            managedClass = report.managed ? "allow" : "block"
            let allowed = report.accountAllowed.reason
            managedText = (report.managed ? "Managed" : "Not managed") + (allowed.isEmpty ? "" : ": \(allowed)")
            policies = report.policies.map { Policy(name: $0.name ?? "", type: $0.type) }
            settings = report.settings.sorted { $0.key < $1.key }.map { name, setting in
                // A number the policies disagree on: the recommended value, which neither set.
                Setting(
                    name: name, value: Self.text(setting.value),
                    sources: setting.disagreement.map { "recommended value — policies disagree: \($0)" }
                        ?? setting.sources.joined(separator: ", "))
            }
            conflicts = report.conflicts.settings.map { conflict in
                Conflict(
                    setting: conflict.setting, value: Self.text(conflict.value),
                    values: conflict.values.map { "\($0.policy): \(Self.text($0.value))" }.joined(separator: "; "))
            }
            hasConflicts = !conflicts.isEmpty
            // Why each policy that names the account (a group of it, every licensed user) does or
            // does not reach it: a policy that targets its group and excludes another of its
            // groups is told here, not just missing from the policies that reach it.
            reasons = report.reach.filter(\.reaches).map { Reach(name: $0.policy, reason: $0.reason) }
            hasReasons = !reasons.isEmpty
            notReaching = report.reach.filter { !$0.reaches }.map { Reach(name: $0.policy, reason: $0.reason) }
            hasNotReaching = !notReaching.isEmpty
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            let setAside = report.conflicts.setAside.map { aside in
                (try? encoder.encode(aside)).map { String(decoding: $0, as: UTF8.self) } ?? ""
            }
            self.setAside = setAside.isEmpty ? nil : setAside.joined(separator: "; ")
        }

        /// A setting's value as a person reads it: a list joined ("none" when empty).
        static func text(_ value: SettingValue) -> String {
            switch value {
            case .bool(let bool): bool ? "true" : "false"
            case .int(let int): String(int)
            case .string(let string): string
            case .list(let list): list.isEmpty ? "none" : list.joined(separator: ", ")
            }
        }
    }

    let name: String
    let link: String
    let oid: String
    let displayName: String?
    let groups: [Group]
    let hasGroups: Bool
    /// Every platform can be looked at, whichever the service decides for by default.
    let hasPlatforms = true
    let platforms: [PlatformChoice]
    /// The token may act: wipe and rotate are offered.
    let admin: Bool
    let reports: [Report]
    /// What the state knows, or why it cannot be read (never shown as an account with no keys).
    var status: Status?
    var statusError: String?
}

/// Two revisions compared (diff.mustache): the form that picks them, then the settings that
/// change and every decision that flips for whom (`BundleDiff`, GET and POST /v1/bundle/diff).
struct DiffPage: ConsolePage {
    static let template = "diff"

    /// A kept revision, as the form's two lists offer it.
    struct Revision: Sendable {
        let revision: String
        let short: String
        let label: String
        let fromSelected: Bool
        let toSelected: Bool
    }

    /// What changes between the two revisions (`BundleDiff`).
    struct Comparison: Sendable {
        struct SettingChange: Sendable {
            let file: String
            let policy: String
            let setting: String
            let before: String
            let after: String
        }

        struct DecisionChange: Sendable {
            let account: String
            let query: String
            let before: String
            let beforeClass: String
            let after: String
            let afterClass: String
            /// Why, after.
            let reason: String
        }

        /// How many flipped decisions are shown (GET /v1/bundle/diff has them all).
        static let shownDecisions = 500

        let from: String
        let to: String
        /// Files added and removed; nil when none is (an empty text is still a value to Mustache).
        let added: String?
        let removed: String?
        let settings: [SettingChange]
        let decisionCount: Int
        let decisions: [DecisionChange]
        let truncated: Bool
        /// The older revision is not the one in force: an admin may put it back.
        let canRollBack: Bool
        /// The older revision as the rollback button names it, when it was first applied, and
        /// the rollback that putting it back would undo, if any.
        var fromShort: String?
        var fromMade: String?
        var undoes: String?

        init(_ diff: BundleDiff, canRollBack: Bool) {
            from = diff.from
            to = diff.to
            added = diff.added.isEmpty ? nil : diff.added.joined(separator: ", ")
            removed = diff.removed.isEmpty ? nil : diff.removed.joined(separator: ", ")
            settings = diff.settings.map { change in
                // By the name people know it by; the id when it has none.
                SettingChange(
                    file: change.file, policy: change.policyName ?? change.policy ?? "—", setting: change.setting,
                    before: change.before ?? "—", after: change.after ?? "—")
            }
            decisionCount = diff.decisions.count
            decisions = diff.decisions.prefix(Self.shownDecisions).map { change in
                DecisionChange(
                    account: change.account, query: change.before.query, before: change.before.decision,
                    beforeClass: change.before.allowed ? "allow" : "block", after: change.after.decision,
                    afterClass: change.after.allowed ? "allow" : "block", reason: change.after.reason)
            }
            truncated = diff.decisions.count > Self.shownDecisions
            self.canRollBack = canRollBack
        }
    }

    /// What a candidate would have changed in the decisions audited over the last 7 days
    /// (`ImpactReport`): the totals, and the most frequent flips with a sample of each.
    struct Impact: Sendable {
        struct Flip: Sendable {
            let kind: String
            let action: String
            let before: String
            let after: String
            let setting: String
            let app: String
            let count: Int
            let account: String
            let query: String
            let reasonBefore: String
            let reasonAfter: String
        }

        let decided: Int
        let unchanged: Int
        let loosened: Int
        let tightened: Int
        let refused: Int
        let notReplayable: Int?
        let flips: [Flip]

        init(_ report: ImpactReport) {
            decided = report.decided
            unchanged = report.unchanged
            loosened = report.loosened
            tightened = report.tightened
            refused = report.refused
            notReplayable = report.notReplayable > 0 ? report.notReplayable : nil
            flips = report.flips.map { flip in
                Flip(
                    kind: flip.loosens ? "loosens" : "tightens", action: flip.action, before: flip.before,
                    after: flip.after, setting: flip.setting, app: flip.app, count: flip.count,
                    account: flip.sample.account ?? "—", query: flip.sample.query,
                    reasonBefore: flip.sample.reasonBefore ?? "—", reasonAfter: flip.sample.reasonAfter)
            }
        }
    }

    /// The token may act: a rollback is offered.
    let admin: Bool
    /// Newest first by when each was first applied.
    let revisions: [Revision]
    /// Why nothing is compared yet.
    var note: String?
    /// A candidate bundle compared with the policy in force: its files and revision.
    var candidate: String?
    var error: String?
    var diagnostics: [String] = []
    var diff: Comparison?
    /// A candidate's impact on the decisions audited over the last 7 days, or why there is none.
    var impact: Impact?
    var impactNote: String?
}

/// One query asked of the policy in force (whatif.mustache): the form for the action picked,
/// built from the query schema (`WhatIfForm`), and the answer POST /v1/decisions gives, with
/// the rule behind it.
struct WhatIfPage: ConsolePage {
    static let template = "whatif"

    /// An action of the form's list.
    struct Action: Sendable {
        let name: String
        let selected: Bool
    }

    /// One field of the action picked: a list of choices, a text area (a JSON object) or a
    /// line, with its value kept.
    struct Field: Sendable {
        struct Choice: Sendable {
            let value: String
            let text: String
            let selected: Bool
        }

        let name: String
        let value: String
        let help: String
        let label: String
        let isChoice: Bool
        let isArea: Bool
        let isInput: Bool
        /// What a line shows while empty.
        let placeholder: String
        let choices: [Choice]

        init(_ field: WhatIfForm.Field, value: String) {
            name = field.name
            self.value = value
            help = field.help ?? ""
            label = WhatIfForm.label(field.name) + (field.required ? " (required)" : "")
            placeholder = field.kind.placeholder
            let options: [(value: String, text: String)]
            switch field.kind {
            case .choice(let values):
                (isChoice, isArea, isInput) = (true, false, false)
                options = [("", "—")] + values.map { ($0, $0) }
            case .flag:
                (isChoice, isArea, isInput) = (true, false, false)
                options = [("", "—"), ("true", "yes"), ("false", "no")]
            case .object:
                (isChoice, isArea, isInput) = (false, true, false)
                options = []
            case .account, .accounts, .list, .number, .text:
                (isChoice, isArea, isInput) = (false, false, true)
                options = []
            }
            choices = options.map { Choice(value: $0.value, text: $0.text, selected: $0.value == value) }
        }
    }

    /// The decision.
    struct Answer: Sendable {
        /// The query line sent.
        let query: String
        let verdict: String
        let verdictClass: String
        let reason: String
        let setting: String
        let rule: String
        let basis: String
        let source: String
    }

    let actions: [Action]
    /// The platform asked for, if one is.
    let ios: Bool
    let android: Bool
    let windows: Bool
    /// The action picked: what it asks, and its fields.
    var description: String?
    var fields: [Field] = []
    /// What is wrong with the form, or why the query was refused.
    var error: String?
    var answer: Answer?
}
