extension ServiceError {
    /// Every code the service answers with: a closed set (as postgres-nio's `PSQLError.Code`),
    /// each listed in `docs/openapi.json`'s `Error` schema and in `docs/service.md`'s table with
    /// its status (a test holds the three together).
    public enum Code: String, CaseIterable, Sendable {
        // 400
        case invalidQuery = "invalid-query"
        case invalidJSON = "invalid-json"
        case invalidParameter = "invalid-parameter"
        case invalidBundleRequest = "invalid-bundle-request"
        case emptyData = "empty-data"
        case platformRequired = "platform-required"
        case malformedRequest = "malformed-request"
        case unexpectedBody = "unexpected-body"
        /// The client closed the connection before its request was read: logged and counted,
        /// never seen by anyone.
        case aborted
        // 401, 403
        case unauthorized
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
        case state
        case wipe
        case outcomeUnknown = "outcome-unknown"
    }
}
