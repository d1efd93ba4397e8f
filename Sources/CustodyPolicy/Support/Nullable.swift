/// An optional that a synthesized `Encodable` writes as `null` when it is nil, where the
/// synthesized default leaves the key out: the service's and the command line's answers list
/// every member their contract names, set or not.
@propertyWrapper
package struct Nullable<Value: Encodable & Sendable>: Encodable, Sendable {
    package var wrappedValue: Value?

    package init(wrappedValue: Value?) {
        self.wrappedValue = wrappedValue
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue { try container.encode(wrappedValue) } else { try container.encodeNil() }
    }
}

extension Nullable: Equatable where Value: Equatable {}
extension Nullable: Hashable where Value: Hashable {}
