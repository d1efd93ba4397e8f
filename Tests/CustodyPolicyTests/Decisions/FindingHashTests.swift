@testable import CustodyPolicy
import Testing

@Suite("Findings as cache keys")
struct FindingHashTests {
    /// Each rule that carries text from a query or a policy, made for a given text.
    static let rules: [(name: String, make: @Sendable (String) -> Finding.Code)] = [
        ("shareTargetManaged", { .shareTargetManaged($0) }), ("shareTargetNotManaged", { .shareTargetNotManaged($0) }),
        ("shareBlocked", { .shareBlocked($0) }), ("shareTargetManagedLink", { .shareTargetManagedLink($0) }),
        ("shareTargetMDMManaged", { .shareTargetMDMManaged($0) }),
        ("shareTargetExempted", { .shareTargetExempted($0, list: .exemptedAppProtocols) }),
        ("allowedAccountListed", { .allowedAccountListed($0) }), ("keyboardApproved", { .keyboardApproved($0) }),
    ]

    /// A reason cache looks findings up by hash: texts of one length must not all collide, or a
    /// share naming thousands of targets costs time quadratic in their number.
    @Test("findings that differ only in a text of the same length hash apart", arguments: rules.indices)
    func sameLengthTexts(rule: Int) {
        let findings = (0..<1_000).map { Finding(Self.rules[rule].make("com.app\(1_000 + $0)"), nil) }
        #expect(Set(findings.map(\.hashValue)).count > 990, "\(Self.rules[rule].name)")
        #expect(Set(findings).count == 1_000)
        #expect(Finding(Self.rules[rule].make("com.app1000"), nil) == findings[0])
        #expect(Finding(Self.rules[rule].make("com.app1000"), nil).hashValue == findings[0].hashValue)
    }
}
