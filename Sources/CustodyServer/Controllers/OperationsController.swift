import Custody
import CustodyGraph
import CustodyPolicy
import Foundation
import HTTPTypes
import Hummingbird
import CustodyStore

/// `GET /healthz`, `/readyz`, `/metrics` and `/openapi.json`: no token needed.
struct OperationsController {
    let engine: CustodyEngine
    let graph: GraphSyncRunner?
    let metrics: ServerMetrics

    func addRoutes(to router: Router<CustodyRequestContext>) {
        router.get("healthz") { request, _ in
            _ = try QueryParameters(request.uri, accepting: [])
            return json(Array(#"{"status":"alive"}"#.utf8) + [0x0A])
        }
        router.get("readyz", use: ready)
        router.get("metrics") { request, _ in
            _ = try QueryParameters(request.uri, accepting: [])
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                body: .init(byteBuffer: ByteBuffer(bytes: metrics.exposition(engine: engine))))
        }
        router.get("openapi.json") { request, _ in
            _ = try QueryParameters(request.uri, accepting: [])
            return json(OpenAPIDocument.bytes)
        }
    }

    /// `GET /v1/activity` (read scope): decisions, blocked decisions and refused requests per
    /// interval over the last minutes, from the same counts as `/metrics`.
    func addReadRoutes(to group: RouterGroup<CustodyRequestContext>) {
        group.get("activity") { request, _ in
            _ = try QueryParameters(request.uri, accepting: [])
            return ActivityAnswer(metrics.activity.recent())
        }
    }

    /// How long a write to the state may be under way before `/readyz` warns of it.
    static let slowWrite = Duration.seconds(2)

    /// Ready when a bundle is in force and this replica is current with the state (it follows
    /// the state's change log, which reads the state every poll interval); otherwise 503 saying
    /// what is missing. Never reads the state itself: it answers at once whatever the state does.
    @Sendable func ready(_ request: Request, context: CustodyRequestContext) async throws -> Response {
        _ = try QueryParameters(request.uri, accepting: [])
        var problems: [String] = []
        // A failing Graph sync does not make the service unready: the policy in force still
        // decides (as Intune's apps keep theirs while the service is away). It is a warning,
        // unless there is no policy at all.
        var warnings: [String] = []
        let sync = graph?.status
        let syncError = sync.flatMap { $0.consecutiveFailures > 0 ? $0.last?.error : nil }
        if engine.bundleInForce == nil {
            problems.append("no bundle is in force" + (syncError.map { " (the Graph sync fails: \($0))" } ?? ""))
        } else if let syncError {
            warnings.append(
                "the Graph sync fails (\(sync?.consecutiveFailures ?? 0) in a row), the policy in force stays: \(syncError)"
            )
        }
        if let refused = engine.lastBundleRejection {
            // Answered without a token: the bundle directory's path is not shown, and its files
            // are named as in a bundle sent over HTTP.
            let source = refused.source.hasPrefix("/") ? "the bundle directory" : refused.source
            warnings.append(
                "the last bundle offered (\(source), \(refused.at.formatted(.iso8601))) was refused, the policy in force stays: \(namingFiles(in: refused.message, relativeTo: refused.source))"
            )
        }
        // A write held up (another replica's lock, a slow link) does not hold decisions up:
        // they answer from the policy in force. Say so, as a degraded state: writes may be
        // refused until it is through.
        if let pending = engine.pendingStateWrite, pending.elapsed >= Self.slowWrite {
            warnings.append(
                "a write to the state (\(pending.what)) has been under way for \(pending.elapsed.formatted(.units(allowed: [.seconds], fractionalPart: .show(length: 1)))): writes may be refused or slow until it is through; decisions are answered from the policy in force"
            )
        }
        let replica = engine.replicaStatus
        let stale = replica.isStale()
        if stale {
            let why =
                if let divergence = replica.divergence { divergence } else if !replica.listening {
                    "not hearing of changes to the state"
                } else {
                    "the state has not answered for more than \(replica.staleAfter.formatted(.units(allowed: [.seconds, .milliseconds])))"
                }
            problems.append("stale: \(why)\(replica.problem.map { " (\($0))" } ?? "")")
        }
        let answer = ReadyAnswer(
            status: problems.isEmpty ? "ready" : "not ready", revision: engine.bundleInForce?.revision,
            eventId: engine.lastEventID,
            state: ReadyAnswer.State(
                backend: engine.stateBackend.rawValue, changeRevision: replica.revision,
                newestKnown: replica.newestKnown, listening: replica.listening, stale: stale,
                lastContact: replica.lastContact.map { $0.formatted(.iso8601) }, divergence: replica.divergence),
            graph: sync.map { sync in
                ReadyAnswer.Graph(
                    status: sync.last == nil ? "pending" : sync.consecutiveFailures > 0 ? "failing" : "ok",
                    running: sync.running, consecutiveFailures: sync.consecutiveFailures,
                    lastSuccessAt: sync.lastSuccess.map { $0.finishedAt.formatted(.iso8601) }, last: sync.last)
            },
            problems: problems, warnings: warnings)
        return json(try JSONLine.encode(answer), status: problems.isEmpty ? .ok : .serviceUnavailable)
    }
}
