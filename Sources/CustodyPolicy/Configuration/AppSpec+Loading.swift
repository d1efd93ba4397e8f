import Foundation

extension AppSpec {
    /// Loads a spec file. Unknown members, missing keys or types, duplicate keys and values
    /// that contradict their own declaration are errors with `file:line:column`.
    public static func load(path: String) throws(AppSpecError) -> AppSpec {
        let bytes: [UInt8]
        do {
            bytes = try DocumentReader.contents(of: path, what: "spec")
        } catch {
            throw AppSpecError(diagnostics: [error])
        }
        return try parse(bytes, file: path)
    }

    /// Parses a spec from bytes; `file` names it in diagnostics.
    public static func parse(_ bytes: [UInt8], file: String) throws(AppSpecError) -> AppSpec {
        var reader: DocumentReader
        switch DocumentReader.open(bytes, file: file) {
        case .success(let opened): reader = opened
        case .failure(let diagnostic): throw AppSpecError(diagnostics: [diagnostic])
        }
        let root = reader.document.root
        guard root.kind == .object else {
            reader.error(.invalidValue, "a spec must be a JSON object, found \(root.kind.article)", at: root, path: "$")
            throw AppSpecError(diagnostics: reader.diagnostics)
        }
        var app: String?
        var description: String?
        var settings: [Setting] = []
        var secrets: [Secret] = []
        for member in reader.uniqueMembers(of: root, path: "$") {
            let path = "$.\(member.key)"
            switch member.key {
            case "app": app = reader.string(member.value, path: path)
            case "description": description = reader.string(member.value, path: path)
            case "settings":
                for (index, element) in array(member.value, reader: &reader, path: path).enumerated() {
                    if let setting = readSetting(element, reader: &reader, path: "\(path)[\(index)]") {
                        if settings.contains(where: { $0.key == setting.key }) {
                            reader.error(
                                .duplicateMember, "the setting '\(setting.key)' is declared twice", at: element,
                                path: "\(path)[\(index)]")
                        } else {
                            settings.append(setting)
                        }
                    }
                }
            case "secrets":
                for (index, element) in array(member.value, reader: &reader, path: path).enumerated() {
                    if let secret = readSecret(element, reader: &reader, path: "\(path)[\(index)]") {
                        if secrets.contains(where: { $0.identifier == secret.identifier }) {
                            reader.error(
                                .duplicateMember, "the secret '\(secret.identifier)' is declared twice", at: element,
                                path: "\(path)[\(index)]")
                        } else {
                            secrets.append(secret)
                        }
                    }
                }
            default:
                reader.error(
                    .unknownProperty,
                    "unknown member '\(member.key)' (a spec has: app, description, settings, secrets)", at: member.name,
                    path: "$")
            }
        }
        if app == nil {
            reader.error(
                .invalidValue, "the spec names no \"app\" (the app's bundle or package id)", at: root, path: "$")
        }
        if reader.hasErrors { throw AppSpecError(diagnostics: reader.diagnostics) }
        return AppSpec(
            app: app!, description: description, settings: settings.sorted { $0.key < $1.key },
            secrets: secrets.sorted { $0.identifier < $1.identifier }, file: file)
    }

    private static func array(_ value: JSONValue, reader: inout DocumentReader, path: String) -> [JSONValue] {
        guard value.kind == .array else {
            reader.error(.invalidValue, "expected an array, found \(value.kind.article)", at: value, path: path)
            return []
        }
        return Array(value.elements)
    }

    private static let settingMembers = "key, type, description, required, values, minimum, maximum, maxLength, default"

    private static func readSetting(_ value: JSONValue, reader: inout DocumentReader, path: String) -> Setting? {
        guard value.kind == .object else {
            reader.error(
                .invalidValue, "a setting must be an object, found \(value.kind.article)", at: value, path: path)
            return nil
        }
        var key: String?
        var type: ValueType?
        var description: String?
        var required = false
        var values: [String]?
        var minimum: Double?
        var maximum: Double?
        var maxLength: Int?
        var defaultValue: String?
        var typedMembers: [(String, JSONValue)] = []
        for member in reader.uniqueMembers(of: value, path: path) {
            let memberPath = "\(path).\(member.key)"
            switch member.key {
            case "key": key = reader.string(member.value, path: memberPath)
            case "type":
                guard let name = reader.string(member.value, path: memberPath) else { continue }
                type = ValueType(rawValue: name)
                if type == nil {
                    reader.error(
                        .invalidValue, "unknown type '\(name)' (string, integer, double, bool)", at: member.value,
                        path: memberPath)
                }
            case "description": description = reader.string(member.value, path: memberPath)
            case "required": required = reader.bool(member.value, path: memberPath) ?? false
            case "values":
                values = reader.stringList(member.value, path: memberPath)?.map(\.0)
                typedMembers.append((member.key, member.value))
            case "minimum", "maximum":
                guard let number = member.value.double, member.value.kind == .number else {
                    reader.error(
                        .invalidValue, "expected a number, found \(member.value.kind.article)", at: member.value,
                        path: memberPath)
                    continue
                }
                if member.key == "minimum" { minimum = number } else { maximum = number }
                typedMembers.append((member.key, member.value))
            case "maxLength":
                maxLength = reader.int(member.value, in: 0...Int(Int32.max), path: memberPath)
                typedMembers.append((member.key, member.value))
            case "default":
                defaultValue = member.value.string
                if defaultValue == nil {
                    reader.error(
                        .invalidValue, "a default is written as a string, as administrators enter it", at: member.value,
                        path: memberPath)
                }
            default:
                reader.error(
                    .unknownProperty, "unknown member '\(member.key)' of a setting (it has: \(settingMembers))",
                    at: member.name, path: path)
            }
        }
        guard let key else {
            reader.error(.invalidValue, "the setting has no \"key\"", at: value, path: path)
            return nil
        }
        guard let type else {
            reader.error(
                .invalidValue, "the setting '\(key)' has no \"type\" (string, integer, double, bool)", at: value,
                path: path)
            return nil
        }
        // Constraints must fit the type they constrain.
        for (name, member) in typedMembers {
            let fits =
                switch name {
                case "minimum", "maximum": type == .integer || type == .double
                case "maxLength": type == .string
                default: type != .bool
                }
            if !fits {
                reader.error(
                    .invalidValue, "\"\(name)\" does not apply to a \(type.rawValue) setting", at: member,
                    path: "\(path).\(name)")
            }
        }
        let setting = Setting(
            key: key, type: type, description: description, required: required, values: values, minimum: minimum,
            maximum: maximum,
            maxLength: maxLength, defaultValue: defaultValue, location: reader.location(of: value))
        for allowed in values ?? [] {
            let unconstrained = Setting(
                key: key, type: type, description: nil, required: false, values: nil, minimum: minimum,
                maximum: maximum,
                maxLength: maxLength, defaultValue: nil, location: setting.location)
            if let problem = unconstrained.problem(with: allowed) {
                reader.error(.invalidValue, "the allowed value \(problem)", at: value, path: "\(path).values")
            }
        }
        if let defaultValue, let problem = setting.problem(with: defaultValue) {
            reader.error(.invalidValue, "the default \(problem)", at: value, path: "\(path).default")
        }
        return setting
    }

    private static func readSecret(_ value: JSONValue, reader: inout DocumentReader, path: String) -> Secret? {
        guard value.kind == .object else {
            reader.error(
                .invalidValue, "a secret must be an object, found \(value.kind.article)", at: value, path: path)
            return nil
        }
        var identifier: String?
        var kind: Secret.Kind?
        var scope = Secret.Scope.account
        var description: String?
        for member in reader.uniqueMembers(of: value, path: path) {
            let memberPath = "\(path).\(member.key)"
            switch member.key {
            case "identifier": identifier = reader.string(member.value, path: memberPath)
            case "kind":
                guard let name = reader.string(member.value, path: memberPath) else { continue }
                kind = Secret.Kind(rawValue: name)
                if kind == nil {
                    reader.error(
                        .invalidValue, "unknown kind '\(name)' (password, certificate, identity)", at: member.value,
                        path: memberPath)
                }
            case "scope":
                guard let name = reader.string(member.value, path: memberPath) else { continue }
                guard let parsed = Secret.Scope(rawValue: name) else {
                    reader.error(
                        .invalidValue, "unknown scope '\(name)' (account, app)", at: member.value, path: memberPath)
                    continue
                }
                scope = parsed
            case "description": description = reader.string(member.value, path: memberPath)
            default:
                reader.error(
                    .unknownProperty,
                    "unknown member '\(member.key)' of a secret (it has: identifier, kind, scope, description)",
                    at: member.name, path: path)
            }
        }
        guard let identifier, let kind else {
            reader.error(.invalidValue, "a secret needs an \"identifier\" and a \"kind\"", at: value, path: path)
            return nil
        }
        return Secret(identifier: identifier, kind: kind, scope: scope, description: description)
    }
}
