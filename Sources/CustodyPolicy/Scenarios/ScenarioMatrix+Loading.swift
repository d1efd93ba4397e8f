import Foundation

/// A matrix file that could not be read, with every problem and where it is.
public struct ScenarioError: Error, Sendable, CustomStringConvertible {
    public var diagnostics: [Diagnostic]

    public var description: String { diagnostics.map(\.description).joined(separator: "\n") }
}

extension ScenarioMatrix {
    /// The members a case may have beside its query's.
    static let caseMembers: Set<String> = ["name", "expect", "reason", "restriction", "state"]

    /// Loads a matrix file. Unknown members, a missing bundle member and malformed cases are
    /// errors with `file:line:column`, never silently skipped.
    public static func load(path: String) throws(ScenarioError) -> ScenarioMatrix {
        let bytes: [UInt8]
        do {
            bytes = try DocumentReader.contents(of: path, what: "matrix")
        } catch {
            throw ScenarioError(diagnostics: [error])
        }
        return try parse(bytes, file: path)
    }

    /// Parses a matrix from bytes; `file` names it in diagnostics and anchors its bundle path.
    public static func parse(_ bytes: [UInt8], file: String) throws(ScenarioError) -> ScenarioMatrix {
        var reader: DocumentReader
        switch DocumentReader.open(bytes, file: file) {
        case .success(let opened): reader = opened
        case .failure(let diagnostic): throw ScenarioError(diagnostics: [diagnostic])
        }
        let document = reader.document
        let root = document.root
        var description: String?
        var bundle: String?
        var bundleLocation: DocumentLocation?
        var context = EvaluationContext()
        var cases: [ScenarioCase] = []
        if root.kind != .object {
            reader.error(
                .invalidValue, "a matrix must be a JSON object, found \(root.kind.article)", at: root, path: "$")
        }
        for member in reader.uniqueMembers(of: root, path: "$") {
            let path = "$.\(member.key)"
            switch member.key {
            case "description": description = reader.string(member.value, path: path)
            case "bundle":
                bundle = reader.string(member.value, path: path)
                bundleLocation = reader.location(of: member.value)
            case "context": context = readContext(member.value, reader: &reader, path: path)
            case "cases":
                guard member.value.kind == .array else {
                    reader.error(
                        .invalidValue, "\"cases\" must be an array, found \(member.value.kind.article)",
                        at: member.value, path: path)
                    continue
                }
                for (index, element) in member.value.elements.enumerated() {
                    if let scenario = readCase(element, reader: &reader, path: "\(path)[\(index)]") {
                        cases.append(scenario)
                    }
                }
            case "grids":
                guard member.value.kind == .array else {
                    reader.error(
                        .invalidValue, "\"grids\" must be an array, found \(member.value.kind.article)",
                        at: member.value, path: path)
                    continue
                }
                for (index, element) in member.value.elements.enumerated() {
                    cases += readGrid(element, reader: &reader, path: "\(path)[\(index)]")
                }
            default:
                reader.error(
                    .unknownProperty,
                    "unknown member '\(member.key)' (a matrix has: description, bundle, context, cases, grids)",
                    at: member.name, path: "$")
            }
        }
        if bundle == nil, root.kind == .object {
            reader.error(
                .invalidValue, "the matrix names no \"bundle\" (a directory, relative to the matrix file)", at: root,
                path: "$")
        }
        if reader.hasErrors { throw ScenarioError(diagnostics: reader.diagnostics) }
        let directory = PathName.directory(of: file)
        let bundlePath =
            bundle!.hasPrefix("/")
            ? bundle! : (directory.isEmpty ? bundle! : (directory as NSString).appendingPathComponent(bundle!))
        return ScenarioMatrix(
            file: file, description: description, bundlePath: bundlePath, bundleLocation: bundleLocation,
            context: context, cases: cases)
    }

    private static func readContext(_ value: JSONValue, reader: inout DocumentReader, path: String) -> EvaluationContext
    {
        var context = EvaluationContext()
        guard value.kind == .object else {
            reader.error(
                .invalidValue, "\"context\" must be an object, found \(value.kind.article)", at: value, path: path)
            return context
        }
        for member in reader.uniqueMembers(of: value, path: path) {
            let memberPath = "\(path).\(member.key)"
            switch member.key {
            case "platform":
                guard let name = reader.string(member.value, path: memberPath) else { continue }
                guard let platform = Platform(rawValue: name) else {
                    reader.error(
                        .invalidValue, "unknown platform '\(name)' (ios, android)", at: member.value, path: memberPath)
                    continue
                }
                context.platform = platform
            case "app": context.appID = reader.string(member.value, path: memberPath)
            case "managementLevel":
                guard let name = reader.string(member.value, path: memberPath) else { continue }
                guard let level = AppManagementLevel(rawValue: name) else {
                    reader.error(
                        .invalidValue, "unknown management level '\(name)'", at: member.value, path: memberPath)
                    continue
                }
                context.managementLevel = level
            default:
                reader.error(
                    .unknownProperty,
                    "unknown member '\(member.key)' of context (it has: platform, app, managementLevel)",
                    at: member.name, path: path)
            }
        }
        return context
    }

    private static func readCase(_ value: JSONValue, reader: inout DocumentReader, path: String) -> ScenarioCase? {
        let location = reader.location(of: value)
        let query: DecisionQuery
        do {
            query = try DecisionQuery(json: value, extraMembers: caseMembers, currentTime: { .zero })
        } catch {
            reader.record(
                Diagnostic(
                    severity: .error, code: .invalidValue, message: error.message,
                    location: error.offset.map(reader.location(ofOffset:)) ?? location, path: path))
            return nil
        }
        let name =
            value.members.first { $0.key == "name" }.flatMap { reader.string($0.value, path: path + ".name") }
            ?? query.description
        guard
            let expectation = readExpectation(
                value, members: caseMembers.subtracting(["name"]), what: "the case", reader: &reader, path: path)
        else { return nil }
        return ScenarioCase(name: name, query: query, expectation: expectation, location: location)
    }

    /// What a case, a rule or a table cell expects: `"allow"`/`"block"` alone, or an object
    /// with `expect` and optionally `reason`, `restriction`, `state` (only the `members` named
    /// are read; the caller checks for others).
    static func readExpectation(
        _ value: JSONValue, members: Set<String>, what: String, reader: inout DocumentReader, path: String
    ) -> ScenarioExpectation? {
        if let word = value.string {
            guard let allowed = expectWord(word) else {
                reader.error(
                    .invalidValue,
                    "expected \"allow\" or \"block\" (\"required\" or \"notRequired\" for encryptionRequired)",
                    at: value, path: path)
                return nil
            }
            return ScenarioExpectation(expectAllowed: allowed)
        }
        guard value.kind == .object else {
            reader.error(
                .invalidValue, "an expectation is \"allow\", \"block\" or an object with \"expect\"", at: value,
                path: path)
            return nil
        }
        var expectation = ScenarioExpectation(expectAllowed: false)
        var expectSeen = false
        var valid = true
        for member in value.members where members.contains(member.key) {
            let memberPath = "\(path).\(member.key)"
            switch member.key {
            case "expect":
                expectSeen = true
                if let allowed = member.value.string.flatMap(expectWord) {
                    expectation.expectAllowed = allowed
                } else {
                    valid = false
                    reader.error(
                        .invalidValue,
                        "\"expect\" must be \"allow\" or \"block\" (\"required\" or \"notRequired\" for encryptionRequired)",
                        at: member.value, path: memberPath)
                }
            case "reason": expectation.reasonContains = reader.string(member.value, path: memberPath)
            case "restriction":
                expectation.restriction = reader.string(member.value, path: memberPath).flatMap(
                    NotificationRestriction.init(rawValue:))
                if expectation.restriction == nil {
                    valid = false
                    reader.error(
                        .invalidValue, "\"restriction\" must be allow, blockOrganizationalData or block",
                        at: member.value, path: memberPath)
                }
            case "state":
                expectation.state = reader.string(member.value, path: memberPath).flatMap(OfflineState.init(rawValue:))
                if expectation.state == nil {
                    valid = false
                    reader.error(
                        .invalidValue, "\"state\" must be online, accessBlocked or wipeRequired", at: member.value,
                        path: memberPath)
                }
            default: break
            }
        }
        if !expectSeen {
            reader.error(.invalidValue, "\(what) has no \"expect\" (\"allow\" or \"block\")", at: value, path: path)
            return nil
        }
        return valid ? expectation : nil
    }

    private static func expectWord(_ word: String) -> Bool? {
        switch word {
        case "allow", "required": true
        case "block", "notRequired": false
        default: nil
        }
    }
}
