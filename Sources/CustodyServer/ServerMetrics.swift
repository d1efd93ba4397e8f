import CoreMetrics
import Custody
import CustodyPolicy
import CustodyProtection
import Foundation
import Metrics
import Prometheus

/// What `/metrics` reports, in Prometheus text: made with the registry given to
/// `buildApplication`, so a process needs no global metrics bootstrap.
///
/// - `custody_http_requests_total{method,route,status}`, `custody_http_request_duration_seconds`
/// - `custody_decisions_total{action,outcome}` (outcome: allowed, blocked, error)
/// - `custody_decision_duration_seconds`: one decision request
/// - `custody_batch_queries`: queries per batch request
/// - `custody_bundle_version`, `custody_bundle_info{revision}`, `custody_last_event_id`
/// - `custody_event_subscribers`, `custody_events_delivered_total`, `custody_event_streams_reset_total`
/// - `custody_decisions_audited_total`
/// - `custody_client_aborts_total`: requests whose client went away before they were read
///   (not counted as requests: nobody got an answer)
/// - `custody_graph_syncs_total{status}` (applied, unchanged, failed), `custody_graph_requests_total`,
///   `custody_graph_pages_total`, `custody_graph_throttled_total`, `custody_graph_sync_duration_seconds`,
///   `custody_graph_last_success_timestamp_seconds`: syncs from Microsoft Graph (`--graph`)
/// - `custody_shadow_decisions_total`, `custody_shadow_dropped_total`,
///   `custody_shadow_disagreements_total{setting,action}`: live decisions decided under the
///   shadow bundle, dropped because its queue was full, and those it decides otherwise
final class ServerMetrics: Sendable {
    let registry: PrometheusCollectorRegistry
    /// The same counts over the last minutes (the console's overview, `GET /v1/activity`).
    let activity = RecentActivity()
    private let factory: PrometheusMetricsFactory
    private let decisions: [String: CoreMetrics.Counter]
    let decisionDuration: Timer
    let batchSize: Recorder
    let subscribers: CoreMetrics.Gauge
    let delivered: CoreMetrics.Counter
    let resets: CoreMetrics.Counter
    let audited: CoreMetrics.Counter
    let clientAborts: CoreMetrics.Counter
    let bundleVersion: CoreMetrics.Gauge
    let lastEventID: CoreMetrics.Gauge
    /// Replicas (not stale) that run another revision than the newest applied.
    let replicasBehind: CoreMetrics.Gauge
    private let graphSyncs: [PolicySync.Status: CoreMetrics.Counter]
    private let graphRequests: CoreMetrics.Counter
    private let graphPages: CoreMetrics.Counter
    private let graphThrottled: CoreMetrics.Counter
    private let graphDuration: Timer
    private let graphLastSuccess: CoreMetrics.Gauge
    private let revision = Locked<String?>(nil)
    let shadowDecisions: CoreMetrics.Counter
    let shadowDropped: CoreMetrics.Counter
    /// Disagreement counters by setting and action, made once each.
    private let shadowDisagreements = Locked<[String: CoreMetrics.Counter]>([:])
    /// Request counters and timers by method, route and status, made once each.
    private let requestMetrics = Locked<[String: (count: CoreMetrics.Counter, duration: Timer)]>([:])

    init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .microseconds(50), .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1),
            .milliseconds(2.5),
            .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
            .milliseconds(250),
            .milliseconds(500), .seconds(1), .seconds(2.5),
        ]
        factory.defaultValueHistogramBuckets = [1, 10, 50, 100, 500, 1_000, 5_000, 10_000]
        self.factory = factory
        var decisions: [String: CoreMetrics.Counter] = [:]
        for action in DecisionAction.allCases.map(\.rawValue) + ["unknown"] {
            for outcome in ["allowed", "blocked", "error"] {
                decisions[action + "/" + outcome] = CoreMetrics.Counter(
                    label: "custody_decisions_total", dimensions: [("action", action), ("outcome", outcome)],
                    factory: factory)
            }
        }
        self.decisions = decisions
        decisionDuration = Timer(label: "custody_decision_duration_seconds", factory: factory)
        batchSize = Recorder(label: "custody_batch_queries", aggregate: true, factory: factory)
        subscribers = CoreMetrics.Gauge(label: "custody_event_subscribers", factory: factory)
        delivered = CoreMetrics.Counter(label: "custody_events_delivered_total", factory: factory)
        resets = CoreMetrics.Counter(label: "custody_event_streams_reset_total", factory: factory)
        audited = CoreMetrics.Counter(label: "custody_decisions_audited_total", factory: factory)
        clientAborts = CoreMetrics.Counter(label: "custody_client_aborts_total", factory: factory)
        bundleVersion = CoreMetrics.Gauge(label: "custody_bundle_version", factory: factory)
        lastEventID = CoreMetrics.Gauge(label: "custody_last_event_id", factory: factory)
        replicasBehind = CoreMetrics.Gauge(label: "custody_fleet_replicas_behind", factory: factory)
        shadowDecisions = CoreMetrics.Counter(label: "custody_shadow_decisions_total", factory: factory)
        shadowDropped = CoreMetrics.Counter(label: "custody_shadow_dropped_total", factory: factory)
        graphSyncs = Dictionary(
            uniqueKeysWithValues: PolicySync.Status.allCases.map { status in
                (
                    status,
                    CoreMetrics.Counter(
                        label: "custody_graph_syncs_total", dimensions: [("status", status.rawValue)], factory: factory)
                )
            })
        graphRequests = CoreMetrics.Counter(label: "custody_graph_requests_total", factory: factory)
        graphPages = CoreMetrics.Counter(label: "custody_graph_pages_total", factory: factory)
        graphThrottled = CoreMetrics.Counter(label: "custody_graph_throttled_total", factory: factory)
        var slow = factory
        slow.defaultDurationHistogramBuckets = [
            .milliseconds(100), .milliseconds(500), .seconds(1), .seconds(5), .seconds(10), .seconds(30), .seconds(60),
            .seconds(300),
        ]
        graphDuration = Timer(label: "custody_graph_sync_duration_seconds", factory: slow)
        graphLastSuccess = CoreMetrics.Gauge(label: "custody_graph_last_success_timestamp_seconds", factory: factory)
    }

    /// Counts one sync from Microsoft Graph.
    func graphSynced(_ sync: PolicySync) {
        graphSyncs[sync.status]?.increment()
        if sync.requests > 0 { graphRequests.increment(by: sync.requests) }
        if sync.pages > 0 { graphPages.increment(by: sync.pages) }
        if sync.throttled > 0 { graphThrottled.increment(by: sync.throttled) }
        graphDuration.recordNanoseconds(Self.nanoseconds(sync.duration))
        if sync.status != .failed { graphLastSuccess.record(sync.finishedAt.timeIntervalSince1970) }
    }

    /// Counts what a batch of live decisions came to under the shadow bundle.
    func shadowObserved(_ observation: ShadowObservation) {
        if observation.decided > 0 { shadowDecisions.increment(by: observation.decided) }
        if observation.dropped > 0 { shadowDropped.increment(by: observation.dropped) }
        for (setting, action) in observation.disagreements {
            // Settings and actions are the engine's names: a few dozen label pairs at most.
            let key = setting + " " + action
            let counter = shadowDisagreements.withLock { cache in
                if let made = cache[key] { return made }
                let made = CoreMetrics.Counter(
                    label: "custody_shadow_disagreements_total",
                    dimensions: [("setting", setting), ("action", action)],
                    factory: factory)
                cache[key] = made
                return made
            }
            counter.increment()
        }
    }

    /// Counts one request.
    func request(method: String, route: String, status: Int, duration: Duration) {
        let key = method + " " + route + " " + String(status)
        let metrics = requestMetrics.withLock { cache in
            if let made = cache[key] { return made }
            let made = (
                CoreMetrics.Counter(
                    label: "custody_http_requests_total",
                    dimensions: [("method", method), ("route", route), ("status", String(status))], factory: factory),
                Timer(label: "custody_http_request_duration_seconds", dimensions: [("route", route)], factory: factory)
            )
            cache[key] = made
            return made
        }
        metrics.count.increment()
        metrics.duration.recordNanoseconds(Self.nanoseconds(duration))
        if status >= 400 { activity.refusedRequest() }
    }

    /// Records how long one decision request took.
    func decisionTook(_ duration: Duration) {
        decisionDuration.recordNanoseconds(Self.nanoseconds(duration))
    }

    /// Records a batch's size.
    func batch(queries: Int) {
        batchSize.record(queries)
    }

    /// Counts an event written to a stream.
    func eventDelivered() {
        delivered.increment()
    }

    /// Counts a stream that fell behind the log's retention and was told to start afresh.
    func streamReset() {
        resets.increment()
    }

    /// Counts decisions written to the audit log.
    func audited(_ count: Int) {
        if count > 0 { audited.increment(by: count) }
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    /// Counts the decisions a session answered.
    func decided(_ tallies: DecisionTallies) {
        var (all, refused) = (tallies.errors, 0)
        for (action, allowed, blocked) in tallies.counts where allowed + blocked > 0 {
            if allowed > 0 { decisions[action.rawValue + "/allowed"]?.increment(by: allowed) }
            if blocked > 0 { decisions[action.rawValue + "/blocked"]?.increment(by: blocked) }
            all += allowed + blocked
            refused += blocked
        }
        if tallies.errors > 0 { decisions["unknown/error"]?.increment(by: tallies.errors) }
        activity.decided(all, blocked: refused)
    }

    /// Counts one decision.
    func decided(action: DecisionAction, allowed: Bool) {
        decisions[action.rawValue + (allowed ? "/allowed" : "/blocked")]?.increment(by: 1)
        activity.decided(1, blocked: allowed ? 0 : 1)
    }

    /// Sets the bundle in force.
    func bundle(_ bundle: BundleInForce?, version: Int) {
        bundleVersion.record(version)
        let (old, new) = revision.withLock { current -> (String?, String?) in
            defer { current = bundle?.revision }
            return (current, bundle?.revision)
        }
        guard old != new else { return }
        if let old {
            CoreMetrics.Gauge(label: "custody_bundle_info", dimensions: [("revision", old)], factory: factory).record(0)
        }
        if let new {
            CoreMetrics.Gauge(label: "custody_bundle_info", dimensions: [("revision", new)], factory: factory).record(1)
        }
    }

    /// The metrics in Prometheus's text format, with the current bundle and event id.
    func exposition(engine: CustodyEngine) -> [UInt8] {
        bundle(engine.bundleInForce, version: engine.policyVersion)
        lastEventID.record(engine.lastEventID)
        subscribers.record(engine.eventStreamCount)
        return registry.emitToBuffer()
    }
}
