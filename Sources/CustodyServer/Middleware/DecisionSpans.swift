import CustodyPolicy
import Tracing

/// The span of what a request decided, a child of the request's own (`RequestTracing`),
/// with the action, the revision and the outcome as attributes. It is started after the fact,
/// at the instant the decision began, so that a service that does not trace runs nothing but
/// a nil check on the decision path.
struct DecisionSpans: Sendable {
    let tracer: (any Tracer)?

    init(tracing: Bool) {
        tracer = tracing ? InstrumentationSystem.tracer : nil
    }

    /// When a decision began, and in which trace; nil when the service does not trace.
    struct Began: Sendable {
        let instant: DefaultTracerClock.Instant
        /// The request's span context: a batch's answer is written after its handler returned,
        /// outside the request span's task-local scope.
        let context: ServiceContext
    }

    /// The instant a decision begins, in the request's trace; nil when the service does not
    /// trace.
    func begin() -> Began? {
        tracer == nil ? nil : Began(instant: DefaultTracerClock.now, context: .current ?? .topLevel)
    }

    /// One query's decision (`POST /v1/decisions`, `/v1/launch`): `custody.action`,
    /// `custody.outcome` (`allow`, `block`, or `refused` for a query that was not decided),
    /// `custody.revision` and `custody.audited` (audit entries written).
    func decided(
        _ name: String, since began: Began?, revision: String, tallies: DecisionTallies,
        refused: Bool, audited: Int
    ) {
        guard let tracer, let began else { return }
        let span = tracer.startSpan(name, context: began.context, at: began.instant)
        span.attributes["custody.revision"] = revision
        span.attributes["custody.audited"] = audited
        if refused {
            span.attributes["custody.outcome"] = "refused"
            span.setStatus(SpanStatus(code: .error))
        } else if let count = tallies.counts.first(where: { $0.allowed + $0.blocked > 0 }) {
            span.attributes["custody.action"] = count.action.rawValue
            span.attributes["custody.outcome"] = count.allowed > 0 ? "allow" : "block"
        }
        span.end()
    }

    /// A batch's decisions (`POST /v1/decisions/batch`): `custody.revision`, and how many
    /// lines were allowed, blocked and refused (`custody.allowed`, `custody.blocked`,
    /// `custody.refused`).
    func decidedBatch(since began: Began?, revision: String, tallies: DecisionTallies) {
        guard let tracer, let began else { return }
        let span = tracer.startSpan("decide batch", context: began.context, at: began.instant)
        span.attributes["custody.revision"] = revision
        let counts = tallies.counts
        span.attributes["custody.allowed"] = counts.reduce(0) { $0 + $1.allowed }
        span.attributes["custody.blocked"] = counts.reduce(0) { $0 + $1.blocked }
        span.attributes["custody.refused"] = tallies.errors
        span.end()
    }
}
