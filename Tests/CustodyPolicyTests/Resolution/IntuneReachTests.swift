import CustodyPolicy
import Foundation
import Testing

/// Who a policy reaches, with each expected answer taken from Microsoft's pages (the sentence is
/// quoted beside the case), never from Custody's model.
///
/// Pages:
/// - [APP overview]: learn.microsoft.com/intune/intune-service/apps/app-protection-policy,
///   "End-user requirements to use app protection policies".
/// - [Graph default]: Graph beta resource `defaultManagedAppProtection`, its description.
/// - [Graph targeted]: Graph beta resource `targetedManagedAppProtection`, property `isAssigned`.
/// - [Filters]: learn.microsoft.com/intune/intune-service/fundamentals/filters, "Use a filter".
@Suite("Reach as Intune decides it: drafts, exclusions, the default policy, licenses, filters")
struct IntuneReachTests {
    /// Accounts: member (group g), contractor (groups g and contractors), loner (no group),
    /// unlicensed (group g, recorded as holding no Intune license).
    static let tenant = #"""
        {"accounts": [
          {"upn": "member@contoso.com", "groups": ["g"]},
          {"upn": "contractor@contoso.com", "groups": ["g", "contractors"]},
          {"upn": "loner@contoso.com", "groups": []},
          {"upn": "unlicensed@contoso.com", "groups": ["g"], "licensed": false}
        ]}
        """#
    static let accounts = ["member", "contractor", "loner", "unlicensed"]

    static func policy(
        _ name: String, type: String = "iosManagedAppProtection", assignments: String?, extra: String = ""
    ) -> String {
        var members = [
            ##""@odata.type": "#microsoft.graph.\##(type)""##, #""displayName": "\#(name)""#, #""printBlocked": true"#,
        ]
        if let assignments { members.append(#""assignments": \#(assignments)"#) }
        if !extra.isEmpty { members.append(extra) }
        return "{" + members.joined(separator: ", ") + "}"
    }

    static func target(_ type: String, group: String? = nil, filter: (id: String, mode: String)? = nil) -> String {
        var members = [##""@odata.type": "#microsoft.graph.\##(type)""##]
        if let group { members.append(#""groupId": "\#(group)""#) }
        if let filter {
            members.append(#""deviceAndAppManagementAssignmentFilterId": "\#(filter.id)""#)
            members.append(#""deviceAndAppManagementAssignmentFilterType": "\#(filter.mode)""#)
        }
        return #"{"target": {"# + members.joined(separator: ", ") + "}}"
    }

    static func filter(_ id: String, rule: String) -> String {
        let escaped = rule.replacingOccurrences(of: "\"", with: "\\\"")
        return
            ##"{"@odata.type": "#microsoft.graph.deviceAndAppManagementAssignmentFilter", "id": "\##(id)", "displayName": "\##(id)", "platform": "iOSMobileApplicationManagement", "assignmentFilterManagementType": "apps", "rule": "\##(escaped)"}"##
    }

    /// The policies reaching each account, by name.
    static func reach(_ documents: [String]) throws -> [String: [String]] {
        let snapshot = PolicySnapshot(
            bundle: try loadBundle(tenant: tenant, documents: documents), context: EvaluationContext(platform: .ios))
        var result: [String: [String]] = [:]
        for account in accounts {
            result[account] = snapshot.effectivePolicy(for: id("\(account)@contoso.com"))?.policies.map(\.name) ?? []
        }
        return result
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        /// The sentence of Microsoft's page that decides the case.
        let source: String
        let documents: [String]
        let expected: [String: [String]]
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(
            name: "an unassigned draft (assignments [], isAssigned false) reaches no one",
            source:
                "[APP overview] \"The end user must belong to a security group that is targeted by an app protection policy.\" [Graph targeted] isAssigned: \"Indicates if the policy is deployed to any inclusion groups or not.\"",
            documents: [policy("Draft", assignments: "[]", extra: #""isAssigned": false"#)],
            expected: ["member": [], "contractor": [], "loner": [], "unlicensed": []]),
        Case(
            name: "a policy whose only assignment is an exclusion reaches no one",
            source:
                "[APP overview] \"The end user must belong to a security group that is targeted by an app protection policy.\"",
            documents: [
                policy(
                    "Exclusion only", assignments: "[\(target("exclusionGroupAssignmentTarget", group: "contractors"))]"
                )
            ],
            expected: ["member": [], "contractor": [], "loner": [], "unlicensed": []]),
        Case(
            name: "a filtered exclusion alone reaches no one either",
            source:
                "[APP overview] \"The end user must belong to a security group that is targeted by an app protection policy.\"",
            documents: [
                policy(
                    "Filtered exclusion",
                    assignments:
                        "[\(target("exclusionGroupAssignmentTarget", group: "contractors", filter: ("f-ipad", "include")))]"
                ),
                filter("f-ipad", rule: #"(app.deviceModel -startsWith "iPad")"#),
            ],
            expected: ["member": [], "contractor": [], "loner": [], "unlicensed": []]),
        Case(
            name: "the default policy reaches the users no targeted policy reaches, those in no group among them",
            source:
                "[Graph default] \"Policy used to configure detailed management settings for a specified set of apps for all users not targeted by a TargetedManagedAppProtection Policy\"",
            documents: [
                policy("Targeted", assignments: "[\(target("groupAssignmentTarget", group: "contractors"))]"),
                policy("Default", type: "defaultManagedAppProtection", assignments: nil),
            ],
            expected: ["member": ["Default"], "contractor": ["Targeted"], "loner": ["Default"], "unlicensed": []]),
        Case(
            name: "an unassigned draft does not keep the default policy from a user",
            source:
                "[Graph default] \"for all users not targeted by a TargetedManagedAppProtection Policy\"; a draft targets no one",
            documents: [
                policy("Draft", assignments: "[]"),
                policy("Default", type: "defaultManagedAppProtection", assignments: nil),
            ],
            expected: ["member": ["Default"], "contractor": ["Default"], "loner": ["Default"], "unlicensed": []]),
        Case(
            name: "a user without an Intune license is reached by no policy, all licensed users included",
            source:
                "[APP overview] \"The end user must have a license for Microsoft Intune assigned to their Microsoft Entra account.\"",
            documents: [
                policy("All licensed", assignments: "[\(target("allLicensedUsersAssignmentTarget"))]"),
                policy("Group", assignments: "[\(target("groupAssignmentTarget", group: "g"))]"),
            ],
            expected: [
                "member": ["All licensed", "Group"], "contractor": ["All licensed", "Group"],
                "loner": ["All licensed"], "unlicensed": [],
            ]),
        Case(
            name: "an exclusion wins over an inclusion of the same user",
            source:
                "[Intune assignments] \"exclusion takes precedence over inclusion\" (Include and exclude app assignments, and the APP creation page's Assignments step)",
            documents: [
                policy(
                    "Staff",
                    assignments:
                        "[\(target("groupAssignmentTarget", group: "g")), \(target("exclusionGroupAssignmentTarget", group: "contractors"))]"
                )
            ],
            expected: ["member": ["Staff"], "contractor": [], "loner": [], "unlicensed": []]),
    ]

    @Test("who a policy reaches", arguments: cases)
    func reaches(_ row: Case) throws {
        #expect(!row.source.isEmpty)
        #expect(try Self.reach(row.documents) == row.expected, "\(row.source)")
    }

    @Test("a policy document without an assignments property (missing or null) still reaches every account")
    func missingAssignments() throws {
        #expect(
            try Self.reach([Self.policy("Hand-written", assignments: nil)]) == [
                "member": ["Hand-written"], "contractor": ["Hand-written"], "loner": ["Hand-written"],
                "unlicensed": [],
            ])
        #expect(try Self.reach([Self.policy("Null", assignments: "null")])["loner"] == ["Null"])
    }

    @Test("policy validate says a draft reaches no account")
    func draftNotice() throws {
        let bundle = try loadBundle(tenant: Self.tenant, documents: [Self.policy("Draft", assignments: "[]")])
        #expect(bundle.warnings.contains { $0.severity == .notice && $0.message.contains("reaches no account") })
    }

    // MARK: Filters

    /// A policy blocking launch below iOS 17 for group g, its assignment filtered.
    static func filteredLaunch(mode: String, exclusion: Bool = false) -> [String] {
        let conditions = #""minimumRequiredOsVersion": "17.0""#
        let assignments =
            exclusion
            ? "[\(target("groupAssignmentTarget", group: "g")), \(target("exclusionGroupAssignmentTarget", group: "contractors", filter: ("f-ipad", mode)))]"
            : "[\(target("groupAssignmentTarget", group: "g", filter: ("f-ipad", mode)))]"
        return [
            policy("iPads", assignments: assignments, extra: conditions),
            filter("f-ipad", rule: #"(app.deviceModel -startsWith "iPad") and (app.operatingSystemVersion -ge 15.0)"#),
        ]
    }

    struct FilterRow: Sendable, CustomTestStringConvertible {
        let mode: String
        let exclusion: Bool
        let account: String
        let model: String?
        let outcome: LaunchOutcome
        var testDescription: String {
            "\(exclusion ? "exclusion" : "inclusion") filter \(mode), \(account) on \(model ?? "an unnamed model") → \(outcome)"
        }
    }

    /// [Filters] "Include filtered devices in assignment: Devices that match the assignment
    /// filter conditions receive the app or policy. Devices that don't match the assignment
    /// filter conditions don't receive the app or policy." / "Exclude filtered devices in
    /// assignment: Devices that match the assignment filter conditions don't receive the app or
    /// policy. Devices that don't match the assignment filter conditions receive the app or
    /// policy." Where the facts do not decide the filter, the restrictive reading: the policy
    /// applies (block: iOS 16 is below its minimum).
    static let filterRows: [FilterRow] = [
        FilterRow(mode: "include", exclusion: false, account: "member", model: "iPad Pro", outcome: .block),
        FilterRow(mode: "include", exclusion: false, account: "member", model: "iPhone 15", outcome: .allow),
        FilterRow(mode: "include", exclusion: false, account: "member", model: nil, outcome: .block),
        FilterRow(mode: "exclude", exclusion: false, account: "member", model: "iPad Pro", outcome: .allow),
        FilterRow(mode: "exclude", exclusion: false, account: "member", model: "iPhone 15", outcome: .block),
        FilterRow(mode: "exclude", exclusion: false, account: "member", model: nil, outcome: .block),
        // A filtered exclusion excludes only where its filter says so; undecided, it does not.
        FilterRow(mode: "include", exclusion: true, account: "contractor", model: "iPad Pro", outcome: .allow),
        FilterRow(mode: "include", exclusion: true, account: "contractor", model: "iPhone 15", outcome: .block),
        FilterRow(mode: "include", exclusion: true, account: "contractor", model: nil, outcome: .block),
        FilterRow(mode: "include", exclusion: true, account: "member", model: "iPad Pro", outcome: .block),
    ]

    @Test("filters decide on the facts a launch query gives", arguments: filterRows)
    func filters(_ row: FilterRow) throws {
        let snapshot = PolicySnapshot(
            bundle: try loadBundle(
                tenant: Self.tenant, documents: Self.filteredLaunch(mode: row.mode, exclusion: row.exclusion)),
            context: EvaluationContext(platform: .ios))
        let now = Duration.seconds(1_800_000_000)
        var facts = LaunchFacts()
        facts.lastCheckIn = now
        facts.osVersion = SoftwareVersion("16.0")
        facts.deviceModel = row.model
        let decision = snapshot.launch(account: id("\(row.account)@contoso.com"), facts: facts, now: now)
        #expect(decision.outcome == row.outcome)
    }

    @Test("an assignment naming a filter the bundle does not hold is read the restrictive way, with a warning")
    func missingFilter() throws {
        let documents = [
            Self.policy(
                "Filtered",
                assignments: "[\(Self.target("groupAssignmentTarget", group: "g", filter: ("gone", "include")))]")
        ]
        let bundle = try loadBundle(tenant: Self.tenant, documents: documents)
        #expect(bundle.warnings.contains { $0.code == .targeting && $0.message.contains("gone") })
        #expect(try Self.reach(documents)["member"] == ["Filtered"])
    }

    @Test(
        "a filter rule that does not parse is an error located at the rule",
        arguments: [
            #"(app.deviceModel -startsWith "iPad""#, #"(app.deviceModel -like "iPad")"#, #"(app.deviceModel -eq)"#,
            #"(deviceModel -eq "iPad")"#, #"(app.deviceModel -in [])"#, #"(app.appVersion -gt "new")"#, "",
            #"(app.deviceModel -eq "iPad") and"#, #"(app.deviceModel -eq "iPad" "#,
            "(app.operatingSystemVersion -gt 99999999999999999999999)",
        ])
    func unparseable(rule: String) {
        let diagnostics = loadFailure(tenant: Self.tenant, documents: [Self.filter("bad", rule: rule)])
        #expect(diagnostics.contains { $0.severity == .error && $0.path == "$.rule" }, "\(diagnostics)")
        if rule.contains("9999") {
            #expect(diagnostics.contains { $0.message.contains("not a version Custody can compare") }, "\(diagnostics)")
        }
    }
}

@Suite("Assignment filter rules, as Intune's filter reference writes them")
struct FilterRuleTests {
    struct Row: Sendable, CustomTestStringConvertible {
        let rule: String
        let facts: [FilterFacts.Key: String]
        let result: FilterResult
        var testDescription: String { "\(rule) on \(facts) → \(result)" }
    }

    /// Examples from Microsoft's "App and device properties, operators, and rule editing" page,
    /// whose "What you need to know" says: "The properties, operations, and values are case
    /// insensitive." and "Parentheses and nested parentheses are supported."
    static let rows: [Row] = [
        Row(rule: #"(app.appVersion -eq "14.2.1")"#, facts: [.appVersion: "14.2.1"], result: .matches),
        Row(rule: #"(app.appVersion -in ["10.15.3","10.14.2"])"#, facts: [.appVersion: "10.14.2"], result: .matches),
        Row(
            rule: #"(app.appVersion -notIn ["10.15.3","10.14.2"])"#, facts: [.appVersion: "10.14.2"],
            result: .doesNotMatch),
        Row(rule: #"(app.appVersion -startsWith "10.0")"#, facts: [.appVersion: "10.0.3"], result: .matches),
        Row(
            rule: #"(app.deviceManufacturer -eq "Microsoft")"#, facts: [.deviceManufacturer: "microsoft"],
            result: .matches),
        Row(
            rule: #"(APP.DEVICEMANUFACTURER -EQ "MICROSOFT")"#, facts: [.deviceManufacturer: "Microsoft"],
            result: .matches),
        Row(rule: #"(app.deviceModel -contains "Duo")"#, facts: [.deviceModel: "Surface Duo 2"], result: .matches),
        Row(
            rule: #"(app.deviceModel -notContains "Duo")"#, facts: [.deviceModel: "Surface Duo 2"],
            result: .doesNotMatch),
        Row(rule: #"(app.deviceModel -ne "Surface Duo")"#, facts: [.deviceModel: "Surface Duo"], result: .doesNotMatch),
        Row(
            rule: "(app.operatingSystemVersion -gt 10.0.22000.1000)", facts: [.operatingSystemVersion: "10.0.22631"],
            result: .matches),
        Row(
            rule: "(app.operatingSystemVersion -le 10.0.22631.3235)",
            facts: [.operatingSystemVersion: "10.0.22631.3236"], result: .doesNotMatch),
        Row(
            rule: "(app.operatingSystemVersion -eq 14.2.1)", facts: [.operatingSystemVersion: "14.2.1.0"],
            result: .matches),
        Row(
            rule: #"(app.deviceManagementType -eq "Unmanaged")"#, facts: [.deviceManagementType: "Unmanaged"],
            result: .matches),
        // "Or: ... Example: (device.manufacturer -eq "Samsung") or (device.model -contains "Galaxy Note")"
        Row(
            rule: #"(app.deviceManufacturer -eq "Samsung") or (app.deviceModel -contains "Galaxy Note")"#,
            facts: [.deviceModel: "Galaxy Note 20"], result: .matches),
        Row(
            rule: #"(app.deviceManufacturer -eq "Samsung") -and (app.deviceModel -contains "Galaxy Note")"#,
            facts: [.deviceModel: "Galaxy Note 20"], result: .unknown),
        Row(
            rule: #"(app.deviceManufacturer -eq "Samsung") and (app.deviceModel -contains "Galaxy Note")"#,
            facts: [.deviceModel: "Pixel 8"], result: .doesNotMatch),
        // and binds tighter than or; nested parentheses.
        Row(
            rule: #"app.appVersion -eq "1" or app.appVersion -eq "2" and app.deviceModel -eq "x""#,
            facts: [.appVersion: "1", .deviceModel: "y"], result: .matches),
        Row(
            rule: #"((app.appVersion -eq "1" or app.appVersion -eq "2") and (app.deviceModel -eq "x"))"#,
            facts: [.appVersion: "1", .deviceModel: "y"], result: .doesNotMatch),
        // "You can use Null or $Null as a value with the -Equals and -NotEquals operators."
        Row(rule: "(app.deviceModel -ne $Null)", facts: [.deviceModel: "iPhone"], result: .matches),
        Row(rule: "(app.deviceModel -eq null)", facts: [.deviceModel: "iPhone"], result: .doesNotMatch),
        // A managed-device property is not a managed-app fact: undecided.
        Row(rule: #"(device.deviceOwnership -eq "Personal")"#, facts: [.deviceModel: "iPhone"], result: .unknown),
        Row(rule: #"(app.deviceModel -eq "iPhone")"#, facts: [:], result: .unknown),
    ]

    @Test("rules read and decide as the reference says", arguments: rows)
    func evaluates(_ row: Row) throws {
        let bundle = try loadBundle(tenant: nil, documents: [IntuneReachTests.filter("f", rule: row.rule)])
        let filter = try #require(bundle.assignmentFilters["f"])
        var facts = FilterFacts()
        for (key, value) in row.facts { facts[key] = value }
        #expect(filter.rule.evaluate(facts) == row.result)
    }

    @Test("a device enrolled in management is not Unmanaged; which enrollment it is stays undecided")
    func managementType() throws {
        let enrolled = FilterFacts(launch: LaunchFacts(), managementLevel: .mdm)
        let unmanaged = FilterFacts(launch: LaunchFacts(), managementLevel: .unmanaged)
        let rules = [
            (#"(app.deviceManagementType -eq "Unmanaged")"#, FilterResult.doesNotMatch, FilterResult.matches),
            (#"(app.deviceManagementType -ne "Unmanaged")"#, .matches, .doesNotMatch),
            (#"(app.deviceManagementType -eq "Corporate-owned fully managed")"#, .unknown, .doesNotMatch),
        ]
        for (rule, onEnrolled, onUnmanaged) in rules {
            let bundle = try loadBundle(tenant: nil, documents: [IntuneReachTests.filter("f", rule: rule)])
            let filter = try #require(bundle.assignmentFilters["f"])
            #expect(filter.rule.evaluate(enrolled) == onEnrolled, "\(rule)")
            #expect(filter.rule.evaluate(unmanaged) == onUnmanaged, "\(rule)")
        }
    }
}
