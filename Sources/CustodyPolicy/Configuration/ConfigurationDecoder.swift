/// Decodes a `Decodable` type from app configuration settings, as Apple's ManagedApp framework
/// decodes a configuration: each setting name is a coding key; a nested type reads the
/// settings under its key followed by a dot (`server.host` for `server` → `host`), and an
/// array the settings `key.0`, `key.1`, ... Values are strings and are read as the property's
/// type: integers and numbers in decimal, booleans `true`/`false` in any letter case.
///
/// Forward and backward compatible: settings the type does not declare are ignored, and an
/// optional property whose setting is absent is nil. A setting of the wrong type, a missing
/// required setting, or more than `maximumSize` bytes of settings are errors that name the
/// setting (`ConfigurationDecodingError.keyPath`).
public struct ConfigurationDecoder: Sendable {
    /// The most bytes (names plus values) a configuration may take when decoded: 64 KiB.
    public static let maximumSize = 64 * 1024

    public init() {}

    /// Decodes `type` from `settings` (setting name → value).
    public func decode<Value: Decodable>(_ type: Value.Type, from settings: [String: String])
        throws(ConfigurationDecodingError) -> Value
    {
        let size = settings.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
        guard size <= Self.maximumSize else {
            throw ConfigurationDecodingError(
                code: .tooLarge, keyPath: "",
                message: "the configuration takes \(size) bytes; at most \(Self.maximumSize) are decoded")
        }
        do {
            return try Value(from: SettingsDecoder(settings: settings, prefix: "", codingPath: []))
        } catch let error as ConfigurationDecodingError {
            throw error
        } catch let error as DecodingError {
            throw ConfigurationDecodingError(error)
        } catch {
            // A type's own init(from:) threw something else: report it at the top.
            throw ConfigurationDecodingError(code: .invalidValue, keyPath: "", message: "\(error)")
        }
    }
}

/// Why a configuration did not decode, and which setting.
public struct ConfigurationDecodingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, stable for programs and specs.
    public enum Code: String, Sendable, Hashable, CaseIterable {
        /// A required setting is absent.
        case missingKey = "missing-key"
        /// A setting's value is not of the property's type.
        case typeMismatch = "type-mismatch"
        /// The type rejected a value (its own validation).
        case invalidValue = "invalid-value"
        /// The configuration exceeds `ConfigurationDecoder.maximumSize`.
        case tooLarge = "too-large"
    }

    public let code: Code
    /// The setting's name as administrators write it (`server.port`); empty for the whole.
    public let keyPath: String
    public let message: String

    public init(code: Code, keyPath: String, message: String) {
        self.code = code
        self.keyPath = keyPath
        self.message = message
    }

    init(_ error: DecodingError) {
        switch error {
        case .keyNotFound(let key, let context):
            self.init(
                code: .missingKey, keyPath: Self.path(context.codingPath + [key]),
                message: "the required setting is absent")
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            self.init(code: .typeMismatch, keyPath: Self.path(context.codingPath), message: context.debugDescription)
        case .dataCorrupted(let context):
            self.init(code: .invalidValue, keyPath: Self.path(context.codingPath), message: context.debugDescription)
        @unknown default:
            self.init(code: .invalidValue, keyPath: "", message: "\(error)")
        }
    }

    static func path(_ codingPath: [any CodingKey]) -> String {
        codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
    }

    public var description: String {
        keyPath.isEmpty ? "\(code.rawValue): \(message)" : "\(keyPath): \(code.rawValue): \(message)"
    }
}

/// The decoder for one level: the settings whose names start with `prefix`.
private struct SettingsDecoder: Decoder {
    let settings: [String: String]
    let prefix: String
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(KeyedSettings<Key>(decoder: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        // A list is `key.0` to `key.n-1`; an index beyond a gap would be silently lost.
        var indices: Set<Int> = []
        for name in settings.keys where name.hasPrefix(prefix) {
            let rest = name.dropFirst(prefix.count)
            if let index = Int(rest.prefix { $0 != "." }), index >= 0 { indices.insert(index) }
        }
        if let missing = (0..<indices.count).first(where: { !indices.contains($0) }) {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: codingPath + [IndexKey(missing)],
                    debugDescription: "the list has items up to index \(indices.max() ?? 0) but none at \(missing)"))
        }
        return UnkeyedSettings(decoder: self)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        guard !prefix.isEmpty else {
            throw DecodingError.typeMismatch(
                String.self,
                .init(codingPath: codingPath, debugDescription: "a configuration is a set of settings, not one value"))
        }
        return SingleSetting(settings: settings, name: String(prefix.dropLast()), codingPath: codingPath)
    }

    /// The setting name of `key` at this level.
    func name(of key: some CodingKey) -> String { prefix + (key.intValue.map(String.init) ?? key.stringValue) }

    /// Whether the setting `name`, or any under it, is present.
    func contains(_ name: String) -> Bool {
        settings[name] != nil || settings.keys.contains { $0.hasPrefix(name + ".") }
    }

    func child(_ name: String, key: some CodingKey) -> SettingsDecoder {
        SettingsDecoder(settings: settings, prefix: name + ".", codingPath: codingPath + [key])
    }
}

private struct KeyedSettings<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: SettingsDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }

    var allKeys: [Key] {
        var names: Set<String> = []
        for name in decoder.settings.keys where name.hasPrefix(decoder.prefix) {
            let rest = name.dropFirst(decoder.prefix.count)
            names.insert(String(rest))
            if let dot = rest.firstIndex(of: ".") { names.insert(String(rest[..<dot])) }
        }
        return names.compactMap { Key(stringValue: $0) }
    }

    func contains(_ key: Key) -> Bool { decoder.contains(decoder.name(of: key)) }

    func decodeNil(forKey key: Key) throws -> Bool { !contains(key) }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        let name = decoder.name(of: key)
        if let value = decoder.settings[name],
            let scalar = try SingleSetting.scalar(type, value, codingPath: codingPath + [key])
        {
            return scalar
        }
        guard decoder.contains(name) else {
            throw DecodingError.keyNotFound(
                key, .init(codingPath: codingPath, debugDescription: "no setting '\(name)'"))
        }
        return try T(from: decoder.child(name, key: key))
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try decoder.child(decoder.name(of: key), key: key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try decoder.child(decoder.name(of: key), key: key).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder { decoder }

    func superDecoder(forKey key: Key) throws -> any Decoder { decoder.child(decoder.name(of: key), key: key) }
}

/// `key.0`, `key.1`, ... up to the first index with no setting.
private struct UnkeyedSettings: UnkeyedDecodingContainer {
    let decoder: SettingsDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }
    var currentIndex = 0

    init(decoder: SettingsDecoder) { self.decoder = decoder }

    var count: Int? {
        var count = 0
        while decoder.contains(decoder.prefix + String(count)) { count += 1 }
        return count
    }

    var isAtEnd: Bool { !decoder.contains(decoder.prefix + String(currentIndex)) }

    mutating func decodeNil() throws -> Bool { isAtEnd }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let key = IndexKey(currentIndex)
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                type, .init(codingPath: codingPath + [key], debugDescription: "the list ends here"))
        }
        let value = try KeyedSettings<IndexKey>(decoder: decoder).decode(type, forKey: key)
        currentIndex += 1
        return value
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<
        NestedKey
    > {
        defer { currentIndex += 1 }
        return try decoder.child(decoder.prefix + String(currentIndex), key: IndexKey(currentIndex)).container(
            keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        defer { currentIndex += 1 }
        return try decoder.child(decoder.prefix + String(currentIndex), key: IndexKey(currentIndex)).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder {
        defer { currentIndex += 1 }
        return decoder.child(decoder.prefix + String(currentIndex), key: IndexKey(currentIndex))
    }
}

private struct IndexKey: CodingKey {
    let intValue: Int?
    var stringValue: String { String(intValue ?? 0) }
    init(_ index: Int) { intValue = index }
    init?(intValue: Int) { self.intValue = intValue }
    init?(stringValue: String) {
        guard let index = Int(stringValue) else { return nil }
        intValue = index
    }
}

/// One setting's value, read as a scalar type.
private struct SingleSetting: SingleValueDecodingContainer {
    let settings: [String: String]
    let name: String
    let codingPath: [any CodingKey]

    func decodeNil() -> Bool { settings[name] == nil }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        guard let value = settings[name] else {
            throw DecodingError.valueNotFound(
                type, .init(codingPath: codingPath, debugDescription: "no setting '\(name)'"))
        }
        if let scalar = try Self.scalar(type, value, codingPath: codingPath) { return scalar }
        // A type that decodes itself from one value (a RawRepresentable enum, a wrapper).
        return try T(from: SettingsDecoder(settings: [name: value], prefix: name + ".", codingPath: codingPath))
    }

    /// `value` as `type` when it is a scalar type; nil for other types. Throws when the
    /// value does not read as the scalar type.
    static func scalar<T>(_ type: T.Type, _ value: String, codingPath: [any CodingKey]) throws -> T? {
        func mismatch(_ what: String) -> DecodingError {
            .typeMismatch(type, .init(codingPath: codingPath, debugDescription: "expected \(what), found '\(value)'"))
        }
        switch type {
        case is String.Type: return value as? T
        case is Bool.Type:
            guard let bool = AppConfiguration.bool(value) else { throw mismatch("true or false") }
            return bool as? T
        case is Double.Type:
            guard let double = AppConfiguration.double(value) else { throw mismatch("a number") }
            return double as? T
        case is Float.Type:
            guard let double = AppConfiguration.double(value), let float = Float(exactly: Float(double)), float.isFinite
            else {
                throw mismatch("a number")
            }
            return float as? T
        case is Int.Type: return try integer(Int.self, value, mismatch) as? T
        case is Int8.Type: return try integer(Int8.self, value, mismatch) as? T
        case is Int16.Type: return try integer(Int16.self, value, mismatch) as? T
        case is Int32.Type: return try integer(Int32.self, value, mismatch) as? T
        case is Int64.Type: return try integer(Int64.self, value, mismatch) as? T
        case is UInt.Type: return try integer(UInt.self, value, mismatch) as? T
        case is UInt8.Type: return try integer(UInt8.self, value, mismatch) as? T
        case is UInt16.Type: return try integer(UInt16.self, value, mismatch) as? T
        case is UInt32.Type: return try integer(UInt32.self, value, mismatch) as? T
        case is UInt64.Type: return try integer(UInt64.self, value, mismatch) as? T
        default: return nil
        }
    }

    private static func integer<I: FixedWidthInteger>(
        _ type: I.Type, _ value: String, _ mismatch: (String) -> DecodingError
    ) throws -> I {
        guard let integer = I(value) else { throw mismatch("an integer in \(I.min)...\(I.max)") }
        return integer
    }
}
