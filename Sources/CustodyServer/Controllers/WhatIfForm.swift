import CustodyPolicy
import Foundation

/// The what-if form of the console, built from the query schema the OpenAPI document gives
/// (`components.schemas.Query`, one `oneOf` entry per action): every action is askable with
/// every field it takes, and no field is offered that it does not take. A query built from
/// the form is the one `POST /v1/decisions` would be sent.
struct WhatIfForm: Sendable {
    /// How a field is asked for and sent.
    enum Kind: Sendable, Equatable {
        /// An account: a UPN or an object id.
        case account
        /// Several accounts, comma-separated (sent as a list).
        case accounts
        /// Free text.
        case text
        /// One of a few values.
        case choice([String])
        /// Yes or no.
        case flag
        /// A whole number.
        case number
        /// Several values, comma-separated (app ids).
        case list
        /// A JSON object (conditional launch's facts).
        case object

        /// What a line asking for it shows while empty.
        var placeholder: String {
            switch self {
            case .account: "a UPN or an object id"
            case .accounts: "accounts, comma-separated"
            case .list: "app ids, comma-separated"
            case .number: "a whole number"
            case .text, .choice, .flag, .object: ""
            }
        }
    }

    struct Field: Sendable {
        let name: String
        let kind: Kind
        let required: Bool
        let help: String?
    }

    struct Action: Sendable {
        let name: String
        let description: String
        let fields: [Field]
    }

    let actions: [Action]

    /// The form of the document the service serves.
    static let served = WhatIfForm(openAPI: OpenAPIDocument.bytes)

    /// Every field name any action takes: what the view accepts as parameters.
    var fieldNames: [String] {
        var seen = Set<String>()
        return actions.flatMap(\.fields).map(\.name).filter { seen.insert($0).inserted }
    }

    init(openAPI bytes: [UInt8]) {
        let schemas = (try? JSONDocument(parsing: bytes))?.root["components"]?["schemas"]
        let variants = schemas?["Query"]?["oneOf"].map { Array($0.elements) } ?? []
        actions = variants.compactMap { variant in
            guard let name = variant["$ref"]?.string?.split(separator: "/").last,
                let schema = schemas?[String(name)], schema.kind == .object,
                let properties = schema["properties"], properties.kind == .object,
                let action = properties["action"]?["const"]?.string
            else { return nil }
            let required = Set(Self.strings(schema["required"]) ?? [])
            // Required fields first, then the rest, each by name (not in the document's order).
            let fields = Set(properties.members.map(\.key)).filter { $0 != "action" }.sorted {
                (required.contains($0) ? 0 : 1, $0) < (required.contains($1) ? 0 : 1, $1)
            }.map { key in
                let property = properties[key]
                return Field(
                    name: key, kind: Self.kind(of: property), required: required.contains(key),
                    help: property?["description"]?.string)
            }
            return Action(name: action, description: schema["description"]?.string ?? "", fields: fields)
        }
    }

    private static func kind(of property: JSONValue?) -> Kind {
        switch property?["$ref"]?.string?.split(separator: "/").last {
        case "Account": return .account
        case "AccountList": return .accounts
        case "LaunchFacts": return .object
        default: break
        }
        if let choices = strings(property?["enum"]) { return .choice(choices) }
        let types = strings(property?["type"]) ?? [property?["type"]?.string ?? "string"]
        if types.contains("boolean") { return .flag }
        if types.contains("integer") { return .number }
        if types.contains("array") { return .list }
        return .text
    }

    /// A list of strings, or nil when `value` is not an array of strings only (an `enum` that
    /// allows null is no list of choices).
    private static func strings(_ value: JSONValue?) -> [String]? {
        guard let value, value.kind == .array else { return nil }
        var strings: [String] = []
        for element in value.elements {
            guard let string = element.string else { return nil }
            strings.append(string)
        }
        return strings
    }

    func action(named name: String) -> Action? { actions.first { $0.name == name } }

    /// A value of a query the form builds: what JSON can hold (a launch's facts are any JSON
    /// object typed into the form).
    indirect enum Value: Codable, Sendable {
        case null
        case bool(Bool)
        case integer(Int)
        /// A whole number past `Int.max`, kept whole.
        case unsignedInteger(UInt64)
        case number(Double)
        case string(String)
        case list([Value])
        case object([String: Value])

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() {
                self = .null
            } else if let bool = try? container.decode(Bool.self) {
                self = .bool(bool)
            } else if let integer = try? container.decode(Int.self) {
                self = .integer(integer)
            } else if let integer = try? container.decode(UInt64.self) {
                self = .unsignedInteger(integer)
            } else if let number = try? container.decode(Double.self) {
                self = .number(number)
            } else if let string = try? container.decode(String.self) {
                self = .string(string)
            } else if let list = try? container.decode([Value].self) {
                self = .list(list)
            } else {
                self = .object(try container.decode([String: Value].self))
            }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .null: try container.encodeNil()
            case .bool(let bool): try container.encode(bool)
            case .integer(let integer): try container.encode(integer)
            case .unsignedInteger(let integer): try container.encode(integer)
            case .number(let number): try container.encode(number)
            case .string(let string): try container.encode(string)
            case .list(let list): try container.encode(list)
            case .object(let object): try container.encode(object)
            }
        }
    }

    /// The query for `action` from the values the form sent (empty ones left out), or a
    /// sentence about the form saying what is wrong.
    func query(for action: Action, values: [String: String]) -> Result<[String: Value], FormError> {
        var query: [String: Value] = ["action": .string(action.name)]
        var missing: [String] = []
        for field in action.fields {
            let value = (values[field.name] ?? "").trimmingCharacters(in: .whitespaces)
            guard !value.isEmpty else {
                if field.required { missing.append(Self.label(field.name)) }
                continue
            }
            switch field.kind {
            case .account, .text, .choice: query[field.name] = .string(value)
            case .accounts, .list:
                query[field.name] = .list(
                    value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                        .filter { !$0.isEmpty }.map(Value.string))
            case .flag:
                guard value == "true" || value == "false" else {
                    return .failure(FormError("\(Self.label(field.name)) must be yes or no"))
                }
                query[field.name] = .bool(value == "true")
            case .number:
                guard let number = Int(value), number >= 0 else {
                    return .failure(FormError("\(Self.label(field.name)) must be a whole number, zero or more"))
                }
                query[field.name] = .integer(number)
            case .object:
                guard let object = try? JSONDecoder().decode([String: Value].self, from: Data(value.utf8)) else {
                    return .failure(
                        FormError(
                            "\(Self.label(field.name)) must be a JSON object, such as {\"osVersion\": \"17.4\", \"jailbroken\": false}"
                        ))
                }
                query[field.name] = .object(object)
            }
        }
        guard missing.isEmpty else {
            return .failure(FormError("\(action.name) needs \(missing.joined(separator: " and "))"))
        }
        return .success(query)
    }

    /// A query as the line POST /v1/decisions takes: compact JSON, keys sorted, slashes as they
    /// are.
    static func line(_ query: [String: Value]) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(query))
    }

    /// A field's name as the form shows it: `locationAccount` → `Location account`.
    static func label(_ name: String) -> String {
        var words: [String] = []
        var current = ""
        for character in name {
            if character.isUppercase, !current.isEmpty {
                words.append(current)
                current = ""
            }
            current.append(character)
        }
        words.append(current)
        let text = words.map { $0.lowercased() }.joined(separator: " ")
        return text.prefix(1).uppercased() + text.dropFirst()
    }

    struct FormError: Error {
        let message: String
        init(_ message: String) { self.message = message }
    }
}
