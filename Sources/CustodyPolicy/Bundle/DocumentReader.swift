import Foundation

/// Reads typed values out of one parsed document, recording a located diagnostic for every
/// problem instead of stopping at the first.
///
/// "Not configured" (a missing member, `null` or `""`) reads as nil without complaint. A value of
/// the wrong JSON type is an error. An enum value Custody does not know is a warning and reads
/// as the most restrictive value, so an unknown future setting never loosens a policy.
struct DocumentReader {
    let file: String
    let document: JSONDocument
    private(set) var diagnostics: [Diagnostic] = []
    private let lines: LineIndex

    init(file: String, document: JSONDocument) {
        self.file = file
        self.document = document
        self.lines = LineIndex(document.source)
    }

    /// The bytes of the file at `path` (a `what` file, for the message), or why there are none.
    static func contents(of path: String, what: String) throws(Diagnostic) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw Diagnostic(
                severity: .error, code: .unreadable, message: "cannot read the \(what) file",
                location: DocumentLocation(file: path, line: 1, column: 1))
        }
        return [UInt8](data)
    }

    /// A reader over `bytes` (a JSON file named `file` in diagnostics), or the located
    /// diagnostic of why they are not JSON text.
    static func open(_ bytes: [UInt8], file: String) -> Result<DocumentReader, Diagnostic> {
        let text: [UInt8]
        do {
            text = try JSONText.utf8(from: bytes).text
        } catch {
            return .failure(
                Diagnostic(
                    severity: .error, code: .encoding, message: error.message,
                    location: DocumentLocation(file: file, line: 1, column: 1)))
        }
        do {
            return .success(DocumentReader(file: file, document: try JSONDocument(parsing: text)))
        } catch {
            let (line, column) = JSONText.lineAndColumn(ofOffset: error.offset, in: text)
            return .failure(
                Diagnostic(
                    severity: .error, code: .syntax, message: error.message,
                    location: DocumentLocation(file: file, line: line, column: column)))
        }
    }

    var hasErrors: Bool { diagnostics.contains { $0.severity == .error } }

    func location(of value: JSONValue) -> DocumentLocation {
        location(ofOffset: value.offset)
    }

    func location(ofOffset offset: Int) -> DocumentLocation {
        let (line, column) = lines.lineAndColumn(ofOffset: offset)
        return DocumentLocation(file: file, line: line, column: column)
    }

    mutating func record(_ diagnostic: Diagnostic) {
        diagnostics.append(diagnostic)
    }

    mutating func error(_ code: Diagnostic.Code, _ message: String, at value: JSONValue, path: String?) {
        diagnostics.append(
            Diagnostic(severity: .error, code: code, message: message, location: location(of: value), path: path))
    }

    mutating func warning(_ code: Diagnostic.Code, _ message: String, at value: JSONValue, path: String?) {
        diagnostics.append(
            Diagnostic(severity: .warning, code: code, message: message, location: location(of: value), path: path))
    }

    mutating func notice(_ code: Diagnostic.Code, _ message: String, at value: JSONValue, path: String?) {
        diagnostics.append(
            Diagnostic(severity: .notice, code: code, message: message, location: location(of: value), path: path))
    }

    /// The members of an object, with duplicate names reported as errors (which of two values
    /// would apply is ambiguous) and only the first of each name returned.
    mutating func uniqueMembers(of object: JSONValue, path: @autoclosure () -> String) -> [JSONMembers.Member] {
        var seen: Set<String> = []
        var members: [JSONMembers.Member] = []
        for member in object.members {
            let key = member.key
            if seen.insert(key).inserted {
                members.append(member)
            } else {
                error(
                    .duplicateMember,
                    "'\(key)' appears more than once in this object; which value applies is ambiguous", at: member.name,
                    path: path())
            }
        }
        return members
    }

    // MARK: Scalars

    mutating func bool(_ value: JSONValue, path: @autoclosure () -> String) -> Bool? {
        if value.isNull || value.stringEquals("") { return nil }
        guard let bool = value.bool else {
            error(.invalidValue, "expected true or false, found \(value.kind.article)", at: value, path: path())
            return nil
        }
        return bool
    }

    mutating func int(_ value: JSONValue, in range: ClosedRange<Int>, path: @autoclosure () -> String) -> Int? {
        if value.isNull || value.stringEquals("") { return nil }
        guard value.kind == .number else {
            error(.invalidValue, "expected a whole number, found \(value.kind.article)", at: value, path: path())
            return nil
        }
        guard let int = value.int else {
            error(
                .invalidValue, "expected a whole number, found \(value.numberText ?? "a number")", at: value,
                path: path())
            return nil
        }
        guard range.contains(int) else {
            error(
                .invalidValue, "\(int) is out of range \(range.lowerBound)...\(range.upperBound)", at: value,
                path: path())
            return nil
        }
        return int
    }

    /// A string; `""` reads as not configured.
    mutating func string(_ value: JSONValue, path: @autoclosure () -> String) -> String? {
        if value.isNull { return nil }
        guard let string = value.string else {
            error(.invalidValue, "expected a string, found \(value.kind.article)", at: value, path: path())
            return nil
        }
        return string.isEmpty ? nil : string
    }

    mutating func duration(_ value: JSONValue, path: @autoclosure () -> String) -> PolicyDuration? {
        guard let text = string(value, path: path()) else { return nil }
        do {
            return try PolicyDuration(iso8601: text)
        } catch {
            self.error(.invalidValue, "not a valid duration: \(error)", at: value, path: path())
            return nil
        }
    }

    // MARK: Enums

    /// One enum value. Unknown values read as `fallback` with a warning.
    mutating func enumValue<E: GraphEnum>(
        _ value: JSONValue, as type: E.Type, unknownReadsAs fallback: E, path: @autoclosure () -> String
    ) -> E? {
        guard let text = string(value, path: path()) else { return nil }
        if let known = E.matching(text) { return known }
        warning(
            .unknownEnumValue,
            "unknown value '\(text)' (known: \(E.allCases.map(\.rawValue).joined(separator: ", "))); using the most restrictive, '\(fallback.rawValue)'",
            at: value, path: path())
        return fallback
    }

    /// A set of enum values, from an array of strings or one comma-joined string (flags).
    /// Unknown values are dropped with a warning: in an allow-list, leaving one out is the
    /// restrictive reading.
    mutating func enumSet<E: GraphEnum>(_ value: JSONValue, as type: E.Type, path: @autoclosure () -> String) -> Set<E>?
    {
        guard let texts = stringList(value, splittingCommas: true, path: path()) else { return nil }
        var result: Set<E> = []
        for (text, element) in texts {
            if let known = E.matching(text) {
                result.insert(known)
            } else {
                warning(
                    .unknownEnumValue,
                    "unknown value '\(text)' (known: \(E.allCases.map(\.rawValue).joined(separator: ", "))); it allows nothing",
                    at: element, path: path())
            }
        }
        return result
    }

    /// Strings from an array (or, when `splittingCommas`, one comma-joined string), each with the
    /// JSON value it came from. Empty strings are skipped.
    mutating func stringList(
        _ value: JSONValue, splittingCommas: Bool = false, path: @autoclosure () -> String
    ) -> [(String, JSONValue)]? {
        if value.isNull { return nil }
        if splittingCommas, let joined = value.string {
            return joined.split(separator: ",").map { (String($0).trimmingSpaces, value) }.filter { !$0.0.isEmpty }
        }
        guard value.kind == .array else {
            error(.invalidValue, "expected an array, found \(value.kind.article)", at: value, path: path())
            return nil
        }
        var result: [(String, JSONValue)] = []
        for (index, element) in value.elements.enumerated() {
            guard let text = element.string else {
                error(
                    .invalidValue, "expected a string, found \(element.kind.article)", at: element,
                    path: "\(path())[\(index)]")
                continue
            }
            if !text.isEmpty { result.append((text, element)) }
        }
        return result
    }

    /// A Graph `keyValuePair` collection: `[{"name": ..., "value": ...}]`.
    mutating func keyValuePairs(_ value: JSONValue, path: @autoclosure () -> String) -> [(name: String, value: String)]?
    {
        if value.isNull { return nil }
        guard value.kind == .array else {
            error(
                .invalidValue, "expected an array of {\"name\", \"value\"} pairs, found \(value.kind.article)",
                at: value, path: path())
            return nil
        }
        var pairs: [(name: String, value: String)] = []
        for (index, element) in value.elements.enumerated() {
            let elementPath = "\(path())[\(index)]"
            guard element.kind == .object else {
                error(
                    .invalidValue, "expected a {\"name\", \"value\"} object, found \(element.kind.article)",
                    at: element, path: elementPath)
                continue
            }
            var name: String?
            var pairValue: String?
            for member in uniqueMembers(of: element, path: elementPath) {
                switch member.key {
                case "name": name = string(member.value, path: elementPath + ".name")
                case "value":
                    // An empty value is a real value here ("" is a valid setting).
                    if member.value.isNull {
                        pairValue = nil
                    } else if let text = member.value.string {
                        pairValue = text
                    } else {
                        error(
                            .invalidValue, "expected a string, found \(member.value.kind.article)", at: member.value,
                            path: elementPath + ".value")
                    }
                default:
                    if !isAnnotation(member.key) {
                        warning(
                            .unknownProperty, "unknown property '\(member.key)' of a key/value pair is ignored",
                            at: member.name, path: elementPath)
                    }
                }
            }
            guard let name else {
                error(.invalidValue, "a key/value pair needs a non-empty \"name\"", at: element, path: elementPath)
                continue
            }
            pairs.append((name, pairValue ?? ""))
        }
        return pairs
    }
}

/// Whether a member name is an OData annotation (`@odata.type`, `prop@odata.type`) or an action
/// key (`#microsoft.graph.assign`): metadata of the export, never a setting.
func isAnnotation(_ key: String) -> Bool {
    key.hasPrefix("#") || key.contains("@")
}

extension GraphEnum {
    /// The case whose raw value equals `text`, ignoring case as Graph does.
    static func matching(_ text: String) -> Self? {
        if let exact = Self(rawValue: text) { return exact }
        let lowered = text.lowercased()
        return allCases.first { $0.rawValue.lowercased() == lowered }
    }
}

extension String {
    /// The string without leading and trailing spaces and tabs.
    var trimmingSpaces: String {
        var slice = Substring(self)
        while let first = slice.first, first == " " || first == "\t" { slice.removeFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice.removeLast() }
        return String(slice)
    }
}
