import CustodyPolicy
import Foundation
import Logging
import NIOHTTP1

/// When a request to Graph or to the token service is tried again, and after how long: a
/// throttled answer (429) and a server error (5xx) wait for `Retry-After` when it is given,
/// else for an exponential, jittered backoff; a request that got no answer waits the backoff.
/// Each wait is counted in the statistics.
struct RetryPolicy: Sendable {
    let settings: GraphSettings
    let statistics: Locked<GraphStatistics>
    let logger: Logger

    /// Whether `status` is worth another try.
    static func isTransient(_ status: Int) -> Bool { status == 429 || (500..<600).contains(status) }

    /// The wait before try `attempt + 1` after a transient `status`, or the error that ends
    /// the request: every try made, or a `Retry-After` longer than a sync waits.
    func wait(
        after status: Int, headers: HTTPHeaders, attempt: Int, detail: String?, request: String,
        identifiers: RequestIdentifiers
    ) -> Result<Duration, GraphError> {
        statistics.withLock {
            if status == 429 { $0.throttled += 1 } else { $0.serverErrors += 1 }
        }
        guard attempt < settings.maximumAttempts else {
            return .failure(
                GraphError(
                    .request, "HTTP \(status) after \(attempt) tries\(detail.map { ": \($0)" } ?? "")",
                    request: request, status: status, identifiers: identifiers))
        }
        let asked = Self.retryAfter(headers)
        if let asked, asked > settings.maximumRetryAfter {
            let said =
                headers.first(name: "Retry-After")?.trimmingCharacters(in: .whitespaces)
                ?? "\(asked.components.seconds)"
            return .failure(
                GraphError(
                    .request,
                    "HTTP \(status) asking to wait \(said) s (Retry-After), longer than the \(settings.maximumRetryAfter.components.seconds) s a sync waits",
                    request: request, status: status, identifiers: identifiers))
        }
        return .success(asked.map { $0 + jitter($0) } ?? backoff(attempt))
    }

    /// Makes try `attempt` of `request` by `send`: its answer, or nil when it got none (refused,
    /// reset, timed out) and is to be tried again, after the backoff waited here.
    /// - Throws: the last try's error, naming `identifiers`, when every try was made.
    func attempt(
        _ attempt: Int, of request: String, identifiers: RequestIdentifiers,
        _ send: @Sendable () async throws(GraphError) -> GraphTransport.Response
    ) async throws(GraphError) -> GraphTransport.Response? {
        do {
            return try await send()
        } catch  where error.code == .timeout || error.code == .request {
            guard attempt < settings.maximumAttempts else {
                throw GraphError(error.code, error.message, request: error.request, identifiers: identifiers)
            }
            try await pause(backoff(attempt), request: request)
            return nil
        }
    }

    /// The wait after try `attempt` got no answer.
    func backoff(_ attempt: Int) -> Duration {
        let doubled = settings.initialBackoff * (1 << min(attempt - 1, 20))
        let capped = min(doubled, settings.maximumBackoff)
        // Jittered between half and all of it, so that clients throttled together spread out.
        return capped * Double.random(in: 0.5...1.0)
    }

    private func jitter(_ wait: Duration) -> Duration {
        min(wait * Double.random(in: 0...0.1), .seconds(5))
    }

    /// Sleeps `wait`, counted; cancelled, it fails the request.
    func pause(_ wait: Duration, request: String) async throws(GraphError) {
        statistics.withLock { $0.retryWaits.append(wait) }
        logger.info("Graph asked to wait", metadata: ["request": "\(request)", "seconds": "\(wait)"])
        do {
            try await Task.sleep(for: wait)
        } catch {
            throw GraphError(.request, "cancelled while waiting to try again", request: request)
        }
    }

    /// `Retry-After` in seconds (Graph sends seconds), capped at an hour.
    static func retryAfter(_ headers: HTTPHeaders) -> Duration? {
        guard let value = headers.first(name: "Retry-After"),
            let seconds = Double(value.trimmingCharacters(in: .whitespaces)), seconds >= 0
        else { return nil }
        return .seconds(min(seconds, 3_600))
    }
}

/// The identifiers Microsoft's services ask for when a request is reported: the one the client
/// sent (`client-request-id`) and the one the service gave (`request-id` from Graph,
/// `x-ms-request-id` from the token service).
public struct RequestIdentifiers: Sendable, Hashable, CustomStringConvertible {
    public var client: String
    public var service: String?

    /// A new client id for one try of a request.
    static func fresh() -> RequestIdentifiers { RequestIdentifiers(client: UUID().uuidString.lowercased()) }

    /// The service's id from an answer: its header, else Graph's `innerError` in the body.
    func answered(_ headers: HTTPHeaders, body: [UInt8]) -> RequestIdentifiers {
        var result = self
        result.service =
            headers.first(name: "request-id") ?? headers.first(name: "x-ms-request-id")
            ?? Self.innerRequestID(body)
        return result
    }

    public var description: String {
        (service.map { "request-id \($0), " } ?? "") + "client-request-id \(client)"
    }

    private struct Body: Decodable {
        struct Failure: Decodable {
            struct Inner: Decodable {
                let requestID: String?
                enum CodingKeys: String, CodingKey { case requestID = "request-id" }
            }
            let innerError: Inner?
        }
        let error: Failure?
    }

    private static func innerRequestID(_ body: [UInt8]) -> String? {
        (try? JSONDecoder().decode(Body.self, from: Data(body)))?.error?.innerError?.requestID
    }
}

/// Graph's origin (scheme, host and port), and whether a link stays on it. Compared parsed:
/// the scheme and host case-insensitively, the port with its scheme's default filled in; a
/// link with user information is never on it.
struct GraphOrigin: Sendable, CustomStringConvertible {
    let scheme: String
    let host: String
    let port: Int

    init?(_ url: String) {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "https" || scheme == "http", let host = components.host?.lowercased(), !host.isEmpty,
            components.user == nil, components.password == nil
        else { return nil }
        self.scheme = scheme
        self.host = host
        self.port = components.port ?? (scheme == "https" ? 443 : 80)
    }

    /// Whether `link` is an absolute URL on this origin.
    func contains(_ link: String) -> Bool {
        guard let other = GraphOrigin(link) else { return false }
        return other.scheme == scheme && other.host == host && other.port == port
    }

    var description: String {
        let defaultPort = scheme == "https" ? 443 : 80
        return "\(scheme)://\(host)\(port == defaultPort ? "" : ":\(port)")"
    }
}
