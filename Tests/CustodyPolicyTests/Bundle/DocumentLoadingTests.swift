import CustodyPolicy
import Testing

@Suite("Loading Graph documents")
struct DocumentLoadingTests {
    /// An iOS policy with `members`, assigned to every licensed user unless they say otherwise.
    private func ios(_ members: String) -> String {
        let assignments = members.contains(#""assignments""#) ? "" : #", "assignments": "# + everyone
        return
            ##"{"@odata.type": "#microsoft.graph.iosManagedAppProtection", "displayName": "P"\##(assignments)\##(members.isEmpty ? "" : ", " + members)}"##
    }

    private let everyone =
        ##"[{"target": {"@odata.type": "#microsoft.graph.allLicensedUsersAssignmentTarget"}}]"##

    @Test(
        "missing, null and empty string all mean not configured",
        arguments: [
            "", #""saveAsBlocked": null, "allowedInboundDataTransferSources": null"#,
            #""saveAsBlocked": "", "allowedInboundDataTransferSources": """#,
        ])
    func notConfigured(members: String) throws {
        let bundle = try loadBundle(tenant: nil, documents: [ios(members)])
        let settings = try #require(bundle.protectionPolicies.first?.settings)
        #expect(settings.saveAsBlocked == nil)
        #expect(settings.allowedInboundDataTransferSources == nil)
        #expect(bundle.warnings.isEmpty)
    }

    @Test("unknown properties are notices that point at the property")
    func unknownProperty() throws {
        let text =
            "{\r\n  \"@odata.type\": \"#microsoft.graph.iosManagedAppProtection\",\r\n    \"shinyNewSetting\": true,\r\n  \"assignments\": \(everyone)\r\n}"
        let bundle = try loadBundle(tenant: nil, documents: [text])
        let warning = try #require(bundle.warnings.first)
        #expect(bundle.warnings.count == 1)
        #expect(warning.code == .unknownProperty)
        #expect(warning.severity == .notice)
        #expect(warning.location == DocumentLocation(file: "doc0.json", line: 3, column: 5))
        #expect(warning.path == "$.shinyNewSetting")
        #expect(
            warning.description
                == "doc0.json:3:5: notice: unknown property 'shinyNewSetting' of iosManagedAppProtection is ignored (newer than Custody's list of Graph beta properties, or misspelt) (at $.shinyNewSetting)"
        )
    }

    @Test("a property of another platform is unknown on this one")
    func otherPlatformProperty() throws {
        let bundle = try loadBundle(tenant: nil, documents: [ios(#""encryptAppData": false"#)])
        #expect(bundle.warnings.map(\.code) == [.unknownProperty])
        #expect(bundle.protectionPolicies.first?.settings.encryptAppData == nil)
    }

    @Test(
        "an unknown enum value counts as the most restrictive, with a warning",
        arguments: [
            (
                #""allowedOutboundDataTransferDestinations": "partnerApps""#,
                PolicySetting.allowedOutboundDataTransferDestinations, "none"
            ),
            (#""allowedInboundDataTransferSources": "someApps""#, .allowedInboundDataTransferSources, "none"),
            (
                #""allowedOutboundClipboardSharingLevel": "friendsOnly""#, .allowedOutboundClipboardSharingLevel,
                "blocked"
            ),
            (#""notificationRestriction": "quiet""#, .notificationRestriction, "block"),
            (#""appDataEncryptionType": "always""#, .appDataEncryptionType, "whenDeviceLocked"),
            (#""screenCaptureConfigurationState": "partial""#, .screenCaptureConfigurationState, "blocked"),
        ])
    func unknownEnumValue(member: String, setting: PolicySetting, expected: String) throws {
        let bundle = try loadBundle(tenant: nil, documents: [ios(member)])
        let policy = try #require(PolicySnapshot(bundle: bundle).distinctEffectivePolicies.first ?? effective(bundle))
        #expect(policy.setting(setting).value == .string(expected))
        #expect(policy.setting(setting).resolution == .configured)
        #expect(bundle.warnings.map(\.code) == [.unknownEnumValue])
        #expect(bundle.warnings.first?.message.contains("using the most restrictive, '\(expected)'") == true)
    }

    /// The effective policy of a bundle's only policy, for an account it reaches.
    private func effective(_ bundle: PolicyBundle) -> EffectivePolicy? {
        var bundle = bundle
        bundle.tenant = Tenant(accounts: [TenantAccount(id: id("a@contoso.com"), groups: [])])
        return PolicySnapshot(bundle: bundle).effectivePolicy(for: id("a@contoso.com"))
    }

    @Test("enum values match case-insensitively, as Graph accepts them")
    func enumCase() throws {
        let bundle = try loadBundle(
            tenant: nil, documents: [ios(#""allowedOutboundDataTransferDestinations": "ManagedApps""#)])
        #expect(bundle.protectionPolicies.first?.settings.allowedOutboundDataTransferDestinations == .managedApps)
        #expect(bundle.warnings.isEmpty)
    }

    @Test("unknown values in a location list allow nothing, with a warning; comma-joined strings split")
    func locationLists() throws {
        let bundle = try loadBundle(
            tenant: nil,
            documents: [
                ios(
                    #""allowedDataStorageLocations": ["sharePoint", "myNas"], "allowedDataIngestionLocations": "camera, oneDriveForBusiness""#
                )
            ])
        let settings = try #require(bundle.protectionPolicies.first?.settings)
        #expect(settings.allowedDataStorageLocations == [.sharePoint])
        #expect(settings.allowedDataIngestionLocations == [.camera, .oneDriveForBusiness])
        #expect(bundle.warnings.map(\.code) == [.unknownEnumValue])
        #expect(bundle.warnings.first?.message.contains("'myNas'") == true)
    }

    struct Broken: CustomTestStringConvertible, Sendable {
        let members: String
        let path: String
        let message: String
        var testDescription: String { members }
    }

    @Test(
        "values of the wrong type are errors naming the path and the problem",
        arguments: [
            Broken(
                members: #""saveAsBlocked": "yes""#, path: "$.saveAsBlocked",
                message: "expected true or false, found a string"),
            Broken(
                members: #""printBlocked": 1"#, path: "$.printBlocked",
                message: "expected true or false, found a number"),
            Broken(
                members: #""allowedOutboundClipboardSharingExceptionLength": 2.5"#,
                path: "$.allowedOutboundClipboardSharingExceptionLength", message: "expected a whole number, found 2.5"),
            Broken(
                members: #""allowedOutboundClipboardSharingExceptionLength": -1"#,
                path: "$.allowedOutboundClipboardSharingExceptionLength", message: "out of range"),
            // Graph: "Valid values 0 to 65535".
            Broken(
                members: #""allowedOutboundClipboardSharingExceptionLength": 65536"#,
                path: "$.allowedOutboundClipboardSharingExceptionLength", message: "out of range 0...65535"),
            Broken(
                members: #""allowedInboundDataTransferSources": true"#, path: "$.allowedInboundDataTransferSources",
                message: "expected a string, found true"),
            Broken(
                members: #""allowedDataStorageLocations": {}"#, path: "$.allowedDataStorageLocations",
                message: "expected an array, found an object"),
            Broken(
                members: #""allowedDataStorageLocations": [1]"#, path: "$.allowedDataStorageLocations[0]",
                message: "expected a string, found a number"),
            Broken(
                members: #""periodOfflineBeforeAccessCheck": "12 hours""#, path: "$.periodOfflineBeforeAccessCheck",
                message: "not a valid duration"),
            Broken(
                members: #""periodOfflineBeforeWipeIsEnforced": "-P1D""#, path: "$.periodOfflineBeforeWipeIsEnforced",
                message: "negative"),
            Broken(
                members: #""exemptedAppProtocols": [{"value": "tel"}]"#, path: "$.exemptedAppProtocols[0]",
                message: "needs a non-empty \"name\""),
            Broken(
                members: #""exemptedAppProtocols": ["tel"]"#, path: "$.exemptedAppProtocols[0]",
                message: "expected a {\"name\", \"value\"} object"),
            Broken(members: #""apps": [{"version": "1"}]"#, path: "$.apps[0]", message: "needs an \"id\""),
            Broken(
                members: #""assignments": [{"id": "x"}]"#, path: "$.assignments[0]", message: "with a \"target\" object"
            ),
            Broken(
                members: ##""assignments": [{"target": {"@odata.type": "#microsoft.graph.groupAssignmentTarget"}}]"##,
                path: "$.assignments[0].target", message: "needs a \"groupId\""),
            Broken(
                members: #""saveAsBlocked": true, "saveAsBlocked": false"#, path: "$", message: "appears more than once"
            ),
            Broken(members: #""id": 7"#, path: "$.id", message: "expected a string, found a number"),
        ])
    func wrongTypes(broken: Broken) {
        let diagnostics = loadFailure(tenant: nil, documents: [ios(broken.members)])
        let errors = diagnostics.filter { $0.severity == .error }
        #expect(errors.count == 1, "\(diagnostics)")
        #expect(errors.first?.path == broken.path)
        #expect(errors.first?.message.contains(broken.message) == true, "\(errors)")
        #expect(errors.first?.location.line == 1)
    }

    /// Each policy gets one notice naming the settings it configures that Custody does not
    /// enforce; neutral values (false, 0, empty, not configured, any app) are not named, nor are
    /// a PIN's details without the PIN.
    @Test(
        "settings Custody does not enforce get one notice per policy",
        arguments: [
            (
                #""pinRequired": true, "minimumPinLength": 6, "pinCharacterSet": "alphanumericAndSymbol""#,
                "pinRequired (true), minimumPinLength (6), pinCharacterSet (alphanumericAndSymbol): the app's own PIN and biometric prompt (Custody decides the PIN retry limit)"
                    as String?
            ),
            (#""pinRequired": false, "minimumPinLength": 6, "faceIdBlocked": true"#, nil),
            (
                #""thirdPartyKeyboardsBlocked": true, "minimumRequiredOsVersion": "17.0", "connectToVpnOnLaunch": false, "organizationalCredentialsRequired": true"#,
                "organizationalCredentialsRequired (true): sign-in prompts are Entra ID's and the SDK's"
            ),
            (
                #""managedBrowserToOpenLinksRequired": false, "managedBrowser": "notConfigured", "dialerRestrictionLevel": "allApps""#,
                nil
            ),
            (#""periodBeforePinReset": "PT0S", "minimumWipeOsVersion": null, "allowedIosDeviceModels": """#, nil),
            (
                #""deviceComplianceRequired": true, "appActionIfDeviceComplianceRequired": "wipe", "periodOnlineBeforeAccessCheck": "PT30M""#,
                "periodOnlineBeforeAccessCheck (PT30M): how often the app re-checks online is the SDK's schedule"
            ),
            (#""appActionIfDeviceComplianceRequired": "wipe""#, nil),
            (
                #""saveAsBlocked": true, "printBlocked": true, "contactSyncBlocked": true, "filterOpenInToOnlyManagedApps": true"#,
                nil
            ),
        ] as [(String, String?)])
    func notEnforced(members: String, listed: String?) throws {
        let bundle = try loadBundle(
            tenant: nil, documents: [ios(#""allowedOutboundDataTransferDestinations": "managedApps", "# + members)])
        let notices = bundle.warnings.filter { $0.code == .notEnforced }
        #expect(notices.count == (listed == nil ? 0 : 1))
        if let listed, let notice = notices.first {
            #expect(notice.severity == .notice)
            #expect(
                notice.message.hasSuffix("they are left to the apps and the Intune SDK): " + listed),
                "\(notice.message)")
            #expect(notice.description.hasPrefix("doc0.json:1:1: notice: Custody does not enforce"))
        }
    }

    /// Microsoft documents some settings as not in effect under a transfer level; a policy that
    /// configures them anyway gets told (on the iOS and default kinds, where it applies).
    @Test(
        "a setting the transfer level puts out of effect is reported",
        arguments: [
            (
                "iosManagedAppProtection",
                #""allowedOutboundDataTransferDestinations": "allApps", "saveAsBlocked": true"#,
                Diagnostic.Severity.warning as Diagnostic.Severity?, "saveAsBlocked"
            ),
            (
                "androidManagedAppProtection",
                #""allowedOutboundDataTransferDestinations": "allApps", "saveAsBlocked": true"#, nil, ""
            ),
            ("iosManagedAppProtection", #""saveAsBlocked": true"#, .warning, "saveAsBlocked"),
            (
                "iosManagedAppProtection",
                #""allowedOutboundDataTransferDestinations": "managedApps", "saveAsBlocked": true"#, nil, ""
            ),
            (
                "defaultManagedAppProtection",
                #""allowedInboundDataTransferSources": "allApps", "blockDataIngestionIntoOrganizationDocuments": true"#,
                .warning, "blockDataIngestionIntoOrganizationDocuments"
            ),
            (
                "iosManagedAppProtection",
                #""allowedInboundDataTransferSources": "managedApps", "blockDataIngestionIntoOrganizationDocuments": true"#,
                nil, ""
            ),
            (
                "iosManagedAppProtection",
                #""allowedOutboundDataTransferDestinations": "none", "exemptedAppProtocols": [{"name": "Skype", "value": "skype;"}]"#,
                .notice, "allowedOutboundDataTransferDestinations"
            ),
            (
                "androidManagedAppProtection",
                #""allowedOutboundDataTransferDestinations": "none", "exemptedAppPackages": [{"name": "Maps", "value": "com.google.maps"}]"#,
                .notice, "allowedOutboundDataTransferDestinations"
            ),
            (
                "iosManagedAppProtection",
                #""allowedOutboundDataTransferDestinations": "managedApps", "exemptedAppProtocols": [{"name": "Skype", "value": "skype;"}]"#,
                nil, ""
            ),
        ] as [(String, String, Diagnostic.Severity?, String)])
    func notInEffect(type: String, members: String, severity: Diagnostic.Severity?, setting: String) throws {
        let document = ##"{"@odata.type": "#microsoft.graph.\##(type)", "displayName": "P", \##(members)}"##
        let bundle = try loadBundle(tenant: nil, documents: [document])
        let reported = bundle.warnings.filter { $0.code == .notInEffect }
        #expect(reported.map(\.severity) == (severity.map { [$0] } ?? []))
        if let first = reported.first { #expect(first.path == "$." + setting) }
    }

    /// A scenario matrix, an app spec or any JSON that is not a policy, in a bundle directory,
    /// is left aside with a notice; an object with Graph properties but no type is still an error.
    @Test(
        "a file that is not a Graph document is ignored with a notice",
        arguments: [
            (#"{"description": "matrix", "bundle": ".", "cases": []}"#, true),
            (#"{"bundleId": "com.contoso.app", "settings": []}"#, true),
            (#"{}"#, true),
            (#"{"displayName": "P", "saveAsBlocked": true}"#, false),
            (#"{"pinRequired": true}"#, false),
        ])
    func ignoredFiles(text: String, ignored: Bool) throws {
        if ignored {
            let bundle = try loadBundle(tenant: nil, documents: [text, ios("")])
            #expect(bundle.protectionPolicies.count == 1)
            #expect(bundle.warnings.map(\.code) == [.ignoredFile])
            #expect(bundle.warnings.first?.severity == .notice)
        } else {
            #expect(loadFailure(tenant: nil, documents: [text]).map(\.code) == [.missingType])
        }
    }

    @Test("a document without @odata.type is an error; one of another type is ignored with a warning")
    func documentTypes() throws {
        let missing = loadFailure(tenant: nil, documents: [#"{"displayName": "what am I"}"#])
        #expect(missing.map(\.code) == [.missingType])
        #expect(missing.first?.message.contains("add one such as") == true)

        let other = try loadBundle(
            tenant: nil,
            documents: [
                ##"{"@odata.type": "#microsoft.graph.windowsInformationProtectionPolicy", "displayName": "WIP"}"##
            ])
        #expect(other.protectionPolicies.isEmpty)
        // Microsoft retired Windows Information Protection: the document is kept, listed as
        // not enforced.
        #expect(other.warnings.map(\.code) == [.notEnforced])
        #expect(other.warnings.first?.message.contains("'WIP'") == true)
        let future = try loadBundle(
            tenant: nil, documents: [##"{"@odata.type": "#microsoft.graph.visionOSManagedAppProtection"}"##])
        #expect(future.protectionPolicies.isEmpty)
        #expect(future.warnings.map(\.code) == [.unsupportedType])

        let shortForm = try loadBundle(
            tenant: nil, documents: [#"{"@odata.type": "microsoft.graph.AndroidManagedAppProtection"}"#])
        #expect(shortForm.protectionPolicies.first?.kind == .androidManagedAppProtection)
    }

    @Test("files may hold one object, a {\"value\": [...]} collection or an array")
    func fileShapes() throws {
        let object = ios("")
        let bundle = try loadBundle(
            tenant: nil, documents: [object, #"{"value": [\#(object), \#(object)]}"#, "[\(object)]"])
        #expect(bundle.protectionPolicies.count == 4)
        #expect(bundle.protectionPolicies.map(\.reference.index) == [0, 1, 2, 3])
        #expect(
            bundle.protectionPolicies.map(\.reference.location.file) == [
                "doc0.json", "doc1.json", "doc1.json", "doc2.json",
            ])

        let paged = try loadBundle(
            tenant: nil, documents: [#"{"value": [], "@odata.nextLink": "https://graph.microsoft.com/beta/next"}"#])
        #expect(paged.warnings.first?.message.contains("paged") == true)

        #expect(loadFailure(tenant: nil, documents: ["42"]).first?.message.contains("a policy file must hold") == true)
        #expect(
            loadFailure(tenant: nil, documents: [#"{"value": {}}"#]).first?.message.contains(
                "\"value\" must be an array") == true)
    }

    @Test("two policies with one id are both applied, with a warning")
    func duplicateIDs() throws {
        let policy = ios(#""id": "T_1""#)
        let bundle = try loadBundle(tenant: nil, documents: [policy, policy])
        #expect(bundle.protectionPolicies.count == 2)
        #expect(bundle.warnings.map(\.code) == [.duplicatePolicy])
    }

    @Test("assignments: groups, exclusions, all licensed users, filters and unknown targets")
    func assignments() throws {
        let document = ios(
            ##"""
            "assignments": [
              {"target": {"@odata.type": "#microsoft.graph.groupAssignmentTarget", "groupId": "g1"}},
              {"target": {"@odata.type": "#microsoft.graph.groupAssignmentTarget", "groupId": "g2", "deviceAndAppManagementAssignmentFilterId": "f", "deviceAndAppManagementAssignmentFilterType": "include"}},
              {"target": {"@odata.type": "#microsoft.graph.exclusionGroupAssignmentTarget", "groupId": "x1"}},
              {"target": {"@odata.type": "#microsoft.graph.exclusionGroupAssignmentTarget", "groupId": "x2", "deviceAndAppManagementAssignmentFilterId": "f2", "deviceAndAppManagementAssignmentFilterType": "exclude"}},
              {"target": {"@odata.type": "#microsoft.graph.groupAssignmentTarget", "groupId": "g3", "deviceAndAppManagementAssignmentFilterId": "f", "deviceAndAppManagementAssignmentFilterType": "none"}},
              {"target": {"@odata.type": "#microsoft.graph.allLicensedUsersAssignmentTarget"}},
              {"target": {"@odata.type": "#microsoft.graph.allDevicesAssignmentTarget"}}
            ]
            """##)
        let bundle = try loadBundle(tenant: nil, documents: [document])
        let targeting = try #require(bundle.protectionPolicies.first?.targeting)
        #expect(
            targeting.included == [
                .group("g1"), .group("g3"), .allLicensedUsers,
                .unsupported("#microsoft.graph.allDevicesAssignmentTarget"),
            ])
        #expect(targeting.filteredInclusions == [.init(target: .group("g2"), filterID: "f", mode: .include)])
        #expect(targeting.excludedGroups == ["x1"])
        #expect(targeting.filteredExclusions == [.init(target: .group("x2"), filterID: "f2", mode: .exclude)])
        // The unknown target, and the two filters the bundle does not hold.
        #expect(bundle.warnings.map(\.code) == [.targeting, .targeting])
    }

    @Test(
        "a filtered assignment must name its filter, and its filter type must be none, include or exclude",
        arguments: [
            #""deviceAndAppManagementAssignmentFilterType": "include""#,
            #""deviceAndAppManagementAssignmentFilterType": "exclude", "deviceAndAppManagementAssignmentFilterId": """#,
            #""deviceAndAppManagementAssignmentFilterType": "sometimes", "deviceAndAppManagementAssignmentFilterId": "f""#,
        ])
    func badFilterReference(members: String) {
        let document = ios(
            ##""assignments": [{"target": {"@odata.type": "#microsoft.graph.groupAssignmentTarget", "groupId": "g", \##(members)}}]"##
        )
        let diagnostics = loadFailure(tenant: nil, documents: [document])
        #expect(diagnostics.contains { $0.severity == .error && $0.path?.hasPrefix("$.assignments[0].target") == true })
    }

    @Test("a selectedPublicApps policy exported without its apps is applied to every app, with a warning")
    func selectedAppsWithoutList() throws {
        let bundle = try loadBundle(tenant: nil, documents: [ios(#""appGroupType": "selectedPublicApps""#)])
        #expect(bundle.warnings.map(\.code) == [.targeting])
        #expect(bundle.protectionPolicies.first?.targeting.apps == nil)
    }

    @Test("syntax and encoding errors name the file, line and column")
    func syntaxErrors() {
        let diagnostics = loadFailure(tenant: nil, documents: ["{\n  \"a\": 1,\n}"])
        #expect(diagnostics.map(\.description) == ["doc0.json:3:1: error: trailing comma before '}'"])
        let utf16 = PolicyBundle.File(name: "odd.json", bytes: [0xFF, 0xFE, 0x7B])
        #expect(throws: BundleError.self) { try PolicyBundle.load(tenant: nil, documents: [utf16]) }
    }

    @Test("every broken file is reported, not just the first")
    func allErrors() {
        let diagnostics = loadFailure(tenant: "{", documents: ["[", ios(#""saveAsBlocked": 3"#)])
        #expect(
            diagnostics.filter { $0.severity == .error }.map(\.location.file) == [
                "tenant.json", "doc0.json", "doc1.json",
            ])
    }
}
