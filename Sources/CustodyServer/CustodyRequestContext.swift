public import Custody
public import Hummingbird
public import HummingbirdAuth

/// The context of one request: Hummingbird's, and the bearer token that authenticated it.
public struct CustodyRequestContext: AuthRequestContext, RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The token the request was authenticated with; nil before authentication, or without one.
    public var identity: ServiceToken?

    public init(source: Source) {
        coreContext = .init(source: source)
        identity = nil
    }

    /// Query bodies are read by the routes themselves, within the service's limits.
    public var maxUploadSize: Int { 16 << 20 }

    /// How `ResponseEncodable` answers are written (see `CustodyJSONEncoder`).
    public var responseEncoder: CustodyJSONEncoder { CustodyJSONEncoder() }
}
