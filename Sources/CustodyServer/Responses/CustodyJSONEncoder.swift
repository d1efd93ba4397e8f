import CustodyPolicy
public import Hummingbird

/// Encodes the service's answers off the decision path (`Codable` types, `ResponseEncodable`)
/// as `application/json`, as the command line writes its own (`JSONLine`: compact, keys
/// sorted, slashes unescaped, a final line break). The decision stream and the batch endpoint
/// keep the hand-written writer, where speed rules.
public struct CustodyJSONEncoder: ResponseEncoder {
    public init() {}

    public func encode(_ value: some Encodable, from request: Request, context: some RequestContext) throws
        -> Response
    {
        json(try JSONLine.encode(value))
    }
}
