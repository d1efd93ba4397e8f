import CustodyPolicy
import CustodyTestSupport
import Foundation
import Testing

/// A tenant and configuration policies of our own, covering every query and conflict rule.
enum ConfigurationWorld {
    static let inGroupOne = id("one@contoso.com")
    static let inGroupTwo = id("two@contoso.com")
    static let inNoGroup = id("none@contoso.com")
    static let excluded = id("excluded@contoso.com")
    static let outsider = id("outsider@fabrikam.com")

    static let tenant = #"""
        {"accounts": [
          {"upn": "one@contoso.com", "oid": "c0000000-0000-4000-8000-000000000001", "groups": ["g1"]},
          {"upn": "two@contoso.com", "oid": "c0000000-0000-4000-8000-000000000002", "groups": ["g2"]},
          {"upn": "none@contoso.com", "oid": "c0000000-0000-4000-8000-000000000003", "groups": []},
          {"upn": "excluded@contoso.com", "oid": "c0000000-0000-4000-8000-000000000004", "groups": ["g1", "gx"]}
        ]}
        """#

    /// Every account is managed by one untargeted protection policy.
    static let protection =
        ##"{"value": [{"@odata.type": "#microsoft.graph.iosManagedAppProtection", "id": "T_1", "displayName": "Protect everyone"}]}"##

    static func configuration(
        id: String, groups: [String] = [], excluding: [String] = [], _ settings: [(String, String)]
    ) -> String {
        let pairs = settings.map { #"{"name": "\#($0.0)", "value": "\#($0.1)"}"# }.joined(separator: ", ")
        let targets =
            groups.map {
                ##"{"target": {"@odata.type": "#microsoft.graph.groupAssignmentTarget", "groupId": "\##($0)"}}"##
            }
            + excluding.map {
                ##"{"target": {"@odata.type": "#microsoft.graph.exclusionGroupAssignmentTarget", "groupId": "\##($0)"}}"##
            }
        let assignments = targets.isEmpty ? "" : #", "assignments": [\#(targets.joined(separator: ", "))]"#
        return
            ##"{"@odata.type": "#microsoft.graph.targetedManagedAppConfiguration", "id": "\##(id)", "displayName": "\##(id)", "customSettings": [\##(pairs)]\##(assignments)}"##
    }

    /// Listed out of id order on purpose: `.any` follows ids, not the file.
    static let documents = [
        protection,
        #"{"value": ["#
            + [
                configuration(
                    id: "A_2", groups: ["g1"], excluding: ["gx"],
                    [
                        ("color", "blue"), ("size", "20"), ("ratio", "0.5"), ("flag", "FALSE"), ("name", "alpha"),
                        ("junk", "notanumber"),
                        ("same", "x"), ("spaced", " true"), ("numeric", "1"), ("yes", "yes"),
                    ]),
                configuration(
                    id: "A_1", groups: ["g1"], excluding: ["gx"],
                    [
                        ("color", "red"), ("size", "10"), ("ratio", "1.5"), ("flag", "true"), ("name", "beta"),
                        ("same", "x"),
                    ]),
                configuration(id: "A_3", groups: ["g1"], excluding: ["gx"], [("color", "red")]),
                configuration(
                    id: "A_0", [("__IsDefault", "true"), ("color", "green"), ("only", "default-value"), ("size", "99")]),
                configuration(id: "A_9", [("__IsDefault", "TRUE"), ("only", "other-default")]),
                configuration(id: "A_4", groups: ["g2"], [("color", "violet"), ("size", "-7")]),
            ].joined(separator: ", ") + "]}",
    ]

    static func snapshot() throws -> PolicySnapshot {
        PolicySnapshot(
            bundle: try loadBundle(tenant: tenant, documents: documents), context: EvaluationContext(platform: .ios))
    }
}

/// One query of a table: which method, and what it should answer (as text; nil for none).
struct ConfigurationQuery: Sendable, CustomTestStringConvertible {
    enum Kind: Sendable {
        case string(AppConfiguration.ValueQuery)
        case integer(AppConfiguration.ValueQuery)
        case double(AppConfiguration.ValueQuery)
        case bool(AppConfiguration.BoolQuery)
        case allStrings, allIntegers, allDoubles, allBools, conflict
    }

    let account: AccountID
    let key: String
    let kind: Kind
    let expected: String?

    init(_ account: AccountID, _ key: String, _ kind: Kind, _ expected: String?) {
        self.account = account
        self.key = key
        self.kind = kind
        self.expected = expected
    }

    func answer(_ configuration: AppConfiguration) -> String? {
        switch kind {
        case .string(let query): configuration.string(key, query: query)
        case .integer(let query): configuration.integer(key, query: query).map(String.init)
        case .double(let query): configuration.double(key, query: query).map { String($0) }
        case .bool(let query): configuration.bool(key, query: query).map(String.init)
        case .allStrings: configuration.allStrings(key).joined(separator: ",")
        case .allIntegers: configuration.allIntegers(key).map(String.init).joined(separator: ",")
        case .allDoubles: configuration.allDoubles(key).map { String($0) }.joined(separator: ",")
        case .allBools: configuration.allBools(key).map(String.init).joined(separator: ",")
        case .conflict: String(configuration.hasConflict(key))
        }
    }

    var testDescription: String { "\(account) \(key) \(kind) → \(expected ?? "nil")" }
}

@Suite("App configuration")
struct AppConfigurationTests {
    typealias W = ConfigurationWorld

    static let queries: [ConfigurationQuery] = [
        // .any follows policy ids (A_1 before A_2), not the file; the default (A_0) comes last.
        .init(W.inGroupOne, "color", .string(.any), "red"),
        .init(W.inGroupOne, "color", .string(.min), "blue"),
        .init(W.inGroupOne, "color", .string(.max), "red"),
        .init(W.inGroupOne, "color", .allStrings, "red,blue,red"),
        .init(W.inGroupOne, "color", .conflict, "true"),
        .init(W.inGroupOne, "name", .string(.min), "alpha"),
        .init(W.inGroupOne, "name", .string(.max), "beta"),
        // Identical targeted values are not a conflict.
        .init(W.inGroupOne, "same", .conflict, "false"),
        .init(W.inGroupOne, "same", .allStrings, "x,x"),
        // The default counts only when it is the sole value: targeted sizes hide its 99.
        .init(W.inGroupOne, "size", .allIntegers, "10,20"),
        .init(W.inGroupOne, "size", .integer(.any), "10"),
        .init(W.inGroupOne, "size", .integer(.min), "10"),
        .init(W.inGroupOne, "size", .integer(.max), "20"),
        .init(W.inGroupOne, "only", .string(.any), "default-value"),
        .init(W.inGroupOne, "only", .allStrings, "default-value,other-default"),
        // Two defaults that differ are still no conflict.
        .init(W.inGroupOne, "only", .conflict, "false"),
        .init(W.inGroupOne, "ratio", .double(.any), "1.5"),
        .init(W.inGroupOne, "ratio", .double(.min), "0.5"),
        .init(W.inGroupOne, "ratio", .double(.max), "1.5"),
        .init(W.inGroupOne, "ratio", .allDoubles, "1.5,0.5"),
        .init(W.inGroupOne, "size", .double(.max), "20.0"),
        // Booleans: "true"/"false" in any case, nothing else.
        .init(W.inGroupOne, "flag", .bool(.any), "true"),
        .init(W.inGroupOne, "flag", .bool(.and), "false"),
        .init(W.inGroupOne, "flag", .bool(.or), "true"),
        .init(W.inGroupOne, "flag", .allBools, "true,false"),
        .init(W.inGroupOne, "spaced", .bool(.any), nil),
        .init(W.inGroupOne, "numeric", .bool(.any), nil),
        .init(W.inGroupOne, "yes", .bool(.or), nil),
        .init(W.inGroupOne, "numeric", .integer(.any), "1"),
        // Values of another type are skipped by typed queries, kept by string ones.
        .init(W.inGroupOne, "junk", .integer(.any), nil),
        .init(W.inGroupOne, "junk", .double(.any), nil),
        .init(W.inGroupOne, "junk", .string(.any), "notanumber"),
        .init(W.inGroupOne, "missing", .string(.any), nil),
        .init(W.inGroupOne, "missing", .conflict, "false"),
        .init(W.inGroupOne, "__IsDefault", .string(.any), nil),
        // Group two: its own policy and the defaults.
        .init(W.inGroupTwo, "color", .string(.any), "violet"),
        .init(W.inGroupTwo, "size", .integer(.min), "-7"),
        .init(W.inGroupTwo, "color", .conflict, "false"),
        // No group: the defaults alone.
        .init(W.inNoGroup, "color", .string(.any), "green"),
        .init(W.inNoGroup, "size", .integer(.any), "99"),
        .init(W.inNoGroup, "color", .conflict, "false"),
        // Excluded from the targeted policies: the defaults alone.
        .init(W.excluded, "color", .allStrings, "green"),
    ]

    @Test("every query type and conflict rule", arguments: queries)
    func query(_ query: ConfigurationQuery) throws {
        let snapshot = try W.snapshot()
        let configuration = try #require(snapshot.appConfiguration(for: query.account))
        #expect(query.answer(configuration) == query.expected)
    }

    @Test("fullData has one dictionary per policy: targeted by id, then the defaults with their marker")
    func fullData() throws {
        let snapshot = try W.snapshot()
        let configuration = try #require(snapshot.appConfiguration(for: W.inGroupOne))
        #expect(configuration.sources.map(\.policy.id) == ["A_1", "A_2", "A_3", "A_0", "A_9"])
        #expect(configuration.fullData[2] == ["color": "red"])
        #expect(configuration.fullData[3]["__IsDefault"] == "true")
        #expect(configuration.sources.map(\.isDefault) == [false, false, false, true, true])
        let noGroup = try #require(snapshot.appConfiguration(for: W.inNoGroup))
        #expect(noGroup.sources.map(\.policy.id) == ["A_0", "A_9"])
    }

    @Test("unmanaged and unknown accounts have no configuration; a managed one without policies an empty one")
    func unmanaged() throws {
        let snapshot = try W.snapshot()
        #expect(snapshot.appConfiguration(for: W.outsider) == nil)
        #expect(snapshot.appConfiguration(for: nil) == nil)
        let bundle = try loadBundle(tenant: W.tenant, documents: [W.documents[1]])
        #expect(
            PolicySnapshot(bundle: bundle).appConfiguration(for: W.inGroupOne) == nil, "no protection policy: unmanaged"
        )
        let unconfigured = try loadBundle(tenant: W.tenant, documents: [W.protection])
        #expect(PolicySnapshot(bundle: unconfigured).appConfiguration(for: W.inGroupOne)?.isEmpty == true)
    }

    @Test("the app list of a configuration policy filters by the evaluating app")
    func appFilter() throws {
        let document = ##"""
            {"@odata.type": "#microsoft.graph.targetedManagedAppConfiguration", "id": "A_1", "customSettings": [{"name": "k", "value": "v"}],
             "appGroupType": "selectedPublicApps",
             "apps": [{"mobileAppIdentifier": {"@odata.type": "#microsoft.graph.iosMobileAppIdentifier", "bundleId": "com.contoso.notes"}}]}
            """##
        let bundle = try loadBundle(tenant: W.tenant, documents: [W.protection, document])
        let notes = PolicySnapshot(
            bundle: bundle, context: EvaluationContext(platform: .ios, appID: "com.contoso.notes"))
        let other = PolicySnapshot(
            bundle: bundle, context: EvaluationContext(platform: .ios, appID: "com.contoso.other"))
        #expect(notes.appConfiguration(for: W.inGroupOne)?.string("k") == "v")
        #expect(other.appConfiguration(for: W.inGroupOne)?.string("k") == nil)
    }

    @Test("a configuration larger than 64 KiB is refused where it is; a name listed twice is a warning")
    func limits() throws {
        let big = W.configuration(id: "A_big", [("payload", String(repeating: "x", count: 70_000))])
        let diagnostics = loadFailure(tenant: W.tenant, documents: [big])
        let error = try #require(diagnostics.first { $0.severity == .error })
        #expect(error.code == .configurationTooLarge)
        #expect(error.location.file == "doc0.json" && error.location.line == 1)
        #expect(error.message.contains("65536"))

        let twice = W.configuration(id: "A_twice", [("k", "first"), ("k", "second")])
        let bundle = try loadBundle(tenant: W.tenant, documents: [W.protection, twice])
        #expect(bundle.warnings.contains { $0.code == .duplicateMember && $0.message.contains("'k'") })
        #expect(PolicySnapshot(bundle: bundle).appConfiguration(for: W.inGroupOne)?.allStrings("k") == ["second"])
    }

    @Test("the Graph export's four app configuration policies", .needsSharedCorpora)
    func graphExport() throws {
        let path = TestPaths.graphExample(
            "deploymenttheory-terraform-provider-microsoft365__policy_set_reqs.md__managedAppPolicies_response.excerpt.json"
        )
        let export = try PolicyBundle.File(name: path, bytes: Array(Data(contentsOf: URL(fileURLWithPath: path))))
        let tenant = PolicyBundle.File(
            name: "tenant.json", bytes: Array(#"{"accounts": [{"upn": "adele@contoso.com", "groups": []}]}"#.utf8))
        let bundle = try PolicyBundle.load(tenant: tenant, documents: [export])
        #expect(bundle.appConfigurations.count == 4)
        let configuration = try #require(
            PolicySnapshot(bundle: bundle, context: EvaluationContext(platform: .ios)).appConfiguration(
                for: id("adele@contoso.com")))
        // Sorted by id: Edge (A_909d...), "test" (A_936d...), Outlook (A_cba6...), "tet" (A_d550...).
        #expect(
            configuration.sources.map(\.policy.displayName) == [
                "[MAM] ACP | Microsoft Edge [iOS + Android]", "test", "[MAM] ACP | Microsoft Outlook [iOS + Android]",
                "tet",
            ])
        #expect(configuration.sources.allSatisfy { !$0.isDefault })
        let proxyRedirection = "com.microsoft.intune.mam.managedbrowser.AppProxyRedirection"
        // Set to "false" by both Edge and "test": identical, so no conflict.
        #expect(configuration.allStrings(proxyRedirection) == ["false", "false"])
        #expect(!configuration.hasConflict(proxyRedirection))
        #expect(configuration.bool(proxyRedirection, query: .or) == false)
        #expect(
            configuration.bool("com.microsoft.intune.mam.managedbrowser.AllowTransitionOnBlock", query: .and) == true)
        #expect(configuration.integer("com.microsoft.tunnel.proxy_port") == 9)
        #expect(configuration.integer("com.microsoft.tunnel.proxy_address") == nil)
        #expect(configuration.string("com.microsoft.intune.mam.managedbrowser.homepage") == "https://www.bbc.co.uk/")
        #expect(configuration.bool("com.microsoft.outlook.Mail.FocusedInbox") == false)
        #expect(configuration.keys.count == Set(configuration.fullData.flatMap(\.keys)).count)
    }
}
