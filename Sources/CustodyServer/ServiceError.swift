import Custody
import CustodyPolicy
import CustodyProtection
import CustodyStore
public import HTTPTypes
public import Hummingbird

/// An error the service answers with: a status, a stable code, a message a caller can act
/// on, and, where they help, more members (a line and column, the current revision). The body
/// is always JSON: `{"error": "...", "code": "...", ...}`. Never a token, a secret or data.
public struct ServiceError: HTTPResponseError, CustomStringConvertible {
    public let status: HTTPResponse.Status
    public let code: Code
    public let message: String
    /// More members of the body, already encoded (without braces).
    let members: [UInt8]
    public let headers: HTTPFields

    init(
        _ status: HTTPResponse.Status, _ code: Code, _ message: String, headers: HTTPFields = [:],
        members: (inout JSONWriter) -> Void = { _ in }
    ) {
        self.status = status
        self.code = code
        self.message = message
        var writer = JSONWriter()
        writer.beginObject()
        members(&writer)
        writer.endObject()
        self.members = Array(writer.bytes.dropFirst().dropLast())
        self.headers = headers
    }

    public var description: String { "\(status.code) \(code.rawValue): \(message)" }

    /// The JSON body.
    var body: [UInt8] {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("error")
        writer.value(message)
        writer.key("code")
        writer.value(code.rawValue)
        if !members.isEmpty { writer.rawMembers(members) }
        writer.endObject()
        writer.newline()
        return writer.bytes
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
            self.init(.unprocessableContent, .invalidBundle, error.message) { writer in
                writer.key("diagnostics")
                writer.beginArray()
                for diagnostic in error.diagnostics { writer.value(diagnostic.description) }
                writer.endArray()
            }
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
            self.init(code == .keyStoreUnavailable ? .serviceUnavailable : .unprocessableContent, code, error.message)
        case .refused:
            self.init(.unprocessableContent, .refused, error.message)
        case .platform:
            self.init(
                .badRequest, .platformRequired,
                error.message + ": add ?platform=ios or ?platform=android, or start the service with --platform")
        case .outcomeUnknown:
            let revision = (error.underlying as? BundleRejection)?.revision
            self.init(.serviceUnavailable, .outcomeUnknown, error.message) { writer in
                if let revision {
                    writer.key("revision")
                    writer.value(revision)
                }
            }
        case .masterKey:
            self.init(
                .serviceUnavailable, .noMasterKey,
                "this service has no usable master key, so it cannot reach account keys")
        case .wipe:
            self.init(.serviceUnavailable, .wipe, error.message)
        default:
            // `state`, and any code the engine may add: the state cannot be relied on now.
            self.init(.serviceUnavailable, .state, error.message)
        }
    }

    /// A query that could not be read: 400 with its line and column in `text`, the body it
    /// was read from (a pretty-printed query spans lines).
    static func badQuery(_ error: QueryError, in text: [UInt8]) -> ServiceError {
        let (line, column) =
            text.contains(UInt8(ascii: "\n"))
            ? JSONText.lineAndColumn(ofOffset: error.offset ?? (error.column - 1), in: text) : (1, error.column)
        return ServiceError(.badRequest, .invalidQuery, "line \(line), column \(column): \(error.message)") { writer in
            writer.key("line")
            writer.value(line)
            writer.key("column")
            writer.value(column)
        }
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
        ServiceError(.badRequest, .invalidParameter, "\(name): \(message)") { writer in
            writer.key("parameter")
            writer.value(name)
        }
    }

    /// A body over the limit: 413.
    static func tooLarge(_ limits: CustodyServerConfiguration.Limits) -> ServiceError {
        tooLarge(limits.bodyBytes)
    }

    /// A body over `limit` bytes: 413.
    static func tooLarge(_ limit: Int) -> ServiceError {
        ServiceError(
            .contentTooLarge, .tooLarge, "the request body is larger than this service accepts (\(limit) bytes)"
        ) { writer in
            writer.key("limit"); writer.value(limit)
        }
    }

    static let unauthorized = ServiceError(
        .unauthorized, .unauthorized, "a bearer token is required: Authorization: Bearer custody_…",
        headers: [.wwwAuthenticate: #"Bearer realm="custody""#])

    static func forbidden(_ scope: TokenScope) -> ServiceError {
        ServiceError(.forbidden, .forbidden, "this token does not have the \(scope.rawValue) scope") { writer in
            writer.key("scope")
            writer.value(scope.rawValue)
        }
    }
}
