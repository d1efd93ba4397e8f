import CustodyPolicy
import Foundation

/// A matrix run as people, CI systems (JUnit XML) and programs (JSON) read it.
struct MatrixReport {
    let run: ScenarioRun

    /// Every diagnostic of the matrices that did not load, one per line.
    var loadErrors: [String] { run.files.flatMap { $0.diagnostics.map(\.description) } }

    /// The failing cases as an aligned table (empty when none failed).
    func failureTable() -> String {
        var rows: [[String]] = []
        for file in run.files {
            for result in file.results where !result.passed {
                rows.append([
                    result.scenario.location.description, result.scenario.name, result.scenario.expectation.summary,
                    Self.actual(result.answer), result.answer.reason,
                ])
            }
        }
        guard !rows.isEmpty else { return "" }
        return TextTable.render(header: ["WHERE", "CASE", "EXPECTED", "ACTUAL", "REASON"], rows: rows) + "\n"
    }

    static func actual(_ answer: DecisionAnswer) -> String {
        var text = answer.isAllowed ? "allow" : "block"
        if case .single(let decision) = answer {
            if let restriction = decision.notificationRestriction { text += ", restriction \(restriction.rawValue)" }
            if let state = decision.offlineState { text += ", state \(state.rawValue)" }
        }
        return text
    }

    func json() -> [UInt8] {
        (try? JSONLine.encode(RunAnswer(run))) ?? []
    }

    /// `custody matrix run --json`: the counts, then each file with its failures.
    struct RunAnswer: Encodable {
        struct File: Encodable {
            var file: String
            var errors: [String]
            var passed: Int
            var failures: [Failure]
        }

        struct Failure: Encodable {
            var location: String
            var `case`: String
            var query: String
            var expected: String
            var actual: String
            var reason: String
            var mismatches: [String]
        }

        var passed: Int
        var failed: Int
        var files: [File]

        init(_ run: ScenarioRun) {
            passed = run.passed
            failed = run.failed
            files = run.files.map { file in
                File(
                    file: file.file, errors: file.diagnostics.map(\.description),
                    passed: file.results.filter(\.passed).count,
                    failures: file.results.filter { !$0.passed }.map { result in
                        Failure(
                            location: result.scenario.location.description, case: result.scenario.name,
                            query: result.scenario.query.description, expected: result.scenario.expectation.summary,
                            actual: MatrixReport.actual(result.answer), reason: result.answer.reason,
                            mismatches: result.mismatches)
                    })
            }
        }
    }

    /// JUnit XML: one test suite per matrix file, one test case per case; a file that did not
    /// load is one failing test case carrying its diagnostics.
    func junit() -> String {
        var xml = #"<?xml version="1.0" encoding="UTF-8"?>"# + "\n"
        xml +=
            #"<testsuites name="custody matrix run" tests="\#(run.passed + run.failed)" failures="\#(run.failed)">"#
            + "\n"
        for file in run.files {
            let seconds = String(format: "%.3f", file.duration.inSeconds)
            if !file.diagnostics.isEmpty {
                xml +=
                    #"  <testsuite name="\#(Self.escape(file.file))" tests="1" failures="1" time="\#(seconds)">"# + "\n"
                xml += #"    <testcase name="load" classname="\#(Self.escape(file.file))">"# + "\n"
                let text = file.diagnostics.map(\.description).joined(separator: "\n")
                xml += #"      <failure message="the matrix does not load">\#(Self.escape(text))</failure>"# + "\n"
                xml += "    </testcase>\n  </testsuite>\n"
                continue
            }
            let failures = file.results.filter { !$0.passed }.count
            xml +=
                #"  <testsuite name="\#(Self.escape(file.file))" tests="\#(file.results.count)" failures="\#(failures)" time="\#(seconds)">"#
                + "\n"
            for result in file.results {
                let name = Self.escape(result.scenario.name)
                if result.passed {
                    xml += #"    <testcase name="\#(name)" classname="\#(Self.escape(file.file))"/>"# + "\n"
                } else {
                    xml += #"    <testcase name="\#(name)" classname="\#(Self.escape(file.file))">"# + "\n"
                    let message = result.mismatches.joined(separator: "; ")
                    let detail =
                        "\(result.scenario.location): \(result.scenario.query)\nexpected \(result.scenario.expectation.summary), got \(Self.actual(result.answer)): \(result.answer.reason)"
                    xml +=
                        #"      <failure message="\#(Self.escape(message))">\#(Self.escape(detail))</failure>"# + "\n"
                    xml += "    </testcase>\n"
                }
            }
            xml += "  </testsuite>\n"
        }
        xml += "</testsuites>\n"
        return xml
    }

    /// Text safe inside XML attributes and elements (control characters XML 1.0 forbids are dropped).
    static func escape(_ text: String) -> String {
        var escaped = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&apos;"
            case "\n", "\t", "\r": escaped.unicodeScalars.append(scalar)
            default:
                if scalar.value >= 0x20 { escaped.unicodeScalars.append(scalar) }
            }
        }
        return escaped
    }
}

/// Decision tables and diffs as text, Markdown and JSON.
enum DecisionTableRendering {
    static func text(_ table: DecisionTable, markdown: Bool) -> String {
        let header = ["ACTION", "TARGET", "COUNTERPART", "DECISION", "SETTING", "REASON"]
        let rows = table.rows.map { row in
            [
                row.action.rawValue, row.target, row.counterpart, DecisionTable.verdict(row), setting(row.answer),
                row.answer.reason,
            ]
        }
        var text = "Decisions for \(table.account)"
        var parties: [String] = []
        if let other = table.counterparts.otherManaged { parties.append("another managed account: \(other)") }
        parties.append("an unmanaged account: \(table.counterparts.unmanaged)")
        text += " (" + parties.joined(separator: "; ") + ")"
        if let platform = table.snapshot.context.platform { text += ", on \(platform)" }
        text += "\n\n"
        let conflicts = PolicyReport.conflictLines(table.snapshot.conflicts(for: table.account))
        if !conflicts.isEmpty {
            let lines = conflicts.map { "  " + $0 + "\n" }.joined()
            text += "Conflicts (\(table.snapshot.precedence.rule) precedence):\n" + lines + "\n"
        }
        return text
            + (markdown ? TextTable.markdown(header: header, rows: rows) : TextTable.render(header: header, rows: rows))
            + "\n"
    }

    static func json(_ table: DecisionTable) -> [UInt8] {
        (try? JSONLine.encode(TableAnswer(table))) ?? []
    }

    static func text(_ diff: DecisionDiff) -> String {
        guard !diff.changes.isEmpty else { return "no decision differs\n" }
        var text = ""
        var current: AccountID?
        for change in diff.changes {
            if change.account != current {
                text += (current == nil ? "" : "\n") + "\(change.account):\n"
                current = change.account
            }
            let row = change.before
            let subject = [row.action.rawValue, row.target, row.counterpart].filter { !$0.isEmpty }.joined(
                separator: " ")
            text += "  \(subject): \(DecisionTable.verdict(change.before)) → \(DecisionTable.verdict(change.after))\n"
            text += "    before: \(change.before.answer.reason)\n"
            text += "    after:  \(change.after.answer.reason)\n"
        }
        let accounts = Set(diff.changes.map(\.account)).count
        return text
            + "\n\(diff.changes.count) decision\(diff.changes.count == 1 ? "" : "s") differ\(diff.changes.count == 1 ? "s" : "") for \(accounts) account\(accounts == 1 ? "" : "s")\n"
    }

    static func json(_ diff: DecisionDiff) -> [UInt8] {
        (try? JSONLine.encode(diff.changes.map(DecisionChangeAnswer.init))) ?? []
    }

    /// `custody matrix table --json`: one account's decisions against each party.
    struct TableAnswer: Encodable {
        struct Counterparts: Encodable {
            @Nullable var anotherManagedAccount: String?
            var unmanagedAccount: String
        }

        var account: String
        var counterparts: Counterparts
        @Nullable var platform: String?
        var precedence: String
        var conflicts: PolicyReport.Conflicts
        var rows: [RowAnswer]

        init(_ table: DecisionTable) {
            account = table.account.description
            counterparts = Counterparts(
                anotherManagedAccount: table.counterparts.otherManaged?.description,
                unmanagedAccount: table.counterparts.unmanaged.description)
            platform = table.snapshot.context.platform?.rawValue
            precedence = table.snapshot.precedence.rule.rawValue
            conflicts = PolicyReport.Conflicts(table.snapshot.conflicts(for: table.account))
            rows = table.rows.map(RowAnswer.init)
        }
    }

    typealias RowAnswer = DecisionRowAnswer

    static func setting(_ answer: DecisionAnswer) -> String { DecisionRowAnswer.setting(answer) }
}

/// Columns aligned for a terminal, or a Markdown table.
enum TextTable {
    static func render(header: [String], rows: [[String]]) -> String {
        var widths = header.map(\.count)
        for row in rows {
            for (index, cell) in row.enumerated() where index < widths.count - 1 {
                widths[index] = max(widths[index], cell.count)
            }
        }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { index, cell in
                index == cells.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }
        return ([line(header)] + rows.map(line)).joined(separator: "\n")
    }

    static func markdown(header: [String], rows: [[String]]) -> String {
        func line(_ cells: [String]) -> String {
            "| " + cells.map { $0.replacingOccurrences(of: "|", with: "\\|") }.joined(separator: " | ") + " |"
        }
        return ([line(header), "|" + String(repeating: "---|", count: header.count)] + rows.map(line)).joined(
            separator: "\n")
    }
}
