import CustodyPolicy
import CustodyTestSupport
import Foundation
import Testing

@Suite("custody matrix")
struct MatrixCLITests {
    @Test("matrix run fixtures/ passes every case and says so on its last line")
    func fixtures() async throws {
        let result = try await CLIRunner.run(["matrix", "run", "fixtures/"])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let last = try #require(result.stdoutLines.last)
        #expect(last.wholeMatch(of: /[0-9]+ passed, 0 failed/) != nil, "\(last)")
        #expect(result.stdoutLines.count == 1, "no failure table when nothing fails")
    }

    @Test("a wrong expectation fails with a readable table, a non-zero exit, JUnit and JSON reports")
    func wrongExpectation() async throws {
        let directory = try TemporaryDirectory()
        let matrix = try directory.write(
            "wrong.matrix.json",
            #"""
            {"bundle": "\#(CLIRunner.packageRoot)/fixtures/frameworks/level-3-ios", "context": {"platform": "ios"},
             "cases": [
               {"action": "print", "account": "user1@contoso.com", "expect": "block"},
               {"name": "printing is fine", "action": "print", "account": "user1@contoso.com", "expect": "allow"}
             ]}
            """#)
        let junit = directory.path + "/report.xml"
        let result = try await CLIRunner.run(["matrix", "run", "--junit", junit, matrix])
        #expect(result.status == 1)
        #expect(result.stdoutLines.last == "1 passed, 1 failed")
        #expect(result.stdoutLines.first?.hasPrefix("WHERE") == true)
        let row = try #require(result.stdoutLines.first { $0.contains("printing is fine") })
        #expect(row.hasPrefix(matrix + ":4:"))
        #expect(row.contains("allow") && row.contains("block") && row.contains("printBlocked is true"), "\(row)")

        let xml = try String(contentsOfFile: junit, encoding: .utf8)
        #expect(xml.contains(#"<testsuites name="custody matrix run" tests="2" failures="1">"#))
        #expect(
            xml.contains(#"<testcase name="printing is fine""#)
                && xml.contains(#"<failure message="expected allow, got block">"#))

        let json = try await CLIRunner.run(["matrix", "run", "--json", matrix])
        let report = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(report["passed"] as? Int == 1 && report["failed"] as? Int == 1)
    }

    @Test("a malformed matrix is an error with file:line:column and counts as failed")
    func malformed() async throws {
        let directory = try TemporaryDirectory()
        let matrix = try directory.write("bad.matrix.json", "{\"bundle\": \"x\",\n \"cases\": [], \"extra\": 1}\n")
        let result = try await CLIRunner.run(["matrix", "run", directory.path])
        #expect(result.status == 1)
        #expect(result.stderr.contains(matrix + ":2:15: error: unknown member 'extra'"))
        #expect(result.stdoutLines.last == "0 passed, 1 failed")
        let noBundle = try directory.write("nobundle.matrix.json", "{\"bundle\": \"gone\",\n \"cases\": []}\n")
        let unloaded = try await CLIRunner.run(["matrix", "run", noBundle])
        #expect(unloaded.status == 1)
        #expect(
            unloaded.stderr.hasPrefix(
                noBundle + ":1:12: error: the matrix's bundle " + directory.path + "/gone does not load"),
            "\(unloaded.stderr)")
        let missing = try await CLIRunner.run(["matrix", "run", directory.path + "/nothing-here"])
        #expect(missing.status == 1 && missing.stderr.contains("no such file or directory"))
    }

    @Test("matrix table shows every location with its decision and reason for a Level 3 iOS account")
    func table() async throws {
        let result = try await CLIRunner.run([
            "matrix", "table", "--bundle", "fixtures/frameworks/level-3-ios", "--platform", "ios", "--account",
            "user1@contoso.com", "--json",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let table = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let rows = try #require(table["rows"] as? [[String: Any]])
        for location in SaveLocation.allCases {
            let saves = rows.filter {
                $0["action"] as? String == "saveTo" && $0["target"] as? String == location.rawValue
            }
            #expect(saves.count == 4, "saveTo \(location)")
            #expect(
                saves.allSatisfy {
                    !($0["reason"] as? String ?? "").isEmpty
                        && ["allow", "block"].contains($0["decision"] as? String ?? "")
                })
        }
        for location in OpenLocation.allCases {
            #expect(
                rows.filter { $0["action"] as? String == "openFrom" && $0["target"] as? String == location.rawValue }
                    .count == 4, "openFrom \(location)")
        }
        let print = try #require(rows.first { $0["action"] as? String == "print" })
        #expect(print["decision"] as? String == "block")
        for action in [
            "share", "copyOut", "pasteIn", "notifications", "encryptionRequired", "backup", "screenCapture", "receive",
        ] {
            #expect(rows.contains { $0["action"] as? String == action }, "\(action)")
        }

        let text = try await CLIRunner.run([
            "matrix", "table", "--bundle", "fixtures/frameworks/level-3-ios", "--platform", "ios", "--account",
            "user1@contoso.com",
        ])
        let header = try #require(text.stdoutLines.first { $0.hasPrefix("ACTION") })
        let reasonColumn = try #require(header.range(of: "REASON")).lowerBound.utf16Offset(in: header)
        let saveRow = try #require(text.stdoutLines.first { $0.hasPrefix("saveTo") })
        #expect(
            saveRow.count > reasonColumn
                && saveRow[saveRow.index(saveRow.startIndex, offsetBy: reasonColumn - 2)] == " ", "aligned columns")
        let markdown = try await CLIRunner.run([
            "matrix", "table", "--bundle", "fixtures/frameworks/level-3-ios", "--platform", "ios", "--account",
            "user1@contoso.com", "--markdown",
        ])
        #expect(markdown.stdout.contains("| ACTION | TARGET | COUNTERPART | DECISION | SETTING | REASON |"))
    }

    @Test("matrix diff between Level 2 and Level 3 lists exactly the decisions that differ")
    func diff() async throws {
        let level2 = TestPaths.fixture("frameworks/level-2-ios")
        let level3 = TestPaths.fixture("frameworks/level-3-ios")
        let result = try await CLIRunner.run([
            "matrix", "diff", "--bundle", level2, "--bundle", level3, "--platform", "ios", "--json", "--fail-on-change",
        ])
        #expect(result.status == 1, "changes and --fail-on-change")
        let changes = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]])
        let listed = Set(
            changes.map { change in
                "\(change["account"] as? String ?? "") \((change["before"] as? [String: Any])?["query"] as? String ?? "")"
            })

        // Independently: every query of the decision tables, answered by each bundle.
        let context = EvaluationContext(platform: .ios)
        let old = PolicySnapshot(bundle: try PolicyBundle.load(path: level2), context: context)
        let new = PolicySnapshot(bundle: try PolicyBundle.load(path: level3), context: context)
        var expected: Set<String> = []
        for account in new.bundle.tenant.accounts.map(\.id) {
            let counterparts = DecisionTable.Counterparts(for: account, in: new)
            for row in DecisionTable(snapshot: new, account: account, counterparts: counterparts).rows {
                let before = old.answer(row.query)
                let after = new.answer(row.query)
                var differs = before.isAllowed != after.isAllowed
                if case .single(let first) = before, case .single(let second) = after,
                    first.notificationRestriction != second.notificationRestriction
                {
                    differs = true
                }
                if differs { expected.insert("\(account) \(row.query.description)") }
            }
        }
        #expect(!expected.isEmpty)
        #expect(listed == expected)
        #expect(changes.count == listed.count, "no decision listed twice")

        let same = try await CLIRunner.run([
            "matrix", "diff", "--bundle", level3, "--bundle", level3, "--platform", "ios", "--fail-on-change",
        ])
        #expect(same.status == 0 && same.stdout == "no decision differs\n")
        let text = try await CLIRunner.run([
            "matrix", "diff", "--bundle", level2, "--bundle", level3, "--platform", "ios", "--account",
            "user1@contoso.com",
        ])
        #expect(text.status == 0)
        #expect(text.stdout.contains("  print: allow → block\n    before: printBlocked is false"))
    }
}
