import CustodyPolicy
import Foundation
import Logging
import NIOHTTP1

/// What a sync did on the wire, for its report, `/metrics` and the benchmark.
public struct GraphStatistics: Sendable, Equatable {
    /// Requests sent to Graph (each try counts), and tokens obtained.
    public var requests = 0
    public var tokens = 0
    /// Pages of collections read.
    public var pages = 0
    /// Answers that said 429 (throttled) and 5xx.
    public var throttled = 0
    public var serverErrors = 0
    /// Every wait before trying a request again, in order.
    public var retryWaits: [Duration] = []
    /// Time spent waiting for the client's own request budget.
    public var budgetWait: Duration = .zero

    public init() {}

    /// What happened since `earlier` (a reading of the same counters).
    public func since(_ earlier: GraphStatistics) -> GraphStatistics {
        var result = self
        result.tokens -= earlier.tokens
        result.requests -= earlier.requests
        result.pages -= earlier.pages
        result.throttled -= earlier.throttled
        result.serverErrors -= earlier.serverErrors
        result.retryWaits.removeFirst(min(earlier.retryWaits.count, retryWaits.count))
        result.budgetWait -= earlier.budgetWait
        return result
    }
}

/// The client's own request budget: a token bucket of `capacity` requests refilled evenly over
/// `window`, so that a sync stays under Intune's per-app limit without being told.
actor RequestBudget {
    private let capacity: Double
    private let perSecond: Double
    private var available: Double
    private var updated = ContinuousClock.now

    init(requests: Int, window: Duration) {
        capacity = Double(max(1, requests))
        let seconds = window.inSeconds
        perSecond = capacity / max(seconds, 0.001)
        available = capacity
    }

    /// Takes one request from the budget, waiting for it when there is none; returns the wait.
    func take() async -> Duration {
        var waited: Duration = .zero
        while true {
            let now = ContinuousClock.now
            let elapsed = updated.duration(to: now)
            available = min(capacity, available + elapsed.inSeconds * perSecond)
            updated = now
            if available >= 1 {
                available -= 1
                return waited
            }
            let wait = Duration.seconds((1 - available) / perSecond)
            try? await Task.sleep(for: wait)
            waited += wait
        }
    }
}

/// Graph requests with a token, the budget, retries and paging.
final class GraphClient: Sendable {
    let settings: GraphSettings
    let transport: GraphTransport
    let tokens: GraphTokens
    let budget: RequestBudget
    let statistics = Locked(GraphStatistics())
    let logger: Logger
    /// Graph's origin: a nextLink elsewhere is refused (it would carry the token there).
    let origin: GraphOrigin?
    let retry: RetryPolicy

    init(settings: GraphSettings, logger: Logger) throws(GraphError) {
        self.settings = settings
        // Everything that can fail first: a client made is a client to shut down.
        var assertions: ClientAssertions?
        if case .certificate(let certificate, let key) = settings.credential {
            assertions = try ClientAssertions(
                certificatePEM: certificate, privateKeyPEM: key, clientID: settings.clientID,
                audience: settings.tokenURL, algorithm: settings.assertionAlgorithm)
        }
        transport = GraphTransport(settings: settings)
        retry = RetryPolicy(settings: settings, statistics: statistics, logger: logger)
        tokens = GraphTokens(settings: settings, transport: transport, assertions: assertions, retry: retry)
        budget = RequestBudget(requests: settings.requestBudget, window: settings.budgetWindow)
        self.logger = logger
        origin = GraphOrigin(settings.graphURL)
    }

    func shutdown() async { await transport.shutdown() }

    /// GETs `url` (absolute, or a path under Graph's root) and decodes it as `T`.
    /// - Returns: nil for a 404 when `missingIsNil` (an item that disappeared).
    /// - Throws: `GraphError` naming the request: Graph's code and message for a 4xx, the last
    ///   status after every try for 429 and 5xx, `.authentication` for a 401 that a new token
    ///   does not cure.
    func get<T: Decodable>(_ url: String, as type: T.Type, missingIsNil: Bool = false) async throws(GraphError) -> T? {
        let url = url.hasPrefix("http://") || url.hasPrefix("https://") ? url : settings.graphURL + url
        let name = "GET \(url)"
        var renewed = false
        var attempt = 0
        while true {
            attempt += 1
            let waited = await budget.take()
            let token = try await tokens.token()
            statistics.withLock {
                $0.requests += 1
                $0.budgetWait += waited
            }
            // Each try names itself (Microsoft's support asks for it); no ConsistencyLevel: none
            // of these requests is an advanced query (no $count, $search, cast or ne).
            let sent = RequestIdentifiers.fresh()
            // No answer: tried again like a 503, then failed with what happened last.
            guard
                let response = try await retry.attempt(
                    attempt, of: name, identifiers: sent,
                    { () async throws(GraphError) in
                        try await transport.send(
                            .GET, url,
                            headers: [
                                ("Authorization", "Bearer \(token)"), ("Accept", "application/json"),
                                ("client-request-id", sent.client),
                            ])
                    })
            else { continue }
            let identifiers = sent.answered(response.headers, body: response.body)
            switch response.status {
            case 200..<300:
                do {
                    return try JSONDecoder().decode(T.self, from: Data(response.body))
                } catch {
                    throw GraphError(
                        .invalidResponse, "the answer is not the JSON Graph sends: \(Self.describe(error))",
                        request: name, identifiers: identifiers)
                }
            case 401 where !renewed:
                // The token may have expired early or been revoked: one new token, then fail.
                renewed = true
                _ = try await tokens.token(replacing: token)
                attempt -= 1
            case 404 where missingIsNil:
                return nil
            case let status where RetryPolicy.isTransient(status):
                switch retry.wait(
                    after: status, headers: response.headers, attempt: attempt,
                    detail: Self.graphError(response.body), request: name, identifiers: identifiers)
                {
                case .success(let wait): try await retry.pause(wait, request: name)
                case .failure(let error): throw error
                }
            default:
                let said = Self.graphError(response.body).map { ": \($0)" } ?? ""
                let code = Self.graphErrorCode(response.body)
                if response.status == 410 || ["syncStateNotFound", "syncStateInvalid", "resyncRequired"].contains(code)
                {
                    throw GraphError(
                        .resyncRequired, "HTTP \(response.status)\(said)", request: name, status: response.status,
                        identifiers: identifiers)
                }
                throw GraphError(
                    response.status == 401 ? .authentication : .request, "HTTP \(response.status)\(said)",
                    request: name, status: response.status, identifiers: identifiers)
            }
        }
    }

    /// Every item of a collection, following `@odata.nextLink` as given until it is absent.
    func collect<Item: Decodable & Sendable>(_ url: String, of type: Item.Type, missingIsNil: Bool = false)
        async throws(GraphError) -> [Item]?
    {
        try await walk(url, of: type, missingIsNil: missingIsNil)?.items
    }

    /// One round of a delta query: the changes from `url` (a delta function, or the deltaLink
    /// of the last round) across its pages, and the deltaLink the round ends with.
    /// - Throws: `resyncRequired` when Graph no longer honours the link.
    func delta<Item: Decodable & Sendable>(_ url: String, of type: Item.Type) async throws(GraphError) -> (
        items: [Item], deltaLink: String
    ) {
        guard let round = try await walk(url, of: type, missingIsNil: false), let link = round.deltaLink else {
            throw GraphError(
                .invalidResponse, "the delta round ended without an @odata.deltaLink", request: "GET \(url)")
        }
        guard origin?.contains(link) == true else {
            throw GraphError(
                .invalidResponse, "the deltaLink leaves Graph's host \(origin?.description ?? settings.graphURL)",
                request: "GET \(url)")
        }
        return (round.items, link)
    }

    /// The pages from `url`, following `@odata.nextLink` until it is absent: their items, and
    /// the last page's `@odata.deltaLink`.
    private func walk<Item: Decodable & Sendable>(_ url: String, of type: Item.Type, missingIsNil: Bool)
        async throws(GraphError) -> (items: [Item], deltaLink: String?)?
    {
        var items: [Item] = []
        var deltaLink: String?
        var next: String? = url
        var seen = Set<String>()
        var emptyInARow = 0
        while let link = next {
            // Bounded: a server that pages without end (new links, empty pages) ends the sync.
            guard seen.count < settings.maximumPages, emptyInARow < 100 else {
                throw GraphError(
                    .invalidResponse,
                    "the listing did not end after \(seen.count) pages (\(emptyInARow) empty in a row)",
                    request: "GET \(link)")
            }
            guard seen.insert(link).inserted else {
                throw GraphError(.invalidResponse, "the nextLink repeats a page already read", request: "GET \(link)")
            }
            if link.contains("://") {
                guard origin?.contains(link) == true else {
                    throw GraphError(
                        .invalidResponse,
                        "the link leaves Graph's host \(origin?.description ?? settings.graphURL) (following it would send the token there)",
                        request: "GET \(link)")
                }
            }
            guard
                let page = try await get(
                    link, as: Page<Item>.self, missingIsNil: missingIsNil && items.isEmpty && seen.count == 1)
            else {
                return nil
            }
            statistics.withLock { $0.pages += 1 }
            items.append(contentsOf: page.value)
            emptyInARow = page.value.isEmpty ? emptyInARow + 1 : 0
            next = page.nextLink
            deltaLink = page.deltaLink
        }
        return (items, deltaLink)
    }

    struct Page<Item: Decodable>: Decodable {
        let value: [Item]
        let nextLink: String?
        let deltaLink: String?
        enum CodingKeys: String, CodingKey {
            case value
            case nextLink = "@odata.nextLink"
            case deltaLink = "@odata.deltaLink"
        }
    }

    /// Graph's error body, `{"error": {"code", "message"}}`.
    private struct Failure: Decodable {
        struct Detail: Decodable {
            let code: String?
            let message: String?
        }
        let error: Detail
    }

    /// Graph's error body as `code: message`.
    static func graphError(_ body: [UInt8]) -> String? {
        guard let failure = try? JSONDecoder().decode(Failure.self, from: Data(body)) else { return nil }
        return [failure.error.code, failure.error.message].compactMap { $0 }.joined(separator: ": ")
    }

    /// The `code` of Graph's error body, if any.
    static func graphErrorCode(_ body: [UInt8]) -> String? {
        (try? JSONDecoder().decode(Failure.self, from: Data(body)))?.error.code
    }

    static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.dataCorrupted(let context): "\(context.debugDescription) at \(path(context.codingPath))"
        case DecodingError.keyNotFound(let key, let context):
            "\"\(key.stringValue)\" is missing at \(path(context.codingPath))"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            "\(context.debugDescription) at \(path(context.codingPath))"
        default: "\(error)"
        }
    }

    private static func path(_ codingPath: [any CodingKey]) -> String {
        "$" + codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
    }
}
