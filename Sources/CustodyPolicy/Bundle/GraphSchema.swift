/// The properties Microsoft Graph (beta) defines for the document kinds Custody reads.
///
/// A property outside these lists is reported by `custody policy validate` as unknown and
/// ignored. Custody evaluates only the data-protection settings in `ProtectionSettings`; the
/// others (PIN, device conditions, versions) are known and accepted but not evaluated.
/// Sources: the Graph beta SDK models (`managedAppPolicy`, `managedAppProtection`,
/// `targetedManagedAppProtection`, `iosManagedAppProtection`, `androidManagedAppProtection`,
/// `defaultManagedAppProtection`, `managedAppConfiguration`, `targetedManagedAppConfiguration`)
/// and current tenant exports.
enum GraphSchema {
    static func knownProperties(of kind: PolicyKind) -> Set<String> {
        switch kind {
        case .iosManagedAppProtection: ios
        case .androidManagedAppProtection: android
        case .windowsManagedAppProtection: windows
        case .defaultManagedAppProtection: defaultProtection
        case .targetedManagedAppConfiguration: targetedConfiguration
        }
    }

    private static let policy: Set<String> = [
        "id", "displayName", "description", "createdDateTime", "lastModifiedDateTime", "roleScopeTagIds", "version",
    ]

    private static let protection: Set<String> = policy.union([
        "allowedDataIngestionLocations", "allowedDataStorageLocations", "allowedInboundDataTransferSources",
        "allowedOutboundClipboardSharingExceptionLength", "allowedOutboundClipboardSharingLevel",
        "allowedOutboundDataTransferDestinations", "appActionIfDeviceComplianceRequired",
        "appActionIfMaximumPinRetriesExceeded", "appActionIfUnableToAuthenticateUser",
        "blockDataIngestionIntoOrganizationDocuments", "contactSyncBlocked", "dataBackupBlocked",
        "deviceComplianceRequired", "dialerRestrictionLevel", "disableAppPinIfDevicePinIsSet", "fingerprintBlocked",
        "gracePeriodToBlockAppsDuringOffClockHours", "managedBrowser", "managedBrowserToOpenLinksRequired",
        "maximumAllowedDeviceThreatLevel", "maximumPinRetries", "maximumRequiredOsVersion", "maximumWarningOsVersion",
        "maximumWipeOsVersion", "minimumPinLength", "minimumRequiredAppVersion", "minimumRequiredOsVersion",
        "minimumWarningAppVersion", "minimumWarningOsVersion", "minimumWipeAppVersion", "minimumWipeOsVersion",
        "mobileThreatDefensePartnerPriority", "mobileThreatDefenseRemediationAction", "notificationRestriction",
        "organizationalCredentialsRequired", "periodBeforePinReset", "periodOfflineBeforeAccessCheck",
        "periodOfflineBeforeWipeIsEnforced", "periodOnlineBeforeAccessCheck", "pinCharacterSet", "pinRequired",
        "pinRequiredInsteadOfBiometricTimeout", "previousPinBlockCount", "printBlocked",
        "protectedMessagingRedirectAppType", "purviewContentEvaluationRequired", "saveAsBlocked", "simplePinBlocked",
    ])

    private static let targeted: Set<String> = [
        "appGroupType", "assignments", "isAssigned", "targetedAppManagementLevels", "apps", "deployedAppCount",
        "deploymentSummary",
    ]

    private static let iosOnly: Set<String> = [
        "allowWidgetContentSync", "allowedIosDeviceModels", "appActionIfAccountIsClockedOut",
        "appActionIfIosDeviceModelNotAllowed", "appDataEncryptionType", "customBrowserProtocol",
        "customDialerAppProtocol", "disableProtectionOfManagedOutboundOpenInData", "exemptedAppProtocols",
        "exemptedUniversalLinks", "faceIdBlocked", "filterOpenInToOnlyManagedApps", "managedUniversalLinks",
        "messagingRedirectAppUrlScheme", "minimumRequiredSdkVersion", "minimumWarningSdkVersion",
        "minimumWipeSdkVersion", "protectInboundDataFromUnknownSources", "thirdPartyKeyboardsBlocked",
        "genmojiConfigurationState", "screenCaptureConfigurationState", "writingToolsConfigurationState",
    ]

    private static let androidOnly: Set<String> = [
        "allowedAndroidDeviceManufacturers", "allowedAndroidDeviceModels", "appActionIfAccountIsClockedOut",
        "appActionIfAndroidDeviceManufacturerNotAllowed", "appActionIfAndroidDeviceModelNotAllowed",
        "appActionIfAndroidSafetyNetAppsVerificationFailed", "appActionIfAndroidSafetyNetDeviceAttestationFailed",
        "appActionIfDeviceLockNotSet", "appActionIfDevicePasscodeComplexityLessThanHigh",
        "appActionIfDevicePasscodeComplexityLessThanLow", "appActionIfDevicePasscodeComplexityLessThanMedium",
        "appActionIfSamsungKnoxAttestationRequired", "approvedKeyboards", "biometricAuthenticationBlocked",
        "blockAfterCompanyPortalUpdateDeferralInDays", "connectToVpnOnLaunch", "customBrowserDisplayName",
        "customBrowserPackageId", "customDialerAppDisplayName", "customDialerAppPackageId", "deviceLockRequired",
        "disableAppEncryptionIfDeviceEncryptionIsEnabled", "encryptAppData", "exemptedAppPackages",
        "fingerprintAndBiometricEnabled", "keyboardsRestricted", "messagingRedirectAppDisplayName",
        "messagingRedirectAppPackageId", "minimumRequiredCompanyPortalVersion", "minimumRequiredPatchVersion",
        "minimumWarningCompanyPortalVersion", "minimumWarningPatchVersion", "minimumWipeCompanyPortalVersion",
        "minimumWipePatchVersion", "requireClass3Biometrics", "requirePinAfterBiometricChange",
        "requiredAndroidSafetyNetAppsVerificationType", "requiredAndroidSafetyNetDeviceAttestationType",
        "requiredAndroidSafetyNetEvaluationType", "screenCaptureBlocked", "warnAfterCompanyPortalUpdateDeferralInDays",
        "wipeAfterCompanyPortalUpdateDeferralInDays",
    ]

    static var iosOnlyProperties: Set<String> { iosOnly }
    static var androidOnlyProperties: Set<String> { androidOnly }

    private static let ios = protection.union(targeted).union(iosOnly)
    private static let android = protection.union(targeted).union(androidOnly)
    private static let defaultProtection = protection.union(iosOnly).union(androidOnly).union([
        "apps", "customSettings", "deployedAppCount", "deploymentSummary",
    ]).subtracting([
        // The default policy's Graph type has not caught up with these (Graph beta metadata).
        "appActionIfSamsungKnoxAttestationRequired", "approvedKeyboards", "exemptedUniversalLinks",
        "genmojiConfigurationState", "keyboardsRestricted", "managedUniversalLinks", "screenCaptureConfigurationState",
        "writingToolsConfigurationState",
    ])
    /// `windowsManagedAppProtection` (beta) derives from `managedAppPolicy`, not
    /// `managedAppProtection`: it has its own short list (Microsoft's "App protection policy
    /// settings for Windows": receive, send, clipboard, print and the health checks).
    private static let windows = policy.union([
        "allowedInboundDataTransferSources", "allowedOutboundClipboardSharingLevel",
        "allowedOutboundDataTransferDestinations", "appActionIfUnableToAuthenticateUser", "apps", "assignments",
        "deployedAppCount", "deploymentSummary", "isAssigned", "maximumAllowedDeviceThreatLevel",
        "maximumRequiredOsVersion", "maximumWarningOsVersion", "maximumWipeOsVersion", "minimumRequiredAppVersion",
        "minimumRequiredOsVersion", "minimumRequiredSdkVersion", "minimumWarningAppVersion",
        "minimumWarningOsVersion", "minimumWipeAppVersion", "minimumWipeOsVersion", "minimumWipeSdkVersion",
        "mobileThreatDefenseRemediationAction", "periodOfflineBeforeAccessCheck",
        "periodOfflineBeforeWipeIsEnforced", "printBlocked",
    ])

    private static let targetedConfiguration = policy.union(targeted).union(["customSettings", "settings"])
}
