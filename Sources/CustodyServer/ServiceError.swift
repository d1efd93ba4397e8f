import Custody
import CustodyPolicy
import CustodyProtection
import CustodyStore
import Foundation
public import HTTPTypes
public import Hummingbird

/// An error the service answers with: a status, a stable code, a message a caller can act
/// on, and, where they help, more members (a line and column, the current revision). The body
/// is always JSON: `{"error": "...", "code": "...", ...}`. Never a token, a secret or data.
public struct ServiceError: HTTPResponseError, CustomStringConvertible {
    public let status: HTTPResponse.Status
    public let code: Code
    public let message: String
    /// More members of the body, where they help.
    let details: Details
    public let headers: HTTPFields

    init(
        _ status: HTTPResponse.Status, _ code: Code, _ message: String, headers: HTTPFields = [:],
        details: Details = Details()
    ) {
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        self.headers = headers
    }

    /// The members an error body may carry besides `error` and `code`; each written only when
    /// set (`revision` may be set to `null`: a stale answer with no bundle in force).
    struct Details: Encodable, Sendable {
        var diagnostics: [String]?
        var revision: String??
        var eventId: Int64?
        var line: Int?
        var column: Int?
        var parameter: String?
        var limit: Int?
        var scope: String?
        var allow: [String]?
        var sync: PolicySync?

        private enum CodingKeys: String, CodingKey {
            case diagnostics, revision, eventId, line, column, parameter, limit, scope, allow, sync
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encodeIfPresent(diagnostics, forKey: .diagnostics)
            if let revision { try container.encode(revision, forKey: .revision) }
            try container.encodeIfPresent(eventId, forKey: .eventId)
            try container.encodeIfPresent(line, forKey: .line)
            try container.encodeIfPresent(column, forKey: .column)
            try container.encodeIfPresent(parameter, forKey: .parameter)
            try container.encodeIfPresent(limit, forKey: .limit)
            try container.encodeIfPresent(scope, forKey: .scope)
            try container.encodeIfPresent(allow, forKey: .allow)
            try container.encodeIfPresent(sync, forKey: .sync)
        }
    }

    /// The JSON body: `error`, `code`, then the details.
    private struct Body: Encodable {
        let error: String
        let code: String
        let details: Details

        private enum CodingKeys: String, CodingKey { case error, code }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(error, forKey: .error)
            try container.encode(code, forKey: .code)
            try details.encode(to: encoder)
        }
    }

    public var description: String { "\(status.code) \(code.rawValue): \(message)" }

    /// The JSON body.
    var body: [UInt8] {
        // Strings, numbers and arrays of them: encoding cannot fail.
        (try? JSONLine.encode(Body(error: message, code: code.rawValue, details: details)))
            ?? Array(#"{"code":"internal","error":"the error could not be written"}"#.utf8) + [0x0A]
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers = headers
        headers[.contentType] = "application/json"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    // MARK: From the engine's errors

    /// The answer for an engine error.
    init(_ error: CustodyError) {
        switch error.code {
        case .noPolicy:
            self.init(
                .serviceUnavailable, .noPolicy,
                "no bundle is in force: apply one (custody apply, or PUT /v1/bundle); nothing is decided until then")
        case .bundle:
            self.init(
                .unprocessableContent, .invalidBundle, error.message,
                details: Details(diagnostics: error.diagnostics.map(\.description)))
        case .account:
            let unknown =
                (error.underlying as? AccountError)?.code == .unknown
                || (error.underlying as? WipeError)?.reason == .unknownAccount
            self.init(
                unknown ? .notFound : .unprocessableContent, unknown ? .unknownAccount : .ambiguousAccount,
                error.message)
        case .protection:
            // Each of `ProtectionError`'s codes is one of the service's (a test checks it).
            let code =
                (error.underlying as? ProtectionError).flatMap { Code(rawValue: $0.code.rawValue) } ?? .invalidArguments
            // Keys out of reach now is not a refusal of the request: it may succeed later.
            self.init(
                code == .keyStoreUnavailable ? .serviceUnavailable : .unprocessableContent, code,
                code == .keyStoreUnavailable ? Self.withoutLocation(error) : error.message)
        case .refused:
            self.init(.unprocessableContent, .refused, error.message)
        case .untrusted:
            let details = Details(diagnostics: error.diagnostics.map(\.description))
            switch error.diagnostics.first?.code {
            case .frozen: self.init(.conflict, .bundleFrozen, error.message, details: details)
            case .replayed: self.init(.conflict, .bundleReplayed, error.message, details: details)
            default: self.init(.unprocessableContent, .bundleUntrusted, error.message, details: details)
            }
        case .notFound:
            self.init(.notFound, .notFound, error.message)
        case .invalidArgument:
            self.init(.badRequest, .invalidParameter, error.message)
        case .platform:
            self.init(
                .badRequest, .platformRequired,
                error.message + ": add ?platform=ios or ?platform=android, or start the service with --platform")
        case .outcomeUnknown:
            let revision = (error.underlying as? BundleRejection)?.revision
            self.init(
                .serviceUnavailable, .outcomeUnknown, Self.withoutLocation(error),
                details: Details(revision: revision.map { .some($0) }))
        case .masterKey:
            self.init(
                .serviceUnavailable, .noMasterKey,
                "this service has no usable master key, so it cannot reach account keys")
        case .wipe:
            self.init(.serviceUnavailable, .wipe, Self.withoutLocation(error))
        default:
            // `state`, and any code the engine may add: the state cannot be relied on now. The
            // account keys out of reach say so (`key-store-unavailable`, as docs/service.md lists).
            let keys = (error.underlying as? ProtectionError)?.code == .keyStoreUnavailable
            self.init(.serviceUnavailable, keys ? .keyStoreUnavailable : .state, Self.withoutLocation(error))
        }
    }

    /// An engine error's message without the database it names (a state file's path, a
    /// PostgreSQL server's address): the operator's business, which the service logs, not a
    /// caller's.
    static func withoutLocation(_ error: CustodyError) -> String {
        // The state's own errors, and the key store's (the keys live in the state).
        let path = (error.underlying as? StoreError)?.path ?? (error.underlying as? ProtectionError)?.path
        guard let path, !path.isEmpty else { return error.message }
        return error.message.replacingOccurrences(of: path + ": ", with: "").replacingOccurrences(
            of: path, with: "the state")
    }

    /// A query that could not be read: 400 with its line and column in `text`, the body it
    /// was read from (a pretty-printed query spans lines).
    static func badQuery(_ error: QueryError, in text: [UInt8]) -> ServiceError {
        let (line, column) =
            text.contains(UInt8(ascii: "\n"))
            ? JSONText.lineAndColumn(ofOffset: error.offset ?? (error.column - 1), in: text) : (1, error.column)
        if error.isStateFailure { return ServiceError(.serviceUnavailable, .state, error.message) }
        return ServiceError(
            error.isAmbiguousAccount ? .unprocessableContent : .badRequest,
            error.isAmbiguousAccount ? .ambiguousAccount : .invalidQuery,
            "line \(line), column \(column): \(error.message)", details: Details(line: line, column: column))
    }

    /// The account a parameter names, or a 400 saying why it names none.
    static func account(_ text: String?, parameter: String, naming role: String) throws(ServiceError) -> AccountID {
        guard let text, !text.isEmpty else {
            throw badParameter(parameter, "must name \(role): a UPN, or an OID in GUID form")
        }
        do {
            return try AccountID(validating: text)
        } catch {
            throw badParameter(parameter, "must name \(role): a UPN, or an OID in GUID form (\(error))")
        }
    }

    static func badParameter(_ name: String, _ message: String) -> ServiceError {
        ServiceError(.badRequest, .invalidParameter, "\(name): \(message)", details: Details(parameter: name))
    }

    /// A body over the limit: 413.
    static func tooLarge(_ limits: CustodyServerConfiguration.Limits) -> ServiceError {
        tooLarge(limits.bodyBytes)
    }

    /// A body over `limit` bytes: 413.
    static func tooLarge(_ limit: Int) -> ServiceError {
        ServiceError(
            .contentTooLarge, .tooLarge, "the request body is larger than this service accepts (\(limit) bytes)",
            details: Details(limit: limit))
    }

    static let unauthorized = ServiceError(
        .unauthorized, .unauthorized, "a bearer token is required: Authorization: Bearer custody_…",
        headers: [.wwwAuthenticate: #"Bearer realm="custody""#])

    /// A bearer token was sent, and it is no valid token of this service.
    static let invalidToken = ServiceError(
        .unauthorized, .unauthorized,
        "the bearer token is not a valid token of this service (custody tokens create makes one)",
        headers: [.wwwAuthenticate: #"Bearer realm="custody", error="invalid_token""#])

    /// A token that was valid and is revoked: said, so that its holder asks for another.
    static func revoked(at date: Date) -> ServiceError {
        ServiceError(
            .unauthorized, .unauthorized,
            "this token was revoked at \(date.formatted(.iso8601)); ask for a new one (custody tokens create)",
            headers: [.wwwAuthenticate: #"Bearer realm="custody", error="invalid_token""#])
    }

    static func expired(at date: Date) -> ServiceError {
        ServiceError(
            .unauthorized, .tokenExpired,
            "this token expired at \(date.formatted(.iso8601)); ask for a new one (custody tokens create, or tokens rotate before it expires)",
            headers: [
                .wwwAuthenticate:
                    #"Bearer realm="custody", error="invalid_token", error_description="the token expired""#
            ])
    }

    static func forbidden(_ scope: TokenScope) -> ServiceError {
        ServiceError(
            .forbidden, .forbidden, "this token does not have the \(scope.rawValue) scope",
            details: Details(scope: scope.rawValue))
    }
}
