import CustodyPolicy
import CustodyTestSupport
import Testing

@Suite("Matrix grids")
struct GridTests {
    /// A matrix over the exit-criteria bundle with `grid` as its only grid.
    func matrix(_ grid: String) throws(ScenarioError) -> ScenarioMatrix {
        let text = #"{"bundle": "exit-criteria/bundle", "context": {"platform": "ios"}, "grids": [\#n"# + grid + "\n]}"
        return try ScenarioMatrix.parse(Array(text.utf8), file: TestPaths.fixture("grid.matrix.json"))
    }

    static let save = #"{"action": "saveTo", "owner": "save-excluded.user1@contoso.com"}"#

    @Test("axes expand into their cartesian product, the last axis fastest; the first matching rule decides")
    func rules() throws {
        let grid = try matrix(
            #"""
            {"name": "g", "query": \#(Self.save),
             "axes": {"location": ["oneDriveForBusiness", "box", "dropbox"], "locationAccount": ["save-excluded.user1@contoso.com", null]},
             "rules": [
               {"when": {"location": "oneDriveForBusiness", "locationAccount": "save-excluded.user1@contoso.com"}, "expect": "allow", "reason": "is in"},
               {"when": {"location": ["box", "dropbox"]}, "expect": "block"},
               {"expect": "block", "reason": "only in the owner's own account"}
             ]}
            """#)
        #expect(
            grid.cases.map(\.name) == [
                "g [location=oneDriveForBusiness, locationAccount=save-excluded.user1@contoso.com]",
                "g [location=oneDriveForBusiness, locationAccount=null]",
                "g [location=box, locationAccount=save-excluded.user1@contoso.com]",
                "g [location=box, locationAccount=null]",
                "g [location=dropbox, locationAccount=save-excluded.user1@contoso.com]",
                "g [location=dropbox, locationAccount=null]",
            ])
        #expect(grid.cases.map(\.expectAllowed) == [true, false, false, false, false, false])
        #expect(
            grid.cases.map(\.location.line) == [5, 7, 6, 6, 6, 6],
            "each case points at the rule that set its expectation")
        #expect(grid.cases[1].expectation.reasonContains == "only in the owner's own account")
        let owner = id("save-excluded.user1@contoso.com")
        let expected = DecisionQuery.saveTo(owner: owner, location: .oneDriveForBusiness, locationAccount: owner)
        #expect(grid.cases[0].query == expected)
        let results = grid.run(
            against: PolicySnapshot(bundle: try PolicyBundle.load(path: grid.bundlePath), context: grid.context))
        #expect(results.filter { !$0.passed }.isEmpty, "\(results.filter { !$0.passed }.map(\.mismatches))")
    }

    @Test("a table gives one expectation per combination, as a word or an object")
    func table() throws {
        let grid = try matrix(
            #"""
            {"query": {"action": "print"},
             "axes": {"account": ["print-block.user1@contoso.com", "print-allow.user1@contoso.com", null]},
             "table": {"print-block.user1@contoso.com": {"expect": "block", "reason": "printBlocked is true"},
                       "print-allow.user1@contoso.com": "allow", "null": "allow"}}
            """#)
        #expect(grid.cases.map(\.expectAllowed) == [false, true, true])
        #expect(grid.cases[0].expectation.reasonContains == "printBlocked is true")
        let printNobody = DecisionQuery.print(account: nil)
        #expect(grid.cases[2].query == printNobody)
        let two = try matrix(
            #"""
            {"query": {"action": "saveTo", "owner": "save-blocked.user1@contoso.com"},
             "axes": {"location": ["box", "accountDocument"], "locationAccount": ["save-blocked.user1@contoso.com", null]},
             "table": {"box": {"save-blocked.user1@contoso.com": "block", "null": "block"},
                       "accountDocument": {"save-blocked.user1@contoso.com": "allow", "null": "block"}}}
            """#)
        #expect(two.cases.map(\.expectAllowed) == [false, false, true, false])
        let results = two.run(
            against: PolicySnapshot(bundle: try PolicyBundle.load(path: two.bundlePath), context: two.context))
        #expect(results.filter { !$0.passed }.isEmpty)
    }

    struct Broken: Sendable, CustomTestStringConvertible {
        let label: String
        let grid: String
        let message: String
        /// 1-based line of the error within the grid text (the grid starts on line 2).
        let line: Int
        var testDescription: String { label }
    }

    @Test(
        "malformed grids are errors where they are, never silently skipped",
        arguments: [
            Broken(
                label: "unknown member",
                grid:
                    #"{"query": \#(save), "axes": {"location": ["box"]}, "rules": [{"expect": "block"}], "expects": 1}"#,
                message: "unknown member 'expects' of a grid", line: 2),
            Broken(
                label: "no expectations", grid: #"{"query": \#(save), "axes": {"location": ["box"]}}"#,
                message: "either \"rules\" or \"table\"", line: 2),
            Broken(
                label: "axis repeats a query field",
                grid:
                    #"{"query": \#(save), "axes": {"owner": ["a@contoso.com"], "location": ["box"]}, "rules": [{"expect": "block"}]}"#,
                message: "'owner' is both an axis and a field of the query", line: 2),
            Broken(
                label: "empty axis",
                grid: #"{"query": \#(save), "axes": {"location": []}, "rules": [{"expect": "block"}]}"#,
                message: "an axis is a non-empty array", line: 2),
            Broken(
                label: "bad value in an axis",
                grid:
                    #"{"query": \#(save), "axes": {"location": ["box",\#n "dropbx"]}, "rules": [{"expect": "block"}]}"#,
                message: "[location=dropbx]: unknown location 'dropbx' (one of: other, oneDriveForBusiness", line: 3),
            Broken(
                label: "rule names an unknown axis",
                grid:
                    #"{"query": \#(save), "axes": {"location": ["box"]},\#n "rules": [{"when": {"place": "box"}, "expect": "block"}]}"#,
                message: "'place' is not an axis of this grid", line: 3),
            Broken(
                label: "rule names a value the axis lacks",
                grid:
                    #"{"query": \#(save), "axes": {"location": ["box"]}, "rules": [{"when": {"location": "dropbox"}, "expect": "block"}, {"expect": "allow"}]}"#,
                message: "not a value of the axis 'location' (it has: box)", line: 2),
            Broken(
                label: "combination no rule covers",
                grid:
                    #"{"query": \#(save), "axes": {"location": ["box", "dropbox"]}, "rules": [{"when": {"location": "box"}, "expect": "block"}]}"#,
                message: "no rule covers grid at line 2 [location=dropbox]", line: 2),
            Broken(
                label: "rule that never applies",
                grid:
                    #"{"query": \#(save), "axes": {"location": ["box"]}, "rules": [{"expect": "block"},\#n {"when": {"location": "box"}, "expect": "allow"}]}"#,
                message: "this rule never applies", line: 3),
            Broken(
                label: "table lacks an entry",
                grid: #"{"query": \#(save), "axes": {"location": ["box", "dropbox"]}, "table": {"box": "block"}}"#,
                message: "the table has no entry for location = dropbox", line: 2),
            Broken(
                label: "table has a foreign key",
                grid:
                    #"{"query": \#(save), "axes": {"location": ["box"]}, "table": {"box": "block",\#n "dropbox": "block"}}"#,
                message: "'dropbox' is not a value of the axis 'location'", line: 3),
            Broken(
                label: "rule without expect",
                grid: #"{"query": \#(save), "axes": {"location": ["box"]}, "rules": [{"when": {"location": "box"}}]}"#,
                message: "the rule has no \"expect\"", line: 2),
        ])
    func broken(_ broken: Broken) {
        do {
            let grid = try matrix(broken.grid)
            Issue.record("loaded \(grid.cases.count) cases")
        } catch {
            let first = error.diagnostics.first { $0.severity == .error }
            #expect(first?.message.contains(broken.message) == true, "\(error)")
            #expect(first?.location.line == broken.line, "\(error)")
        }
    }
}
