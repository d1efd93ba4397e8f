import Custody
import CustodyPolicy
import CustodyProtection
import CustodyStore
import CustodyTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Synchronization
import Testing

@testable import CustodyServer

/// What each console view shows, piece by piece: the text and attributes the templates draw
/// from the engine's answers, every value HTML-escaped. ConsoleTests tests the console's
/// routes and behaviour; these pin what the views read, so that how their data is handed to
/// the templates can change without the pages changing.
@Suite("The admin console's views, as they read", .timeLimit(.minutes(2)))
struct ConsoleViewTests {
    /// What the console escapes: HTML's five characters (as swift-mustache's HTML type does),
    /// and control and bidirectional-formatting characters made visible, so a name from the
    /// tenant cannot reorder the text around it (Unicode's bidi controls: U+202A–U+202E,
    /// U+2066–U+2069, U+200E/U+200F).
    static let escapes: [(text: String, shown: String)] = [
        ("plain text", "plain text"),
        ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
        ("a & b", "a &amp; b"),
        (#"it's "quoted""#, "it&#39;s &quot;quoted&quot;"),
        ("\u{202E}Mallory\u{2066}", #"\u{202E}Mallory\u{2066}"#),
        ("\u{202E}gnp.exe", #"\u{202E}gnp.exe"#),
        ("right\u{200F}mark", #"right\u{200F}mark"#),
        ("bell\u{7}", #"bell\u{7}"#),
        ("café 日本", "café 日本"),
    ]

    @Test("the console escapes HTML and makes control and bidi characters visible", arguments: escapes)
    func escaping(_ example: (text: String, shown: String)) {
        #expect(ConsoleHTML().escapeText(example.text) == example.shown)
    }

    @Test("the console's templates escape as the console does, not as plain HTML")
    func templatesUseConsoleEscaping() {
        struct Page: ConsolePage {
            static let template = "accounts"
            let query = "\u{202E}gnp.exe"
            let total = 1
        }
        let rendered = ConsoleController.html(Page())
        #expect(!rendered.contains("\u{202E}"))
        #expect(rendered.contains(#"value="\u{202E}gnp.exe""#), "\(rendered)")
    }

    /// A view's HTML as a token of `scope` gets it.
    static func view(
        _ client: some TestClientProtocol, _ fixture: ServiceFixture, _ uri: String, _ scope: TokenScope = .read
    ) async throws -> String {
        let response = try await client.execute(uri: uri, method: .get, headers: fixture.auth(scope))
        #expect(response.status == .ok, "\(uri): \(response.body.text.prefix(300))")
        return response.body.text
    }

    /// `text` as the console's templates escape a value.
    /// `text` as the console shows it: control and bidi characters made visible, then HTML's
    /// five characters escaped (`ConsoleHTML`).
    static func escaped(_ text: String) -> String {
        text.escapingControlCharacters.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(
            of: "<", with: "&lt;"
        )
        .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
        .replacingOccurrences(of: "'", with: "&#39;")
    }

    /// The text between `start` and the next `end` after it.
    static func between(_ text: String, _ start: String, _ end: String) -> String? {
        guard let from = text.range(of: start) else { return nil }
        return text[from.upperBound...].components(separatedBy: end).first
    }

    /// Whether `text` is a time as the views show times: RFC 3339 in UTC, to the millisecond.
    static func isTime(_ text: some StringProtocol) -> Bool {
        String(text).wholeMatch(of: #/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/#) != nil
    }

    enum OverviewCase: String, CaseIterable, CustomTestStringConvertible {
        /// The example bundle in force, unsigned, a replica recorded, a read token.
        case inForce
        /// Frozen, with HTML in the reason, an admin token.
        case frozen
        /// No bundle ever applied.
        case noBundle
        /// A signed bundle applied by someone named, with an edit refused after it.
        case signedThenRefused
        var testDescription: String { rawValue }
    }

    @Test(
        "the overview: the policy in force, the freeze, readiness, replicas and the last events",
        arguments: OverviewCase.allCases)
    func overview(_ scenario: OverviewCase) async throws {
        let fixture = try await ServiceFixture.make(applying: scenario != .noBundle) { $0.bundleDirectory = nil }
        let key = BundleSigningKey()
        switch scenario {
        case .inForce: try await fixture.engine.recordReplicaStatus()
        case .frozen: _ = try await fixture.engine.freeze(reason: "<b>audit</b> & 'review'", by: "ops \"night\"")
        case .noBundle: break
        case .signedThenRefused:
            try await fixture.engine.trust(key.publicKey, name: "ci")
            let signed = fixture.directory.file("signed")
            try FileManager.default.createDirectory(atPath: signed, withIntermediateDirectories: true)
            for (name, text) in try SignedBundleServiceTests.files(printBlocked: true, key: key, sequence: 1_000) {
                try text.write(toFile: signed + "/" + name, atomically: true, encoding: .utf8)
            }
            try await fixture.engine.apply(
                bundleDirectory: signed, provenance: BundleProvenance(appliedBy: "<ci> & co"))
            try SignedBundleServiceTests.policy(printBlocked: false).write(
                toFile: signed + "/policies.json", atomically: true, encoding: .utf8)
            await #expect(throws: CustodyError.self) { try await fixture.engine.apply(bundleDirectory: signed) }
        }
        try await fixture.application().test(.router) { client in
            // The service records its replica's status as it starts, from a background task:
            // under a loaded run it may come after the first request, so the view waits for it.
            for _ in 0..<200 where try await fixture.engine.fleetStatus().replicas.isEmpty {
                try await Task.sleep(for: .milliseconds(50))
            }
            let html = try await Self.view(
                client, fixture, "/console/views/overview", scenario == .frozen ? .admin : .read)
            let inForce = fixture.engine.policyInForce
            if let inForce {
                #expect(html.contains("<code id=\"revision\">\(inForce.bundle.revision)</code>"), "\(html)")
                #expect(html.contains("<td>\(Self.escaped(inForce.bundle.source))</td>"), "\(html)")
                let count = inForce.snapshot.bundle.protectionPolicies.count
                let accounts = inForce.snapshot.bundle.tenant.accounts.count
                #expect(html.contains("<td>\(count) app protection policies, \(accounts) accounts</td>"), "\(html)")
                let applied = try #require(Self.between(html, "<th scope=\"row\">Applied</th><td>", "</td>"))
                let by = " by &lt;ci&gt; &amp; co"
                #expect(
                    scenario == .signedThenRefused
                        ? applied.hasSuffix(by) && Self.isTime(applied.dropLast(by.count)) : Self.isTime(applied),
                    "\(applied)")
                let signature = try #require(Self.between(html, "<th scope=\"row\">Signature</th><td>", "</td>"))
                #expect(
                    signature
                        == (scenario == .signedThenRefused
                            ? "sequence 1000, signed by \(inForce.bundle.provenance.signers.joined(separator: ", "))"
                            : "unsigned"))
                #expect(!html.contains("No bundle is in force"))
            } else {
                #expect(html.contains("<p class=\"block\">No bundle is in force: nothing is decided.</p>"), "\(html)")
                #expect(!html.contains("id=\"revision\""))
            }
            let ready =
                scenario == .noBundle
                ? "<p id=\"ready\" class=\"block\">Not ready</p>" : "<p id=\"ready\" class=\"allow\">Ready</p>"
            #expect(html.contains(ready), "\(html)")
            #expect(html.contains("<p>no bundle is in force</p>") == (scenario == .noBundle))
            #expect(
                html.contains("the last bundle offered was refused: ") == (scenario == .signedThenRefused), "\(html)")
            if scenario == .frozen {
                let frozen = try #require(Self.between(html, "<p class=\"block\" id=\"frozen\">Frozen since ", "</p>"))
                #expect(
                    frozen.hasSuffix(
                        " by ops &quot;night&quot;: &lt;b&gt;audit&lt;/b&gt; &amp; &#39;review&#39;. Every bundle change is refused until it is unfrozen."
                    ), "\(frozen)")
                #expect(html.contains("data-action=\"unfreeze\"") && !html.contains("data-action=\"freeze\""))
            } else {
                #expect(html.contains("<p id=\"not-frozen\">Not frozen: bundles are applied as they come.</p>"))
                #expect(!html.contains("data-action=\"unfreeze\"") && !html.contains("data-action=\"freeze\""))
            }
            // The service records its replica's status as it starts: a row, its revision "-"
            // while none is in force.
            let replica = try await #require(try fixture.engine.fleetStatus().replicas.first)
            let contact = try #require(
                Self.between(
                    html,
                    "<tr><td>\(replica.record.id)</td><td><code>\(replica.record.revision ?? "-")</code></td><td>",
                    "</td><td>current</td></tr>"),
                "\(html)")
            #expect(Self.isTime(contact), "\(contact)")
            #expect(!html.contains("No replica has recorded its status yet."))
            // The last ten events, newest first, each body cut at 240 bytes.
            let newest = fixture.engine.lastEventID
            let events = try await fixture.engine.events(after: max(0, newest - 10)).events.reversed()
            var position = html.startIndex
            for event in events {
                let body =
                    event.body.count <= 240
                    ? String(decoding: event.body, as: UTF8.self)
                    : String(decoding: event.body.prefix(240), as: UTF8.self) + "… (\(event.body.count) bytes)"
                let item =
                    "<li><span class=\"badge\">\(event.name)</span> \(answerTime(event.at)) <code>\(Self.escaped(body))</code></li>"
                let found = try #require(html.range(of: item, range: position..<html.endIndex), "\(item) in \(html)")
                position = found.upperBound
            }
            #expect(html.contains("No event yet.") == events.isEmpty)
        }
    }

    @Test(
        "the accounts view: what was searched, how many match, and a row per account",
        arguments: [
            // An empty search is still a search to the template: it names the empty text.
            (
                "", "4 of the 4 accounts in the tenant match “”.",
                ["alice@contoso.com", "bob@contoso.com", "carol@contoso.com", "dave@contoso.com"]
            ),
            ("ALICE", "1 of the 4 accounts in the tenant match “ALICE”.", ["alice@contoso.com"]),
            ("Nguyen", "1 of the 4 accounts in the tenant match “Nguyen”.", ["carol@contoso.com"]),
            ("%3Cb%3E%22x", "0 of the 4 accounts in the tenant match “&lt;b&gt;&quot;x”.", []),
        ] as [(String, String, [String])])
    func accounts(query: String, hint: String, shown: [String]) async throws {
        let fixture = try await ServiceFixture.make()
        try await fixture.application().test(.router) { client in
            let html = try await Self.view(client, fixture, "/console/views/accounts?q=\(query)")
            #expect(html.contains("<p class=\"hint\">\(hint)</p>"), "\(html)")
            let typed = query.removingPercentEncoding ?? query
            #expect(html.contains("<input name=\"q\" value=\"\(Self.escaped(typed))\" type=\"search\""), "\(html)")
            let tenant = fixture.engine.policyInForce!.snapshot.bundle.tenant.accounts
            for account in tenant {
                let upn = try #require(account.id.upn)
                let row =
                    "<tr><td><a href=\"#/accounts/\(upn)\">\(upn)</a></td><td>\(account.displayName ?? "-")</td><td><code>\(account.id.oid ?? "-")</code></td><td>\(account.groups.joined(separator: ", "))</td></tr>"
                #expect(html.contains(row) == shown.contains(upn), "\(row) in \(html)")
            }
            #expect(!html.contains("data-more") && !html.contains("First page"))
        }
    }

    @Test("an account's view: its name, groups, key versions and check-ins, its policies and their conflicts")
    func account() async throws {
        let fixture = try await ServiceFixture.make()
        let alice = AccountID("alice@contoso.com")!
        _ = try await fixture.engine.protect(Array("hello".utf8), owner: alice)
        _ = try await fixture.engine.rotateKey(account: alice)
        try await fixture.engine.checkIn(account: alice)
        try await fixture.application().test(.router) { client in
            let html = try await Self.view(client, fixture, "/console/views/accounts/alice%40contoso.com")
            #expect(html.hasPrefix("<h2>Alice Martin · alice@contoso.com</h2>"), "\(html.prefix(300))")
            #expect(
                html.contains(
                    "<p>Object id <code>a1f0c7d2-5b1e-4c3a-9e8f-000000000001</code> · groups: <a class=\"group\" href=\"#/groups/grp-finance/grid\">grp-finance</a> <a class=\"group\" href=\"#/groups/grp-all-staff/grid\">grp-all-staff</a></p>"
                ), "\(html)")
            #expect(html.contains("<a id=\"grid-link\" href=\"#/accounts/alice@contoso.com/grid\">Decision grid</a>"))
            #expect(html.contains("<a href=\"#/whatif?account=alice@contoso.com\">What-if</a>"))
            #expect(
                html.contains(
                    "<a href=\"#/accounts/alice@contoso.com?platform=ios\" aria-current=\"page\">ios</a> <a href=\"#/accounts/alice@contoso.com?platform=android\">android</a>"
                ), "\(html)")
            let status = try await fixture.engine.accountStatus(for: alice)
            let identifier = try #require(status.identifiers.first)
            #expect(
                html.contains(
                    "<tr><td><code>\(identifier.identifier)</code></td><td>v1, v2</td><td>-</td><td>\(identifier.lastCheckIn ?? "?")</td></tr>"
                ), "\(html)")
            #expect(
                html.contains(
                    "<p>Last check-in: \(status.lastCheckIn ?? "?") · first seen: \(status.firstSeen ?? "?")</p>"),
                "\(html)")
            #expect(html.contains("<span id=\"offline-state\" class=\"allow\">online</span>"), "\(html)")
            #expect(!html.contains("The state cannot be read"))
            // The policy report, as GET /v1/accounts/{account}/policy answers it.
            #expect(html.contains("<h3 id=\"platform-ios\">Effective policy on ios</h3>"), "\(html)")
            #expect(html.contains("<p class=\"allow\">Managed: "), "\(html)")
            #expect(html.contains("<li>Contoso All Staff (iOS) <span class=\"badge\">"), "\(html)")
            #expect(html.contains("<li>Contoso Finance (iOS) <span class=\"badge\">"), "\(html)")
            #expect(
                html.contains("<tr data-setting=\"printBlocked\"><td>printBlocked</td><td>true</td><td>"), "\(html)")
            #expect(html.contains("<h4>Conflicts between policies</h4>"), "\(html)")
            let conflicts = try #require(Self.between(html, "<h4>Conflicts between policies</h4>\n  <ul>", "</ul>"))
            #expect(conflicts.contains("<li><strong>periodOfflineBeforeWipeIsEnforced</strong>: "), "\(conflicts)")
            #expect(!html.contains("Set aside"))
        }
    }

    @Test(
        "an account's view without a display name or groups: neither is drawn",
        arguments: ["dave%40contoso.com", "a1f0c7d2-5b1e-4c3a-9e8f-000000000004"])
    func plainAccount(path: String) async throws {
        let fixture = try await ServiceFixture.make()
        try await fixture.application().test(.router) { client in
            let html = try await Self.view(client, fixture, "/console/views/accounts/\(path)")
            #expect(html.hasPrefix("<h2>Dave Schmidt · dave@contoso.com</h2>"), "\(html.prefix(300))")
            #expect(html.contains("<p>Object id <code>a1f0c7d2-5b1e-4c3a-9e8f-000000000004</code></p>"), "\(html)")
            #expect(html.contains("<p>Last check-in: never · first seen: "), "\(html)")
        }
    }

    @Test(
        "what-if: the form for the action picked, the answer with its rule, and what is wrong with a query",
        arguments: [
            (
                "",
                ["<p class=\"hint\">Pick an action: its fields follow.</p>", "<option value=\"print\">print</option>"],
                ["<label title="]
            ),
            (
                "action=nothing",
                ["<p role=\"alert\" class=\"block\">There is no action &#39;nothing&#39;: pick one from the list.</p>"],
                ["<label title="]
            ),
            (
                "action=print&platform=android",
                [
                    "<option value=\"print\" selected>print</option>",
                    "<option value=\"android\" selected>android</option>",
                    "<input name=\"account\" value=\"\" placeholder=\"a UPN or an object id\" autocomplete=\"off\">",
                ], ["id=\"answer\"", "role=\"alert\""]
            ),
            (
                "action=copyOut&owner=alice%40contoso.com&destinationManaged=false",
                [
                    "<select name=\"destinationManaged\"><option value=\"\">—</option><option value=\"true\">yes</option><option value=\"false\" selected>no</option></select>",
                    "<input name=\"owner\" value=\"alice@contoso.com\" placeholder=\"a UPN or an object id\" autocomplete=\"off\">",
                ], ["id=\"answer\""]
            ),
            (
                "action=launch&facts=%7B%22a%22%3A%22%3Cb%3E%22%7D",
                [
                    "<textarea name=\"facts\" rows=\"3\" cols=\"48\" spellcheck=\"false\">{&quot;a&quot;:&quot;&lt;b&gt;&quot;}</textarea>"
                ], []
            ),
            (
                "action=print&account=alice%40contoso.com&decide=1",
                [
                    "<h3 id=\"decision\" class=\"block\">Blocked</h3>",
                    "<tr><th scope=\"row\">Query</th><td><code>{&quot;account&quot;:&quot;alice@contoso.com&quot;,&quot;action&quot;:&quot;print&quot;}</code></td></tr>",
                    "<tr><th scope=\"row\">Setting</th><td>printBlocked</td></tr>",
                ], ["role=\"alert\""]
            ),
            (
                "action=print&account=dave%40contoso.com&decide=1",
                [
                    "<h3 id=\"decision\" class=\"allow\">Allowed</h3>",
                    "<tr><th scope=\"row\">Setting</th><td>printBlocked</td></tr>",
                    "<tr><th scope=\"row\">Source</th><td>app protection policy settings, &quot;Printing Org data&quot;</td></tr>",
                ], []
            ),
            (
                "action=print&account=nobody%40contoso.com&decide=1",
                [
                    "<h3 id=\"decision\" class=\"allow\">Allowed</h3>",
                    "<tr><th scope=\"row\">Setting</th><td>—</td></tr>",
                ], []
            ),
            (
                "action=launch&account=alice%40contoso.com&decide=1",
                [
                    "<h3 id=\"decision\" class=\"block\">Blocked (block)</h3>",
                    "<tr><th scope=\"row\">Setting</th><td>periodOfflineBeforeWipeIsEnforced</td></tr>",
                    "<tr><th scope=\"row\">Source</th><td></td></tr>",
                ], []
            ),
            (
                "action=print&decide=1",
                [
                    "<p role=\"alert\" class=\"block\">The query was refused: action print needs the field &#39;account&#39; (or &#39;accounts&#39; for a view of several accounts)</p>"
                ], ["id=\"answer\"", "line 1", "column"]
            ),
            (
                "action=saveTo&owner=alice%40contoso.com&decide=1",
                ["<p role=\"alert\" class=\"block\">saveTo needs Location</p>"], ["id=\"answer\""]
            ),
            (
                "action=copyOut&owner=alice%40contoso.com&length=-1&decide=1",
                ["<p role=\"alert\" class=\"block\">Length must be a whole number, zero or more</p>"], []
            ),
        ] as [(String, [String], [String])])
    func whatIf(query: String, shown: [String], absent: [String]) async throws {
        let fixture = try await ServiceFixture.make()
        try await fixture.application().test(.router) { client in
            let html = try await Self.view(client, fixture, "/console/views/whatif?\(query)")
            for text in shown { #expect(html.contains(text), "\(text) in \(html)") }
            for text in absent { #expect(!html.contains(text), "no \(text) in \(html)") }
        }
    }

    /// The what-if form is read from the query schema: an action per `oneOf` entry with an
    /// `action` constant, required fields first, each field's kind from its `$ref`, `enum` (of
    /// strings only) or `type`.
    @Test("the what-if form reads each action, its fields, their kinds and help from the query schema")
    func whatIfSchema() throws {
        let document = #"""
            {"components": {"schemas": {
              "Query": {"oneOf": [
                {"$ref": "#/components/schemas/A"}, {"$ref": "#/components/schemas/Missing"},
                {"$ref": "#/components/schemas/NoConst"}, {"$ref": "#/components/schemas/B"}, {"type": "object"}]},
              "A": {"description": "Ask \"A\".", "required": ["i", "action", "b"], "properties": {
                "action": {"const": "a"},
                "i": {"enum": ["p", "q"], "description": "I \u00e9."},
                "b": {"type": ["integer", "null"]},
                "c": {"enum": ["x", null], "type": ["string", "null"]},
                "d": {"$ref": "#/components/schemas/AccountList"}, "dd": {"$ref": "#/components/schemas/Account"},
                "e": {"type": "boolean"}, "f": {"type": "array"}, "g": {}, "h": {"$ref": "#/components/schemas/LaunchFacts"}}},
              "NoConst": {"properties": {"action": {"type": "string"}}},
              "B": {"required": ["x", 3], "properties": {"action": {"const": "b"}, "x": {"type": "string"}}}
            }}}
            """#
        let form = WhatIfForm(openAPI: Array(document.utf8))
        #expect(form.actions.map(\.name) == ["a", "b"])
        #expect(form.actions.map(\.description) == ["Ask \"A\".", ""])
        let fields = try #require(form.action(named: "a")).fields
        #expect(fields.map(\.name) == ["b", "i", "c", "d", "dd", "e", "f", "g", "h"])
        #expect(
            fields.map(\.kind) == [
                .number, .choice(["p", "q"]), .text, .accounts, .account, .flag, .list, .text, .object,
            ])
        #expect(fields.map(\.required) == [true, true, false, false, false, false, false, false, false])
        #expect(fields.map(\.help) == [nil, "I é.", nil, nil, nil, nil, nil, nil, nil])
        #expect(try #require(form.action(named: "b")).fields.map(\.required) == [false], "a list not all names")
        #expect(WhatIfForm(openAPI: Array("[]".utf8)).actions.isEmpty)
        #expect(WhatIfForm(openAPI: Array("{".utf8)).actions.isEmpty)
    }

    @Test("the what-if form of the served document: every action, each field as its kind asks")
    func whatIfServedForm() throws {
        let form = WhatIfForm.served
        #expect(form.actions.map(\.name) == DecisionAction.allCases.map(\.rawValue))
        let launch = try #require(form.action(named: "launch")).fields
        #expect(launch.map(\.name) == ["account", "facts", "missingFacts", "now"])
        #expect(launch.map(\.kind) == [.account, .object, .choice(["strict", "ignore"]), .text])
        #expect(launch.map(\.required) == [true, false, false, false])
        let share = try #require(form.action(named: "share")).fields
        #expect(share.map(\.name) == ["targets", "owner", "owners"])
        #expect(share.map(\.kind) == [.list, .account, .accounts])
        #expect(share.first?.help == "App ids, URL schemes or package ids: 1 to 1,000.")
        let copyOut = try #require(form.action(named: "copyOut")).fields
        #expect(copyOut.map(\.kind) == [.flag, .number, .account, .accounts])
        #expect(copyOut.map(\.required) == [true, false, false, false])
        #expect(form.actions.allSatisfy { !$0.description.isEmpty })
    }

    @Test(
        "what-if draws every field of the action picked as its kind asks, with its help and whether it is required",
        arguments: DecisionAction.allCases.map(\.rawValue))
    func whatIfFields(action: String) async throws {
        let fixture = try await ServiceFixture.make()
        let chosen = try #require(WhatIfForm.served.action(named: action))
        try await fixture.application().test(.router) { client in
            let html = try await Self.view(client, fixture, "/console/views/whatif?action=\(action)")
            #expect(html.contains("<option value=\"\(action)\" selected>\(action)</option>"))
            #expect(
                html.contains("<p class=\"hint\">\(Self.escaped(chosen.description)) The fields are those"), "\(html)")
            for field in chosen.fields {
                let label =
                    "<label title=\"\(Self.escaped(field.help ?? ""))\">\(WhatIfForm.label(field.name))"
                    + (field.required ? " (required)" : "") + "\n"
                #expect(html.contains(label), "\(label) in \(html)")
                let control: String
                switch field.kind {
                case .choice(let values):
                    control =
                        "<select name=\"\(field.name)\"><option value=\"\" selected>—</option>"
                        + values.map { "<option value=\"\($0)\">\($0)</option>" }.joined() + "</select>"
                case .flag:
                    control =
                        "<select name=\"\(field.name)\"><option value=\"\" selected>—</option><option value=\"true\">yes</option><option value=\"false\">no</option></select>"
                case .object:
                    control = "<textarea name=\"\(field.name)\" rows=\"3\" cols=\"48\" spellcheck=\"false\"></textarea>"
                case .account, .accounts, .list, .number, .text:
                    control =
                        "<input name=\"\(field.name)\" value=\"\" placeholder=\"\(field.kind.placeholder)\" autocomplete=\"off\">"
                }
                #expect(html.contains(control), "\(control) in \(html)")
            }
        }
    }

    @Test(
        "what-if sends the query the form's values make: lists split, flags and numbers typed, facts as a JSON object, keys sorted",
        arguments: [
            (
                "share", [("owner", "alice@contoso.com"), ("targets", " com.a , ,com.b")],
                #"{"action":"share","owner":"alice@contoso.com","targets":["com.a","com.b"]}"#
            ),
            (
                "copyOut", [("owner", " alice@contoso.com "), ("destinationManaged", "true"), ("length", "12")],
                #"{"action":"copyOut","destinationManaged":true,"length":12,"owner":"alice@contoso.com"}"#
            ),
            (
                "launch",
                [
                    ("account", "alice@contoso.com"),
                    (
                        "facts",
                        #"{"pinFailures": 2, "jailbroken": false, "osVersion": "17.4", "deviceModel": "x/y é \"<b>\" \u2028"}"#
                    ),
                ],
                #"{"account":"alice@contoso.com","action":"launch","facts":{"deviceModel":"x/y é \"<b>\" "#
                    + "\u{2028}" + #"","jailbroken":false,"osVersion":"17.4","pinFailures":2}}"#
            ),
            // A member typed twice: the first is sent, as JSONDecoder reads an object (the
            // form read facts with JSONSerialization, which kept the last, until issue 49).
            (
                "launch", [("account", "alice@contoso.com"), ("facts", #"{"pinFailures": 1, "pinFailures": 7}"#)],
                #"{"account":"alice@contoso.com","action":"launch","facts":{"pinFailures":1}}"#
            ),
            (
                "openURL", [("account", "alice@contoso.com"), ("url", "https://contoso.com/a?b=c")],
                #"{"account":"alice@contoso.com","action":"openURL","url":"https://contoso.com/a?b=c"}"#
            ),
        ] as [(String, [(String, String)], String)])
    func whatIfQuery(action: String, values: [(String, String)], line: String) async throws {
        let fixture = try await ServiceFixture.make()
        let parameters = values.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)" }
        try await fixture.application().test(.router) { client in
            let html = try await Self.view(
                client, fixture, "/console/views/whatif?action=\(action)&\(parameters.joined(separator: "&"))&decide=1")
            #expect(
                html.contains("<tr><th scope=\"row\">Query</th><td><code>\(Self.escaped(line))</code></td></tr>"),
                "\(html)")
        }
    }

    @Test(
        "an account's grid: a section a platform, a row an action, each cell its verdict, reason, setting, rule and query",
        arguments: [EvaluationContext(platform: .ios), EvaluationContext()])
    func grid(context: EvaluationContext) async throws {
        let fixture = try await ServiceFixture.make(context: context)
        try await fixture.application().test(.router) { client in
            let html = try await Self.view(client, fixture, "/console/views/accounts/bob%40contoso.com/grid")
            let answer = try object(
                try await client.execute(
                    uri: "/v1/accounts/bob%40contoso.com/grid", method: .get, headers: fixture.auth(.read)))
            #expect(html.hasPrefix("<h2>Decision grid: bob@contoso.com</h2>"))
            #expect(
                html.contains(
                    "Revision <code>\(fixture.engine.bundleInForce!.revision)</code> · event \(answer["eventId"]!)."))
            #expect(html.contains("<a href=\"#/accounts/bob@contoso.com\">Back to the account</a>"))
            let platforms = try #require(answer["platforms"] as? [[String: Any]])
            var cells = 0
            for (index, platform) in platforms.enumerated() {
                let title = "On \(platform["platform"] as? String ?? "any platform")"
                #expect(html.contains("<h3 id=\"grid-\(index)\">\(title)"), "\(title) in \(html)")
                for row in platform["rows"] as? [[String: Any]] ?? [] {
                    let action = try #require(row["action"] as? String)
                    #expect(
                        html.contains(
                            "<tr data-row=\"\(action)\"><th scope=\"row\">\(Self.escaped(row["label"] as? String ?? ""))</th>"
                        ))
                    for cell in row["cells"] as? [[String: Any]] ?? [] {
                        let allowed = try #require(cell["allowed"] as? Bool)
                        let query = try #require(cell["query"] as? [String: Any])
                        let required = action == "account" && query["action"] as? String == "encryptionRequired"
                        let verdict =
                            required ? (allowed ? "required" : "not required") : (allowed ? "allowed" : "blocked")
                        let column = Self.escaped(cell["column"] as? String ?? "")
                        let policies = (cell["policies"] as? [String] ?? []).joined(separator: ", ")
                        let data = try JSONSerialization.data(
                            withJSONObject: query, options: [.sortedKeys, .withoutEscapingSlashes])
                        let drawn =
                            "<details class=\"cell \(allowed != required ? "allow" : "block")\" data-column=\"\(column)\"><summary><span class=\"column\">\(column)</span> <span class=\"verdict\">\(verdict)</span></summary><div class=\"explain\"><p class=\"reason\">\(Self.escaped(cell["reason"] as? String ?? ""))</p><p>Setting: \(Self.escaped(cell["setting"] as? String ?? "—")) · from \(Self.escaped(policies))</p><p>Rule: \(Self.escaped(cell["rule"] as? String ?? "—")) <span class=\"badge\">\(Self.escaped(cell["basis"] as? String ?? ""))</span></p><p><code>\(Self.escaped(String(decoding: data, as: UTF8.self)))</code></p></div></details>"
                        #expect(html.contains(drawn), "\(drawn) in \(html)")
                        cells += 1
                    }
                }
            }
            #expect(cells >= 37)
        }
    }

    @Test(
        "a group's grid: how many members are counted, each cell's summary, the members it blocks and why",
        arguments: ["grp-finance", "grp-all-staff"])
    func groupGrid(group: String) async throws {
        let fixture = try await ServiceFixture.make()
        try await fixture.application().test(.router) { client in
            let html = try await Self.view(client, fixture, "/console/views/groups/\(group)/grid")
            let answer = try object(
                try await client.execute(uri: "/v1/groups/\(group)/grid", method: .get, headers: fixture.auth(.read)))
            let members = try #require(answer["members"] as? Int)
            #expect(html.hasPrefix("<h2>Decision grid: group \(group)</h2>"))
            #expect(
                html.contains(
                    "Revision <code>\(fixture.engine.bundleInForce!.revision)</code> · event \(answer["eventId"]!) · \(members) of \(members) members counted. A cell"
                ), "\(html)")
            var kinds = Set<String>()
            for (index, platform) in (answer["platforms"] as? [[String: Any]] ?? []).enumerated() {
                #expect(
                    html.contains(
                        "<h3 id=\"group-grid-\(index)\">On \(platform["platform"] as? String ?? "any platform")</h3>"))
                for row in platform["rows"] as? [[String: Any]] ?? [] {
                    for cell in row["cells"] as? [[String: Any]] ?? [] {
                        let (allowed, blocked) = (cell["allowed"] as? Int ?? -1, cell["blocked"] as? Int ?? -1)
                        let required = (cell["query"] as? [String: Any])?["action"] as? String == "encryptionRequired"
                        let (yes, no) = required ? ("require it", "do not") : ("allowed", "blocked")
                        let summary =
                            blocked == 0
                            ? "all \(yes)" : allowed == 0 ? "all \(no)" : "\(allowed) \(yes), \(blocked) \(no)"
                        let kind =
                            blocked == 0
                            ? (required ? "block" : "allow") : allowed == 0 ? (required ? "allow" : "block") : "mixed"
                        kinds.insert(kind)
                        let column = Self.escaped(cell["column"] as? String ?? "")
                        let blockedMembers = cell["blockedMembers"] as? [String] ?? []
                        let reasons = (cell["reasons"] as? [[String: Any]] ?? []).map {
                            "<li class=\"reason\">\($0["members"]!) × \(Self.escaped($0["reason"] as? String ?? ""))</li>"
                        }.joined()
                        let drawn =
                            "<details class=\"cell \(kind)\" data-column=\"\(column)\"><summary><span class=\"column\">\(column)</span> <span class=\"verdict\">\(summary)</span></summary><div class=\"explain\">"
                            + (blockedMembers.isEmpty
                                ? "" : "<p>Blocked: \(blockedMembers.joined(separator: ", "))</p>")
                            + "<ul>\(reasons)</ul></div></details>"
                        #expect(html.contains(drawn), "\(drawn) in \(html)")
                    }
                }
            }
            #expect(kinds.contains("mixed") || group == "grp-finance")
        }
    }

    enum DiffCase: String, CaseIterable, CustomTestStringConvertible {
        /// The older revision against the one in force, by an admin: it can be put back.
        case olderByAdmin
        /// The same by a read token: no button.
        case olderByReader
        /// The newer against the older (in force) one: nothing to roll back to.
        case backwards
        var testDescription: String { rawValue }
    }

    @Test(
        "the diff view: files added, setting changes, decisions that flip, and the rollback it offers",
        arguments: DiffCase.allCases)
    func diff(_ scenario: DiffCase) async throws {
        let fixture = try await ServiceFixture.make { $0.bundleDirectory = nil }
        let first = try #require(fixture.engine.bundleInForce?.revision)
        let staff = fixture.bundle + "/all-staff.json"
        try String(contentsOfFile: staff, encoding: .utf8)
            .replacingOccurrences(of: #""printBlocked": false"#, with: #""printBlocked": true"#)
            .write(toFile: staff, atomically: true, encoding: .utf8)
        try SignedBundleServiceTests.policy(printBlocked: true).write(
            toFile: fixture.bundle + "/extra.json", atomically: true, encoding: .utf8)
        let second = try await fixture.engine.apply(bundleDirectory: fixture.bundle).bundle.revision
        let (from, to) = scenario == .backwards ? (second, first) : (first, second)
        try await fixture.application().test(.router) { client in
            let html = try await Self.view(
                client, fixture, "/console/views/diff?from=\(from)&to=\(to)", scenario == .olderByAdmin ? .admin : .read
            )
            #expect(
                html.contains(
                    "<h3 id=\"diff-settings\">Settings that change: <code>\(from)</code> → <code>\(to)</code></h3>"),
                "\(html)")
            #expect(
                html.contains(
                    scenario == .backwards ? "<p>Files removed: extra.json</p>" : "<p>Files added: extra.json</p>"),
                "\(html)")
            #expect(!html.contains(scenario == .backwards ? "Files added" : "Files removed"))
            #expect(html.contains("<option value=\"\(from)\" selected>"), "the older revision chosen: \(html)")
            let (before, after) = scenario == .backwards ? ("true", "false") : ("false", "true")
            #expect(
                html.contains(
                    "<tr><td>all-staff.json</td><td>Contoso All Staff (iOS)</td><td>printBlocked</td><td><code>\(before)</code></td><td><code>\(after)</code></td></tr>"
                ), "\(html)")
            #expect(
                html.contains("<td>extra.json</td><td>P</td><td>printBlocked</td><td><code>—</code></td>")
                    == (scenario != .backwards), "\(html)")
            let answer = try object(
                try await client.execute(
                    uri: "/v1/bundle/diff?from=\(from)&to=\(to)", method: .get, headers: fixture.auth(.read)))
            let decisions = try #require((answer["diff"] as? [String: Any])?["decisions"] as? [[String: Any]])
            #expect(!decisions.isEmpty)
            #expect(html.contains("<h3 id=\"diff-decisions\">Decisions that flip (\(decisions.count))</h3>"), "\(html)")
            for change in decisions {
                let (was, now) = (change["before"] as? [String: Any] ?? [:], change["after"] as? [String: Any] ?? [:])
                let row =
                    "<tr><td>\(change["account"]!)</td><td><code>\(Self.escaped(was["query"] as? String ?? ""))</code></td><td class=\"\(was["allowed"] as? Bool == true ? "allow" : "block")\">\(was["decision"]!)</td><td class=\"\(now["allowed"] as? Bool == true ? "allow" : "block")\">\(now["decision"]!)</td><td>\(Self.escaped(now["reason"] as? String ?? ""))</td></tr>"
                #expect(html.contains(row), "\(row) in \(html)")
            }
            #expect(!html.contains("The first 500 are shown"))
            let offered = html.contains("data-action=\"rollback\"")
            #expect(offered == (scenario == .olderByAdmin), "\(html)")
            if offered {
                let button = try #require(Self.between(html, "data-revision=\"\(first)\"", "</button>"))
                #expect(button.contains("Put revision \(first.prefix(12)) (first applied "), "\(button)")
                #expect(!html.contains("undoes-rollback"))
            }
        }
    }

    @Test(
        "the events view: a token that may follow events gets the feed from the newest event, any other is told why not",
        arguments: [([TokenScope.read, .events], true), ([.admin], true), ([.read], false)])
    func events(scopes: [TokenScope], streams: Bool) async throws {
        let fixture = try await ServiceFixture.make()
        let bearer = try await fixture.engine.createToken(scopes: Set(scopes)).bearer
        try await fixture.application().test(.router) { client in
            let response = try await client.execute(
                uri: "/console/views/events", method: .get, headers: [.authorization: "Bearer \(bearer)"])
            #expect(response.status == .ok)
            let html = response.body.text
            let newest = fixture.engine.lastEventID
            #expect(
                html.contains(
                    "<p id=\"events-status\" role=\"status\" class=\"hint\" data-event-id=\"\(newest)\" data-history-from=\"\(max(0, newest - 50))\">Connecting…</p>"
                ) == streams, "\(html)")
            #expect(html.contains("id=\"events-filter\"") == streams)
            #expect(html.contains("this token cannot follow events.") == !streams)
        }
    }

    /// Under `incumbent` precedence a policy that reached an account after another is set aside:
    /// the account's view says which, and over which (each entry as the policy report's JSON
    /// gives it, `{"incumbents": [...], "policy": ...}`).
    @Test("an account's view names the policies set aside under incumbent precedence")
    func setAside() async throws {
        let directory = try TemporaryDirectory()
        let clock = Mutex(Date(timeIntervalSince1970: 1_700_000_000))
        let engine = try await CustodyEngine.open(
            CustodyConfiguration(
                state: .path(directory.file("state.sqlite")), masterKey: .keyFile(path: directory.file("master.key")),
                context: EvaluationContext(platform: .ios), precedence: .incumbent,
                now: { clock.withLock { $0 } }))
        for (index, policies) in [["First"], ["First", "Second"]].enumerated() {
            let path = directory.file("bundle\(index)")
            try writePrecedenceBundle(policies, accounts: ["a"], to: path)
            clock.withLock { $0 = $0.addingTimeInterval(60) }
            try await engine.apply(bundleDirectory: path)
        }
        let fixture = await ServiceFixture(
            directory: directory, engine: engine, bundle: directory.file("bundle1"),
            tokens: [.read: try engine.createToken(scopes: [.read]).bearer],
            configuration: CustodyServerConfiguration(bundleDirectory: nil, watchInterval: .milliseconds(20)))
        try await fixture.application().test(.router) { client in
            let html = try await Self.view(client, fixture, "/console/views/accounts/a%40contoso.com")
            #expect(html.contains("<li>First <span class=\"badge\">"), "\(html)")
            #expect(
                html.contains(
                    "<p class=\"hint\">Set aside (a policy that reached it first applies): {&quot;incumbents&quot;:[&quot;First&quot;],&quot;policy&quot;:&quot;Second&quot;}</p>"
                ), "\(html)")
            #expect(
                html.contains(
                    "<tr data-setting=\"printBlocked\"><td>printBlocked</td><td>false</td><td>First</td></tr>"),
                "\(html)")
        }
    }
}
