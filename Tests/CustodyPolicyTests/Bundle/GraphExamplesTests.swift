import CustodyPolicy
import CustodyTestSupport
import Foundation
import Testing

/// The real exports in `../shared/graph-examples/` (SOURCES.md there says where each comes from;
/// the GPL ones are read in place, never copied into this project).
@Suite("Loading the shared Microsoft Graph exports", .needsSharedCorpora)
struct GraphExamplesTests {
    struct Example: CustomTestStringConvertible, Sendable {
        let file: String
        let protection: Int
        let configurations: Int
        var testDescription: String { file }
    }

    static let loadable: [Example] = [
        Example(
            file: "SkipToTheEndpoint-OpenIntuneBaseline__Android_-_Baseline_-_BYOD_-_App_Protection.json",
            protection: 1, configurations: 0),
        Example(
            file:
                "SkipToTheEndpoint-OpenIntuneBaseline__iOS-BYOD-AppProtectionPolicy_T_a3fc9b57-24eb-4931-b692-07f6ad217d17.UTF16LE.json",
            protection: 1, configurations: 0),
        Example(
            file: "SkipToTheEndpoint-OpenIntuneBaseline__iOS_-_Baseline_-_BYOD_-_App_Protection.json", protection: 1,
            configurations: 0),
        Example(
            file: "deploymenttheory-terraform-provider-microsoft365__ios_managed_app_protection__maximal_response.json",
            protection: 1, configurations: 0),
        Example(
            file:
                "deploymenttheory-terraform-provider-microsoft365__policy_set_reqs.md__managedAppPolicies_response.excerpt.json",
            protection: 4, configurations: 4),
        Example(
            file: "microsoft-Intune-Config-Frameworks__level-1-enterprise-basic-data-protection-Android.json",
            protection: 1, configurations: 0),
        Example(
            file: "microsoft-Intune-Config-Frameworks__level-1-enterprise-basic-data-protection-iOS.json",
            protection: 1, configurations: 0),
        Example(
            file: "microsoft-Intune-Config-Frameworks__level-2-enterprise-enhanced-data-protection-Android.json",
            protection: 1, configurations: 0),
        Example(
            file: "microsoft-Intune-Config-Frameworks__level-2-enterprise-enhanced-data-protection-iOS.json",
            protection: 1, configurations: 0),
        Example(
            file: "microsoft-Intune-Config-Frameworks__level-2-enterprise-enhanced-data-protection-iOS_05-03-2020.json",
            protection: 1, configurations: 0),
        Example(
            file: "microsoft-Intune-Config-Frameworks__level-3-enterprise-high-data-protection-Android.json",
            protection: 1, configurations: 0),
        Example(
            file: "microsoft-Intune-Config-Frameworks__level-3-enterprise-high-data-protection-iOS.json", protection: 1,
            configurations: 0),
    ]

    static let invalid =
        "deploymenttheory-terraform-provider-microsoft365__android_managed_app_protection__maximal_response.INVALID.json"

    @Test("the shared folder holds exactly the files these tests know")
    func inventory() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: TestPaths.graphExamples).filter {
            $0.hasSuffix(".json")
        }
        #expect(Set(names) == Set(Self.loadable.map(\.file) + [Self.invalid]))
    }

    @Test("every export loads, with no unknown properties or enum values", arguments: loadable)
    func loads(example: Example) throws {
        let bundle = try PolicyBundle.load(path: TestPaths.graphExample(example.file))
        #expect(bundle.protectionPolicies.count == example.protection)
        #expect(bundle.appConfigurations.count == example.configurations)
        let unexpected = bundle.warnings.filter {
            $0.code != .targeting && $0.code != .assignmentsMissing && $0.code != .notEnforced
                && $0.code != .placeholder
        }
        #expect(unexpected.isEmpty, "\(unexpected)")
    }

    /// `policy validate` says, per policy, what Custody leaves to the apps: every real export
    /// configures a PIN and device conditions; no evaluated setting is ever named.
    @Test("every export's policies list the settings Custody does not enforce, and only those", arguments: loadable)
    func notEnforced(example: Example) throws {
        let bundle = try PolicyBundle.load(path: TestPaths.graphExample(example.file))
        let notices = bundle.warnings.filter { $0.code == .notEnforced }
        #expect(notices.allSatisfy { $0.severity == .notice })
        #expect(!notices.isEmpty)
        for notice in notices {
            #expect(notice.message.hasPrefix("Custody does not enforce"))
            #expect(notice.message.contains("pinRequired (true)"), "\(notice.message)")
            for setting in PolicySetting.allCases {
                #expect(
                    !notice.message.contains(" \(setting.rawValue) ("), "\(setting) is evaluated: \(notice.message)")
            }
        }
    }

    @Test("the INVALID export is rejected at its stray backtick")
    func invalidIsRejected() throws {
        let path = TestPaths.graphExample(Self.invalid)
        let error = try #require(throws: BundleError.self) { try PolicyBundle.load(path: path) }
        #expect(error.errors.count == 1)
        let diagnostic = try #require(error.errors.first)
        #expect(diagnostic.code == .syntax)
        #expect(diagnostic.location == DocumentLocation(file: path, line: 43, column: 2))
        #expect(diagnostic.description == "\(path):43:2: error: unexpected '`' after the end of the JSON value")
    }

    @Test("the folder as a bundle reports exactly the INVALID file as an error")
    func folderAsBundle() throws {
        let error = try #require(throws: BundleError.self) { try PolicyBundle.load(path: TestPaths.graphExamples) }
        #expect(error.errors.map(\.location.file) == [TestPaths.graphExample(Self.invalid)])
        #expect(error.diagnostics.contains { $0.code == .noTenant && $0.severity == .warning })
    }

    @Test("a UTF-16LE export with a byte-order mark and CRLF reads like UTF-8")
    func utf16() throws {
        let bundle = try PolicyBundle.load(path: TestPaths.graphExample(Self.loadable[1].file))
        let policy = try #require(bundle.protectionPolicies.first)
        #expect(policy.reference.displayName == "iOS-BYOD-AppProtectionPolicy")
        #expect(policy.reference.id == "T_a3fc9b57-24eb-4931-b692-07f6ad217d17")
        #expect(policy.reference.location.line == 1)
        #expect(policy.settings.saveAsBlocked == true)
        #expect(policy.settings.allowedDataStorageLocations == [.oneDriveForBusiness, .sharePoint])
        #expect(policy.settings.allowedOutboundDataTransferDestinations == .managedApps)
        #expect(policy.settings.appDataEncryptionType == .whenDeviceLocked)
        #expect(policy.targeting.apps?.count == 38)
        #expect(policy.targeting.appGroupType == .allMicrosoftApps)
        #expect(policy.targeting.managementLevels == [.unmanaged])
        #expect(policy.settings.exemptedAppProtocols?.contains("itms-apps") == true)
    }

    @Test("a full IntuneManagement export ignores OData annotations and action keys")
    func fullExport() throws {
        let bundle = try PolicyBundle.load(path: TestPaths.graphExample(Self.loadable[2].file))
        #expect(bundle.warnings.allSatisfy { $0.severity == .notice })
        let policy = try #require(bundle.protectionPolicies.first)
        #expect(policy.kind == .iosManagedAppProtection)
        #expect(policy.reference.name == "iOS - Baseline - BYOD - App Protection")
        #expect(policy.targeting.apps?.count == 37)
        #expect(
            policy.targeting.apps?.first
                == ManagedAppIdentifier(
                    id: "com.microsoft.bing.halseyassistant.ios", appID: "com.microsoft.bing.halseyassistant"))
        #expect(policy.targeting.assignmentsListed && !policy.targeting.hasInclusions)
        #expect(policy.settings.periodOfflineBeforeAccessCheck == PolicyDuration(seconds: 43_200))
        #expect(policy.settings.allowedDataIngestionLocations == [.oneDriveForBusiness, .sharePoint, .camera])
        #expect(
            policy.settings.exemptedAppProtocols == [
                "skype", "app-settings", "calshow", "itms", "itmss", "itms-apps", "itms-appss", "itms-services",
            ])
    }

    @Test("Level 3 iOS reads setting by setting")
    func level3iOS() throws {
        let bundle = try PolicyBundle.load(path: TestPaths.graphExample(Self.loadable[11].file))
        let policy = try #require(bundle.protectionPolicies.first)
        #expect(policy.reference.id == nil)
        #expect(policy.reference.name == "iOS/iPadOS Enterprise High Data Protection v1.5")
        var expected = ProtectionSettings()
        expected.allowedInboundDataTransferSources = .managedApps
        expected.allowedOutboundDataTransferDestinations = .managedApps
        expected.allowedOutboundClipboardSharingLevel = .managedAppsWithPasteIn
        expected.allowedOutboundClipboardSharingExceptionLength = 0
        expected.saveAsBlocked = true
        expected.allowedDataStorageLocations = [.oneDriveForBusiness, .sharePoint]
        expected.blockDataIngestionIntoOrganizationDocuments = true
        expected.allowedDataIngestionLocations = [.oneDriveForBusiness, .sharePoint]
        expected.printBlocked = true
        expected.dataBackupBlocked = true
        expected.notificationRestriction = .blockOrganizationalData
        expected.appDataEncryptionType = .whenDeviceLocked
        expected.periodOfflineBeforeAccessCheck = PolicyDuration(seconds: 12 * 3_600)
        expected.periodOfflineBeforeWipeIsEnforced = PolicyDuration(seconds: 90 * 86_400)
        expected.exemptedAppProtocols = [
            "tel", "telprompt", "skype", "app-settings", "calshow", "itms", "itmss", "itms-apps", "itms-appss",
            "itms-services",
        ]
        expected.filterOpenInToOnlyManagedApps = false
        expected.disableProtectionOfManagedOutboundOpenInData = false
        expected.protectInboundDataFromUnknownSources = false
        expected.contactSyncBlocked = false
        expected.thirdPartyKeyboardsBlocked = true
        expected.dialerRestrictionLevel = .customApp
        expected.managedBrowserToOpenLinksRequired = true
        expected.managedBrowser = .microsoftEdge
        expected.launchConditions = [
            LaunchCondition(
                setting: "minimumRequiredOsVersion",
                test: .minimumVersion(.osVersion, SoftwareVersion("14.8")!, orEqual: false),
                action: .block),
            LaunchCondition(
                setting: "maximumRequiredOsVersion", test: .maximumVersion(.osVersion, SoftwareVersion("15.0")!),
                action: .block),
            LaunchCondition(
                setting: "maximumAllowedDeviceThreatLevel", test: .maximumThreatLevel(.secured), action: .block),
            LaunchCondition(setting: "appActionIfUnableToAuthenticateUser", test: .accountUsable, action: .block),
            LaunchCondition(setting: "maximumPinRetries", test: .pinRetries(5), action: .block),
            LaunchCondition(setting: "deviceComplianceRequired", test: .mustBeFalse(.jailbroken), action: .wipe),
        ]
        #expect(policy.settings == expected)
        #expect(policy.targeting.managementLevels == [.unspecified])
        #expect(policy.targeting.appGroupType == .allCoreMicrosoftApps)
    }

    @Test("a Graph collection response splits comma-joined flags and reads both families")
    func collection() throws {
        let bundle = try PolicyBundle.load(path: TestPaths.graphExample(Self.loadable[4].file))
        #expect(
            bundle.protectionPolicies.map(\.kind) == [
                .androidManagedAppProtection, .iosManagedAppProtection, .iosManagedAppProtection,
                .androidManagedAppProtection,
            ])
        #expect(bundle.protectionPolicies[3].targeting.managementLevels == [.mdm, .androidEnterprise])
        #expect(bundle.protectionPolicies[0].settings.printBlocked == true)
        #expect(bundle.protectionPolicies[3].settings.printBlocked == false)
        #expect(
            bundle.protectionPolicies[0].settings.exemptedAppPackages?.contains("com.samsung.android.messaging") == true
        )
        #expect(
            bundle.appConfigurations.map(\.reference.name) == [
                "tet", "test", "[MAM] ACP | Microsoft Outlook [iOS + Android]",
                "[MAM] ACP | Microsoft Edge [iOS + Android]",
            ])
        #expect(
            bundle.appConfigurations[1].settings.map(\.name) == [
                "com.microsoft.intune.mam.managedbrowser.AppProxyRedirection",
                "com.microsoft.intune.mam.managedbrowser.AllowTransitionOnBlock",
            ])
        let warnings = bundle.warnings.filter { $0.severity == .warning && $0.code != .assignmentsMissing }
        #expect(warnings.allSatisfy { $0.code == .targeting }, "\(warnings)")
        #expect(warnings.count == 8)
    }

    @Test("the 2020 schema snapshot lists its apps inline")
    func inlineApps() throws {
        let bundle = try PolicyBundle.load(path: TestPaths.graphExample(Self.loadable[9].file))
        let apps = try #require(bundle.protectionPolicies.first?.targeting.apps)
        #expect(apps.count == 11)
        #expect(apps.contains { $0.matches("com.microsoft.msedge") && $0.matches("COM.MICROSOFT.MSEDGE.IOS") })
    }

    @Test("the hand-written maximal mock carries the strictest enum values")
    func maximalMock() throws {
        let bundle = try PolicyBundle.load(path: TestPaths.graphExample(Self.loadable[3].file))
        let settings = try #require(bundle.protectionPolicies.first?.settings)
        #expect(settings.allowedInboundDataTransferSources == DataTransferLevel.none)
        #expect(settings.allowedOutboundDataTransferDestinations == DataTransferLevel.none)
        #expect(settings.allowedOutboundClipboardSharingLevel == .blocked)
        #expect(settings.appDataEncryptionType == .afterDeviceRestart)
        #expect(settings.periodOfflineBeforeAccessCheck == PolicyDuration(seconds: 30 * 86_400))
        #expect(settings.notificationRestriction == nil)
    }
}
