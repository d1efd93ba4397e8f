import Custody
import CustodyGraph
import CustodyPolicy
import Hummingbird

/// `POST /v1/graph/sync` (admin): a sync from Microsoft Graph now, when the service syncs
/// from a tenant (`custody serve --graph FILE`).
struct GraphController {
    let runner: GraphSyncRunner?
    let metrics: ServerMetrics

    func addAdminRoutes(to group: RouterGroup<CustodyRequestContext>) {
        group.post("graph/sync", use: sync)
    }

    /// Runs a sync (after the one in progress, if any) and answers with what it came to: 200
    /// `applied` or `unchanged`; 502 `graph-sync-failed` (the policy in force is unchanged);
    /// 409 `graph-sync-busy` when another replica holds the sync lease.
    @Sendable func sync(_ request: Request, context: CustodyRequestContext) async throws -> Response {
        _ = try QueryParameters(request.uri, accepting: [])
        try await request.requireNoBody()
        guard let runner else {
            throw ServiceError(
                .notFound, .graphNotConfigured,
                "this service does not sync from Microsoft Graph: start it with custody serve --graph FILE")
        }
        switch await runner.sync(.request) {
        case .busy:
            throw ServiceError(
                .conflict, .graphSyncBusy,
                "another process or replica on this state is syncing from Graph now; its result reaches this service through the state",
                headers: [.retryAfter: "5"])
        case .synced(let done):
            metrics.graphSynced(done)
            guard done.status != .failed else {
                throw ServiceError(
                    .badGateway, .graphSyncFailed, done.error ?? "the sync failed; the policy in force is unchanged",
                    details: ServiceError.Details(sync: done))
            }
            return json(try JSONLine.encode(done))
        }
    }
}
