import CustodyPolicy
import CustodyTestSupport
import Foundation
import Testing

/// The Intune exit-criteria scenarios and the Microsoft framework levels, as data.
@Suite("Fixture scenario matrices")
struct FixtureMatrixTests {
    static let matrixFiles: [String] = {
        let root = TestPaths.fixture("")
        let enumerator = FileManager.default.enumerator(atPath: root)
        var files: [String] = []
        while let path = enumerator?.nextObject() as? String {
            if path.hasSuffix(".matrix.json") { files.append(path) }
        }
        return files.sorted()
    }()

    @Test("the fixtures hold the exit-criteria and framework matrices")
    func inventory() {
        #expect(
            Self.matrixFiles == [
                "exit-criteria/copy-to-and-print.matrix.json", "exit-criteria/open-from.matrix.json",
                "exit-criteria/save-to.matrix.json",
                "frameworks/level-1-android.matrix.json", "frameworks/level-1-ios.matrix.json",
                "frameworks/level-2-android.matrix.json",
                "frameworks/level-2-ios.matrix.json", "frameworks/level-3-android.matrix.json",
                "frameworks/level-3-ios.matrix.json", "launch/conflicting-ios.matrix.json",
                "launch/level-2-android.matrix.json", "launch/level-3-ios.matrix.json",
            ])
    }

    @Test("every case of every matrix holds", arguments: matrixFiles)
    func matrix(file: String) throws {
        let matrix = try ScenarioMatrix.load(path: TestPaths.fixture(file))
        let bundle = try PolicyBundle.load(path: matrix.bundlePath)
        // Microsoft's framework templates carry no assignments: they apply to the matrix's whole
        // tenant, which is what the (expected) assignments-missing warning says.
        let warnings = bundle.warnings.filter { $0.severity != .notice && $0.code != .assignmentsMissing }
        #expect(warnings.isEmpty, "\(warnings)")
        let results = matrix.run(against: PolicySnapshot(bundle: bundle, context: matrix.context))
        #expect(results.count >= 8)
        for result in results where !result.passed {
            Issue.record(
                "\(result.scenario.location): \(result.scenario.name): \(result.mismatches.joined(separator: "; ")) — \(result.answer.reason)"
            )
        }
    }

    @Test("a wrong expectation fails, saying what was expected and what came")
    func wrongExpectation() throws {
        let text = #"""
            {"bundle": "frameworks/level-3-ios", "context": {"platform": "ios"}, "cases": [
              {"action": "print", "account": "user1@contoso.com", "expect": "allow"},
              {"action": "print", "account": "user1@contoso.com", "expect": "block", "reason": "printBlocked is false"},
              {"action": "notifications", "account": "user1@contoso.com", "expect": "block", "restriction": "block"},
              {"action": "offlineAccess", "account": "user1@contoso.com", "offlineFor": "PT1H", "expect": "allow", "state": "wipeRequired"}
            ]}
            """#
        let matrix = try ScenarioMatrix.parse(Array(text.utf8), file: TestPaths.fixture("inline.matrix.json"))
        let results = matrix.run(
            against: PolicySnapshot(bundle: try PolicyBundle.load(path: matrix.bundlePath), context: matrix.context))
        #expect(
            results.map(\.mismatches) == [
                ["expected allow, got block"],
                ["reason does not contain \"printBlocked is false\""],
                ["expected restriction block, got blockOrganizationalData"],
                ["expected state wipeRequired, got online"],
            ])
        #expect(results.map(\.scenario.location.line) == [2, 3, 4, 5])
    }

    @Test(
        "malformed matrices are errors with file:line:column, never skipped",
        arguments: [
            (#"{"bundle": "b", "cases": [], "extra": 1}"#, "1:30", "unknown member 'extra'"),
            (#"{"cases": []}"#, "1:1", "names no \"bundle\""),
            (
                "{\"bundle\": \"b\", \"cases\": [\n  {\"action\": \"print\", \"acount\": \"a\", \"expect\": \"allow\"}]}",
                "2:23", "unknown field 'acount' for action print"
            ),
            (
                "{\"bundle\": \"b\", \"cases\": [\n  {\"action\": \"print\", \"account\": \"a\"}]}", "2:3",
                "the case has no \"expect\""
            ),
            (
                "{\"bundle\": \"b\", \"cases\": [\n  {\"action\": \"print\", \"account\": \"a\", \"expect\": \"yes\"}]}",
                "2:49", "\"expect\" must be \"allow\" or \"block\""
            ),
            (
                #"{"bundle": "b", "context": {"platform": "macos"}, "cases": []}"#, "1:41",
                "unknown platform 'macos'"
            ),
            (#"{"bundle": "b", "cases": {}}"#, "1:26", "\"cases\" must be an array"),
            (#"{"bundle": "b", "cases": [],}"#, "1:29", "trailing comma"),
        ])
    func malformed(text: String, position: String, message: String) {
        #expect {
            try ScenarioMatrix.parse(Array(text.utf8), file: "m.json")
        } throws: { error in
            guard let error = error as? ScenarioError, let first = error.diagnostics.first else { return false }
            return error.diagnostics.count == 1 && first.location.description == "m.json:\(position)"
                && first.message.contains(message)
        }
    }
}
