import Custody
import CustodyPolicy
import CustodyStore
import Foundation
import HTTPTypes
import Hummingbird
import Mustache
import NIOCore

/// The admin console at `/console`: a page with no data (`/console`, its script and its style,
/// public, built into the binary), and views the page fetches with the operator's token
/// (`/console/views/…`, `read` scope), rendered here with swift-mustache from the same answers
/// the JSON API gives (every value HTML-escaped by the template engine). Nothing is fetched from
/// another host; no inline script runs (the Content-Security-Policy forbids it).
struct ConsoleController {
    let engine: CustodyEngine
    /// Whether the service syncs from Microsoft Graph (the overview then offers a sync).
    let syncsFromGraph: Bool
    let limits: CustodyServerConfiguration.Limits
    /// Decisions and refusals over the last minutes (GET /v1/activity).
    let activity: RecentActivity
    /// The replays running now, with those of `POST /v1/bundle/impact`.
    let replays: ReplayGate

    /// The templates, parsed once, each escaping what it shows as `ConsoleHTML` does.
    static let library: MustacheLibrary = {
        MustacheContentTypes.register(ConsoleHTML(), named: ConsoleHTML.name)
        var library = MustacheLibrary()
        let templates: [(String, [UInt8])] = [
            ("overview", PackageResources.overview_mustache), ("accounts", PackageResources.accounts_mustache),
            ("account", PackageResources.account_mustache), ("whatif", PackageResources.whatif_mustache),
            ("grid", PackageResources.grid_mustache), ("diff", PackageResources.diff_mustache),
            ("events", PackageResources.events_mustache), ("groupgrid", PackageResources.groupgrid_mustache),
            ("shadow", PackageResources.shadow_mustache),
        ]
        for (name, bytes) in templates {
            // Built into the binary and parsed by a test: a template that does not parse is a bug.
            try! library.register(
                "{{% CONTENT_TYPE: \(ConsoleHTML.name)}}" + String(decoding: bytes, as: UTF8.self), named: name)
        }
        return library
    }()

    /// What every console answer carries: no script but the console's own, nothing from another
    /// host, never framed, no referrer, no sniffing.
    static let securityHeaders: HTTPFields = [
        HTTPField.Name("Content-Security-Policy")!:
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'",
        .contentTypeOptions: "nosniff",
        HTTPField.Name("Referrer-Policy")!: "no-referrer",
        HTTPField.Name("X-Frame-Options")!: "DENY",
        .cacheControl: "no-store",
    ]

    func addPublicRoutes(to router: Router<CustodyRequestContext>) {
        router.get("console") { _, _ in Self.asset(PackageResources.shell_html, type: "text/html; charset=utf-8") }
        router.get("console/console.js") { _, _ in
            Self.asset(PackageResources.console_js, type: "text/javascript; charset=utf-8")
        }
        router.get("console/console.css") { _, _ in
            Self.asset(PackageResources.console_css, type: "text/css; charset=utf-8")
        }
    }

    func addViewRoutes(to group: RouterGroup<CustodyRequestContext>) {
        group.get("views/overview", use: overview)
        group.get("views/accounts", use: accounts)
        group.get("views/accounts/:account", use: account)
        group.get("views/whatif", use: whatIf)
        group.get("views/accounts/:account/grid", use: grid)
        group.get("views/groups/:group/grid", use: groupGrid)
        group.get("views/diff", use: diff)
        group.post("views/diff", use: diffCandidate)
        group.get("views/events", use: events)
        group.get("views/shadow", use: shadow)
    }

    static func asset(_ bytes: [UInt8], type: String) -> Response {
        var headers = securityHeaders
        headers[.contentType] = type
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// A view's HTML, from what its template reads.
    static func render<Page: ConsolePage>(_ page: Page) -> Response {
        asset(Array(html(page).utf8), type: "text/html; charset=utf-8")
    }

    /// `page` through its template.
    static func html<Page: ConsolePage>(_ page: Page) -> String {
        library.render(page, withTemplate: Page.template) ?? ""
    }

    // MARK: Views

    /// Whether the operator's token may act (wipe, rotate, roll back, freeze, sync): the views
    /// offer actions to admin tokens only; the API refuses them to others in any case.
    static func isAdmin(_ context: CustodyRequestContext) -> Bool { context.identity?.grants(.admin) ?? false }

    /// An account as a path segment of a view or an API address.
    static func pathSegment(_ name: String) -> String {
        name.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(["/", "?", "#", "%"])) ?? name
    }

    /// The bundle in force (GET /v1/bundle), readiness (/readyz), replicas (GET /v1/fleet) and
    /// the last events (GET /v1/events).
    @Sendable func overview(_ request: Request, context: CustodyRequestContext) async throws -> Response {
        _ = try QueryParameters(request.uri, accepting: [])
        var problems: [String] = []
        if engine.bundleInForce == nil { problems.append("no bundle is in force") }
        let replica = engine.replicaStatus
        if replica.isStale() { problems.append("stale: \(replica.divergence ?? replica.problem ?? "not current")") }
        let (fleet, events, freeze) = try await StateExecutor.run { () throws(CustodyError) in
            let newest = engine.lastEventID
            return await (
                try engine.fleetStatus(), try engine.events(after: max(0, newest - 10)).events,
                try engine.bundleFreeze()
            )
        }
        return Self.render(
            OverviewPage(
                bundle: engine.policyInForce.map(OverviewPage.Bundle.init),
                freeze: freeze.map(OverviewPage.Freeze.init),
                problems: problems, readiness: problems.isEmpty ? "Ready" : "Not ready",
                readyClass: problems.isEmpty ? "allow" : "block",
                warnings: engine.lastBundleRejection.map {
                    ["the last bundle offered was refused: \(namingFiles(in: $0.message, relativeTo: $0.source))"]
                } ?? [],
                admin: Self.isAdmin(context), graph: syncsFromGraph, activity: Self.minutes(activity.recent()),
                replicas: fleet.replicas.map(OverviewPage.Replica.init),
                events: events.reversed().map(OverviewPage.Event.init)
            ))
    }

    /// The last ten minutes, a row a minute, newest first: decisions a second, how many blocked,
    /// how many requests refused. The minute still running is counted up to now.
    static func minutes(_ samples: [RecentActivity.Sample]) -> [OverviewPage.Minute] {
        let perMinute = Int(60 / RecentActivity.interval.components.seconds)
        var rows: [OverviewPage.Minute] = []
        var end = samples.count - 1
        while end > 0 && rows.count < 10 {
            let start = max(0, end - perMinute)
            let (first, last) = (samples[start], samples[end])
            let seconds = max(0.001, last.at.timeIntervalSince(first.at))
            let decisions = last.decisions - first.decisions
            rows.append(
                OverviewPage.Minute(
                    from: answerTime(first.at), to: answerTime(last.at),
                    rate: String(format: "%.1f", Double(decisions) / seconds), decisions: decisions,
                    blocked: last.blocked - first.blocked, refused: last.refused - first.refused))
            end = start
        }
        return rows
    }

    /// Accounts of the tenant in force matching `q`, a page of 100 from the account after
    /// `after` (GET /v1/accounts).
    @Sendable func accounts(_ request: Request, context: CustodyRequestContext) async throws -> Response {
        let parameters = try QueryParameters(request.uri, accepting: ["q", "after"])
        let query = try parameters.searchText()
        let search = try engine.accountPage(query, after: parameters["after"], limit: Self.accountsPage)
        let queryItem = Self.queryValue(query)
        return Self.render(
            AccountsPage(
                query: query, count: search.accounts.count, matched: search.matched, total: search.total,
                paged: parameters["after"] != nil, first: "#/accounts?q=\(queryItem)",
                next: search.next.map { "#/accounts?q=\(queryItem)&after=\(Self.queryValue($0))" },
                accounts: search.accounts.map(AccountsPage.Row.init)))
    }

    /// `text` with each ISO 8601 duration (`PT8S`, `P90D`) in words ("8 seconds", "90 days"):
    /// the API's reasons quote Graph's values; the console says them as people do.
    static func spokenDurations(in text: String) -> String {
        text.replacing(/\bP(?:\d+[WD])*(?:T(?:\d+H)?(?:\d+M)?(?:\d+(?:\.\d+)?S)?)?\b/) { match in
            (try? PolicyDuration(iso8601: String(match.output)))?.spoken ?? String(match.output)
        }
    }

    /// How long the account has been offline, and counted from what.
    static func offlineBasis(_ status: AccountStatus) -> String {
        guard let seconds = status.offline.offlineForSeconds else {
            return "the state knows of no check-in and has never seen the account, so no time offline is counted"
        }
        let since =
            status.lastCheckIn != nil
            ? "since its last check-in" : "since Custody first saw the account (it has never checked in)"
        return "offline for \(PolicyDuration(seconds: Int64(seconds)).spoken) \(since)"
    }

    /// How many of the events logged before the Events view opened it shows.
    static let eventHistory: Int64 = 50

    /// How many accounts a page of the console's search shows.
    static let accountsPage = 100

    /// `text` as the value of a query parameter.
    static func queryValue(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(["-", ".", "_", "~"])) ?? ""
    }

    /// An account's effective policy per platform, each setting with its sources and the
    /// conflicts (GET /v1/accounts/{account}/policy: the same answer, rendered).
    @Sendable func account(_ request: Request, context: CustodyRequestContext) async throws -> Response {
        let parameters = try QueryParameters(request.uri, accepting: ["platform"])
        let account = try PolicyController.account(context)
        let chosen = try parameters.evaluationContext(over: engine.context)
        let reports = try engine.policyReport(for: account, context: chosen).map {
            PolicyReport.Report(account: account, snapshot: $0)
        }
        let first = reports.first?.account
        let name = first?.upn ?? first?.oid ?? account.description
        // The effective policy differs by platform: every platform can be looked at, whichever
        // the service decides for by default (and all at once where it decides for none).
        let platforms: [Platform?] = (engine.context.platform == nil ? [nil] : []) + Platform.allCases.map { $0 }
        let current = parameters["platform"] ?? engine.context.platform?.rawValue
        let groups = first?.groups ?? []
        var page = AccountPage(
            name: name, link: Self.pathSegment(name), oid: first?.oid ?? "-",
            displayName: engine.policyInForce?.snapshot.tenantAccount(for: account)?.displayName,
            groups: groups.map { AccountPage.Group(name: $0, link: Self.pathSegment($0)) }, hasGroups: !groups.isEmpty,
            platforms: platforms.map { platform in
                AccountPage.PlatformChoice(
                    name: platform?.rawValue ?? "every platform",
                    link: "#/accounts/\(Self.pathSegment(name))" + (platform.map { "?platform=\($0.rawValue)" } ?? ""),
                    current: platform?.rawValue == current)
            },
            admin: Self.isAdmin(context), reports: reports.map(AccountPage.Report.init))
        // The state's record (GET /v1/accounts/{account}/status); a state out of reach is said,
        // never shown as an account with no keys.
        do {
            // The offline grace of the platform shown (the engine's when none is chosen).
            let status = try await StateExecutor.run {
                try await engine.accountStatus(for: account, context: chosen)
            }
            page.status = AccountPage.Status(status)
        } catch let error as CustodyError {
            page.statusError = error.message
        }
        return Self.render(page)
    }

    /// Every decision about an account's data as a coloured grid (GET /v1/accounts/{account}/grid);
    /// a cell opens its reason.
    @Sendable func grid(_ request: Request, context: CustodyRequestContext) async throws -> Response {
        let parameters = try QueryParameters(request.uri, accepting: QueryParameters.context)
        let account = try PolicyController.account(context)
        let grid = try engine.decisionGrid(
            for: account, context: try parameters.evaluationContext(over: engine.context))
        return Self.render(GridPage(grid))
    }

    /// The grid over a group's members (GET /v1/groups/{group}/grid): each cell coloured by
    /// whether the members are treated alike, opening to the members it blocks and why.
    @Sendable func groupGrid(_ request: Request, context: CustodyRequestContext) async throws -> Response {
        let parameters = try QueryParameters(request.uri, accepting: QueryParameters.context)
        let group = try PolicyController.group(context)
        let evaluation = try parameters.evaluationContext(over: engine.context)
        let grid = try await StateExecutor.run { () throws(CustodyError) in
            try engine.groupGrid(for: group, context: evaluation)
        }
        return Self.render(GroupGridPage(grid))
    }

    /// Two kept revisions compared (GET /v1/bundle/history and GET /v1/bundle/diff): the settings
    /// that change, and every decision that flips for whom. Nothing is applied; an admin may
    /// roll back to the older one.
    ///
    /// The form comes first: a whole-tenant comparison is made only when asked for (`compare`,
    /// or a revision named), never on opening the view.
    @Sendable func diff(_ request: Request, context: CustodyRequestContext) async throws -> Response {
        let parameters = try QueryParameters(request.uri, accepting: ["from", "to", "compare"])
        let (from, to) = (
            parameters["from"].flatMap { $0.isEmpty ? nil : $0 }, parameters["to"].flatMap { $0.isEmpty ? nil : $0 }
        )
        var (page, history) = try await diffForm(context: context, from: from, to: to)
        guard from != nil || to != nil || page.revisions.count >= 2 else {
            page.note = "The state keeps fewer than two revisions: there is nothing to compare yet."
            return Self.render(page)
        }
        guard from != nil || to != nil || parameters["compare"] != nil else {
            page.note = "Pick two revisions and Compare: every decision of every account is compared then."
            return Self.render(page)
        }
        do {
            let diff = try await StateExecutor.run { try await engine.bundleDiff(from: from, to: to) }
            var comparison = DiffPage.Comparison(diff, canRollBack: diff.from != engine.bundleInForce?.revision)
            // What the rollback button restores, and when that revision was first applied.
            let restores = history.last { $0.contentHash == diff.from }
            comparison.fromShort = String(diff.from.prefix(12))
            comparison.fromMade = restores.map { answerTime($0.appliedAt) } ?? "a time the history no longer keeps"
            // A policy in force that a rollback put back: rolling back to the revision it replaced
            // undoes that rollback. Say so beside the button.
            if let latest = history.first(where: { $0.result == .applied }), latest.contentHash == diff.to,
                latest.provenance.isRollback
            {
                comparison.undoes =
                    "The revision in force was put back by a rollback (\(latest.provenance.reason ?? "no reason given"), \(answerTime(latest.appliedAt))): rolling back to \(diff.from.prefix(12)) undoes it."
            }
            page.diff = comparison
        } catch let error as CustodyError {
            page.error = error.message
        }
        return Self.render(page)
    }

    /// A candidate bundle (the body of `POST /v1/bundle/diff`, which the page builds from the
    /// files the operator picks) compared with the bundle in force; nothing is applied.
    @Sendable func diffCandidate(_ request: Request, context: CustodyRequestContext) async throws -> Response {
        _ = try QueryParameters(request.uri, accepting: [])
        let (files, _) = try await PolicyController.bundleFiles(
            request, limit: limits.bodyBytes, takesAllowEmpty: false)
        var (page, _) = try await diffForm(context: context, from: nil, to: nil)
        page.candidate = "\(files.entries.count) file(s), revision \(files.contentHash)"
        do {
            let diff = try await StateExecutor.run { try await engine.bundleDiff(candidate: files) }
            page.diff = DiffPage.Comparison(diff, canRollBack: false)
            try await impact(of: files, on: &page)
        } catch let error as CustodyError {
            // Without the state's location: the operator's business, as the API's errors.
            page.error = ServiceError.withoutLocation(error)
            page.diagnostics = error.diagnostics.prefix(20).map(\.description)
        }
        return Self.render(page)
    }

    /// The candidate's impact on the decisions audited over the last 7 days (`POST
    /// /v1/bundle/impact`'s default window), as the view's background work; a note instead when
    /// decisions are not audited or the replay cannot run now.
    private func impact(of files: BundleFiles, on page: inout DiffPage) async throws(CustodyError) {
        let engine = self.engine
        guard try await StateExecutor.run({ () throws(CustodyError) in try await engine.isAuditingDecisions() }) else {
            page.impactNote =
                "Decision auditing is off (custody audit --decisions on), so there are no real decisions to replay."
            return
        }
        guard replays.enter() else {
            page.impactNote =
                "\(ReplayGate.limit) replays are running on this service, as many as it runs at once: the impact on the last 7 days is not shown; compare again when one ends."
            return
        }
        defer { replays.leave() }
        let window = try ReplayScope.window(since: nil, from: nil, to: nil, now: Date())
        // The view runs as background work already (`InBackground`).
        let report = try await engine.replay(candidate: files, scope: ReplayScope(from: window.from, to: window.to))
        page.impact = DiffPage.Impact(report)
    }

    /// The revisions the state keeps, for the form's two lists: newest first by when each was
    /// first applied (a rollback does not move a revision up), one put back by a rollback
    /// marked with its reason; with the history read (newest first), for the caller.
    private func diffForm(
        context: CustodyRequestContext, from: String?, to: String?
    ) async throws -> (form: DiffPage, history: [BundleRecord]) {
        let history = try await StateExecutor.run { try await engine.bundleHistory(limit: 100) }
        let applied = history.filter { $0.result == .applied }
        // Oldest application first: the first one seen of each revision is its first.
        var firsts: [BundleRecord] = []
        var seen = Set<String>()
        for record in applied.reversed() where seen.insert(record.contentHash).inserted { firsts.append(record) }
        let inForce = engine.bundleInForce?.revision
        let revisions = firsts.reversed().map { record in
            let latest = applied.first { $0.contentHash == record.contentHash }
            let rollback =
                latest.map { $0.provenance.isRollback && $0.id != record.id } == true
                ? " · put back by a rollback (\(latest?.provenance.reason ?? "no reason given"))" : ""
            let made = "first applied \(answerTime(record.appliedAt))"
            return DiffPage.Revision(
                revision: record.contentHash, short: String(record.contentHash.prefix(12)),
                label: "\(record.contentHash.prefix(12)) · \(made) · \(record.source)" + rollback
                    + (record.contentHash == inForce ? " (in force)" : ""),
                fromSelected: record.contentHash == from, toSelected: record.contentHash == to)
        }
        return (DiffPage(admin: Self.isAdmin(context), revisions: revisions), history)
    }

    /// The shadow bundle and what it found (GET /v1/bundle/shadow); the page reloads it every
    /// few seconds while it runs.
    @Sendable func shadow(_ request: Request, context: CustodyRequestContext) async throws -> Response {
        _ = try QueryParameters(request.uri, accepting: [])
        let status = try await StateExecutor.run { try await engine.shadowStatus() }
        return Self.render(ShadowPage(admin: Self.isAdmin(context), shadow: status.map(ShadowPage.Shadow.init)))
    }

    /// The live feed: the page streams GET /v1/events itself (console.js), resuming with
    /// Last-Event-ID after a reconnect.
    @Sendable func events(_ request: Request, context: CustodyRequestContext) async throws -> Response {
        _ = try QueryParameters(request.uri, accepting: [])
        return Self.render(
            EventsPage(
                canStream: context.identity?.grants(.events) ?? false, eventId: String(engine.lastEventID),
                historyFrom: String(max(0, engine.lastEventID - Self.eventHistory))))
    }

    /// One query, decided as POST /v1/decisions decides it, with the rule behind the answer.
    @Sendable func whatIf(_ request: Request, context: CustodyRequestContext) async throws -> Response {
        let form = WhatIfForm.served
        let parameters = try QueryParameters(
            request.uri, accepting: ["action", "platform", "decide"] + form.fieldNames)
        let named = parameters["action"]
        let chosen = named.flatMap(form.action(named:))
        var page = WhatIfPage(
            actions: form.actions.map { WhatIfPage.Action(name: $0.name, selected: $0.name == chosen?.name) },
            ios: parameters["platform"] == "ios", android: parameters["platform"] == "android",
            windows: parameters["platform"] == "windows")
        if let named, chosen == nil {
            page.error = "There is no action '\(named)': pick one from the list."
            return Self.render(page)
        }
        guard let chosen else { return Self.render(page) }
        page.description = chosen.description
        page.fields = chosen.fields.map { WhatIfPage.Field($0, value: parameters[$0.name] ?? "") }
        var values: [String: String] = [:]
        for name in form.fieldNames { values[name] = parameters[name] }
        let taken = Set(chosen.fields.map(\.name))
        if let other = form.fieldNames.first(where: { !taken.contains($0) && !(values[$0] ?? "").isEmpty }) {
            page.error = "\(chosen.name) does not take \(WhatIfForm.label(other))."
            return Self.render(page)
        }
        guard parameters["decide"] != nil else { return Self.render(page) }
        let query: [String: WhatIfForm.Value]
        switch form.query(for: chosen, values: values) {
        case .success(let built): query = built
        case .failure(let error):
            page.error = error.message
            return Self.render(page)
        }
        let line = try WhatIfForm.line(query)
        let evaluation = try parameters.evaluationContext(over: engine.context)
        let decided = try await engine.decide(
            line: line, context: evaluation,
            options: DecisionStream.Options(explain: true, currentTime: { .seconds(Date().timeIntervalSince1970) }),
            stamped: false, report: true)
        if let error = decided.error {
            // About the form, not the JSON it was sent as: no line and column of a text no one wrote.
            page.error = "The query was refused: \(error.message)"
            return Self.render(page)
        }
        let answer = try JSONDocument(parsing: decided.output).root
        // A launch answers an outcome, an openURL where it opens; the rest allowed or not.
        let allowed = answer["allowed"]?.bool ?? false
        let outcome = answer["outcome"]?.string.map { " (\($0))" } ?? ""
        page.answer = WhatIfPage.Answer(
            query: String(decoding: line, as: UTF8.self), verdict: (allowed ? "Allowed" : "Blocked") + outcome,
            verdictClass: allowed ? "allow" : "block", reason: answer["reason"]?.string ?? "",
            setting: answer["setting"]?.string ?? "—", rule: answer["rule"]?.string ?? "—",
            basis: answer["basis"]?.string ?? "", source: answer["source"]?.string ?? "")
        return Self.render(page)
    }
}

/// What the console's templates escape values with: HTML's five characters, after control and
/// bidirectional-formatting characters are made visible (`\u{202E}`), so that a display name or
/// a policy name from the tenant cannot reorder what the page shows around it ("Mallory" read
/// backwards, "gnp.exe" shown as "exe.png").
struct ConsoleHTML: MustacheContentType {
    static let name = "CUSTODY_CONSOLE_HTML"

    func escapeText(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for character in text.escapingControlCharacters.unicodeScalars {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.unicodeScalars.append(character)
            }
        }
        return escaped
    }
}
