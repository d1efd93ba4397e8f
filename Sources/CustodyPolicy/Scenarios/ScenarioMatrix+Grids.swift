/// Grids: a query template, axes whose cartesian product makes the cases, and expectations as
/// rules over the axes or as a table. See docs/matrices.md.
///
/// ```json
/// {"name": "save to, user1", "query": {"action": "saveTo", "owner": "user1@contoso.com"},
///  "axes": {"location": ["oneDriveForBusiness", "box"], "locationAccount": ["user1@contoso.com", null]},
///  "rules": [{"when": {"location": "oneDriveForBusiness", "locationAccount": "user1@contoso.com"}, "expect": "allow"},
///            {"expect": "block"}]}
/// ```
extension ScenarioMatrix {
    static let gridMembers = "name, query, axes, rules, table"
    static let ruleMembers: Set<String> = ["when", "expect", "reason", "restriction", "state"]
    static let cellMembers: Set<String> = ["expect", "reason", "restriction", "state"]

    /// One axis: a query field and the values it takes.
    struct Axis {
        let key: String
        let name: JSONValue
        let values: [JSONValue]
        /// Each value as the rules and the table name it: strings as they are, `null`, `true`,
        /// numbers as written.
        let texts: [String]
    }

    /// A rule: for each axis it constrains, the value indices it accepts.
    struct Rule {
        let conditions: [(axis: Int, accepted: Set<Int>)]
        let expectation: ScenarioExpectation
        let value: JSONValue
        let location: DocumentLocation

        func matches(_ combination: [Int]) -> Bool {
            conditions.allSatisfy { $0.accepted.contains(combination[$0.axis]) }
        }
    }

    static func readGrid(_ value: JSONValue, reader: inout DocumentReader, path: String) -> [ScenarioCase] {
        guard value.kind == .object else {
            reader.error(.invalidValue, "a grid must be an object, found \(value.kind.article)", at: value, path: path)
            return []
        }
        var name: String?
        var template: JSONValue?
        var axesValue: JSONValue?
        var rulesValue: JSONValue?
        var tableValue: JSONValue?
        for member in reader.uniqueMembers(of: value, path: path) {
            switch member.key {
            case "name": name = reader.string(member.value, path: path + ".name")
            case "query": template = member.value
            case "axes": axesValue = member.value
            case "rules": rulesValue = member.value
            case "table": tableValue = member.value
            default:
                reader.error(
                    .unknownProperty, "unknown member '\(member.key)' of a grid (it has: \(gridMembers))",
                    at: member.name, path: path)
            }
        }
        let errorsBefore = reader.diagnostics.count
        guard let template, template.kind == .object else {
            reader.error(
                .invalidValue, "the grid needs a \"query\" object: the fields every case shares", at: template ?? value,
                path: path + ".query")
            return []
        }
        guard let axes = readAxes(axesValue, template: template, reader: &reader, path: path + ".axes", grid: value)
        else { return [] }
        if (rulesValue == nil) == (tableValue == nil) {
            reader.error(
                .invalidValue, "the grid needs either \"rules\" or \"table\" for its expectations", at: value,
                path: path)
            return []
        }
        var rules: [Rule] = []
        var table: [ScenarioExpectation?] = []
        var tableLocations: [DocumentLocation] = []
        if let rulesValue {
            rules = readRules(rulesValue, axes: axes, reader: &reader, path: path + ".rules")
        } else if let tableValue {
            let count = axes.reduce(1) { $0 * $1.values.count }
            table = Array(repeating: nil, count: count)
            tableLocations = Array(repeating: reader.location(of: tableValue), count: count)
            readTable(
                tableValue, axes: axes, depth: 0, index: 0, into: &table, locations: &tableLocations, reader: &reader,
                path: path + ".table")
        }
        func gridHasErrors() -> Bool { reader.diagnostics[errorsBefore...].contains { $0.severity == .error } }
        guard !gridHasErrors() else { return [] }

        // Expand: every combination of axis values, the last axis fastest.
        let templateFields = template.members.map { QueryField(key: $0.key, name: $0.name, value: $0.value) }
        let templateAction = template.members.first { $0.key == "action" }?.value
        let actionAxis = axes.firstIndex { $0.key == "action" }
        let prefix = name ?? "grid at line \(reader.location(of: value).line)"
        var cases: [ScenarioCase] = []
        var used = Array(repeating: false, count: rules.count)
        var combination = Array(repeating: 0, count: axes.count)
        var flat = 0
        repeat {
            var fields = templateFields
            for (axisIndex, axis) in axes.enumerated() {
                fields.append(QueryField(key: axis.key, name: axis.name, value: axis.values[combination[axisIndex]]))
            }
            let label =
                prefix + " ["
                + axes.indices.map { "\(axes[$0].key)=\(axes[$0].texts[combination[$0]])" }.joined(separator: ", ")
                + "]"
            let query: DecisionQuery
            do {
                query = try DecisionQuery(
                    action: actionAxis.map { axes[$0].values[combination[$0]] } ?? templateAction, fields: fields,
                    extraMembers: [],
                    object: template, currentTime: { .zero })
            } catch {
                // One bad value would fail many combinations: report the first, stop the grid.
                reader.record(
                    Diagnostic(
                        severity: .error, code: .invalidValue, message: "\(label): \(error.message)",
                        location: error.offset.map(reader.location(ofOffset:)) ?? reader.location(of: template),
                        path: path))
                return []
            }
            if table.isEmpty {
                guard let ruleIndex = rules.firstIndex(where: { $0.matches(combination) }) else {
                    reader.error(
                        .invalidValue, "no rule covers \(label) (add one, or a last rule without \"when\")",
                        at: rulesValue ?? value, path: path + ".rules")
                    return []
                }
                used[ruleIndex] = true
                cases.append(
                    ScenarioCase(
                        name: label, query: query, expectation: rules[ruleIndex].expectation,
                        location: rules[ruleIndex].location))
            } else if let expectation = table[flat] {
                cases.append(
                    ScenarioCase(name: label, query: query, expectation: expectation, location: tableLocations[flat]))
            }
            flat += 1
        } while advance(&combination, axes: axes)

        for (index, rule) in rules.enumerated() where !used[index] {
            reader.error(
                .invalidValue, "this rule never applies: earlier rules cover every combination it names",
                at: rule.value, path: "\(path).rules[\(index)]")
        }
        return gridHasErrors() ? [] : cases
    }

    /// The next combination (the last axis fastest); false after the last one.
    private static func advance(_ combination: inout [Int], axes: [Axis]) -> Bool {
        var position = axes.count - 1
        while position >= 0 {
            combination[position] += 1
            if combination[position] < axes[position].values.count { return true }
            combination[position] = 0
            position -= 1
        }
        return false
    }

    private static func readAxes(
        _ value: JSONValue?, template: JSONValue, reader: inout DocumentReader, path: String, grid: JSONValue
    ) -> [Axis]? {
        guard let value, value.kind == .object, !value.members.map(\.key).isEmpty else {
            reader.error(
                .invalidValue, "the grid needs \"axes\": an object of query fields, each with the values it takes",
                at: value ?? grid, path: path)
            return nil
        }
        let templateKeys = Set(template.members.map(\.key))
        var axes: [Axis] = []
        var valid = true
        for member in reader.uniqueMembers(of: value, path: path) {
            let memberPath = "\(path).\(member.key)"
            if templateKeys.contains(member.key) {
                reader.error(
                    .duplicateMember, "'\(member.key)' is both an axis and a field of the query", at: member.name,
                    path: memberPath)
                valid = false
            }
            guard member.value.kind == .array, !member.value.elements.map({ _ in 0 }).isEmpty else {
                reader.error(
                    .invalidValue, "an axis is a non-empty array of values", at: member.value, path: memberPath)
                valid = false
                continue
            }
            var values: [JSONValue] = []
            var texts: [String] = []
            for (index, element) in member.value.elements.enumerated() {
                guard let text = axisText(element) else {
                    reader.error(
                        .invalidValue, "an axis value is a string, number, true, false or null", at: element,
                        path: "\(memberPath)[\(index)]")
                    valid = false
                    continue
                }
                if texts.contains(text) {
                    reader.error(
                        .invalidValue, "'\(text)' is listed twice in this axis", at: element,
                        path: "\(memberPath)[\(index)]")
                    valid = false
                }
                values.append(element)
                texts.append(text)
            }
            axes.append(Axis(key: member.key, name: member.name, values: values, texts: texts))
        }
        return valid ? axes : nil
    }

    private static func axisText(_ value: JSONValue) -> String? {
        switch value.kind {
        case .string: value.string
        case .null: "null"
        case .true: "true"
        case .false: "false"
        case .number: value.numberText
        default: nil
        }
    }

    private static func readRules(_ value: JSONValue, axes: [Axis], reader: inout DocumentReader, path: String)
        -> [Rule]
    {
        guard value.kind == .array else {
            reader.error(
                .invalidValue, "\"rules\" must be an array, found \(value.kind.article)", at: value, path: path)
            return []
        }
        var rules: [Rule] = []
        for (index, element) in value.elements.enumerated() {
            let rulePath = "\(path)[\(index)]"
            guard element.kind == .object else {
                reader.error(
                    .invalidValue, "a rule is an object with \"expect\" and optionally \"when\"", at: element,
                    path: rulePath)
                continue
            }
            var conditions: [(axis: Int, accepted: Set<Int>)] = []
            for member in reader.uniqueMembers(of: element, path: rulePath) where !ruleMembers.contains(member.key) {
                reader.error(
                    .unknownProperty,
                    "unknown member '\(member.key)' of a rule (it has: when, expect, reason, restriction, state)",
                    at: member.name, path: rulePath)
            }
            if let when = element.members.first(where: { $0.key == "when" })?.value {
                conditions = readConditions(when, axes: axes, reader: &reader, path: rulePath + ".when")
            }
            guard
                let expectation = readExpectation(
                    element, members: cellMembers, what: "the rule", reader: &reader, path: rulePath)
            else { continue }
            rules.append(
                Rule(
                    conditions: conditions, expectation: expectation, value: element,
                    location: reader.location(of: element)))
        }
        return rules
    }

    private static func readConditions(_ value: JSONValue, axes: [Axis], reader: inout DocumentReader, path: String)
        -> [(axis: Int, accepted: Set<Int>)]
    {
        guard value.kind == .object else {
            reader.error(
                .invalidValue, "\"when\" is an object: axis name → a value or an array of values", at: value, path: path
            )
            return []
        }
        var conditions: [(axis: Int, accepted: Set<Int>)] = []
        for member in reader.uniqueMembers(of: value, path: path) {
            let memberPath = "\(path).\(member.key)"
            guard let axisIndex = axes.firstIndex(where: { $0.key == member.key }) else {
                reader.error(
                    .invalidValue,
                    "'\(member.key)' is not an axis of this grid (it has: \(axes.map(\.key).joined(separator: ", ")))",
                    at: member.name, path: memberPath)
                continue
            }
            let listed = member.value.kind == .array ? Array(member.value.elements) : [member.value]
            var accepted: Set<Int> = []
            for element in listed {
                guard let text = axisText(element), let valueIndex = axes[axisIndex].texts.firstIndex(of: text) else {
                    reader.error(
                        .invalidValue,
                        "not a value of the axis '\(member.key)' (it has: \(axes[axisIndex].texts.joined(separator: ", ")))",
                        at: element, path: memberPath)
                    continue
                }
                accepted.insert(valueIndex)
            }
            conditions.append((axisIndex, accepted))
        }
        return conditions
    }

    /// Reads the table level for axis `depth`: an object keyed by that axis's values; the last
    /// level's entries are expectations.
    private static func readTable(
        _ value: JSONValue, axes: [Axis], depth: Int, index: Int, into table: inout [ScenarioExpectation?],
        locations: inout [DocumentLocation],
        reader: inout DocumentReader, path: String
    ) {
        let axis = axes[depth]
        guard value.kind == .object else {
            reader.error(
                .invalidValue, "this table level is an object keyed by the values of the axis '\(axis.key)'", at: value,
                path: path)
            return
        }
        var seen = Array(repeating: false, count: axis.values.count)
        let stride = axes[(depth + 1)...].reduce(1) { $0 * $1.values.count }
        for member in reader.uniqueMembers(of: value, path: path) {
            let memberPath = "\(path).\(member.key)"
            guard let valueIndex = axis.texts.firstIndex(of: member.key) else {
                reader.error(
                    .invalidValue,
                    "'\(member.key)' is not a value of the axis '\(axis.key)' (it has: \(axis.texts.joined(separator: ", ")))",
                    at: member.name, path: memberPath)
                continue
            }
            seen[valueIndex] = true
            let position = index + valueIndex * stride
            if depth == axes.count - 1 {
                if member.value.kind == .object {
                    for cell in member.value.members where !cellMembers.contains(cell.key) {
                        reader.error(
                            .unknownProperty,
                            "unknown member '\(cell.key)' of a table cell (it has: expect, reason, restriction, state)",
                            at: cell.name, path: memberPath)
                    }
                }
                table[position] = readExpectation(
                    member.value, members: cellMembers, what: "the table cell", reader: &reader, path: memberPath)
                locations[position] = reader.location(of: member.value)
            } else {
                readTable(
                    member.value, axes: axes, depth: depth + 1, index: position, into: &table, locations: &locations,
                    reader: &reader, path: memberPath)
            }
        }
        for (valueIndex, present) in seen.enumerated() where !present {
            reader.error(
                .invalidValue, "the table has no entry for \(axis.key) = \(axis.texts[valueIndex])", at: value,
                path: path)
        }
    }
}
