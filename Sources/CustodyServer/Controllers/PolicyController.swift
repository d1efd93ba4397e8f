import Custody
import CustodyPolicy
import CustodyStore
import Foundation
import HTTPTypes
import Hummingbird

/// The policy in force: an account's effective policy and app configuration, the bundle, and
/// `PUT /v1/bundle`.
struct PolicyController {
    let engine: CustodyEngine
    let limits: CustodyServerConfiguration.Limits

    func addReadRoutes(to group: RouterGroup<CustodyRequestContext>) {
        group.get("accounts/:account/policy", use: policy)
        group.get("accounts/:account/configuration", use: configuration)
        group.get("accounts/:account/grid", use: grid)
        group.get("accounts/:account/status", use: status)
        group.get("groups/:group/grid", use: groupGrid)
        group.get("bundle", use: bundle)
        group.get("accounts", use: accounts)
    }

    /// The tenant's accounts whose UPN, object id or display name contains `q` (at most 256
    /// bytes; every account without it), at most `limit` (1–1000, default 100) from the account
    /// after `after` (the `next` of the page before), how many match and how many the tenant has.
    @Sendable func accounts(_ request: Request, context: CustodyRequestContext) async throws -> AccountsAnswer {
        let parameters = try QueryParameters(request.uri, accepting: ["q", "limit", "after"])
        let limit = try parameters.wholeNumber("limit", in: 1...1_000) ?? 100
        let query = try parameters.searchText()
        let search = try engine.accountPage(query, after: parameters["after"], limit: limit)
        return AccountsAnswer(
            accounts: search.accounts.map {
                AccountsAnswer.Account(oid: $0.id.oid, upn: $0.id.upn, displayName: $0.displayName, groups: $0.groups)
            },
            matched: search.matched, total: search.total, next: search.next)
    }

    func addAdminRoutes(to group: RouterGroup<CustodyRequestContext>) {
        group.put("bundle", use: putBundle)
    }

    /// The effective policy of an account, each setting with its sources (`custody policy show`).
    @Sendable func policy(_ request: Request, context: CustodyRequestContext) async throws -> Response {
        try await Freshness.require(request, engine: engine)
        let account = try Self.account(context)
        let parameters = try QueryParameters(request.uri, accepting: QueryParameters.context)
        let snapshots = try engine.policyReport(
            for: account, context: try parameters.evaluationContext(over: engine.context))
        // A policy is for one platform: with none named for a bundle of both, one report each.
        return json(PolicyReport.json(account: account, snapshots: snapshots))
    }

    /// Every decision about an account's data, as a grid: actions by locations and target apps
    /// (`DecisionGrid`), each cell the answer `POST /v1/decisions` gives its query.
    @Sendable func grid(_ request: Request, context: CustodyRequestContext) async throws -> LibraryAnswer<DecisionGrid>
    {
        try await Freshness.require(request, engine: engine)
        let account = try Self.account(context)
        let parameters = try QueryParameters(request.uri, accepting: QueryParameters.context)
        return LibraryAnswer(
            try engine.decisionGrid(for: account, context: try parameters.evaluationContext(over: engine.context))
        )
    }

    /// The grid over a group's members (`GroupGrid`): each cell counted, with the members it
    /// blocks and why.
    @Sendable func groupGrid(_ request: Request, context: CustodyRequestContext) async throws -> LibraryAnswer<
        GroupGrid
    > {
        try await Freshness.require(request, engine: engine)
        let group = try Self.group(context)
        let parameters = try QueryParameters(request.uri, accepting: QueryParameters.context)
        let evaluation = try parameters.evaluationContext(over: engine.context)
        return LibraryAnswer(
            try await StateExecutor.run { () throws(CustodyError) in
                try engine.groupGrid(for: group, context: evaluation)
            })
    }

    /// The group a path names (an Entra group's object id, as the tenant lists it),
    /// percent-decoded: 1 to 256 bytes, no control or bidirectional-formatting character.
    static func group(_ context: CustodyRequestContext) throws -> String {
        guard let raw = context.parameters.get("group"), let decoded = raw.removingPercentEncoding,
            (1...256).contains(decoded.utf8.count),
            !decoded.unicodeScalars.contains(where: {
                isUnprintable($0) || $0.properties.generalCategory == .control
                    || $0.properties.generalCategory == .format
            })
        else {
            throw ServiceError.badParameter(
                "group",
                "must be a group's object id: 1 to 256 bytes, percent-encoded, no control or formatting character")
        }
        return decoded
    }

    /// What the state knows of an account: key versions per identifier, wipes, check-ins and
    /// offline grace now (`AccountStatus`). Read from the state: a 503 when it cannot be.
    @Sendable func status(_ request: Request, context: CustodyRequestContext) async throws -> LibraryAnswer<
        AccountStatus
    > {
        _ = try QueryParameters(request.uri, accepting: [])
        let account = try Self.account(context)
        return LibraryAnswer(try await StateExecutor.run { try await engine.accountStatus(for: account) })
    }

    /// The app configuration an account receives (`custody config show`); `null` when it is
    /// unmanaged.
    @Sendable func configuration(_ request: Request, context: CustodyRequestContext) async throws -> Response {
        try await Freshness.require(request, engine: engine)
        let account = try Self.account(context)
        let parameters = try QueryParameters(request.uri, accepting: QueryParameters.context)
        let configuration = try engine.appConfigurationReport(
            for: account, context: try parameters.evaluationContext(over: engine.context))
        return json(ConfigurationReport.json(configuration))
    }

    /// The bundle in force: its revision, when and where from it was applied, its files and
    /// its warnings.
    @Sendable func bundle(_ request: Request, context: CustodyRequestContext) async throws
        -> EditedResponse<BundleInForceAnswer>
    {
        _ = try QueryParameters(request.uri, accepting: [])
        // Answered from memory: a replica that cannot reach the state still says what it
        // decides with (its answers are marked stale).
        guard let policy = engine.policyInForce else {
            throw ServiceError(CustodyError(.noPolicy, "no policy"))
        }
        let inForce = policy.bundle, snapshot = policy.snapshot, version = policy.version
        let answer = BundleInForceAnswer(
            revision: inForce.revision, source: inForce.source, appliedAt: inForce.appliedAt.map(Self.format),
            sequence: inForce.provenance.sequence, signers: inForce.provenance.signers,
            appliedBy: inForce.provenance.appliedBy, version: version, eventId: engine.lastEventID,
            files: inForce.files.map { BundleInForceAnswer.File(name: $0.name, bytes: $0.bytes) },
            diagnostics: snapshot.bundle.warnings.map { namingFiles(in: $0.description, relativeTo: inForce.source) })
        return EditedResponse(
            headers: [.custodyRevision: inForce.revision, .eTag: "\"\(inForce.revision)\""], response: answer)
    }

    /// `{"files": {"tenant.json": "…", "policies.json": "…"}}`: each file's text; applied as
    /// `custody apply` applies a directory.
    @Sendable func putBundle(_ request: Request, context: CustodyRequestContext) async throws
        -> EditedResponse<BundleApplied>
    {
        _ = try QueryParameters(request.uri, accepting: [])
        let (bundleFiles, allowEmpty) = try await Self.bundleFiles(
            request, limit: limits.bodyBytes, takesAllowEmpty: true)
        let source = "PUT /v1/bundle (token \(context.identity?.id ?? "-"))"
        let result = try await StateExecutor.run {
            try await engine.apply(
                files: bundleFiles, source: source, allowingEmpty: allowEmpty,
                provenance: BundleProvenance(appliedBy: context.identity.map(\.operatorName)))
        }
        let answer = BundleApplied(
            revision: result.bundle.revision, unchanged: result.unchanged, eventId: engine.lastEventID,
            events: result.events.map(\.name))
        return EditedResponse(headers: [.custodyRevision: result.bundle.revision], response: answer)
    }

    /// `{"files": {"tenant.json": "…", …}}` (with `allowEmpty` where `takesAllowEmpty`): each
    /// file's text, the signature file beside them. Anything else is a 400 naming it.
    static func bundleFiles(_ request: Request, limit: Int, takesAllowEmpty: Bool) async throws -> (
        files: BundleFiles, allowEmpty: Bool
    ) {
        let body = try await request.body.collect(upTo: limit)
        let document: JSONDocument
        do {
            document = try JSONDocument(parsing: Array(buffer: body))
        } catch {
            let position = JSONText.lineAndColumn(ofOffset: error.offset, in: Array(buffer: body))
            throw ServiceError(
                .badRequest, .invalidJSON, error.message,
                details: ServiceError.Details(line: position.line, column: position.column))
        }
        let root = document.root
        guard root.kind == .object, let files = root["files"], files.kind == .object else {
            throw ServiceError(
                .badRequest, .invalidBundleRequest,
                #"the body must be {"files": {"tenant.json": "…", "<name>.json": "…"}}"#)
        }
        var seen = Set<String>()
        for member in root.members {
            guard member.key == "files" || (takesAllowEmpty && member.key == "allowEmpty") else {
                throw ServiceError(
                    .badRequest, .invalidBundleRequest,
                    "unknown member '\(member.key.escapingControlCharacters)' (it takes: files\(takesAllowEmpty ? ", allowEmpty" : ""))"
                )
            }
            // A member given twice is refused, never one of them taken: a proxy reading the
            // other would see another request.
            guard seen.insert(member.key).inserted else {
                throw ServiceError(.badRequest, .invalidBundleRequest, "the member '\(member.key)' is given twice")
            }
        }
        var allowEmpty = false
        if let flag = root["allowEmpty"] {
            guard let value = flag.bool else {
                throw ServiceError(.badRequest, .invalidBundleRequest, "allowEmpty must be true or false")
            }
            allowEmpty = value
        }
        var entries: [BundleFiles.Entry] = []
        var signature: [UInt8]?
        for member in files.members {
            guard let text = member.value.string else {
                throw ServiceError(
                    .badRequest, .invalidBundleRequest,
                    "the file '\(member.key)' must be given as a JSON string of its text")
            }
            // The signature file travels with the others; it is not an entry of the bundle.
            if member.key == BundleFiles.signatureName {
                guard signature == nil else {
                    throw ServiceError(
                        .badRequest, .invalidBundleRequest, "the file '\(member.key)' is given twice")
                }
                signature = Array(text.utf8)
                continue
            }
            entries.append(BundleFiles.Entry(name: member.key, bytes: Array(text.utf8)))
        }
        let bundleFiles: BundleFiles
        do {
            bundleFiles = try BundleFiles(entries: entries, signature: signature)
        } catch {
            throw ServiceError(.badRequest, .invalidBundleRequest, error.diagnostics.first?.message ?? "\(error)")
        }
        return (bundleFiles, allowEmpty)
    }

    /// The account a path names, percent-decoded (what `encodeURIComponent` sends), then
    /// checked as every identifier is.
    static func account(_ context: CustodyRequestContext) throws -> AccountID {
        guard let raw = context.parameters.get("account") else {
            throw ServiceError.badParameter("account", "the path names no account")
        }
        guard let decoded = raw.removingPercentEncoding else {
            throw ServiceError.badParameter("account", "the path segment is not valid percent-encoded UTF-8")
        }
        return try ServiceError.account(decoded, parameter: "account", naming: "an account")
    }

    static func format(_ date: Date) -> String {
        var style = Date.ISO8601FormatStyle()
        style.timeZone = .gmt
        return style.format(date)
    }
}

/// A JSON response.
func json(_ bytes: [UInt8], status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
    var headers = headers
    headers[.contentType] = "application/json"
    return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
}

extension CustodyEngine {
    /// `searchAccounts`, with an `after` that names no account of the tenant in force a 400
    /// naming the parameter.
    func accountPage(_ query: String, after: String?, limit: Int) throws -> AccountSearch {
        do throws(CustodyError) {
            return try searchAccounts(query, after: after, limit: limit)
        } catch {
            if error.code == .invalidArgument { throw ServiceError.badParameter("after", error.message) }
            throw error
        }
    }
}
