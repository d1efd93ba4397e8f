/// Conditional launch: the checks a policy document configures, read once its members are all
/// seen (an action may come before or after the condition it belongs to).
extension GraphSchema {
    /// The version checks: the property, the fact it compares, the action it takes, and whether
    /// it fails at the threshold too. Graph's descriptions (iOS and Android): versions "less
    /// than" a required or warning minimum block or warn; versions "less than or equal to" the OS,
    /// app and patch wipe minimums wipe; the SDK's wipe minimum wipes versions "less than" it
    /// and the Company Portal's is the version that "must be installed" (less than it wipes);
    /// versions "bigger than" a maximum act. Windows (`windowsManagedAppProtection`) says "less
    /// than" for every minimum: no threshold fails there.
    static let versionChecks:
        [(property: String, fact: LaunchFact, action: RemediationAction, maximum: Bool, orEqual: Bool)] = [
            ("minimumRequiredOsVersion", .osVersion, .block, false, false),
            ("minimumWarningOsVersion", .osVersion, .warn, false, false),
            ("minimumWipeOsVersion", .osVersion, .wipe, false, true),
            ("maximumRequiredOsVersion", .osVersion, .block, true, false),
            ("maximumWarningOsVersion", .osVersion, .warn, true, false),
            ("maximumWipeOsVersion", .osVersion, .wipe, true, false),
            ("minimumRequiredAppVersion", .appVersion, .block, false, false),
            ("minimumWarningAppVersion", .appVersion, .warn, false, false),
            ("minimumWipeAppVersion", .appVersion, .wipe, false, true),
            ("minimumRequiredSdkVersion", .sdkVersion, .block, false, false),
            ("minimumWarningSdkVersion", .sdkVersion, .warn, false, false),
            ("minimumWipeSdkVersion", .sdkVersion, .wipe, false, false),
            ("minimumRequiredPatchVersion", .patchVersion, .block, false, false),
            ("minimumWarningPatchVersion", .patchVersion, .warn, false, false),
            ("minimumWipePatchVersion", .patchVersion, .wipe, false, true),
            ("minimumRequiredCompanyPortalVersion", .companyPortalVersion, .block, false, false),
            ("minimumWarningCompanyPortalVersion", .companyPortalVersion, .warn, false, false),
            ("minimumWipeCompanyPortalVersion", .companyPortalVersion, .wipe, false, false),
        ]

    /// Every property conditional launch reads (conditions and their actions).
    static let launchProperties: Set<String> = Set(versionChecks.map(\.property)).union([
        "allowedIosDeviceModels", "appActionIfIosDeviceModelNotAllowed", "allowedAndroidDeviceModels",
        "appActionIfAndroidDeviceModelNotAllowed", "allowedAndroidDeviceManufacturers",
        "appActionIfAndroidDeviceManufacturerNotAllowed", "maximumAllowedDeviceThreatLevel",
        "mobileThreatDefenseRemediationAction", "appActionIfUnableToAuthenticateUser", "pinRequired",
        "maximumPinRetries", "appActionIfMaximumPinRetriesExceeded", "appActionIfAccountIsClockedOut",
        "deviceComplianceRequired", "appActionIfDeviceComplianceRequired", "deviceLockRequired",
        "appActionIfDeviceLockNotSet", "appActionIfDevicePasscodeComplexityLessThanLow",
        "appActionIfDevicePasscodeComplexityLessThanMedium", "appActionIfDevicePasscodeComplexityLessThanHigh",
        "requiredAndroidSafetyNetDeviceAttestationType", "appActionIfAndroidSafetyNetDeviceAttestationFailed",
        "requiredAndroidSafetyNetAppsVerificationType", "appActionIfAndroidSafetyNetAppsVerificationFailed",
        "appActionIfSamsungKnoxAttestationRequired", "requiredAndroidSafetyNetEvaluationType",
    ]).union(companyPortalAgeChecks.map(\.property))

    /// "Max Company Portal version age (days)" (Android settings page): a Company Portal build
    /// older than the days given acts (Graph: the "maximum number of days Company Portal update
    /// can be deferred on the device").
    static let companyPortalAgeChecks: [(property: String, action: RemediationAction)] = [
        ("blockAfterCompanyPortalUpdateDeferralInDays", .block),
        ("warnAfterCompanyPortalUpdateDeferralInDays", .warn),
        ("wipeAfterCompanyPortalUpdateDeferralInDays", .wipe),
    ]

    /// The platform a launch property belongs to (nil: both), so that a default policy's iOS
    /// checks are not made on Android.
    static func launchPlatform(of property: String) -> Platform? {
        switch (iosOnlyProperties.contains(property), androidOnlyProperties.contains(property)) {
        case (true, false): .ios
        case (false, true): .android
        // Neither, or both (`appActionIfAccountIsClockedOut`: Non-working time on iOS and Android).
        default: nil
        }
    }
}

/// The members of one document that conditional launch reads, gathered while it is read.
struct LaunchMembers {
    private(set) var members: [String: (value: JSONValue, path: String)] = [:]

    mutating func collect(_ key: String, _ value: JSONValue, path: String) {
        if GraphSchema.launchProperties.contains(key) { members[key] = (value, path) }
    }

    subscript(key: String) -> (value: JSONValue, path: String)? { members[key] }
}

extension DocumentReader {
    /// Builds the conditional-launch checks of one document from its launch members.
    mutating func launchConditions(_ members: LaunchMembers, kind: PolicyKind) -> [LaunchCondition] {
        var conditions: [LaunchCondition] = []
        func add(_ setting: String, _ test: LaunchCondition.Test, _ action: RemediationAction) {
            conditions.append(
                LaunchCondition(
                    setting: setting, test: test, action: action, platform: GraphSchema.launchPlatform(of: setting)))
        }
        /// `remediation`, or block (with a warning naming `property`) when it is `unsupported`
        /// for the check.
        func blocking(
            _ remediation: RemediationAction, instead unsupported: RemediationAction, of property: String,
            because reason: String
        ) -> RemediationAction {
            guard remediation == unsupported, let member = members[property] else { return remediation }
            warning(.invalidValue, "\(reason): Custody blocks", at: member.value, path: member.path)
            return .block
        }
        /// The action a companion property names; `fallback` when it is missing or null.
        func action(_ property: String, fallback: RemediationAction?) -> RemediationAction? {
            guard let member = members[property] else { return fallback }
            return enumValue(member.value, as: RemediationAction.self, unknownReadsAs: .block, path: member.path)
                ?? fallback
        }

        for check in GraphSchema.versionChecks {
            guard let member = members[check.property], let text = string(member.value, path: member.path) else {
                continue
            }
            guard let version = SoftwareVersion(text) else {
                let shown = text.count > 40 ? "\(text.prefix(40))… (\(text.utf8.count) bytes)" : text
                error(
                    .invalidValue,
                    "'\(shown)' is not a version: give one to \(SoftwareVersion.maximumComponents) numbers of at most 9 digits, separated by dots, such as 16.1 or 11.0.0.94 (a patch level as YYYY-MM-DD)",
                    at: member.value, path: member.path)
                continue
            }
            if version.isZero { continue }
            if check.fact == .patchVersion, !version.isPatchDate {
                error(
                    .invalidValue,
                    "'\(text)' is not a security patch level: give a date as YYYY-MM-DD, such as 2026-09-01 (the Android settings page's format)",
                    at: member.value, path: member.path)
                continue
            }
            let test: LaunchCondition.Test =
                check.maximum
                ? .maximumVersion(check.fact, version)
                : .minimumVersion(
                    check.fact, version, orEqual: check.orEqual && kind != .windowsManagedAppProtection)
            add(check.property, test, check.action)
        }

        if let models = members["allowedIosDeviceModels"].flatMap({ separatedList($0.value, path: $0.path) }),
            !models.isEmpty
        {
            add(
                "allowedIosDeviceModels", .allowedValues(.deviceModel, models),
                action("appActionIfIosDeviceModelNotAllowed", fallback: .block)!)
        }
        if let member = members["allowedAndroidDeviceModels"],
            let list = stringList(member.value, path: member.path), !list.isEmpty
        {
            add(
                "allowedAndroidDeviceModels", .allowedValues(.deviceModel, Set(list.map { $0.0.lowercased() })),
                action("appActionIfAndroidDeviceModelNotAllowed", fallback: .block)!)
        }
        if let makers = members["allowedAndroidDeviceManufacturers"].flatMap({
            separatedList($0.value, path: $0.path)
        }), !makers.isEmpty {
            add(
                "allowedAndroidDeviceManufacturers", .allowedValues(.deviceManufacturer, makers),
                action("appActionIfAndroidDeviceManufacturerNotAllowed", fallback: .block)!)
        }
        if let member = members["maximumAllowedDeviceThreatLevel"],
            let level = enumValue(
                member.value, as: DeviceThreatLevel.self, unknownReadsAs: .secured, path: member.path),
            level != .notConfigured
        {
            let remediation = blocking(
                action("mobileThreatDefenseRemediationAction", fallback: .block)!, instead: .warn,
                of: "mobileThreatDefenseRemediationAction",
                because:
                    "warn is not a supported action for the device threat level (Graph's mobileThreatDefenseRemediationAction)"
            )
            add("maximumAllowedDeviceThreatLevel", .maximumThreatLevel(level), remediation)
        }
        if let remediation = action("appActionIfUnableToAuthenticateUser", fallback: nil) {
            add("appActionIfUnableToAuthenticateUser", .accountUsable, remediation)
        }
        // A `pinRequired` left out is "not configured" (DESIGN): no attempts check, and the
        // not-enforced notice says so, since the portal's default is Require. Attempts set
        // without it are not in effect: a warning says so.
        if members["pinRequired"] == nil, let retries = members["maximumPinRetries"] {
            warning(
                .notInEffect,
                "maximumPinRetries is set but pinRequired is not in the export, so no PIN is configured and no PIN-attempts check is made; set \"pinRequired\": true for the check",
                at: retries.value, path: retries.path)
        }
        if let member = members["pinRequired"], bool(member.value, path: member.path) == true {
            let retries = members["maximumPinRetries"].flatMap { int($0.value, in: 1...65_535, path: $0.path) } ?? 5
            add(
                "maximumPinRetries", .pinRetries(retries),
                action("appActionIfMaximumPinRetriesExceeded", fallback: .block)!)
        }
        if let configured = action("appActionIfAccountIsClockedOut", fallback: nil) {
            // Graph: "Defines a managed app behavior, either block or warn, if the user is clocked
            // out (non-working time)": a wipe for being off shift is not one of them.
            let remediation = blocking(
                configured, instead: .wipe, of: "appActionIfAccountIsClockedOut",
                because: "wipe is not an action for non-working time (Graph: either block or warn)")
            add("appActionIfAccountIsClockedOut", .mustBeFalse(.clockedOut), remediation)
        }
        if let member = members["deviceComplianceRequired"], bool(member.value, path: member.path) == true {
            add(
                "deviceComplianceRequired", .mustBeFalse(.jailbroken),
                action("appActionIfDeviceComplianceRequired", fallback: .block)!)
        }
        if let member = members["deviceLockRequired"], bool(member.value, path: member.path) == true {
            add(
                "deviceLockRequired", .mustBeTrue(.deviceLockSet),
                action("appActionIfDeviceLockNotSet", fallback: .block)!)
        }
        for (property, complexity) in [
            ("appActionIfDevicePasscodeComplexityLessThanLow", PasscodeComplexity.low),
            ("appActionIfDevicePasscodeComplexityLessThanMedium", .medium),
            ("appActionIfDevicePasscodeComplexityLessThanHigh", .high),
        ] {
            if let remediation = action(property, fallback: nil) {
                add(property, .minimumPasscodeComplexity(complexity), remediation)
            }
        }
        if let member = members["requiredAndroidSafetyNetDeviceAttestationType"],
            let required = enumValue(
                member.value, as: DeviceIntegrity.self, unknownReadsAs: .basicIntegrityAndDeviceCertification,
                path: member.path),
            required != .none
        {
            let remediation = action("appActionIfAndroidSafetyNetDeviceAttestationFailed", fallback: .block)!
            add("requiredAndroidSafetyNetDeviceAttestationType", .minimumDeviceIntegrity(required), remediation)
            // "Play integrity verdict evaluation type": "The MAM policy blocks devices that don't
            // support strong integrity checks"; "Devices that don't support this evaluation type
            // are blocked or wiped based on the Device integrity check action": wipe when that
            // action wipes, else block (a warn there still blocks).
            if let member = members["requiredAndroidSafetyNetEvaluationType"],
                let type = enumValue(
                    member.value, as: IntegrityEvaluationType.self, unknownReadsAs: .hardwareBacked,
                    path: member.path),
                type != .basic
            {
                add(
                    "requiredAndroidSafetyNetEvaluationType", .minimumEvaluationType(type),
                    remediation == .wipe ? .wipe : .block)
            }
        }
        if let member = members["requiredAndroidSafetyNetAppsVerificationType"],
            let text = string(member.value, path: member.path), text.lowercased() != "none"
        {
            if text.lowercased() != "enabled" {
                warning(
                    .unknownEnumValue,
                    "unknown value '\(text)' (known: none, enabled); using the most restrictive, 'enabled'",
                    at: member.value, path: member.path)
            }
            // Graph and the settings page ("Require threat scan on apps": Warn, Block access):
            // a wipe is not an action here; read as block, with a warning.
            let remediation = blocking(
                action("appActionIfAndroidSafetyNetAppsVerificationFailed", fallback: .block)!, instead: .wipe,
                of: "appActionIfAndroidSafetyNetAppsVerificationFailed",
                because: "wipe is not an action for the threat scan on apps (Warn or Block access)")
            add("requiredAndroidSafetyNetAppsVerificationType", .mustBeTrue(.appsVerified), remediation)
        }
        if let remediation = action("appActionIfSamsungKnoxAttestationRequired", fallback: nil) {
            // "Block access on supported devices": only "a Samsung device running Android 15 with
            // One UI 7.0 or above"; "Samsung devices running on older OS or devices from another
            // manufacturer aren't affected by this choice."
            add(
                "appActionIfSamsungKnoxAttestationRequired",
                remediation == .blockWhenSettingIsSupported ? .knoxAttestedWhereSupported : .knoxAttested,
                remediation)
        }
        for check in GraphSchema.companyPortalAgeChecks {
            guard let member = members[check.property], let days = int(member.value, in: 0...365, path: member.path),
                days > 0
            else { continue }
            add(check.property, .maximumCount(.companyPortalVersionAgeDays, days), check.action)
        }
        return conditions
    }

    /// A `;`-separated list in one string (device models, manufacturers), lower-cased; nil when
    /// not configured.
    private mutating func separatedList(_ value: JSONValue, path: String) -> Set<String>? {
        guard let text = string(value, path: path) else { return nil }
        var result: Set<String> = []
        for part in text.split(separator: ";") {
            let item = String(part).trimmingSpaces.lowercased()
            if !item.isEmpty { result.insert(item) }
        }
        return result
    }
}
