import Foundation

/// A JSON value as Graph sends it, kept whole: the policies Custody reads are passed through to
/// the bundle as they came (less Graph's per-response annotations), written with sorted keys so
/// that the same tenant always gives the same bytes.
public enum GraphJSON: Sendable, Hashable, Codable {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([GraphJSON])
    case object([String: GraphJSON])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([GraphJSON].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: GraphJSON].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    public subscript(key: String) -> GraphJSON? {
        if case .object(let members) = self { members[key] } else { nil }
    }

    public var string: String? {
        if case .string(let value) = self { value } else { nil }
    }

    public var array: [GraphJSON]? {
        if case .array(let value) = self { value } else { nil }
    }

    public var object: [String: GraphJSON]? {
        if case .object(let value) = self { value } else { nil }
    }

    /// Pretty JSON with sorted keys and a final newline: the bytes of a bundle file.
    public func canonicalBytes() throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        return Array(try encoder.encode(self)) + [UInt8(ascii: "\n")]
    }
}
