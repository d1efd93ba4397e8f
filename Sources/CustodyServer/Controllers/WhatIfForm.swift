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
        let document = (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any] ?? [:]
        let schemas = (document["components"] as? [String: Any])?["schemas"] as? [String: Any] ?? [:]
        let variants = (schemas["Query"] as? [String: Any])?["oneOf"] as? [[String: Any]] ?? []
        actions = variants.compactMap { variant in
            guard let name = (variant["$ref"] as? String)?.split(separator: "/").last,
                let schema = schemas[String(name)] as? [String: Any],
                let properties = schema["properties"] as? [String: Any],
                let action = (properties["action"] as? [String: Any])?["const"] as? String
            else { return nil }
            let required = Set(schema["required"] as? [String] ?? [])
            // The document's own order of properties is not kept by JSONSerialization: required
            // fields first, then the rest, each by name.
            let fields = properties.keys.filter { $0 != "action" }.sorted {
                (required.contains($0) ? 0 : 1, $0) < (required.contains($1) ? 0 : 1, $1)
            }.map { key in
                let property = properties[key] as? [String: Any] ?? [:]
                return Field(
                    name: key, kind: Self.kind(of: property), required: required.contains(key),
                    help: property["description"] as? String)
            }
            return Action(name: action, description: schema["description"] as? String ?? "", fields: fields)
        }
    }

    private static func kind(of property: [String: Any]) -> Kind {
        switch (property["$ref"] as? String)?.split(separator: "/").last {
        case "Account": return .account
        case "AccountList": return .accounts
        case "LaunchFacts": return .object
        default: break
        }
        if let choices = property["enum"] as? [String] { return .choice(choices) }
        let types = (property["type"] as? [String]) ?? [(property["type"] as? String) ?? "string"]
        if types.contains("boolean") { return .flag }
        if types.contains("integer") { return .number }
        if types.contains("array") { return .list }
        return .text
    }

    func action(named name: String) -> Action? { actions.first { $0.name == name } }

    /// The query for `action` from the values the form sent (empty ones left out), or a
    /// sentence about the form saying what is wrong.
    func query(for action: Action, values: [String: String]) -> Result<[String: Any], FormError> {
        var query: [String: Any] = ["action": action.name]
        var missing: [String] = []
        for field in action.fields {
            let value = (values[field.name] ?? "").trimmingCharacters(in: .whitespaces)
            guard !value.isEmpty else {
                if field.required { missing.append(Self.label(field.name)) }
                continue
            }
            switch field.kind {
            case .account, .text, .choice: query[field.name] = value
            case .accounts, .list:
                query[field.name] = value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                    .filter { !$0.isEmpty }
            case .flag:
                guard value == "true" || value == "false" else {
                    return .failure(FormError("\(Self.label(field.name)) must be yes or no"))
                }
                query[field.name] = value == "true"
            case .number:
                guard let number = Int(value), number >= 0 else {
                    return .failure(FormError("\(Self.label(field.name)) must be a whole number, zero or more"))
                }
                query[field.name] = number
            case .object:
                guard let data = value.data(using: .utf8),
                    let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
                else {
                    return .failure(
                        FormError(
                            "\(Self.label(field.name)) must be a JSON object, such as {\"osVersion\": \"17.4\", \"jailbroken\": false}"
                        ))
                }
                query[field.name] = object
            }
        }
        guard missing.isEmpty else {
            return .failure(FormError("\(action.name) needs \(missing.joined(separator: " and "))"))
        }
        return .success(query)
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
