import Custody
import CustodyPolicy
import CustodyStore
import Foundation
import Hummingbird

/// The bundles a state applied, rollback and freezing, and every replica's status:
/// `/v1/bundle/history…`, `/v1/bundle/diff`, `/v1/bundle/rollback`, `/v1/bundle/freeze`,
/// `/v1/fleet`. Reading needs `read`; changing needs `admin`. Trusted keys are never changed
/// over HTTP: an admin token must not be able to make its own bundles trusted.
struct BundleController {
    let engine: CustodyEngine
    let limits: CustodyServerConfiguration.Limits
    /// The replays running now, with the console's.
    let replays: ReplayGate

    func addReadRoutes(to group: RouterGroup<CustodyRequestContext>) {
        group.get("bundle/history", use: history)
        group.get("bundle/history/:revision", use: kept)
        group.get("bundle/diff", use: diff)
        group.post("bundle/diff", use: diffCandidate)
        group.post("bundle/impact", use: impact)
        group.get("bundle/freeze", use: freeze)
        group.get("bundle/shadow", use: shadow)
        group.get("fleet", use: fleet)
    }

    func addAdminRoutes(to group: RouterGroup<CustodyRequestContext>) {
        group.post("bundle/rollback", use: rollback)
        group.post("bundle/freeze", use: putFreeze)
        group.delete("bundle/freeze", use: unfreeze)
        group.put("bundle/shadow", use: putShadow)
        group.delete("bundle/shadow", use: stopShadow)
    }

    /// Newest first; `limit` (1–1000, default 50).
    @Sendable func history(_ request: Request, context: CustodyRequestContext) async throws -> HistoryAnswer {
        let parameters = try QueryParameters(request.uri, accepting: ["limit"])
        let limit = try parameters.wholeNumber("limit", in: 1...1_000) ?? 50
        let records = try await StateExecutor.run { try await engine.bundleHistory(limit: limit) }
        return HistoryAnswer(entries: records.map(BundleRecordAnswer.init))
    }

    @Sendable func kept(_ request: Request, context: CustodyRequestContext) async throws -> KeptAnswer {
        _ = try QueryParameters(request.uri, accepting: [])
        let revision = try Self.revision(context.parameters.get("revision") ?? "", parameter: "revision")
        let stored = try await StateExecutor.run { try await engine.keptBundle(revision) }
        return KeptAnswer(bundle: KeptBundleAnswer(stored))
    }

    /// `to` (default: the revision in force) and `from` (default: the revision in force before
    /// it), each a kept revision or its first 8+ hex digits.
    @Sendable func diff(_ request: Request, context: CustodyRequestContext) async throws -> DiffAnswer {
        let parameters = try QueryParameters(request.uri, accepting: ["from", "to"])
        let from = try parameters["from"].map { try Self.revision($0, parameter: "from") }
        let to = try parameters["to"].map { try Self.revision($0, parameter: "to") }
        let diff = try await StateExecutor.run { try await engine.bundleDiff(from: from, to: to) }
        return DiffAnswer(diff: diff)
    }

    @Sendable func freeze(_ request: Request, context: CustodyRequestContext) async throws -> FreezeState {
        _ = try QueryParameters(request.uri, accepting: [])
        return FreezeState(freeze: FreezeAnswer(try await StateExecutor.run { try await engine.bundleFreeze() }))
    }

    /// What applying a candidate bundle (the body of `PUT /v1/bundle`, without `allowEmpty`)
    /// would change, applying nothing: the bundle in force compared with it.
    @Sendable func diffCandidate(_ request: Request, context: CustodyRequestContext) async throws -> DiffAnswer {
        _ = try QueryParameters(request.uri, accepting: [])
        let (files, _) = try await PolicyController.bundleFiles(
            request, limit: limits.bodyBytes, takesAllowEmpty: false)
        return DiffAnswer(diff: try await StateExecutor.run { try await engine.bundleDiff(candidate: files) })
    }

    /// What a candidate bundle (the body of `PUT /v1/bundle`, without `allowEmpty`) would have
    /// decided differently over the audited decisions of a window (`CustodyEngine.replay`):
    /// `since` (an age, default 7d) or `from` and `to` (RFC 3339), and optionally `account`,
    /// `group` and `action`. With `Accept: text/event-stream`, `progress` events while it runs
    /// and a `report` (or `error`) event at the end; closing the stream cancels it. The
    /// decisions run as background work. At most `ReplayGate.limit` at once, the console's
    /// included: another is a 503 `replay-busy`.
    @Sendable func impact(_ request: Request, context: CustodyRequestContext) async throws -> Response {
        let parameters = try QueryParameters(
            request.uri, accepting: ["since", "from", "to", "account", "group", "action"])
        let window = try ReplayScope.window(
            since: parameters["since"], from: parameters["from"], to: parameters["to"], now: Date())
        for name in ["account", "group"] {
            guard let value = parameters[name] else { continue }
            guard (1...1_020).contains(value.utf8.count),
                !value.unicodeScalars.contains(where: {
                    isUnprintable($0) || $0.properties.generalCategory == .control
                })
            else {
                throw ServiceError.badParameter(name, "must be 1 to 1020 bytes, no control or formatting character")
            }
        }
        var action: DecisionAction?
        if let name = parameters["action"] {
            guard let known = DecisionAction(rawValue: name) else {
                throw ServiceError.badParameter(
                    "action", "must be one of: \(DecisionAction.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            action = known
        }
        let (files, _) = try await PolicyController.bundleFiles(
            request, limit: limits.bodyBytes, takesAllowEmpty: false)
        let scope = ReplayScope(
            from: window.from, to: window.to, account: parameters["account"], group: parameters["group"],
            action: action)
        guard replays.enter() else { throw ReplayGate.busy }
        let engine = self.engine
        let replays = self.replays
        let (updates, continuation) = AsyncStream.makeStream(
            of: ReplayProgress.self, bufferingPolicy: .bufferingNewest(1))
        // Started now, and its place given back when it ends, whether or not anyone reads it
        // (a response whose body is never asked for still ends its replay).
        let task = Task { () -> Result<ImpactReport, CustodyError> in
            defer {
                continuation.finish()
                replays.leave()
            }
            do throws(CustodyError) {
                return .success(
                    try await BackgroundExecutor.run { () throws(CustodyError) in
                        try await engine.replay(candidate: files, scope: scope) { continuation.yield($0) }
                    })
            } catch {
                return .failure(error)
            }
        }
        let streaming = request.headers[values: .accept].contains { $0.contains("text/event-stream") }
        guard streaming else {
            // A caller that leaves stops the replay at its next page.
            let result = await withTaskCancellationHandler {
                await task.value
            } onCancel: {
                task.cancel()
            }
            return json(try JSONLine.encode(try result.get()))
        }
        return Response(
            status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-store"],
            body: ResponseBody { writer in
                do {
                    for await progress in updates {
                        try await writer.write(
                            EventsController.frame(name: "progress", data: try JSONLine.encode(progress).dropLast()))
                    }
                    switch await task.value {
                    case .success(let report):
                        try await writer.write(
                            EventsController.frame(name: "report", data: try JSONLine.encode(report).dropLast()))
                    case .failure(let error):
                        let failure = ServiceError(error)
                        try await writer.write(
                            EventsController.frame(
                                name: "error",
                                data: try JSONLine.encode(
                                    ImpactFailure(
                                        code: failure.code.description, error: failure.message,
                                        diagnostics: error.diagnostics.map(\.description))
                                ).dropLast()))
                    }
                } catch {
                    // The client went away: the replay stops at its next page.
                    task.cancel()
                    throw error
                }
                try await writer.finish(nil)
            })
    }

    /// `{"revision": "…", "reason": "…"}`.
    @Sendable func rollback(_ request: Request, context: CustodyRequestContext) async throws -> BundleApplied {
        _ = try QueryParameters(request.uri, accepting: [])
        let body = try await Self.object(request, limit: limits.bodyBytes, keys: ["revision", "reason"])
        _ = try Self.revision(body["revision"]!, parameter: "revision")
        let result = try await StateExecutor.run {
            try await engine.rollback(
                to: body["revision"]!, reason: body["reason"]!, by: context.identity?.operatorName)
        }
        return BundleApplied(
            revision: result.bundle.revision, unchanged: result.unchanged, eventId: engine.lastEventID,
            events: result.events.map(\.name))
    }

    /// `{"reason": "…"}`.
    @Sendable func putFreeze(_ request: Request, context: CustodyRequestContext) async throws -> FreezeState {
        _ = try QueryParameters(request.uri, accepting: [])
        let body = try await Self.object(request, limit: limits.bodyBytes, keys: ["reason"])
        let freeze = try await StateExecutor.run {
            try await engine.freeze(reason: body["reason"]!, by: context.identity?.operatorName)
        }
        return FreezeState(freeze: FreezeAnswer(freeze))
    }

    @Sendable func unfreeze(_ request: Request, context: CustodyRequestContext) async throws -> FreezeState {
        _ = try QueryParameters(request.uri, accepting: [])
        try await request.requireNoBody()
        _ = try await StateExecutor.run { try await engine.unfreeze(by: context.identity?.operatorName) }
        return FreezeState(freeze: FreezeAnswer(nil))
    }

    /// The shadow running, or the last one ended, with what every replica counted; `null` when
    /// none was ever set.
    @Sendable func shadow(_ request: Request, context: CustodyRequestContext) async throws -> ShadowAnswer {
        _ = try QueryParameters(request.uri, accepting: [])
        return ShadowAnswer(shadow: try await StateExecutor.run { try await engine.shadowStatus() })
    }

    /// Sets a candidate bundle (the body of `PUT /v1/bundle`, without `allowEmpty`) as the
    /// shadow of every replica.
    @Sendable func putShadow(_ request: Request, context: CustodyRequestContext) async throws -> ShadowAnswer {
        _ = try QueryParameters(request.uri, accepting: [])
        let (files, _) = try await PolicyController.bundleFiles(
            request, limit: limits.bodyBytes, takesAllowEmpty: false)
        let (engine, by) = (engine, context.identity?.operatorName)
        return ShadowAnswer(
            shadow: try await StateExecutor.run { try await Self.setShadow(files, by: by, on: engine) })
    }

    /// Sets `files` as the shadow and reads its status.
    /// - Throws: a 400 naming `files` when they are the bundle in force.
    private static func setShadow(_ files: BundleFiles, by: String?, on engine: CustodyEngine) async throws
        -> ShadowStatus?
    {
        do {
            try await engine.setShadow(files, source: "http", by: by)
        } catch  where error.code == .invalidArgument {
            // The files are the bundle in force: what is wrong is the body's `files`.
            throw ServiceError(
                .badRequest, .invalidParameter, error.message, details: ServiceError.Details(parameter: "files"))
        }
        return try await engine.shadowStatus()
    }

    /// Stops the shadow; what it counted stays readable. A 404 when none is running.
    @Sendable func stopShadow(_ request: Request, context: CustodyRequestContext) async throws -> ShadowAnswer {
        _ = try QueryParameters(request.uri, accepting: [])
        try await request.requireNoBody()
        let status = try await StateExecutor.run { () throws(CustodyError) -> ShadowStatus? in
            guard try await engine.stopShadow(by: context.identity?.operatorName) else {
                throw CustodyError(.notFound, "no shadow bundle is running")
            }
            return try await engine.shadowStatus()
        }
        return ShadowAnswer(shadow: status)
    }

    /// Every replica that recorded its status, stale ones marked.
    @Sendable func fleet(_ request: Request, context: CustodyRequestContext) async throws -> FleetAnswer {
        _ = try QueryParameters(request.uri, accepting: [])
        return FleetAnswer(try await StateExecutor.run { try await engine.fleetStatus() })
    }

    /// A revision a request names (`CustodyEngine.isRevision`), else a 400 `invalid-parameter`
    /// naming where it was given.
    static func revision(_ text: String, parameter: String) throws(ServiceError) -> String {
        guard CustodyEngine.isRevision(text) else {
            throw ServiceError.badParameter(
                parameter,
                "'\(String(text.prefix(80)).escapingControlCharacters)' is not a revision (8 to 64 lower-case hex digits)"
            )
        }
        return text
    }

    /// A JSON object of exactly `keys`, each a non-empty string: anything else is a 400 naming it.
    static func object(_ request: Request, limit: Int, keys: [String]) async throws -> [String: String] {
        try object(Array(buffer: try await request.body.collect(upTo: limit)), keys: keys)
    }

    /// A body that is a JSON object of exactly `keys`, each a string of 1 to 1000 bytes.
    static func object(_ body: [UInt8], keys: [String]) throws(ServiceError) -> [String: String] {
        let document: JSONDocument
        do {
            document = try JSONDocument(parsing: body)
        } catch {
            let position = JSONText.lineAndColumn(ofOffset: error.offset, in: body)
            throw ServiceError(
                .badRequest, .invalidJSON, error.message,
                details: ServiceError.Details(line: position.line, column: position.column))
        }
        let shape = "the body must be {" + keys.map { "\"\($0)\": \"…\"" }.joined(separator: ", ") + "}"
        guard document.root.kind == .object else { throw ServiceError(.badRequest, .invalidParameter, shape) }
        var values: [String: String] = [:]
        for member in document.root.members {
            let name = member.key.escapingControlCharacters
            guard keys.contains(member.key) else {
                throw ServiceError(
                    .badRequest, .invalidParameter, "unknown member '\(name)': \(shape)",
                    details: ServiceError.Details(parameter: name))
            }
            guard values[member.key] == nil else {
                throw ServiceError(
                    .badRequest, .invalidParameter, "the member '\(name)' is given twice",
                    details: ServiceError.Details(parameter: name))
            }
            guard let text = member.value.string, !text.isEmpty, text.utf8.count <= 1_000 else {
                throw ServiceError(
                    .badRequest, .invalidParameter, "'\(name)' must be a string of 1 to 1000 bytes",
                    details: ServiceError.Details(parameter: name))
            }
            values[member.key] = text
        }
        if let missing = keys.first(where: { values[$0] == nil }) {
            throw ServiceError(
                .badRequest, .invalidParameter, "'\(missing)' is required: \(shape)",
                details: ServiceError.Details(parameter: missing))
        }
        return values
    }
}

/// The `error` event of a replay streamed as events: the service's error, with a candidate's
/// diagnostics as a 422 gives them.
struct ImpactFailure: Encodable {
    var code: String
    var error: String
    var diagnostics: [String]
}

/// `GET /v1/bundle/history`.
struct HistoryAnswer: ResponseEncodable {
    var entries: [BundleRecordAnswer]
}

/// `GET /v1/bundle/history/{revision}`.
struct KeptAnswer: ResponseEncodable {
    var bundle: KeptBundleAnswer
}

/// `GET /v1/bundle/diff`.
struct DiffAnswer: ResponseEncodable {
    var diff: BundleDiff
}

/// `GET`, `POST` and `DELETE /v1/bundle/freeze`.
struct FreezeState: ResponseEncodable {
    var freeze: FreezeAnswer
}

/// `GET /v1/fleet`.
struct FleetAnswer: ResponseEncodable {
    var replicas: [ReplicaAnswer]
    /// How many replicas (not stale) run a revision other than the newest applied.
    var behind: Int

    init(_ status: FleetStatus) {
        replicas = status.replicas.map(ReplicaAnswer.init)
        behind = status.behind
    }
}
