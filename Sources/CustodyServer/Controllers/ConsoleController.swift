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

    /// The templates, parsed once.
    static let library: MustacheLibrary = {
        var library = MustacheLibrary()
        let templates: [(String, [UInt8])] = [
            ("overview", PackageResources.overview_mustache), ("accounts", PackageResources.accounts_mustache),
            ("account", PackageResources.account_mustache), ("whatif", PackageResources.whatif_mustache),
        ]
        for (name, bytes) in templates {
            // Built into the binary and parsed by a test: a template that does not parse is a bug.
            try! library.register(String(decoding: bytes, as: UTF8.self), named: name)
        }
        return library
    }()

    /// What every console answer carries: no script but the console's own, nothing from another
    /// host, never framed, no referrer, no sniffing.
    static let securityHeaders: HTTPFields = [
        HTTPField.Name("Content-Security-Policy")!:
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'",
        HTTPField.Name("X-Content-Type-Options")!: "nosniff",
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
    }

    static func asset(_ bytes: [UInt8], type: String) -> Response {
        var headers = securityHeaders
        headers[.contentType] = type
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    static func render(_ template: String, _ object: [String: Any]) -> Response {
        asset(Array((library.render(object, withTemplate: template) ?? "").utf8), type: "text/html; charset=utf-8")
    }

    // MARK: Views

    /// The bundle in force (GET /v1/bundle), readiness (/readyz), replicas (GET /v1/fleet) and
    /// the last events (GET /v1/events).
    @Sendable func overview(_ request: Request, context: CustodyRequestContext) async throws -> Response {
        _ = try QueryParameters(request.uri, accepting: [])
        var object: [String: Any] = [:]
        if let (inForce, snapshot, _) = engine.policyInForce {
            var bundle: [String: Any] = [
                "revision": inForce.revision, "source": inForce.source,
                "appliedAt": inForce.appliedAt.map(answerTime) ?? "never (a one-off policy)",
                "signers": inForce.provenance.signers.joined(separator: ", "),
                "policies":
                    "\(snapshot.bundle.protectionPolicies.count) app protection policies, \(snapshot.bundle.tenant.accounts.count) accounts",
            ]
            if let by = inForce.provenance.appliedBy { bundle["appliedBy"] = by }
            if let sequence = inForce.provenance.sequence { bundle["sequence"] = String(sequence) }
            object["bundle"] = bundle
        }
        var problems: [String] = []
        if engine.bundleInForce == nil { problems.append("no bundle is in force") }
        let replica = engine.replicaStatus
        if replica.isStale() { problems.append("stale: \(replica.divergence ?? replica.problem ?? "not current")") }
        object["problems"] = problems
        object["readiness"] = problems.isEmpty ? "Ready" : "Not ready"
        object["readyClass"] = problems.isEmpty ? "allow" : "block"
        object["warnings"] =
            engine.lastBundleRejection.map { ["the last bundle offered was refused: \($0.message)"] } ?? []
        let (fleet, events) = try await StateExecutor.run { () throws(CustodyError) in
            let newest = engine.lastEventID
            return (try engine.fleetStatus(), try engine.events(after: max(0, newest - 10)).events)
        }
        object["replicas"] = fleet.replicas.map { replica -> [String: Any] in
            [
                "id": replica.record.id, "revision": replica.record.revision ?? "-",
                "lastContact": answerTime(replica.record.lastContact),
                "state": replica.isStale ? "stale" : replica.isBehind ? "behind" : "current",
            ]
        }
        // An event can name every account of the tenant (a first policyChanged): its start is
        // shown, and its size, never the whole of it.
        object["events"] = events.reversed().map { event -> [String: Any] in
            let limit = 240
            let body =
                event.body.count <= limit
                ? String(decoding: event.body, as: UTF8.self)
                : String(decoding: event.body.prefix(limit), as: UTF8.self) + "… (\(event.body.count) bytes)"
            return ["name": event.name, "at": answerTime(event.at), "body": body]
        }
        return Self.render("overview", object)
    }

    /// Accounts of the tenant in force matching `q` (GET /v1/accounts).
    @Sendable func accounts(_ request: Request, context: CustodyRequestContext) async throws -> Response {
        let parameters = try QueryParameters(request.uri, accepting: ["q"])
        let query = parameters["q"] ?? ""
        let (matches, total) = try engine.searchAccounts(query, limit: 100)
        return Self.render(
            "accounts",
            [
                "query": query, "count": matches.count, "total": total,
                "accounts": matches.map { account -> [String: Any] in
                    let name = account.id.upn ?? account.id.oid ?? account.id.description
                    return [
                        "upn": account.id.upn ?? "-", "oid": account.id.oid ?? "-",
                        "groups": account.groups.joined(separator: ", "),
                        "link": name.addingPercentEncoding(
                            withAllowedCharacters: .urlPathAllowed.subtracting(["/", "?", "#", "%"])) ?? name,
                    ]
                },
            ])
    }

    /// An account's effective policy per platform, each setting with its sources and the
    /// conflicts (GET /v1/accounts/{account}/policy: the same answer, rendered).
    @Sendable func account(_ request: Request, context: CustodyRequestContext) async throws -> Response {
        _ = try QueryParameters(request.uri, accepting: [])
        let account = try PolicyController.account(context)
        let snapshots = try engine.policyReport(for: account)
        let bytes = PolicyReport.json(account: account, snapshots: snapshots)
        let parsed = try JSONSerialization.jsonObject(with: Data(bytes))
        let reports = (parsed as? [[String: Any]]) ?? [(parsed as? [String: Any]) ?? [:]]
        let first = reports.first?["account"] as? [String: Any] ?? [:]
        return Self.render(
            "account",
            [
                "name": (first["upn"] as? String) ?? (first["oid"] as? String) ?? account.description,
                "oid": (first["oid"] as? String) ?? "-",
                "groups": (first["groups"] as? [String] ?? []).joined(separator: ", "),
                "reports": reports.map(Self.report),
            ])
    }

    static func report(_ report: [String: Any]) -> [String: Any] {
        let settings = (report["settings"] as? [String: Any] ?? [:]).sorted { $0.key < $1.key }.map {
            name, value -> [String: Any] in
            let setting = value as? [String: Any] ?? [:]
            return [
                "name": name, "value": text(setting["value"]),
                "sources": (setting["sources"] as? [String] ?? []).joined(separator: ", "),
            ]
        }
        let conflicts = (report["conflicts"] as? [String: Any])
        let conflicting = (conflicts?["settings"] as? [[String: Any]] ?? []).map { conflict -> [String: Any] in
            [
                "setting": conflict["setting"] as? String ?? "", "value": text(conflict["value"]),
                "values": (conflict["values"] as? [[String: Any]] ?? []).map {
                    "\($0["policy"] as? String ?? ""): \(text($0["value"]))"
                }.joined(separator: "; "),
            ]
        }
        let managed = report["managed"] as? Bool ?? false
        let allowed = (report["accountAllowed"] as? [String: Any])?["reason"] as? String ?? ""
        var rendered: [String: Any] = [
            "platform": (report["context"] as? [String: Any])?["platform"] as? String ?? "any",
            "managedClass": managed ? "allow" : "block",
            "managedText": (managed ? "Managed" : "Not managed") + (allowed.isEmpty ? "" : ": \(allowed)"),
            "policies": (report["policies"] as? [[String: Any]] ?? []).map {
                ["name": $0["name"] as? String ?? "", "type": $0["type"] as? String ?? ""]
            },
            "settings": settings, "conflicts": conflicting, "hasConflicts": !conflicting.isEmpty,
        ]
        let setAside = ((conflicts?["setAside"] as? [Any]) ?? []).map { text($0) }
        if !setAside.isEmpty { rendered["setAside"] = setAside.joined(separator: "; ") }
        return rendered
    }

    /// A JSON value as a person reads it: a string as it is, a list joined, anything else as JSON.
    static func text(_ value: Any?) -> String {
        switch value {
        case nil, is NSNull: return "—"
        case let string as String: return string
        case let list as [Any]: return list.isEmpty ? "none" : list.map { text($0) }.joined(separator: ", ")
        case let number as NSNumber:
            // JSONSerialization gives true and false as NSNumbers of type "c".
            return String(cString: number.objCType) == "c" ? (number.boolValue ? "true" : "false") : "\(number)"
        default:
            let data = try? JSONSerialization.data(withJSONObject: value!, options: [.sortedKeys, .fragmentsAllowed])
            return data.map { String(decoding: $0, as: UTF8.self) } ?? "\(value!)"
        }
    }

    /// One query, decided as POST /v1/decisions decides it, with the rule behind the answer.
    @Sendable func whatIf(_ request: Request, context: CustodyRequestContext) async throws -> Response {
        let fields = ["account", "owner", "location", "locationAccount", "target"]
        let parameters = try QueryParameters(request.uri, accepting: ["action", "platform"] + fields)
        let action = parameters["action"]
        var object: [String: Any] = [
            "actions": DecisionAction.allCases.map { ["name": $0.rawValue, "selected": $0.rawValue == action] },
            "ios": parameters["platform"] == "ios", "android": parameters["platform"] == "android",
        ]
        for field in fields { object[field] = parameters[field] ?? "" }
        guard let action else { return Self.render("whatif", object) }
        var query: [String: String] = ["action": action]
        for field in fields { if let value = parameters[field], !value.isEmpty { query[field] = value } }
        let line = try JSONSerialization.data(withJSONObject: query, options: [.sortedKeys, .withoutEscapingSlashes])
        let evaluation = try parameters.evaluationContext(over: engine.context)
        var session = try engine.decisionSession(
            context: evaluation,
            options: DecisionStream.Options(
                explain: true, currentTime: { .seconds(Date().timeIntervalSince1970) }))
        defer { engine.end(session) }
        var output: [UInt8] = []
        Array(line).withUnsafeBytes { session.answer(line: $0, into: &output) }
        let answer = try JSONSerialization.jsonObject(with: Data(output)) as? [String: Any] ?? [:]
        object["query"] = String(decoding: line, as: UTF8.self)
        if let error = answer["error"] as? String {
            object["error"] = error
        } else {
            let allowed = answer["allowed"] as? Bool ?? false
            object["answer"] = [
                "query": String(decoding: line, as: UTF8.self), "verdict": allowed ? "Allowed" : "Blocked",
                "verdictClass": allowed ? "allow" : "block", "reason": answer["reason"] as? String ?? "",
                "setting": answer["setting"] as? String ?? "—", "rule": answer["rule"] as? String ?? "—",
                "basis": answer["basis"] as? String ?? "", "source": answer["source"] as? String ?? "",
            ]
        }
        return Self.render("whatif", object)
    }
}
