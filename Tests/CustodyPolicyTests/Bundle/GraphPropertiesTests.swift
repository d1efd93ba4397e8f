@testable import CustodyPolicy
import Testing

/// Every property Microsoft Graph (beta) defines for the four kinds Custody reads is known to the
/// reader, and each is decided (a setting, a conditional-launch check or its action), metadata,
/// or named in the notice of settings Custody does not enforce with why.
///
/// The lists are the beta CSDL's (microsoftgraph/msgraph-metadata,
/// clean_beta_metadata/cleanMetadataWithDescriptionsbeta.xml at b51a974ec40638c1392d2b529f6fee2c651c9c25),
/// inherited properties included. A property Graph adds fails `listsMatch` until it is accounted for.
@Suite("Graph properties accounted for")
struct GraphPropertiesTests {
    static let graph: [PolicyKind: Set<String>] = [
        .iosManagedAppProtection: [
            "allowWidgetContentSync", "allowedDataIngestionLocations", "allowedDataStorageLocations",
            "allowedInboundDataTransferSources", "allowedIosDeviceModels",
            "allowedOutboundClipboardSharingExceptionLength", "allowedOutboundClipboardSharingLevel",
            "allowedOutboundDataTransferDestinations", "appActionIfAccountIsClockedOut",
            "appActionIfDeviceComplianceRequired", "appActionIfIosDeviceModelNotAllowed",
            "appActionIfMaximumPinRetriesExceeded", "appActionIfUnableToAuthenticateUser", "appDataEncryptionType",
            "appGroupType", "apps", "assignments", "blockDataIngestionIntoOrganizationDocuments", "contactSyncBlocked",
            "createdDateTime", "customBrowserProtocol", "customDialerAppProtocol", "dataBackupBlocked",
            "deployedAppCount", "deploymentSummary", "description", "deviceComplianceRequired",
            "dialerRestrictionLevel", "disableAppPinIfDevicePinIsSet", "disableProtectionOfManagedOutboundOpenInData",
            "displayName", "exemptedAppProtocols", "exemptedUniversalLinks", "faceIdBlocked",
            "filterOpenInToOnlyManagedApps", "fingerprintBlocked", "genmojiConfigurationState",
            "gracePeriodToBlockAppsDuringOffClockHours", "id", "isAssigned", "lastModifiedDateTime", "managedBrowser",
            "managedBrowserToOpenLinksRequired", "managedUniversalLinks", "maximumAllowedDeviceThreatLevel",
            "maximumPinRetries", "maximumRequiredOsVersion", "maximumWarningOsVersion", "maximumWipeOsVersion",
            "messagingRedirectAppUrlScheme", "minimumPinLength", "minimumRequiredAppVersion",
            "minimumRequiredOsVersion", "minimumRequiredSdkVersion", "minimumWarningAppVersion",
            "minimumWarningOsVersion", "minimumWarningSdkVersion", "minimumWipeAppVersion", "minimumWipeOsVersion",
            "minimumWipeSdkVersion", "mobileThreatDefensePartnerPriority", "mobileThreatDefenseRemediationAction",
            "notificationRestriction", "organizationalCredentialsRequired", "periodBeforePinReset",
            "periodOfflineBeforeAccessCheck", "periodOfflineBeforeWipeIsEnforced", "periodOnlineBeforeAccessCheck",
            "pinCharacterSet", "pinRequired", "pinRequiredInsteadOfBiometricTimeout", "previousPinBlockCount",
            "printBlocked", "protectInboundDataFromUnknownSources", "protectedMessagingRedirectAppType",
            "purviewContentEvaluationRequired", "roleScopeTagIds", "saveAsBlocked", "screenCaptureConfigurationState",
            "simplePinBlocked", "targetedAppManagementLevels", "thirdPartyKeyboardsBlocked", "version",
            "writingToolsConfigurationState",
        ],
        .androidManagedAppProtection: [
            "allowedAndroidDeviceManufacturers", "allowedAndroidDeviceModels", "allowedDataIngestionLocations",
            "allowedDataStorageLocations", "allowedInboundDataTransferSources",
            "allowedOutboundClipboardSharingExceptionLength", "allowedOutboundClipboardSharingLevel",
            "allowedOutboundDataTransferDestinations", "appActionIfAccountIsClockedOut",
            "appActionIfAndroidDeviceManufacturerNotAllowed", "appActionIfAndroidDeviceModelNotAllowed",
            "appActionIfAndroidSafetyNetAppsVerificationFailed", "appActionIfAndroidSafetyNetDeviceAttestationFailed",
            "appActionIfDeviceComplianceRequired", "appActionIfDeviceLockNotSet",
            "appActionIfDevicePasscodeComplexityLessThanHigh", "appActionIfDevicePasscodeComplexityLessThanLow",
            "appActionIfDevicePasscodeComplexityLessThanMedium", "appActionIfMaximumPinRetriesExceeded",
            "appActionIfSamsungKnoxAttestationRequired", "appActionIfUnableToAuthenticateUser", "appGroupType",
            "approvedKeyboards", "apps", "assignments", "biometricAuthenticationBlocked",
            "blockAfterCompanyPortalUpdateDeferralInDays", "blockDataIngestionIntoOrganizationDocuments",
            "connectToVpnOnLaunch", "contactSyncBlocked", "createdDateTime", "customBrowserDisplayName",
            "customBrowserPackageId", "customDialerAppDisplayName", "customDialerAppPackageId", "dataBackupBlocked",
            "deployedAppCount", "deploymentSummary", "description", "deviceComplianceRequired", "deviceLockRequired",
            "dialerRestrictionLevel", "disableAppEncryptionIfDeviceEncryptionIsEnabled",
            "disableAppPinIfDevicePinIsSet", "displayName", "encryptAppData", "exemptedAppPackages",
            "fingerprintAndBiometricEnabled", "fingerprintBlocked", "gracePeriodToBlockAppsDuringOffClockHours", "id",
            "isAssigned", "keyboardsRestricted", "lastModifiedDateTime", "managedBrowser",
            "managedBrowserToOpenLinksRequired", "maximumAllowedDeviceThreatLevel", "maximumPinRetries",
            "maximumRequiredOsVersion", "maximumWarningOsVersion", "maximumWipeOsVersion",
            "messagingRedirectAppDisplayName", "messagingRedirectAppPackageId", "minimumPinLength",
            "minimumRequiredAppVersion", "minimumRequiredCompanyPortalVersion", "minimumRequiredOsVersion",
            "minimumRequiredPatchVersion", "minimumWarningAppVersion", "minimumWarningCompanyPortalVersion",
            "minimumWarningOsVersion", "minimumWarningPatchVersion", "minimumWipeAppVersion",
            "minimumWipeCompanyPortalVersion", "minimumWipeOsVersion", "minimumWipePatchVersion",
            "mobileThreatDefensePartnerPriority", "mobileThreatDefenseRemediationAction", "notificationRestriction",
            "organizationalCredentialsRequired", "periodBeforePinReset", "periodOfflineBeforeAccessCheck",
            "periodOfflineBeforeWipeIsEnforced", "periodOnlineBeforeAccessCheck", "pinCharacterSet", "pinRequired",
            "pinRequiredInsteadOfBiometricTimeout", "previousPinBlockCount", "printBlocked",
            "protectedMessagingRedirectAppType", "purviewContentEvaluationRequired", "requireClass3Biometrics",
            "requirePinAfterBiometricChange", "requiredAndroidSafetyNetAppsVerificationType",
            "requiredAndroidSafetyNetDeviceAttestationType", "requiredAndroidSafetyNetEvaluationType",
            "roleScopeTagIds", "saveAsBlocked", "screenCaptureBlocked", "simplePinBlocked",
            "targetedAppManagementLevels", "version", "warnAfterCompanyPortalUpdateDeferralInDays",
            "wipeAfterCompanyPortalUpdateDeferralInDays",
        ],
        .defaultManagedAppProtection: [
            "allowWidgetContentSync", "allowedAndroidDeviceManufacturers", "allowedAndroidDeviceModels",
            "allowedDataIngestionLocations", "allowedDataStorageLocations", "allowedInboundDataTransferSources",
            "allowedIosDeviceModels", "allowedOutboundClipboardSharingExceptionLength",
            "allowedOutboundClipboardSharingLevel", "allowedOutboundDataTransferDestinations",
            "appActionIfAccountIsClockedOut", "appActionIfAndroidDeviceManufacturerNotAllowed",
            "appActionIfAndroidDeviceModelNotAllowed", "appActionIfAndroidSafetyNetAppsVerificationFailed",
            "appActionIfAndroidSafetyNetDeviceAttestationFailed", "appActionIfDeviceComplianceRequired",
            "appActionIfDeviceLockNotSet", "appActionIfDevicePasscodeComplexityLessThanHigh",
            "appActionIfDevicePasscodeComplexityLessThanLow", "appActionIfDevicePasscodeComplexityLessThanMedium",
            "appActionIfIosDeviceModelNotAllowed", "appActionIfMaximumPinRetriesExceeded",
            "appActionIfUnableToAuthenticateUser", "appDataEncryptionType", "apps", "biometricAuthenticationBlocked",
            "blockAfterCompanyPortalUpdateDeferralInDays", "blockDataIngestionIntoOrganizationDocuments",
            "connectToVpnOnLaunch", "contactSyncBlocked", "createdDateTime", "customBrowserDisplayName",
            "customBrowserPackageId", "customBrowserProtocol", "customDialerAppDisplayName", "customDialerAppPackageId",
            "customDialerAppProtocol", "customSettings", "dataBackupBlocked", "deployedAppCount", "deploymentSummary",
            "description", "deviceComplianceRequired", "deviceLockRequired", "dialerRestrictionLevel",
            "disableAppEncryptionIfDeviceEncryptionIsEnabled", "disableAppPinIfDevicePinIsSet",
            "disableProtectionOfManagedOutboundOpenInData", "displayName", "encryptAppData", "exemptedAppPackages",
            "exemptedAppProtocols", "faceIdBlocked", "filterOpenInToOnlyManagedApps", "fingerprintAndBiometricEnabled",
            "fingerprintBlocked", "gracePeriodToBlockAppsDuringOffClockHours", "id", "lastModifiedDateTime",
            "managedBrowser", "managedBrowserToOpenLinksRequired", "maximumAllowedDeviceThreatLevel",
            "maximumPinRetries", "maximumRequiredOsVersion", "maximumWarningOsVersion", "maximumWipeOsVersion",
            "messagingRedirectAppDisplayName", "messagingRedirectAppPackageId", "messagingRedirectAppUrlScheme",
            "minimumPinLength", "minimumRequiredAppVersion", "minimumRequiredCompanyPortalVersion",
            "minimumRequiredOsVersion", "minimumRequiredPatchVersion", "minimumRequiredSdkVersion",
            "minimumWarningAppVersion", "minimumWarningCompanyPortalVersion", "minimumWarningOsVersion",
            "minimumWarningPatchVersion", "minimumWarningSdkVersion", "minimumWipeAppVersion",
            "minimumWipeCompanyPortalVersion", "minimumWipeOsVersion", "minimumWipePatchVersion",
            "minimumWipeSdkVersion", "mobileThreatDefensePartnerPriority", "mobileThreatDefenseRemediationAction",
            "notificationRestriction", "organizationalCredentialsRequired", "periodBeforePinReset",
            "periodOfflineBeforeAccessCheck", "periodOfflineBeforeWipeIsEnforced", "periodOnlineBeforeAccessCheck",
            "pinCharacterSet", "pinRequired", "pinRequiredInsteadOfBiometricTimeout", "previousPinBlockCount",
            "printBlocked", "protectInboundDataFromUnknownSources", "protectedMessagingRedirectAppType",
            "purviewContentEvaluationRequired", "requireClass3Biometrics", "requirePinAfterBiometricChange",
            "requiredAndroidSafetyNetAppsVerificationType", "requiredAndroidSafetyNetDeviceAttestationType",
            "requiredAndroidSafetyNetEvaluationType", "roleScopeTagIds", "saveAsBlocked", "screenCaptureBlocked",
            "simplePinBlocked", "thirdPartyKeyboardsBlocked", "version", "warnAfterCompanyPortalUpdateDeferralInDays",
            "wipeAfterCompanyPortalUpdateDeferralInDays",
        ],
        // Not in that snapshot's iOS/Android family: Microsoft Graph beta's
        // "windowsManagedAppProtection resource type" page (microsoft-graph-docs-contrib,
        // intune-mam-windowsmanagedappprotection.md), properties and relationships.
        .windowsManagedAppProtection: [
            "allowedInboundDataTransferSources", "allowedOutboundClipboardSharingLevel",
            "allowedOutboundDataTransferDestinations", "appActionIfUnableToAuthenticateUser", "apps", "assignments",
            "createdDateTime", "deployedAppCount", "deploymentSummary", "description", "displayName", "id",
            "isAssigned", "lastModifiedDateTime", "maximumAllowedDeviceThreatLevel", "maximumRequiredOsVersion",
            "maximumWarningOsVersion", "maximumWipeOsVersion", "minimumRequiredAppVersion", "minimumRequiredOsVersion",
            "minimumRequiredSdkVersion", "minimumWarningAppVersion", "minimumWarningOsVersion",
            "minimumWipeAppVersion", "minimumWipeOsVersion", "minimumWipeSdkVersion",
            "mobileThreatDefenseRemediationAction", "periodOfflineBeforeAccessCheck",
            "periodOfflineBeforeWipeIsEnforced", "printBlocked", "roleScopeTagIds", "version",
        ],
        .targetedManagedAppConfiguration: [
            "appGroupType", "apps", "assignments", "createdDateTime", "customSettings", "deployedAppCount",
            "deploymentSummary", "description", "displayName", "id", "isAssigned", "lastModifiedDateTime",
            "roleScopeTagIds", "settings", "targetedAppManagementLevels", "version",
        ],
    ]

    @Test("the reader knows exactly the properties Graph beta defines", arguments: PolicyKind.allCases)
    func listsMatch(kind: PolicyKind) throws {
        let graph = try #require(Self.graph[kind])
        let known = GraphSchema.knownProperties(of: kind)
        #expect(known.subtracting(graph).sorted() == [], "known to Custody, not to Graph")
        #expect(graph.subtracting(known).sorted() == [], "in Graph, unknown to Custody")
    }

    @Test("every property is decided, metadata, or not enforced with a reason", arguments: PolicyKind.allCases)
    func accounted(kind: PolicyKind) throws {
        let graph = try #require(Self.graph[kind])
        let unaccounted = graph.filter { !GraphSchema.isDecided($0) && GraphSchema.notEnforcedReasons[$0] == nil }
        #expect(unaccounted.sorted() == [])
        // And no reason is kept for a property Custody decides.
        let contradictory = GraphSchema.notEnforcedReasons.keys.filter(GraphSchema.isDecided)
        #expect(contradictory.sorted() == [])
    }

    @Test("an unknown property is a notice, never an error; a not-enforced one is named with why")
    func unknownIsNotice() throws {
        let text = """
            {"@odata.type": "#microsoft.graph.iosManagedAppProtection", "displayName": "P",
             "brandNewSetting": true, "pinRequired": true, "periodOnlineBeforeAccessCheck": "PT30M"}
            """
        let bundle = try PolicyBundle.load(
            tenant: nil, documents: [PolicyBundle.File(name: "p.json", bytes: Array(text.utf8))])
        let unknown = bundle.warnings.filter { $0.code == .unknownProperty }
        #expect(unknown.count == 1)
        #expect(unknown.allSatisfy { $0.severity == .notice })
        let notice = try #require(bundle.warnings.first { $0.code == .notEnforced })
        #expect(notice.message.contains("pinRequired (true): the app's own PIN and biometric prompt"))
    }
}
