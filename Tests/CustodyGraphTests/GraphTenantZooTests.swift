import Custody
import CustodyGraph
import CustodyPolicy
import CustodyTestSupport
import Foundation
import Synchronization
import Testing

/// Tenant shapes that real tenants have, synced from a Graph-shaped server: each person's
/// decision is the one Intune makes, with the sentence of Microsoft's page that decides it.
@Suite("Graph connector: a tenant zoo decided as Intune decides it", .timeLimit(.minutes(3)))
struct GraphTenantZooTests {
    static let erin = (id: "0e210000-0000-4000-8000-000000000005", upn: "erin@contoso.com")

    /// A policy of the zoo: print-blocking, with `assignments` as given.
    static func policy(_ id: String, assignments: [GraphJSON]) throws -> GraphJSON {
        guard case .object(var members) = try financePolicy(id: id, include: []) else { throw CancellationError() }
        members["assignments"] = .array(assignments)
        members["isAssigned"] = .bool(!assignments.isEmpty)
        return .object(members)
    }

    static func target(_ type: String, group: String? = nil, filter: (String, String)? = nil) -> GraphJSON {
        var target: [String: GraphJSON] = ["@odata.type": .string("#microsoft.graph.\(type)")]
        if let group { target["groupId"] = .string(group) }
        if let filter {
            target["deviceAndAppManagementAssignmentFilterId"] = .string(filter.0)
            target["deviceAndAppManagementAssignmentFilterType"] = .string(filter.1)
        }
        return .object(["id": .string(UUID().uuidString), "target": .object(target)])
    }

    /// alice in finance; bob in sales; carol in finance and contractors; dave in no group; erin in
    /// finance without an Intune license.
    static func zoo(defaultPolicy: Bool) throws -> FakeTenant {
        var tenant = FakeTenant()
        tenant.groups = [
            "grp-finance": [
                .user(id: People.alice.id, upn: People.alice.upn), .user(id: People.carol.id, upn: People.carol.upn),
                .user(id: erin.id, upn: erin.upn),
            ],
            "grp-contractors": [.user(id: People.carol.id, upn: People.carol.upn)],
            "grp-sales": [.user(id: People.bob.id, upn: People.bob.upn)],
        ]
        tenant.users = [People.alice, People.bob, People.carol, People.dave, erin]
        tenant.unlicensed = [erin.id]
        tenant.filters = [
            .object([
                "@odata.context": .string("https://graph.microsoft.com/beta/$metadata#assignmentFilters/$entity"),
                "id": .string("f-ipad"), "displayName": .string("iPads"),
                "platform": .string("iOSMobileApplicationManagement"),
                "assignmentFilterManagementType": .string("apps"),
                "rule": .string(#"(app.deviceModel -startsWith "iPad")"#),
            ]),
            .object(["id": .string("f-unused"), "rule": .string("(app.deviceModel -eq \"x\")")]),
        ]
        tenant.policies["iosManagedAppProtections"] = [
            try policy(
                "T_finance",
                assignments: [
                    target("groupAssignmentTarget", group: "grp-finance"),
                    target("exclusionGroupAssignmentTarget", group: "grp-contractors"),
                ]),
            // A draft: created, never assigned.
            try policy("T_draft", assignments: []),
            // Exclusions only.
            try policy("T_exclusions", assignments: [target("exclusionGroupAssignmentTarget", group: "grp-finance")]),
            // Sales, filtered to iPads.
            try policy(
                "T_sales_ipad",
                assignments: [target("groupAssignmentTarget", group: "grp-sales", filter: ("f-ipad", "include"))]),
        ]
        if defaultPolicy {
            guard case .object(var members) = try financePolicy(id: "T_default", include: []) else {
                throw CancellationError()
            }
            members["@odata.type"] = .string("#microsoft.graph.defaultManagedAppProtection")
            members["assignments"] = nil
            tenant.policies["defaultManagedAppProtections"] = [.object(members)]
        }
        return tenant
    }

    /// Printing per person, and the bundle, after a sync of `tenant`.
    static func synced(_ tenant: FakeTenant, behaviour: ServerBehaviour = ServerBehaviour()) async throws -> (
        printing: [String: Bool], bundle: PolicyBundle, report: GraphSyncReport
    ) {
        let server = GraphServer(tenant: tenant, behaviour: behaviour)
        let directory = try TemporaryDirectory()
        let report = Mutex<GraphSyncReport?>(nil)
        try await server.serving { base in
            let synced = try await sync(try settings(base), to: directory.file("bundle"))
            report.withLock { $0 = synced }
        }
        var answers = try await printing(directory.file("bundle"))
        let engine = try await CustodyEngine.open(
            CustodyConfiguration(state: .inMemory, context: EvaluationContext(platform: .ios)))
        _ = try await engine.apply(bundleDirectory: directory.file("bundle"))
        answers[erin.upn] = try engine.policy().print(account: AccountID(oid: erin.id, upn: erin.upn)!).isAllowed
        let bundle = try PolicyBundle.load(path: directory.file("bundle"))
        return (answers, bundle, try #require(report.withLock { $0 }))
    }

    @Test(
        "without a default policy: drafts and exclusion-only policies reach no one, unlicensed users no policy, an undecided filter includes"
    )
    func withoutDefault() async throws {
        let (printing, bundle, report) = try await Self.synced(try Self.zoo(defaultPolicy: false))
        #expect(
            printing == [
                // Included by grp-finance.
                People.alice.upn: false,
                // Included by grp-sales where f-ipad matches; a print question gives no device
                // facts, so the filter is undecided and the inclusion holds (restrictive).
                People.bob.upn: false,
                // Excluded by grp-contractors; the draft and the exclusion-only policy include no
                // one ("The end user must belong to a security group that is targeted by an app
                // protection policy", Microsoft's app protection overview).
                People.carol.upn: true,
                // In no group, and no default policy.
                People.dave.upn: true,
                // "The end user must have a license for Microsoft Intune assigned to their
                // Microsoft Entra account."
                Self.erin.upn: true,
            ])
        #expect(bundle.assignmentFilters.keys.sorted() == ["f-ipad"], "only the filters assignments name are read")
        #expect(bundle.assignmentFilters["f-ipad"]?.rule.properties.map(\.description) == ["app.deviceModel"])
        #expect(report.warnings.contains { $0.contains("no Intune license") })
        let erin = try #require(bundle.tenant.accounts.first { $0.id.oid == Self.erin.id })
        #expect(erin.licensed == false)
        #expect(bundle.tenant.accounts.first { $0.id.oid == People.alice.id }?.licensed == true)
        #expect(!bundle.tenant.accounts.contains { $0.id.oid == People.dave.id }, "dave can be reached by nothing")
    }

    @Test("with a default policy: every licensed user no targeted policy reaches gets it, users in no group too")
    func withDefault() async throws {
        let (printing, bundle, _) = try await Self.synced(try Self.zoo(defaultPolicy: true))
        // Graph, defaultManagedAppProtection: "for all users not targeted by a
        // TargetedManagedAppProtection Policy".
        #expect(
            printing == [
                People.alice.upn: false, People.bob.upn: false, People.carol.upn: false, People.dave.upn: false,
                Self.erin.upn: true,
            ])
        #expect(bundle.tenant.accounts.contains { $0.id.oid == People.dave.id }, "every user is read")
    }

    @Test("a user member without a UPN (limited information) fails the sync, naming the permission; nothing is written")
    func memberWithoutUPN() async throws {
        var tenant = try Self.zoo(defaultPolicy: false)
        tenant.groups["grp-sales"] = [.user(id: People.bob.id, upn: "")]
        let server = GraphServer(tenant: tenant)
        let directory = try TemporaryDirectory()
        try await server.serving { base in
            let error = await #expect(throws: GraphError.self) {
                try await sync(try settings(base), to: directory.file("bundle"))
            }
            #expect(error?.code == .permission)
            #expect(error?.message.contains("User.Read.All") == true)
        }
        #expect(!FileManager.default.fileExists(atPath: directory.file("bundle")))
    }

    @Test("a navigation Graph pages inside $expand is read whole: the policy protects every app")
    func pagedExpand() async throws {
        var behaviour = ServerBehaviour()
        behaviour.expandPageSize = 1
        let (_, bundle, _) = try await Self.synced(try Self.zoo(defaultPolicy: false), behaviour: behaviour)
        let finance = try #require(bundle.protectionPolicies.first { $0.reference.id == "T_finance" })
        #expect(finance.targeting.apps?.count == 3)
        #expect(finance.targeting.included.count == 1)
        #expect(finance.targeting.excludedGroups == ["grp-contractors"])
    }

    @Test("an assignment filter whose rule does not parse fails the sync, naming the filter")
    func unparseableFilter() async throws {
        var tenant = try Self.zoo(defaultPolicy: false)
        tenant.filters = [
            .object([
                "id": .string("f-ipad"), "displayName": .string("iPads"),
                "rule": .string("(app.deviceModel -like \"iPad\")"),
            ])
        ]
        let server = GraphServer(tenant: tenant)
        let directory = try TemporaryDirectory()
        try await server.serving { base in
            let error = await #expect(throws: GraphError.self) {
                try await sync(try settings(base), to: directory.file("bundle"))
            }
            #expect(error?.code == .bundle)
            #expect(error?.message.contains("iPads") == true, "\(String(describing: error))")
        }
    }

    /// A Windows MAM policy for sales (Microsoft Edge), a retired WIP policy and a type Custody
    /// does not know, beside the zoo's iOS policies and its default policy.
    static func windowsZoo() throws -> FakeTenant {
        var tenant = try zoo(defaultPolicy: true)
        tenant.policies["windowsManagedAppProtections"] = [
            .object([
                "id": .string("W_sales"), "displayName": .string("Edge for Business, sales"),
                "printBlocked": .bool(true), "allowedOutboundClipboardSharingLevel": .string("none"),
                "allowedOutboundDataTransferDestinations": .string("none"),
                "allowedInboundDataTransferSources": .string("allApps"), "isAssigned": .bool(true),
                "apps": .array([
                    .object([
                        "id": .string("msedge.windows"),
                        "mobileAppIdentifier": .object([
                            "@odata.type": .string("#microsoft.graph.windowsAppIdentifier"),
                            "windowsAppId": .string("com.microsoft.edge"),
                        ]),
                    ])
                ]),
                "assignments": .array([target("groupAssignmentTarget", group: "grp-sales")]),
            ])
        ]
        tenant.policies["managedAppPolicies"] = [
            .object([
                "@odata.type": .string("#microsoft.graph.mdmWindowsInformationProtectionPolicy"),
                "id": .string("WIP_1"), "displayName": .string("Old WIP"),
                "enforcementLevel": .string("encryptAndAuditOnly"),
            ]),
            .object([
                "@odata.type": .string("#microsoft.graph.visionOSManagedAppProtection"), "id": .string("X_1"),
                "displayName": .string("Not yet known"),
            ]),
        ]
        return tenant
    }

    @Test(
        "Windows MAM: its policy decides on Windows, the default policy does not reach Windows, WIP and unknown types are named"
    )
    func windows() async throws {
        let server = GraphServer(tenant: try Self.windowsZoo())
        let directory = try TemporaryDirectory()
        let report = Mutex<GraphSyncReport?>(nil)
        try await server.serving { base in
            let synced = try await sync(try settings(base), to: directory.file("bundle"))
            report.withLock { $0 = synced }
        }
        let engine = try await CustodyEngine.open(
            CustodyConfiguration(state: .inMemory, context: EvaluationContext(platform: .ios)))
        _ = try await engine.apply(bundleDirectory: directory.file("bundle"))
        let windows = try engine.policy(for: EvaluationContext(platform: .windows))
        let ios = try engine.policy(for: EvaluationContext(platform: .ios))
        let bob = People.account(People.bob)
        let alice = People.account(People.alice)
        // Microsoft's "App protection policy settings for Windows": "Printing Org data: Select
        // Block to prevent printing of org data"; "No destination or source: Org users can't
        // cut, copy, or paste data to or from external accounts, documents, locations or
        // applications".
        #expect(!windows.print(account: bob).isAllowed)
        #expect(!windows.copyOut(owner: bob, destinationManaged: true, length: 1).isAllowed)
        // "No destinations: Org users can't send org data to external accounts, documents,
        // locations, or applications".
        #expect(!windows.appSharing(account: bob).isAllowed)
        // Bob's iOS decisions are his iOS policies' (the Windows policy is Windows only).
        #expect(ios.print(account: bob).isAllowed == false, "the iPad filter is undecided: the inclusion holds")
        // Alice has no Windows policy; the default policy carries iOS and Android settings
        // only (Graph defaultManagedAppProtection: appDataEncryptionType "(iOS Only)",
        // encryptAppData "(Android only)"), so on Windows nothing reaches her.
        #expect(windows.print(account: alice).isAllowed)
        let aliceOnWindows = windows.reach(of: alice)
        #expect(!aliceOnWindows.contains { $0.reaches })
        #expect(
            aliceOnWindows.contains {
                $0.policy.kind == .defaultManagedAppProtection && $0.reason.contains("for ios and android, not windows")
            }, "\(aliceOnWindows)")
        let synced = try #require(report.withLock { $0 })
        #expect(synced.warnings.contains { $0.contains("visionOSManagedAppProtection") && $0.contains("not enforced") })
        let bundle = try PolicyBundle.load(path: directory.file("bundle"))
        #expect(bundle.protectionPolicies.contains { $0.kind == .windowsManagedAppProtection })
        #expect(
            bundle.warnings.contains { $0.code == .notEnforced && $0.message.contains("Old WIP") },
            "the retired WIP policy is kept and listed as not enforced")
        #expect(
            FileManager.default.fileExists(
                atPath: directory.file("bundle/mdmWindowsInformationProtectionPolicies-WIP_1.json")))
    }

    /// Microsoft's settings pages, "Disabled account": "When we have confirmed the user has been
    /// disabled in Microsoft Entra ID, the app blocks access to work or school data." Entra's
    /// `accountEnabled: false`, read by the sync, is that confirmation: a launch query that does
    /// not report the account state is decided with it.
    @Test("a user disabled in Entra ID is recorded, and a launch query that omits its state is decided as disabled")
    func disabledUser() async throws {
        var tenant = try Self.zoo(defaultPolicy: false)
        tenant.disabled = [People.alice.id]
        guard case .object(var members) = tenant.policies["iosManagedAppProtections"]![0] else {
            throw CancellationError()
        }
        members["appActionIfUnableToAuthenticateUser"] = .string("block")
        tenant.policies["iosManagedAppProtections"]![0] = .object(members)
        let server = GraphServer(tenant: tenant)
        let directory = try TemporaryDirectory()
        try await server.serving { base in
            _ = try await sync(try settings(base), to: directory.file("bundle"))
        }
        let bundle = try PolicyBundle.load(path: directory.file("bundle"))
        #expect(bundle.tenant.accounts.first { $0.id.oid == People.alice.id }?.enabled == false)
        #expect(bundle.tenant.accounts.first { $0.id.oid == People.carol.id }?.enabled == nil, "enabled: not written")
        let snapshot = PolicySnapshot(bundle: bundle, context: EvaluationContext(platform: .ios))
        var facts = LaunchFacts()
        facts.lastCheckIn = .seconds(1_800_000_000 - 60)
        let launch = snapshot.launch(
            account: People.account(People.alice), facts: facts, now: .seconds(1_800_000_000), missingFacts: .ignore)
        let check = try #require(launch.checks.first { $0.setting == "appActionIfUnableToAuthenticateUser" })
        #expect(check.reported == "disabled" && !check.isMissing)
        #expect(launch.outcome == .block, "\(launch.reason)")
        // Reported by the app, the query's own state wins.
        facts.accountState = .active
        let reported = snapshot.launch(
            account: People.account(People.alice), facts: facts, now: .seconds(1_800_000_000), missingFacts: .ignore)
        #expect(!reported.checks.contains { $0.setting == "appActionIfUnableToAuthenticateUser" })
    }
}
