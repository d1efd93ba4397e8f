import Custody
import CoreMetrics
import CustodyPolicy
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdAuth
import Logging
import NIOCore

/// The outermost middleware: gives every response its request id (`Custody-Request-Id`),
/// logs one line per request (method, path, status, time; never a header, a token or a body),
/// counts requests for `/metrics`, and turns every error into the service's JSON error body, so
/// that no request ever gets a bare 500.
struct RequestMiddleware: RouterMiddleware {
    typealias Context = CustodyRequestContext
    let metrics: ServerMetrics
    let engine: CustodyEngine
    /// The most bytes a request body may have (named in every 413).
    let bodyLimit: Int
    /// The hosts requests may name; nil: any, and `Host` may be missing.
    var hostCheck: HostCheck? = nil

    /// The methods the service knows; anything else is 501.
    static let knownMethods: Set<HTTPRequest.Method> = [.get, .head, .post, .put, .patch, .delete, .options]

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let start = ContinuousClock.now
        var response: Response
        var aborted = false
        do {
            try Self.checkFraming(request)
            try hostCheck.map { check throws(ServiceError) in try Self.checkHost(request, check) }
            response = try await next(request, context)
        } catch let error where TransportFailure(error) != nil {
            let failure = TransportFailure(error)!
            if failure == .clientGone {
                // Not the service's failure: counted apart, logged at debug level, and answered
                // (a client that only half-closed still reads) with the connection closed.
                aborted = true
                metrics.clientAborts.increment()
                context.logger.debug(
                    "client went away before its request was read",
                    metadata: ["path": "\(context.endpointPath ?? "unmatched")"])
            }
            response = try failure.serviceError.response(from: request, context: context)
        } catch let error as ServiceError {
            response = try error.response(from: request, context: context)
        } catch let error as CustodyError {
            let answer = ServiceError(error)
            if answer.status.code >= 500 {
                // The whole message, with the database it names, for the operator.
                context.logger.warning(
                    "request not answered", metadata: ["error": "\(error.message)", "code": "\(error.code)"])
            }
            response = try answer.response(from: request, context: context)
        } catch let error as any HTTPResponseError {
            response = try Self.serviceError(error, bodyLimit: bodyLimit).response(from: request, context: context)
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            context.logger.error("request failed", metadata: ["error": "\(String(reflecting: type(of: error)))"])
            response = try ServiceError(.internalServerError, .`internal`, "the service failed to answer this request")
                .response(from: request, context: context)
        }
        response.headers[.custodyRequestID] = context.id
        // No answer is to be read as anything but its declared type (a JSON error taken for a
        // script or a page).
        response.headers[.contentTypeOptions] = "nosniff"
        // A replica that lost the shared state says so on every answer (made from the policy
        // in force, which may be behind): `Custody-Stale: true`, with the change revision it
        // has applied.
        let replica = engine.replicaStatus
        if replica.isStale() {
            response.headers[.custodyStale] = "true"
            response.headers[.custodyStateRevision] = String(replica.revision)
        }
        let route = context.endpointPath ?? "unmatched"
        if aborted { return response }
        metrics.request(
            method: request.method.rawValue, route: route, status: Int(response.status.code),
            duration: start.duration(to: .now))
        context.logger.info(
            "request",
            metadata: ["method": "\(request.method)", "path": "\(route)", "status": "\(response.status.code)"])
        return response
    }

    /// Refuses, before any route runs, what no route can read: a method the service does not
    /// know (501) and a body in a content coding (415; the gzip bytes of a body sent without
    /// a length would otherwise be read as the next request).
    static func checkFraming(_ request: Request) throws(ServiceError) {
        guard knownMethods.contains(request.method) else {
            throw ServiceError(
                .notImplemented, .notImplemented,
                "this service does not know the method \(request.method.rawValue.escapingControlCharacters)")
        }
        for coding in request.headers[values: .contentEncoding] {
            for value in coding.split(separator: ",")
            where value.trimmingCharacters(in: .whitespaces).lowercased() != "identity" {
                throw ServiceError(
                    .unsupportedMediaType, .unsupportedContentEncoding,
                    "request bodies are read as sent: Content-Encoding \(String(value).escapingControlCharacters) is not accepted",
                    headers: [.acceptEncoding: "identity", .connection: "close"])
            }
        }
    }

    /// Refuses a request without `Host` (RFC 9112 §3.2) and one naming a host the service does
    /// not answer to (DNS rebinding; see `HostCheck`).
    static func checkHost(_ request: Request, _ check: HostCheck) throws(ServiceError) {
        guard let host = request.head.authority, !host.isEmpty else {
            throw ServiceError(
                .badRequest, .malformedRequest, "the request has no Host header (RFC 9112 §3.2 requires one)",
                headers: [.connection: "close"])
        }
        // RFC 9112 §3.2: more than one Host, or one that is not a valid host and port, is a 400.
        // (The first Host is the authority; any other stays among the header fields.)
        guard request.headers[values: HTTPField.Name("Host")!].isEmpty, HostCheck.isValid(host) else {
            throw ServiceError(
                .badRequest, .malformedRequest,
                "the request's Host is not one valid host[:port] (RFC 9112 §3.2)", headers: [.connection: "close"])
        }
        guard check.allows(host) else {
            throw ServiceError(
                .misdirectedRequest, .misdirectedRequest,
                "this service does not answer to the host '\(host.escapingControlCharacters)' (custody serve --allowed-host adds a name it answers to)"
            )
        }
    }

    /// Hummingbird's own errors (no route, a body too large, a method not allowed) in the
    /// service's JSON form.
    static func serviceError(_ error: any HTTPResponseError, bodyLimit: Int) -> ServiceError {
        let message: String
        let code: ServiceError.Code
        let said = (error as? HTTPError)?.body
        switch error.status {
        case .notFound: (code, message) = (.notFound, "no such endpoint; see GET /openapi.json")
        case .methodNotAllowed:
            (code, message) = (.methodNotAllowed, "this endpoint does not take that method; see GET /openapi.json")
        case .contentTooLarge: return ServiceError.tooLarge(bodyLimit)
        case .requestTimeout: (code, message) = (.bodyTimeout, said ?? "the request body did not arrive in time")
        case .requestHeaderFieldsTooLarge: (code, message) = (.headersTooLarge, said ?? "the request head is too large")
        case .notImplemented: (code, message) = (.notImplemented, said ?? "this service does not implement that")
        default:
            // Any other status Hummingbird answers with: the request could not be read (4xx),
            // or the service failed (5xx). The closed set has a code for each kind.
            (code, message) =
                error.status.code < 500
                ? (.malformedRequest, said ?? "the request cannot be read")
                : (.internal, said ?? "the service failed to answer this request")
        }
        return ServiceError(error.status, code, message, headers: (error as? HTTPError)?.headers ?? [:])
    }
}

/// Finds the token a request carries (`Authorization: Bearer custody_…`).
struct TokenAuthenticator: AuthenticatorMiddleware {
    typealias Context = CustodyRequestContext
    let engine: CustodyEngine

    func authenticate(request: Request, context: Context) async throws -> ServiceToken? {
        guard let bearer = Self.bearer(request.headers) else { return nil }
        let found: ServiceToken?
        do {
            found = try await engine.authenticate(bearer: bearer)
        } catch {
            // The caller is not authenticated: what the state says (a damaged token row's
            // name, scopes, the statement) is for the log, not for the answer.
            context.logger.error(
                "a token cannot be verified: the state cannot be read", metadata: ["error": "\(error)"])
            throw ServiceError(
                .serviceUnavailable, .state,
                "the token cannot be verified now: the state cannot be read (the service's log says why)")
        }
        guard let token = found else {
            switch await engine.refusal(ofBearer: bearer) {
            case .revoked(let date): throw ServiceError.revoked(at: date)
            case .expired(let date): throw ServiceError.expired(at: date)
            case nil: break
            }
            throw ServiceError.invalidToken
        }
        return token
    }

    /// The token of `Authorization: Bearer <token>`; the scheme is case-insensitive (RFC 9110
    /// section 11.1), and so `bearer` and `BEARER` are the same.
    /// Read on the bytes: this runs on every request, and `lowercased()` with Foundation's
    /// trimming took 7% of a single decision's server time. A value with a byte beyond ASCII
    /// (never a Custody token, which is ASCII) is read the general way, trimming any Unicode
    /// space, so both ways take the same values.
    static func bearer(_ headers: HTTPFields) -> String? {
        guard var value = headers[.authorization] else { return nil }
        return value.withUTF8 { bytes -> String? in
            guard let space = bytes.firstIndex(of: UInt8(ascii: " ")), space == scheme.count,
                zip(bytes[..<space], scheme).allSatisfy({ $0 | 0x20 == $1 })
            else { return nil }
            var rest = bytes[(space + 1)...]
            guard rest.allSatisfy({ $0 < 0x80 }) else {
                let token = String(decoding: rest, as: UTF8.self).trimmingCharacters(in: .whitespaces)
                return token.isEmpty ? nil : token
            }
            while let first = rest.first, first == UInt8(ascii: " ") || first == UInt8(ascii: "\t") {
                rest = rest.dropFirst()
            }
            while let last = rest.last, last == UInt8(ascii: " ") || last == UInt8(ascii: "\t") {
                rest = rest.dropLast()
            }
            return rest.isEmpty ? nil : String(decoding: rest, as: UTF8.self)
        }
    }

    /// The scheme, lower-case (an ASCII letter's upper-case form differs only in bit 0x20).
    private static let scheme = Array("bearer".utf8)
}

/// Lets a request through only with a token that grants `scope`: 401 without a valid token,
/// 403 with one that lacks the scope.
struct RequireScope: RouterMiddleware {
    typealias Context = CustodyRequestContext
    let scope: TokenScope

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        guard let token = context.identity else { throw ServiceError.unauthorized }
        guard token.grants(scope) else { throw ServiceError.forbidden(scope) }
        return try await next(request, context)
    }
}

/// Runs the routes it guards as background work (`BackgroundExecutor`): on a busy machine an
/// administrator's views yield the cores to decisions, for at most a second each (then they
/// run as everything else does: a console on a saturated machine is slow, never stuck); on an
/// idle one they take as long as ever.
struct InBackground: RouterMiddleware {
    typealias Context = CustodyRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        try await BackgroundExecutor.run(escalatingAfter: .seconds(1)) { try await next(request, context) }
    }
}

extension HTTPField.Name {
    static let custodyRequestID = Self("Custody-Request-Id")!
    static let custodyRevision = Self("Custody-Revision")!
    static let custodyStale = Self("Custody-Stale")!
    static let custodyStateRevision = Self("Custody-State-Revision")!
    static let custodyEventID = Self("Custody-Event-Id")!
    static let custodyMinRevision = Self("Custody-Min-Revision")!
    static let custodyMinEventID = Self("Custody-Min-Event-Id")!
    static let lastEventID = Self("Last-Event-ID")!
    static let contentTypeOptions = Self("X-Content-Type-Options")!
}
