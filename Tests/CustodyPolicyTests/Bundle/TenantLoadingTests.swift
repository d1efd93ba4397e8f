import CustodyPolicy
import CustodyTestSupport
import Foundation
import Testing

@Suite("Loading tenant.json and bundle directories")
struct TenantLoadingTests {
    @Test("reads accounts, allowed accounts and managed apps")
    func reads() throws {
        let bundle = try loadBundle(
            tenant: #"""
                {"$schema": "ignored", "accounts": [
                   {"oid": "0a000000-0000-4000-8000-000000000001", "upn": "a@contoso.com", "groups": ["g1", "g2"]},
                   {"upn": "b@contoso.com"},
                   {"oid": "0a000000-0000-4000-8000-000000000003"}],
                 "allowedAccounts": ["a@contoso.com"], "managedApps": ["com.contoso.app"]}
                """#, documents: [])
        #expect(
            bundle.tenant.accounts.map(\.id.description) == [
                "a@contoso.com", "b@contoso.com", "0a000000-0000-4000-8000-000000000003",
            ])
        #expect(bundle.tenant.accounts[0].groups == ["g1", "g2"])
        #expect(bundle.tenant.accounts[1].groups == [])
        #expect(bundle.tenant.allowedAccounts == ["a@contoso.com"])
        #expect(bundle.tenant.managedApps == ["com.contoso.app"])
        #expect(bundle.warnings.isEmpty)
    }

    @Test("a null allowedAccounts list allows everyone; a missing one too")
    func allowedAccountsNull() throws {
        #expect(
            try loadBundle(tenant: #"{"accounts": [], "allowedAccounts": null}"#, documents: []).tenant.allowedAccounts
                == nil)
        #expect(try loadBundle(tenant: #"{"accounts": []}"#, documents: []).tenant.allowedAccounts == nil)
        #expect(try loadBundle(tenant: #"{"allowedAccounts": []}"#, documents: []).tenant.allowedAccounts == [])
    }

    @Test(
        "inconsistent identities are errors",
        arguments: [
            (#"{"accounts": [{"groups": []}]}"#, "needs an \"oid\" or a \"upn\""),
            (#"{"accounts": [{"upn": "a@contoso.com"}, {"upn": "A@Contoso.com"}]}"#, "is also the UPN of accounts[0]"),
            (
                #"{"accounts": [{"oid": "x", "upn": "a@c.com"}, {"oid": "X", "upn": "b@c.com"}]}"#,
                "is also the OID of accounts[0]"
            ),
            (#"{"accounts": [{"upn": "a@c.com", "groups": "g1"}]}"#, "expected an array"),
            (#"{"accounts": {}}"#, "\"accounts\" must be an array"),
            (#"{"allowedAccounts": "a@c.com"}"#, "expected an array"),
            (#"[]"#, "tenant.json must hold an object"),
            (#"{"accounts": [{"upn": "a@c.com", "upn": "b@c.com"}]}"#, "'upn' appears more than once"),
        ])
    func inconsistent(tenant: String, message: String) {
        let errors = loadFailure(tenant: tenant, documents: []).filter { $0.severity == .error }
        #expect(errors.count == 1)
        #expect(errors.first?.message.contains(message) == true, "\(errors)")
        #expect(errors.first?.location.file == "tenant.json")
    }

    @Test("unknown tenant properties are warnings")
    func unknownProperties() throws {
        let bundle = try loadBundle(
            tenant: #"{"accounts": [{"upn": "a@c.com", "mail": "a@c.com"}], "domains": []}"#, documents: [])
        #expect(bundle.warnings.map(\.code) == [.unknownProperty, .unknownProperty])
    }

    @Test(
        "an account's displayName is kept for people to find it by; one too long or with a control character is dropped with a warning",
        arguments: [
            (#""Alice Martin""#, "Alice Martin", false),
            (#""Zoë 山田 <b>""#, "Zoë 山田 <b>", false),
            (#""a\u0007b""#, nil, true),
            ("\"" + String(repeating: "x", count: 257) + "\"", nil, true),
        ] as [(String, String?, Bool)])
    func displayName(json: String, kept: String?, warns: Bool) throws {
        let bundle = try loadBundle(
            tenant: #"{"accounts": [{"upn": "a@c.com", "displayName": "# + json + "}]}", documents: [])
        #expect(bundle.tenant.accounts.first?.displayName == kept)
        #expect(bundle.warnings.contains { $0.message.contains("displayName") } == warns, "\(bundle.warnings)")
    }

    @Test("a directory loads tenant.json and its other JSON files in name order, skipping the rest")
    func directory() throws {
        let temporary = try TemporaryDirectory()
        let directory = temporary.path
        try write(#"{"accounts": [{"upn": "a@c.com"}]}"#, to: "\(directory)/tenant.json")
        let everyone = ##"[{"target": {"@odata.type": "#microsoft.graph.allLicensedUsersAssignmentTarget"}}]"##
        try write(
            ##"{"@odata.type": "#microsoft.graph.iosManagedAppProtection", "displayName": "B", "assignments": \##(everyone)}"##,
            to: "\(directory)/b.json")
        try write(
            ##"{"@odata.type": "#microsoft.graph.iosManagedAppProtection", "displayName": "A", "assignments": \##(everyone)}"##,
            to: "\(directory)/a.JSON")
        try write("not json", to: "\(directory)/README.md")
        try write("{", to: "\(directory)/.hidden.json")
        try FileManager.default.createDirectory(atPath: "\(directory)/matrices", withIntermediateDirectories: true)
        try write("{", to: "\(directory)/matrices/broken.json")
        let bundle = try PolicyBundle.load(path: directory)
        #expect(bundle.protectionPolicies.map(\.reference.name) == ["A", "B"])
        #expect(bundle.tenant.accounts.count == 1)
        #expect(bundle.warnings.isEmpty)
    }

    @Test("a directory without tenant.json loads with a warning; a missing path is an error")
    func missingThings() throws {
        let temporary = try TemporaryDirectory()
        let directory = temporary.path
        try write(
            ##"{"@odata.type": "#microsoft.graph.iosManagedAppProtection", "id": "T_1", "displayName": "P"}"##,
            to: "\(directory)/policy.json")
        let bundle = try BundleFiles.read(directory: directory).load(allowingEmpty: true)
        // DESIGN: a policy whose assignments property is absent applies to every account, "with
        // a warning".
        #expect(bundle.warnings.map(\.code) == [.noTenant, .assignmentsMissing])
        #expect(bundle.warnings.last?.path == "$")
        let error = try #require(throws: BundleError.self) { try PolicyBundle.load(path: "\(directory)/nope") }
        #expect(error.errors.map(\.code) == [.unreadable])
        #expect(error.description == "\(directory)/nope:1:1: error: no such file or directory")
    }

    /// A bundle that knows nothing: what it holds, and whether it is refused.
    static let knowingNothing: [(label: String, files: [String: String], refused: Bool)] = [
        ("no files at all", [:], true),
        (
            "an app configuration alone",
            [
                "config.json":
                    ##"{"@odata.type": "#microsoft.graph.targetedManagedAppConfiguration", "id": "c", "displayName": "C", "customSettings": []}"##
            ], true
        ),
        ("a file that is not a policy", ["notes.json": #"{"hello": "world"}"#], true),
        ("an empty tenant alone", ["tenant.json": #"{"accounts": []}"#], true),
        ("a tenant with accounts and no policy", ["tenant.json": #"{"accounts": [{"upn": "a@contoso.com"}]}"#], true),
        (
            "a protection policy alone",
            [
                "policy.json":
                    ##"{"@odata.type": "#microsoft.graph.iosManagedAppProtection", "id": "T_1", "displayName": "P"}"##
            ], true
        ),
        (
            "a tenant and a draft that reaches no one",
            [
                "tenant.json": #"{"accounts": [{"upn": "a@contoso.com", "groups": ["g"]}]}"#,
                "policy.json":
                    ##"{"@odata.type": "#microsoft.graph.iosManagedAppProtection", "id": "T_1", "assignments": []}"##,
            ], true
        ),
        (
            "a tenant whose only account is unlicensed",
            [
                "tenant.json": #"{"accounts": [{"upn": "a@contoso.com", "groups": ["g"], "licensed": false}]}"#,
                "policy.json":
                    ##"{"@odata.type": "#microsoft.graph.iosManagedAppProtection", "id": "T_1", "assignments": [{"target": {"@odata.type": "#microsoft.graph.groupAssignmentTarget", "groupId": "g"}}]}"##,
            ], true
        ),
        (
            "a tenant and a policy that reaches an account",
            [
                "tenant.json": #"{"accounts": [{"upn": "a@contoso.com", "groups": ["g"]}]}"#,
                "policy.json":
                    ##"{"@odata.type": "#microsoft.graph.iosManagedAppProtection", "id": "T_1", "assignments": [{"target": {"@odata.type": "#microsoft.graph.groupAssignmentTarget", "groupId": "g"}}]}"##,
            ], false
        ),
        (
            "a tenant and a default policy",
            [
                "tenant.json": #"{"accounts": [{"upn": "a@contoso.com"}]}"#,
                "default.json": ##"{"@odata.type": "#microsoft.graph.defaultManagedAppProtection", "id": "D"}"##,
            ], false
        ),
    ]

    /// Issue 47: a bundle under which no account is reached by a protection policy would allow
    /// every decision; it goes in force only on purpose.
    @Test(
        "a bundle that manages no account is refused as empty-bundle, unless allowed on purpose",
        arguments: knowingNothing)
    func knowsNothing(label: String, files: [String: String], refused: Bool) throws {
        let temporary = try TemporaryDirectory()
        for (name, text) in files { try write(text, to: "\(temporary.path)/\(name)") }
        let bundle = try BundleFiles.read(directory: temporary.path)
        if refused {
            let error = try #require(throws: BundleError.self) { try bundle.load() }
            #expect(error.errors.map(\.code) == [.emptyBundle], "\(label)")
            #expect(error.description.contains("the bundle manages no account"))
            #expect(error.description.contains("--allow-empty"))
            #expect(!(try bundle.load(allowingEmpty: true).managesSomeAccount))
        } else {
            _ = try bundle.load()
        }
    }

    @Test(
        "a tenant file named in another case is an error, never a policy document",
        arguments: ["Tenant.json", "TENANT.JSON"])
    func misnamedTenant(name: String) throws {
        let temporary = try TemporaryDirectory()
        try write(#"{"accounts": [{"upn": "a@contoso.com"}]}"#, to: "\(temporary.path)/\(name)")
        try write(
            ##"{"@odata.type": "#microsoft.graph.defaultManagedAppProtection", "id": "D"}"##,
            to: "\(temporary.path)/default.json")
        let files = try BundleFiles.read(directory: temporary.path)
        for allowing in [false, true] {
            let error = try #require(throws: BundleError.self) { try files.load(allowingEmpty: allowing) }
            #expect(error.errors.map(\.code) == [.tenant])
            #expect(error.description.contains("'\(name)' is not tenant.json"))
        }
    }

    @Test(
        "an account's licensed and accountEnabled are true, false or null; anything else is a located error",
        arguments: [
            ("licensed", "true", true as Bool?, nil as String?), ("licensed", "false", false, nil),
            ("licensed", "null", nil, nil), ("licensed", #""no""#, nil, "licensed must be true, false or null"),
            ("accountEnabled", "false", false, nil), ("accountEnabled", "true", true, nil),
            ("accountEnabled", "null", nil, nil),
            ("accountEnabled", "0", nil, "accountEnabled must be true, false or null"),
        ])
    func accountFlags(key: String, json: String, value: Bool?, error: String?) throws {
        let text = #"{"accounts": [{"upn": "a@contoso.com", "\#(key)": \#(json)}]}"#
        if let error {
            let diagnostics = loadFailure(tenant: text, documents: [])
            #expect(
                diagnostics.contains { $0.message.contains(error) && $0.path == "$.accounts[0].\(key)" },
                "\(diagnostics)")
        } else {
            let account = try #require(try loadBundle(tenant: text, documents: []).tenant.accounts.first)
            #expect((key == "licensed" ? account.licensed : account.enabled) == value)
        }
    }

    @Test("a lone tenant.json validates as a tenant")
    func loneTenant() throws {
        let temporary = try TemporaryDirectory()
        let directory = temporary.path
        try write(#"{"accounts": [{"upn": "a@c.com"}, {"upn": "A@c.com"}]}"#, to: "\(directory)/tenant.json")
        let error = try #require(throws: BundleError.self) { try PolicyBundle.load(path: "\(directory)/tenant.json") }
        #expect(error.errors.first?.code == .tenant)
    }
}

func write(_ text: String, to path: String) throws {
    try Data(text.utf8).write(to: URL(fileURLWithPath: path))
}
