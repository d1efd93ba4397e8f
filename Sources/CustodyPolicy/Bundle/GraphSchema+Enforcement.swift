/// Which Graph properties Custody evaluates, and how a property it does not evaluate is judged
/// to restrict something: what `custody policy validate` reports as "not enforced".
extension GraphSchema {
    /// Properties that identify, describe or target a policy: neither settings nor notices.
    static let metadata: Set<String> = [
        "id", "displayName", "description", "createdDateTime", "lastModifiedDateTime", "roleScopeTagIds", "version",
        "appGroupType", "assignments", "isAssigned", "targetedAppManagementLevels", "apps", "deployedAppCount",
        "deploymentSummary",
        "settings", "customSettings",
    ]

    /// The settings Custody evaluates (`ProtectionSettings`).
    static let evaluated: Set<String> = Set(PolicySetting.allCases.map(\.rawValue))

    /// Whether Custody decides with the property (a setting, a conditional-launch check or its
    /// action) or it only identifies or targets the policy. `pinRequired` turns on the app's
    /// own PIN prompt, which is the app's, though Custody decides its retry limit.
    static func isDecided(_ property: String) -> Bool {
        metadata.contains(property) || evaluated.contains(property)
            || (launchProperties.contains(property) && property != "pinRequired")
    }

    /// Why Custody does not decide with a property: every property of the four kinds (Graph
    /// beta) that `isDecided` does not cover has one, and `custody policy validate` names it
    /// beside the property in its notice.
    static let notEnforcedReasons: [String: String] = {
        var reasons: [String: String] = [:]
        for pin in [
            "pinRequired", "minimumPinLength", "pinCharacterSet", "simplePinBlocked", "periodBeforePinReset",
            "previousPinBlockCount", "pinRequiredInsteadOfBiometricTimeout", "disableAppPinIfDevicePinIsSet",
            "fingerprintBlocked", "faceIdBlocked", "biometricAuthenticationBlocked", "fingerprintAndBiometricEnabled",
            "requireClass3Biometrics", "requirePinAfterBiometricChange",
        ] {
            reasons[pin] = "the app's own PIN and biometric prompt (Custody decides the PIN retry limit)"
        }
        for name in ["customBrowserDisplayName", "customDialerAppDisplayName", "messagingRedirectAppDisplayName"] {
            reasons[name] = "a name the app shows (the redirect names the app by its package id)"
        }
        reasons["organizationalCredentialsRequired"] = "sign-in prompts are Entra ID's and the SDK's"
        reasons["periodOnlineBeforeAccessCheck"] = "how often the app re-checks online is the SDK's schedule"
        reasons["gracePeriodToBlockAppsDuringOffClockHours"] =
            "the clocked-out grace is the app's: it reports clockedOut once the grace is over"
        reasons["mobileThreatDefensePartnerPriority"] =
            "which threat-defense partner reports the level (the app reports the level as threatLevel)"
        reasons["connectToVpnOnLaunch"] = "the app connects the VPN itself"
        reasons["purviewContentEvaluationRequired"] = "Purview evaluates content in the app"
        return reasons
    }()

    /// Settings that only mean something beside another: an action for a condition, the
    /// details of an app PIN. They are reported only when their parent is.
    static let companions: [String: String] = {
        var companions: [String: String] = [:]
        for pin in [
            "pinCharacterSet", "minimumPinLength", "simplePinBlocked", "periodBeforePinReset", "previousPinBlockCount",
            "pinRequiredInsteadOfBiometricTimeout",
            "fingerprintBlocked",
            "faceIdBlocked", "disableAppPinIfDevicePinIsSet", "biometricAuthenticationBlocked",
            "requireClass3Biometrics",
            "requirePinAfterBiometricChange", "fingerprintAndBiometricEnabled",
        ] {
            companions[pin] = "pinRequired"
        }
        companions["appActionIfDeviceComplianceRequired"] = "deviceComplianceRequired"
        companions["managedBrowser"] = "managedBrowserToOpenLinksRequired"
        companions["approvedKeyboards"] = "keyboardsRestricted"
        companions["appActionIfDeviceLockNotSet"] = "deviceLockRequired"
        companions["mobileThreatDefenseRemediationAction"] = "maximumAllowedDeviceThreatLevel"
        companions["mobileThreatDefensePartnerPriority"] = "maximumAllowedDeviceThreatLevel"
        companions["appActionIfIosDeviceModelNotAllowed"] = "allowedIosDeviceModels"
        companions["appActionIfAndroidDeviceModelNotAllowed"] = "allowedAndroidDeviceModels"
        companions["appActionIfAndroidDeviceManufacturerNotAllowed"] = "allowedAndroidDeviceManufacturers"
        companions["appActionIfAndroidSafetyNetAppsVerificationFailed"] = "requiredAndroidSafetyNetAppsVerificationType"
        companions["appActionIfAndroidSafetyNetDeviceAttestationFailed"] =
            "requiredAndroidSafetyNetDeviceAttestationType"
        companions["gracePeriodToBlockAppsDuringOffClockHours"] = "appActionIfAccountIsClockedOut"
        for dialer in ["customDialerAppProtocol", "customDialerAppPackageId", "customDialerAppDisplayName"] {
            companions[dialer] = "dialerRestrictionLevel"
        }
        for messaging in [
            "messagingRedirectAppDisplayName", "messagingRedirectAppPackageId", "messagingRedirectAppUrlScheme",
        ] {
            companions[messaging] = "protectedMessagingRedirectAppType"
        }
        for browser in ["customBrowserProtocol", "customBrowserPackageId", "customBrowserDisplayName"] {
            companions[browser] = "managedBrowserToOpenLinksRequired"
        }
        return companions
    }()

    /// Enum values that restrict nothing: what a setting left alone holds.
    private static let neutralEnumValues: Set<String> = [
        "notconfigured", "allapps", "anyapp", "unspecified", "notblocked", "none", "basic", "numeric",
        "unknownfuturevalue",
    ]

    /// Whether `value` leaves the setting restricting nothing: null, false, zero, empty, a zero
    /// duration or a neutral enum value.
    static func isNeutral(_ value: JSONValue) -> Bool {
        switch value.kind {
        case .null, .false: return true
        case .true: return false
        case .number: return value.int == 0
        case .string:
            let text = value.string ?? ""
            // Zero durations, and the zero versions exports carry for "no requirement".
            return text.isEmpty || ["PT0S", "P0D", "0000-00-00", "0.0", "0"].contains(text)
                || neutralEnumValues.contains(text.lowercased())
        case .array:
            var iterator = value.elements.makeIterator()
            return iterator.next() == nil
        case .object: return false
        }
    }

    /// A short rendering of a setting's value for a notice.
    static func brief(_ value: JSONValue) -> String {
        switch value.kind {
        case .string: return value.string ?? ""
        case .array:
            var count = 0
            for _ in value.elements { count += 1 }
            return "\(count) item\(count == 1 ? "" : "s")"
        case .object: return "{…}"
        case .number: return value.numberText ?? "?"
        case .true: return "true"
        case .false: return "false"
        case .null: return "null"
        }
    }
}
