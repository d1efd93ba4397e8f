/// Why a sync with Microsoft Graph failed. Nothing was changed when one is thrown: the bundle
/// directory or the bundle in force is exactly as it was.
///
/// Messages name the request that failed (method and URL; Graph URLs carry no secret) and what
/// Graph or the token service said, as it said it; never a client secret, a token or a key.
public struct GraphError: Error, Sendable, CustomStringConvertible {
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The settings are wrong: a missing or unreadable secret, a secret file others may
        /// read, a certificate that does not parse, an authority that is not https.
        public static let configuration = Code(rawValue: "configuration")
        /// The token service refused the app (`invalid_client`, `AADSTS…`), or Graph still
        /// answered 401 with a new token.
        public static let authentication = Code(rawValue: "authentication")
        /// Graph answered a request with an error (a 4xx: its code and message), or kept
        /// failing it (429, 5xx) after every try.
        public static let request = Code(rawValue: "request")
        /// No answer in time: connecting, or a whole request.
        public static let timeout = Code(rawValue: "timeout")
        /// The answer is not what Graph sends: not JSON, no `value` list, an item without an
        /// id, a `nextLink` to another host, a page that repeats.
        public static let invalidResponse = Code(rawValue: "invalid-response")
        /// A delta link Graph no longer honours (`410 Gone`, or `syncStateNotFound`,
        /// `syncStateInvalid`, `resyncRequired`): the members are read in full instead.
        public static let resyncRequired = Code(rawValue: "resync-required")
        /// A delta round could not be used (expired, refused, or answered with a link to
        /// another host): the members are read in full instead. Never the outcome of a sync.
        static let deltaUnavailable = Code(rawValue: "delta-unavailable")
        /// Another process or replica on the state holds the sync lease: it is syncing now.
        public static let busy = Code(rawValue: "busy")
        /// Graph answered with less than the sync needs to decide as Intune does, because the
        /// app lacks a permission (a user member without its UPN): the message names the
        /// permission to grant.
        public static let permission = Code(rawValue: "permission")
        /// The bundle the tenant gives does not load, or cannot be written.
        public static let bundle = Code(rawValue: "bundle")
    }

    public let code: Code
    public let message: String
    /// The request that failed: `GET https://graph.microsoft.com/beta/...`.
    public let request: String?
    /// The HTTP status Graph answered it with, when it answered.
    public let status: Int?
    /// The ids to quote to Microsoft: the `client-request-id` sent and the `request-id` Graph
    /// (or the token service) answered with.
    public let identifiers: RequestIdentifiers?

    public init(
        _ code: Code, _ message: String, request: String? = nil, status: Int? = nil,
        identifiers: RequestIdentifiers? = nil
    ) {
        self.code = code
        self.message = message
        self.request = request
        self.status = status
        self.identifiers = identifiers
    }

    public var description: String {
        (request.map { "\($0): \(message)" } ?? message) + (identifiers.map { " (\($0))" } ?? "")
    }
}
