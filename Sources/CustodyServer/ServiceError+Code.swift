extension ServiceError {
    /// Every code the service answers with: a closed set, each listed in `docs/openapi.json`'s
    /// `Error` schema and in `docs/service.md`'s table with its status (a test holds the three
    /// together).
    ///
    /// A struct over a private enum, as postgres-nio's `PSQLError.Code` is: an embedder compares
    /// a code with the constants here and reads its text (`description`, what the body's `code`
    /// member says), but cannot make one of its own, and a code added later breaks no `switch`
    /// (there are none to make exhaustive).
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        enum Base: String, CaseIterable, Sendable {
            // 400
            case invalidQuery = "invalid-query"
            case invalidJSON = "invalid-json"
            case invalidParameter = "invalid-parameter"
            case invalidBundleRequest = "invalid-bundle-request"
            case emptyData = "empty-data"
            case platformRequired = "platform-required"
            case malformedRequest = "malformed-request"
            case unexpectedBody = "unexpected-body"
            case aborted
            // 401, 403
            case unauthorized
            case tokenExpired = "token-expired"
            case forbidden
            // 404, 405, 408, 409
            case unknownAccount = "unknown-account"
            case notFound = "not-found"
            case graphNotConfigured = "graph-not-configured"
            case methodNotAllowed = "method-not-allowed"
            case bodyTimeout = "body-timeout"
            case headerTimeout = "header-timeout"
            case stale
            case graphSyncBusy = "graph-sync-busy"
            case bundleFrozen = "bundle-frozen"
            case bundleReplayed = "bundle-replayed"
            // 413, 415, 417
            case tooLarge = "too-large"
            case unsupportedContentEncoding = "unsupported-content-encoding"
            case expectationFailed = "expectation-failed"
            // 421
            case misdirectedRequest = "misdirected-request"
            // 422
            case invalidBundle = "invalid-bundle"
            case bundleUntrusted = "bundle-untrusted"
            case ambiguousAccount = "ambiguous-account"
            case refused
            // 422: protection refused (`ProtectionError`'s codes)
            case invalidArguments = "invalid-arguments"
            case malformedEnvelope = "malformed-envelope"
            case unsupportedVersion = "unsupported-version"
            case decryptFailed = "decrypt-failed"
            case keyUnavailable = "key-unavailable"
            case keyStoreUnavailable = "key-store-unavailable"
            case notManaged = "not-managed"
            case keyVersionExists = "key-version-exists"
            case encryptFailed = "encrypt-failed"
            case io
            case masterKey = "master-key"
            // 431, 500, 501, 502
            case headersTooLarge = "headers-too-large"
            case `internal`
            case notImplemented = "not-implemented"
            case graphSyncFailed = "graph-sync-failed"
            // 503
            case noPolicy = "no-policy"
            case noMasterKey = "no-master-key"
            case tooManyConnections = "too-many-connections"
            case replayBusy = "replay-busy"
            case state
            case wipe
            case outcomeUnknown = "outcome-unknown"
        }

        let base: Base

        private init(_ base: Base) { self.base = base }

        /// The code named `text` (as the body's `code` member writes it), if the service has it.
        init?(rawValue text: String) {
            guard let base = Base(rawValue: text) else { return nil }
            self.init(base)
        }

        /// Every code, in the order `Base` lists them.
        static var allCases: [Code] { Base.allCases.map(Code.init) }

        /// `description`, under the name the module's encoders use.
        var rawValue: String { base.rawValue }
        /// What the body's `code` member says.
        public var description: String { base.rawValue }

        // 400
        public static let invalidQuery = Code(.invalidQuery)
        public static let invalidJSON = Code(.invalidJSON)
        public static let invalidParameter = Code(.invalidParameter)
        public static let invalidBundleRequest = Code(.invalidBundleRequest)
        public static let emptyData = Code(.emptyData)
        public static let platformRequired = Code(.platformRequired)
        public static let malformedRequest = Code(.malformedRequest)
        public static let unexpectedBody = Code(.unexpectedBody)
        /// The client closed the connection before its request was read: logged and counted,
        /// never seen by anyone.
        public static let aborted = Code(.aborted)
        // 401, 403
        public static let unauthorized = Code(.unauthorized)
        /// The token was valid once and has expired (`custody tokens create --expires`).
        public static let tokenExpired = Code(.tokenExpired)
        public static let forbidden = Code(.forbidden)
        // 404, 405, 408, 409
        public static let unknownAccount = Code(.unknownAccount)
        public static let notFound = Code(.notFound)
        public static let graphNotConfigured = Code(.graphNotConfigured)
        public static let methodNotAllowed = Code(.methodNotAllowed)
        public static let bodyTimeout = Code(.bodyTimeout)
        public static let headerTimeout = Code(.headerTimeout)
        public static let stale = Code(.stale)
        public static let graphSyncBusy = Code(.graphSyncBusy)
        public static let bundleFrozen = Code(.bundleFrozen)
        public static let bundleReplayed = Code(.bundleReplayed)
        // 413, 415, 417
        public static let tooLarge = Code(.tooLarge)
        public static let unsupportedContentEncoding = Code(.unsupportedContentEncoding)
        public static let expectationFailed = Code(.expectationFailed)
        // 421
        public static let misdirectedRequest = Code(.misdirectedRequest)
        // 422
        public static let invalidBundle = Code(.invalidBundle)
        public static let bundleUntrusted = Code(.bundleUntrusted)
        public static let ambiguousAccount = Code(.ambiguousAccount)
        public static let refused = Code(.refused)
        // 422: protection refused (`ProtectionError`'s codes)
        public static let invalidArguments = Code(.invalidArguments)
        public static let malformedEnvelope = Code(.malformedEnvelope)
        public static let unsupportedVersion = Code(.unsupportedVersion)
        public static let decryptFailed = Code(.decryptFailed)
        public static let keyUnavailable = Code(.keyUnavailable)
        public static let keyStoreUnavailable = Code(.keyStoreUnavailable)
        public static let notManaged = Code(.notManaged)
        public static let keyVersionExists = Code(.keyVersionExists)
        public static let encryptFailed = Code(.encryptFailed)
        public static let io = Code(.io)
        public static let masterKey = Code(.masterKey)
        // 431, 500, 501, 502
        public static let headersTooLarge = Code(.headersTooLarge)
        public static let `internal` = Code(.internal)
        public static let notImplemented = Code(.notImplemented)
        public static let graphSyncFailed = Code(.graphSyncFailed)
        // 503
        public static let noPolicy = Code(.noPolicy)
        public static let noMasterKey = Code(.noMasterKey)
        public static let tooManyConnections = Code(.tooManyConnections)
        /// As many replays as the service runs at once are running (`POST /v1/bundle/impact`).
        public static let replayBusy = Code(.replayBusy)
        public static let state = Code(.state)
        public static let wipe = Code(.wipe)
        public static let outcomeUnknown = Code(.outcomeUnknown)
    }
}
