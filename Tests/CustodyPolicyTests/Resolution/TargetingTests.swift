import CustodyPolicy
import Testing

@Suite("Targeting: which policies reach which accounts")
struct TargetingTests {
    /// Accounts: inA (group a), inB (group b), inAX (groups a and x), nowhere (no groups), and an
    /// outsider not in the tenant.
    private static let tenant = #"""
        {"accounts": [
          {"upn": "ina@contoso.com", "groups": ["a"]},
          {"upn": "inb@contoso.com", "groups": ["b"]},
          {"upn": "inax@contoso.com", "groups": ["a", "x"]},
          {"upn": "nowhere@contoso.com", "groups": []}
        ]}
        """#

    private static func policy(
        _ name: String, type: String = "iosManagedAppProtection", assignments: String? = nil, apps: String? = nil,
        extra: String = ""
    ) -> String {
        var members = [
            ##""@odata.type": "#microsoft.graph.\##(type)""##, #""displayName": "\#(name)""#, #""printBlocked": true"#,
        ]
        if let assignments { members.append(#""assignments": \#(assignments)"#) }
        if let apps { members.append(#""apps": \#(apps)"#) }
        if !extra.isEmpty { members.append(extra) }
        return "{" + members.joined(separator: ", ") + "}"
    }

    private static func group(_ id: String, exclude: Bool = false) -> String {
        ##"{"target": {"@odata.type": "#microsoft.graph.\##(exclude ? "exclusionGroupAssignmentTarget" : "groupAssignmentTarget")", "groupId": "\##(id)"}}"##
    }

    private func policies(
        _ documents: [String], context: EvaluationContext = EvaluationContext()
    ) throws -> [String: [String]] {
        let snapshot = PolicySnapshot(
            bundle: try loadBundle(tenant: Self.tenant, documents: documents), context: context)
        var result: [String: [String]] = [:]
        for account in ["ina", "inb", "inax", "nowhere", "outsider"] {
            let domain = account == "outsider" ? "fabrikam.com" : "contoso.com"
            result[account] = snapshot.effectivePolicy(for: id("\(account)@\(domain)"))?.policies.map(\.name) ?? []
        }
        return result
    }

    @Test("a group assignment reaches the group's members; an exclusion wins over it")
    func groups() throws {
        let reached = try policies([
            Self.policy("A", assignments: "[\(Self.group("a")), \(Self.group("x", exclude: true))]")
        ])
        #expect(reached == ["ina": ["A"], "inb": [], "inax": [], "nowhere": [], "outsider": []])
    }

    @Test("all licensed users means every tenant account, less exclusions")
    func allLicensedUsers() throws {
        let all = ##"{"target": {"@odata.type": "#microsoft.graph.allLicensedUsersAssignmentTarget"}}"##
        let reached = try policies([Self.policy("All", assignments: "[\(all), \(Self.group("b", exclude: true))]")])
        #expect(reached == ["ina": ["All"], "inb": [], "inax": ["All"], "nowhere": ["All"], "outsider": []])
    }

    @Test(
        "a document without assignments (missing or null) means every account of the tenant, never outsiders",
        arguments: [nil, "null"])
    func noAssignments(assignments: String?) throws {
        let reached = try policies([Self.policy("Everyone", assignments: assignments)])
        #expect(
            reached == [
                "ina": ["Everyone"], "inb": ["Everyone"], "inax": ["Everyone"], "nowhere": ["Everyone"], "outsider": [],
            ])
    }

    @Test("an empty assignments list (Intune's unassigned policy) reaches no one")
    func emptyAssignments() throws {
        let reached = try policies([Self.policy("Draft", assignments: "[]")])
        #expect(reached == ["ina": [], "inb": [], "inax": [], "nowhere": [], "outsider": []])
    }

    @Test("an assignment target Custody does not evaluate counts as everyone")
    func unsupportedTarget() throws {
        let devices = ##"{"target": {"@odata.type": "#microsoft.graph.allDevicesAssignmentTarget"}}"##
        let reached = try policies([Self.policy("Devices", assignments: "[\(devices)]")])
        #expect(reached["nowhere"] == ["Devices"])
    }

    @Test("the default policy applies only to tenant accounts no targeted policy reaches")
    func defaultPolicy() throws {
        let reached = try policies(
            [
                Self.policy("A", assignments: "[\(Self.group("a"))]"),
                Self.policy("Default", type: "defaultManagedAppProtection"),
            ], context: EvaluationContext(platform: .ios))
        #expect(reached == ["ina": ["A"], "inb": ["Default"], "inax": ["A"], "nowhere": ["Default"], "outsider": []])
    }

    @Test("platform: iOS and Android policies apply on their platform, never merged; the default on every one")
    func platforms() throws {
        let documents = [
            Self.policy("iOS", assignments: "[\(Self.group("a"))]"),
            Self.policy("Android", type: "androidManagedAppProtection", assignments: "[\(Self.group("a"))]"),
            Self.policy("Default", type: "defaultManagedAppProtection"),
        ]
        #expect(try policies(documents, context: EvaluationContext(platform: .ios))["ina"] == ["iOS"])
        #expect(try policies(documents, context: EvaluationContext(platform: .android))["ina"] == ["Android"])
        // No platform: a decision is for one, so a bundle of both has no effective policy to give.
        #expect(try policies(documents)["ina"] == [])
        #expect(try policies(Array(documents.prefix(1)))["ina"] == ["iOS"])
        #expect(try policies(documents, context: EvaluationContext(platform: .android))["inb"] == ["Default"])
    }

    @Test(
        "an app list limits a policy to its apps, matched by Graph id or bundle id, any case",
        arguments: [
            ("com.microsoft.office.word", true), ("COM.MICROSOFT.OFFICE.WORD", true),
            ("com.microsoft.office.word.ios", true),
            ("com.microsoft.office.excel", false),
        ])
    func appLists(app: String, applies: Bool) throws {
        let apps =
            ##"[{"id": "com.microsoft.office.word.ios", "mobileAppIdentifier": {"@odata.type": "#microsoft.graph.iosMobileAppIdentifier", "bundleId": "com.microsoft.office.word"}}]"##
        let documents = [Self.policy("Word only", assignments: "[\(Self.group("a"))]", apps: apps)]
        #expect(
            try policies(documents, context: EvaluationContext(appID: app))["ina"] == (applies ? ["Word only"] : []))
        #expect(
            try policies(documents)["ina"] == ["Word only"], "without an app in the context, app lists do not filter")
    }

    @Test("an allApps group type applies to every app even with an app list")
    func allApps() throws {
        let documents = [
            Self.policy(
                "All apps", assignments: "[\(Self.group("a"))]", apps: #"["com.other"]"#,
                extra: #""appGroupType": "allApps""#)
        ]
        #expect(try policies(documents, context: EvaluationContext(appID: "com.anything"))["ina"] == ["All apps"])
    }

    @Test(
        "management levels filter when the context names one",
        arguments: [
            (#""targetedAppManagementLevels": "unmanaged""#, AppManagementLevel.unmanaged, true),
            (#""targetedAppManagementLevels": "unmanaged""#, .mdm, false),
            (#""targetedAppManagementLevels": "mdm,androidEnterprise""#, .androidEnterprise, true),
            (#""targetedAppManagementLevels": "unspecified""#, .mdm, true),
            ("", .mdm, true),
        ])
    func managementLevels(member: String, level: AppManagementLevel, applies: Bool) throws {
        let documents = [Self.policy("Levels", assignments: "[\(Self.group("a"))]", extra: member)]
        #expect(
            try policies(documents, context: EvaluationContext(managementLevel: level))["ina"]
                == (applies ? ["Levels"] : []))
    }

    @Test("accounts reached by the same policies share one effective policy")
    func sharing() throws {
        let bundle = try loadBundle(tenant: Self.tenant, documents: [Self.policy("Everyone")])
        let snapshot = PolicySnapshot(bundle: bundle)
        #expect(snapshot.distinctEffectivePolicies.count == 1)
        #expect(
            snapshot.effectivePolicy(for: id("ina@contoso.com"))
                === snapshot.effectivePolicy(for: id("nowhere@contoso.com")))
        #expect(snapshot.isManaged(id("inb@contoso.com")))
        #expect(!snapshot.isManaged(id("outsider@fabrikam.com")))
        #expect(!snapshot.isManaged(nil))
    }

    @Test("policy-managed apps: every app the account's policies target on any app, plus the tenant's")
    func managedApps() throws {
        let tenant =
            #"{"accounts": [{"upn": "ina@contoso.com", "groups": ["a"]}], "managedApps": ["Com.Contoso.Expenses"]}"#
        let word = Self.policy(
            "Word", assignments: "[\(Self.group("a"))]",
            apps:
                #"[{"id": "com.microsoft.office.word.ios", "mobileAppIdentifier": {"bundleId": "com.microsoft.office.word"}}]"#
        )
        let teams = Self.policy("Teams", assignments: "[\(Self.group("a"))]", apps: #"["com.microsoft.skype.teams"]"#)
        let snapshot = PolicySnapshot(
            bundle: try loadBundle(tenant: tenant, documents: [word, teams]),
            context: EvaluationContext(appID: "com.microsoft.office.word"))
        let policy = try #require(snapshot.effectivePolicy(for: id("ina@contoso.com")))
        #expect(policy.policies.map(\.name) == ["Word"])
        #expect(
            policy.managedApps == [
                "com.contoso.expenses", "com.microsoft.office.word", "com.microsoft.office.word.ios",
                "com.microsoft.skype.teams",
            ])
        #expect(policy.isManagedApp("COM.MICROSOFT.SKYPE.TEAMS"))
    }
}
