import CustodyPolicy
import CustodyTestSupport
import Logging
import Testing

@Suite("Decision: allowed accounts and offline access")
struct AccessTests {
    private static let tenant = #"""
        {"accounts": [
          {"oid": "0c000000-0000-4000-8000-000000000001", "upn": "alice@contoso.com", "groups": []},
          {"oid": "0c000000-0000-4000-8000-000000000002", "upn": "bob@contoso.com", "groups": []}],
         "allowedAccounts": ALLOWED}
        """#

    struct Row: CustomTestStringConvertible, Sendable {
        let allowedAccounts: String
        let account: String?
        let allowed: Bool
        let reason: String
        var log: Logger.Level? = nil
        var testDescription: String { "\(account ?? "nil") against \(allowedAccounts) → \(allowed)" }
    }

    static let rows: [Row] = [
        Row(
            allowedAccounts: "null", account: "alice@contoso.com", allowed: true,
            reason: "allowedAccounts is null: every account is allowed"),
        Row(
            allowedAccounts: "null", account: "stranger@fabrikam.com", allowed: true, reason: "allowedAccounts is null"),
        Row(allowedAccounts: "null", account: nil, allowed: true, reason: "allowedAccounts is null"),
        Row(
            allowedAccounts: #"["alice@contoso.com"]"#, account: "alice@contoso.com", allowed: true,
            reason: "the account matches 'alice@contoso.com' in allowedAccounts"),
        Row(
            allowedAccounts: #"["alice@contoso.com"]"#, account: "0c000000-0000-4000-8000-000000000001", allowed: true,
            reason: "matches 'alice@contoso.com'"),
        Row(
            allowedAccounts: #"["alice@contoso.com"]"#, account: "ALICE@Contoso.com", allowed: true,
            reason: "matches 'alice@contoso.com'", log: .notice),
        Row(
            allowedAccounts: #"["0C000000-0000-4000-8000-000000000002"]"#, account: "bob@contoso.com", allowed: true,
            reason: "matches '0C000000-0000-4000-8000-000000000002'"),
        Row(
            allowedAccounts: #"["0c000000-0000-4000-8000-000000000002"]"#,
            account: "0C000000-0000-4000-8000-000000000002", allowed: true, reason: "matches", log: .notice),
        Row(
            allowedAccounts: #"["alice@contoso.com"]"#, account: "bob@contoso.com", allowed: false,
            reason: "the account is not in allowedAccounts"),
        Row(
            allowedAccounts: #"["alice@contoso.com"]"#, account: "alice@fabrikam.com", allowed: false,
            reason: "not in allowedAccounts", log: .warning),
        Row(
            allowedAccounts: #"["external@partner.com"]"#, account: "external@partner.com", allowed: true,
            reason: "matches 'external@partner.com'"),
        Row(allowedAccounts: #"["alice@contoso.com"]"#, account: nil, allowed: false, reason: "not in allowedAccounts"),
        Row(allowedAccounts: "[]", account: "alice@contoso.com", allowed: false, reason: "not in allowedAccounts"),
    ]

    @Test(
        "an account must match the list by UPN or OID, case-insensitively; near misses are logged, once however often they are asked",
        arguments: rows)
    func allowedAccounts(row: Row) throws {
        let capture = LogCapture()
        let bundle = try loadBundle(
            tenant: Self.tenant.replacingOccurrences(of: "ALLOWED", with: row.allowedAccounts), documents: [])
        let snapshot = PolicySnapshot(bundle: bundle, logger: capture.logger())
        for _ in 0..<3 {
            let decision = snapshot.accountAllowed(row.account.map(id))
            #expect(decision.isAllowed == row.allowed)
            #expect(decision.reason.contains(row.reason), "\(decision.reason)")
            #expect(decision.settingName == "allowedAccounts")
        }
        #expect(capture.records.map(\.level) == (row.log.map { [$0] } ?? []))
        if row.log == .warning {
            #expect(
                capture.records.first?.metadata == [
                    "account": "alice@fabrikam.com", "allowedEntry": "alice@contoso.com",
                ])
        }
    }

    @Test(
        "near misses are logged once each, up to a bound per snapshot, which is said once; a new snapshot logs afresh")
    func nearMissesBounded() throws {
        let capture = LogCapture()
        let bundle = try loadBundle(
            tenant: Self.tenant.replacingOccurrences(of: "ALLOWED", with: #"["alice@contoso.com"]"#), documents: [])
        let snapshot = PolicySnapshot(bundle: bundle, logger: capture.logger())
        for round in 0..<2 {
            for domain in 0..<1_010 {
                #expect(!snapshot.accountAllowed(id("alice@d\(domain).example")).isAllowed, "round \(round)")
            }
        }
        let records = capture.records
        #expect(records.count == 1_001)
        #expect(records.prefix(1_000).allSatisfy { $0.message.contains("same local part at another domain") })
        #expect(Set(records.prefix(1_000).compactMap { $0.metadata["account"] }).count == 1_000)
        #expect(records.last?.message == "Identity near misses: 1000 logged for this bundle; further ones are not")
        #expect(records.last?.metadata == [:], "names no account it did not log")

        // A new snapshot logs afresh; the same pair in another case is the same near miss, as the
        // list matches it.
        let again = LogCapture()
        let fresh = PolicySnapshot(bundle: bundle, logger: again.logger())
        for account in ["alice@d0.example", "ALICE@D0.EXAMPLE", "Alice@d0.Example"] {
            #expect(!fresh.accountAllowed(id(account)).isAllowed)
        }
        #expect(again.records.count == 1)
    }

    /// Unconfigured, the iOS settings page's defaults: Block access "Default value = 1440
    /// minutes (24 hours)", Wipe data "Default value = 90 days".
    @Test(
        "offline: online until periodOfflineBeforeAccessCheck, blocked until periodOfflineBeforeWipeIsEnforced, then wipe",
        arguments: [
            (Duration.zero, OfflineState.online),
            (.seconds(24 * 3_600 - 1), .online),
            (.seconds(24 * 3_600), .accessBlocked),
            (.seconds(90 * 86_400 - 1), .accessBlocked),
            (.seconds(90 * 86_400), .wipeRequired),
            (.seconds(400 * 86_400), .wipeRequired),
            (.seconds(-300), .online),
            (.seconds(-3_600), .accessBlocked),
        ])
    func offline(offlineFor: Duration, state: OfflineState) {
        let snapshot = World.snapshot(owner: ProtectionSettings())
        let decision = snapshot.offlineAccess(account: World.owner, offlineFor: offlineFor)
        #expect(decision.offlineState == state)
        #expect(decision.isAllowed == (state == .online))
        #expect(
            decision.settingName
                == (state == .wipeRequired ? "periodOfflineBeforeWipeIsEnforced" : "periodOfflineBeforeAccessCheck"))
        #expect(decision.reason.contains("(Intune default"))
        let unmanaged = snapshot.offlineAccess(account: World.outsider, offlineFor: offlineFor)
        #expect(unmanaged.isAllowed)
        #expect(unmanaged.offlineState == .online)
    }

    @Test("offline periods come from the policy")
    func offlinePeriods() {
        let snapshot = World.snapshot(
            owner: .with {
                $0.periodOfflineBeforeAccessCheck = PolicyDuration(seconds: 60)
                $0.periodOfflineBeforeWipeIsEnforced = PolicyDuration(seconds: 3_600)
            })
        let blocked = snapshot.offlineAccess(account: World.owner, offlineFor: .seconds(61))
        #expect(blocked.offlineState == .accessBlocked)
        #expect(
            blocked.reason
                == "offline for PT1M1S, at least periodOfflineBeforeAccessCheck PT1M: access is blocked until the account checks in (from \"Owner policy\")"
        )
        #expect(snapshot.offlineAccess(account: World.owner, offlineFor: .seconds(3_600)).offlineState == .wipeRequired)
    }
}

extension String {
    fileprivate func replacingOccurrences(of target: String, with replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
