import Foundation
public import Hummingbird

/// Encodes the service's answers off the decision path (`Codable` types, `ResponseEncodable`):
/// compact JSON with slashes unescaped and a final line break, as `application/json`, the
/// same bytes the decision path's hand-written writer gives. The decision stream and the batch
/// endpoint keep that writer, where speed rules.
public struct CustodyJSONEncoder: ResponseEncoder {
    public init() {}

    public func encode(_ value: some Encodable, from request: Request, context: some RequestContext) throws
        -> Response
    {
        json(try Self.bytes(value))
    }

    /// `value` as the service writes JSON.
    static func bytes(_ value: some Encodable) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var bytes = [UInt8](try encoder.encode(value))
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }
}
