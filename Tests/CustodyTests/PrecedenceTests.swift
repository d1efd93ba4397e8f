@testable import Custody
import CustodyPolicy
import CustodyTestSupport
import Foundation
import Testing

/// Microsoft: the first policy deployed to a user and app "takes precedence, and stays applied";
/// only policies applied at the same time merge to the most restrictive values. The engine
/// records when each policy first reached each account, so `incumbent` precedence can follow
/// that rule; `mostRestrictive` (the default) merges every applying policy.
@Suite("Policy precedence: the incumbent policy, or the most restrictive merge", .timeLimit(.minutes(2)))
struct PrecedenceTests {
    struct Row: CustomTestStringConvertible, Sendable {
        let label: String
        /// The bundles applied in turn: the policies each holds and the tenant's accounts.
        let steps: [(policies: [String], accounts: [String])]
        let account: String
        let rule: PolicyPrecedence.Rule
        let printAllowed: Bool
        let setAside: [String]
        var testDescription: String { "\(label), \(rule): \(account) may \(printAllowed ? "" : "not ")print" }
    }

    static let rows: [Row] = [
        Row(
            label: "a second policy after the first", steps: [(["First"], ["a"]), (["First", "Second"], ["a"])],
            account: "a", rule: .incumbent, printAllowed: true, setAside: ["Second"]),
        Row(
            label: "a second policy after the first", steps: [(["First"], ["a"]), (["First", "Second"], ["a"])],
            account: "a", rule: .mostRestrictive, printAllowed: false, setAside: []),
        Row(
            label: "both at once", steps: [(["First", "Second"], ["a"])], account: "a", rule: .incumbent,
            printAllowed: false, setAside: []),
        Row(
            label: "both at once", steps: [(["First", "Second"], ["a"])], account: "a", rule: .mostRestrictive,
            printAllowed: false, setAside: []),
        Row(
            label: "the incumbent removed",
            steps: [(["First"], ["a"]), (["First", "Second"], ["a"]), (["Second"], ["a"])],
            account: "a", rule: .incumbent, printAllowed: false, setAside: []),
        Row(
            label: "an account that joins when both exist",
            steps: [(["First"], ["a"]), (["First", "Second"], ["a"]), (["First", "Second"], ["a", "c"])],
            account: "c", rule: .incumbent, printAllowed: false, setAside: []),
        Row(
            label: "an account that joins when both exist",
            steps: [(["First"], ["a"]), (["First", "Second"], ["a"]), (["First", "Second"], ["a", "c"])],
            account: "a", rule: .incumbent, printAllowed: true, setAside: ["Second"]),
        Row(
            label: "the second reached first", steps: [(["Second"], ["a"]), (["First", "Second"], ["a"])],
            account: "a", rule: .incumbent, printAllowed: false, setAside: ["First"]),
    ]

    @Test("which policies apply follows the rule and the order they reached the account", arguments: rows)
    func precedence(row: Row) async throws {
        let installation = try Installation()
        // History is recorded whatever the rule: an installation can switch to incumbent later.
        for (index, step) in row.steps.enumerated() {
            let path = installation.directory.file("bundle\(index)")
            try writePrecedenceBundle(step.policies, accounts: step.accounts, to: path)
            installation.clock.set(installation.clock.now.addingTimeInterval(60))
            try await installation.open(precedence: .mostRestrictive).apply(bundleDirectory: path)
        }
        let engine = try await installation.open(precedence: row.rule)
        #expect(engine.precedence == row.rule)
        let account = try #require(AccountID(row.account + "@contoso.com"))
        let snapshot = try engine.policy()
        #expect(snapshot.print(account: account).isAllowed == row.printAllowed)
        #expect(snapshot.setAsidePolicies(for: account).map(\.name) == row.setAside)
        #expect(snapshot.conflicts(for: account).setAside.map(\.policy.name) == row.setAside)
        let merged = snapshot.conflicts(for: account).settings.map(\.setting)
        #expect(merged == (snapshot.effectivePolicy(for: account)?.policies.count == 2 ? [.printBlocked] : []))
    }

    @Test("the rule recorded at apply is the installation's, unless an engine names its own")
    func recorded() async throws {
        let installation = try Installation()
        let path = installation.directory.file("bundle")
        try writePrecedenceBundle(["First"], accounts: ["a"], to: path)
        let engine = try await installation.open()
        try await engine.apply(bundleDirectory: path)
        #expect(engine.precedence == .mostRestrictive)
        try await engine.recordContext(EvaluationContext(), precedence: .incumbent)
        #expect(try await installation.open().precedence == .incumbent)
        #expect(try await installation.open(precedence: .mostRestrictive).precedence == .mostRestrictive)
    }
}
