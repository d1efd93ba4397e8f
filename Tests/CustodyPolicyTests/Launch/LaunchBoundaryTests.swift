import CustodyPolicy
import Testing

/// Conditional launch as Microsoft's pages decide the cases issue 46 found: each expected
/// answer is taken from the sentence quoted beside its table, not from the engine.
@Suite("Decision: conditional launch boundaries from Microsoft's pages")
struct LaunchBoundaryTests {
    typealias Base = LaunchTests

    static func decide(
        _ members: String, platform: Platform = .android, facts: String, missing: MissingFacts = .strict
    ) throws -> LaunchDecision {
        let snapshot = try Base.snapshot(
            [Base.policy(platform.rawValue, "P", group: "g-a", members)], platform: platform)
        var reported = try Base.readFacts(facts)
        reported.lastCheckIn = Base.now - .seconds(60)
        return snapshot.launch(account: Base.alice, facts: reported, now: Base.now, missingFacts: missing)
    }

    /// Decides a row on Android: its outcome, and the fact it lists as missing.
    static func verify(_ row: Row, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let decision = try decide(row.members, facts: row.facts)
        #expect(decision.outcome == row.outcome, "\(decision.reason)", sourceLocation: sourceLocation)
        #expect(
            decision.missingFacts == (row.missing.map { [$0] } ?? []), "\(decision.reason)",
            sourceLocation: sourceLocation)
    }

    struct Row: Sendable, CustomTestStringConvertible {
        let members: String
        let facts: String
        let outcome: LaunchOutcome
        /// The fact the answer lists as missing, if any.
        var missing: LaunchFact? = nil
        var testDescription: String { "\(facts) → \(outcome)" }
    }

    /// Android settings page, Conditional launch, "Require device lock": "This complexity value
    /// is targeted to Android 12+. For devices operating on Android 11 and earlier, setting a
    /// complexity value of low, medium, or high defaults to the expected behavior for Low
    /// Complexity."
    @Test(
        "Android 11 and earlier: any passcode complexity asked behaves as low; Android 12 and later as asked",
        arguments: [
            Row(
                members: #""appActionIfDevicePasscodeComplexityLessThanHigh": "block""#,
                facts: #"{"passcodeComplexity": "low", "osVersion": "11"}"#, outcome: .allow),
            Row(
                members: #""appActionIfDevicePasscodeComplexityLessThanHigh": "block""#,
                facts: #"{"passcodeComplexity": "medium", "osVersion": "10.0"}"#, outcome: .allow),
            Row(
                members: #""appActionIfDevicePasscodeComplexityLessThanHigh": "block""#,
                facts: #"{"passcodeComplexity": "none", "osVersion": "11"}"#, outcome: .block),
            Row(
                members: #""appActionIfDevicePasscodeComplexityLessThanHigh": "block""#,
                facts: #"{"passcodeComplexity": "low", "osVersion": "12"}"#, outcome: .block),
            Row(
                members: #""appActionIfDevicePasscodeComplexityLessThanMedium": "warn""#,
                facts: #"{"passcodeComplexity": "low", "osVersion": "14.1"}"#, outcome: .warn),
            Row(
                members: #""appActionIfDevicePasscodeComplexityLessThanMedium": "warn""#,
                facts: #"{"passcodeComplexity": "medium", "osVersion": "16"}"#, outcome: .allow),
            Row(
                members: #""appActionIfDevicePasscodeComplexityLessThanLow": "wipe""#,
                facts: #"{"passcodeComplexity": "none", "osVersion": "9"}"#, outcome: .wipe),
            // Low but not high, and no Android version: the answer turns on the missing
            // version, so it blocks (and never wipes) and names the version as missing.
            Row(
                members: #""appActionIfDevicePasscodeComplexityLessThanHigh": "wipe""#,
                facts: #"{"passcodeComplexity": "low"}"#, outcome: .block, missing: .osVersion),
            // Below low fails on every Android version: no version is needed.
            Row(
                members: #""appActionIfDevicePasscodeComplexityLessThanHigh": "block""#,
                facts: #"{"passcodeComplexity": "none"}"#, outcome: .block),
        ])
    func passcodeComplexityOnOldAndroid(row: Row) throws {
        try Self.verify(row)
    }

    /// Android settings page, "Samsung Knox device attestation", Block access on supported
    /// devices: "The user account is blocked from access, if a Samsung device running Android
    /// 15 with One UI 7.0 or above doesn't meet Samsung's Knox device attestation check.
    /// Samsung devices running on older OS or devices from another manufacturer aren't affected
    /// by this choice." And for the other actions: "These settings apply to all targeted
    /// devices, including Samsung and other manufacturers."
    @Test(
        "Knox 'block on supported devices' blocks only Samsung devices on Android 15 or later; the other actions every device",
        arguments: [
            Row(
                members: #""appActionIfSamsungKnoxAttestationRequired": "blockWhenSettingIsSupported""#,
                facts: #"{"deviceManufacturer": "samsung", "osVersion": "15", "knoxAttested": false}"#,
                outcome: .block),
            Row(
                members: #""appActionIfSamsungKnoxAttestationRequired": "blockWhenSettingIsSupported""#,
                facts: #"{"deviceManufacturer": "Samsung", "osVersion": "16.1", "knoxAttested": true}"#,
                outcome: .allow),
            Row(
                members: #""appActionIfSamsungKnoxAttestationRequired": "blockWhenSettingIsSupported""#,
                facts: #"{"deviceManufacturer": "samsung", "osVersion": "14", "knoxAttested": false}"#,
                outcome: .allow),
            Row(
                members: #""appActionIfSamsungKnoxAttestationRequired": "blockWhenSettingIsSupported""#,
                facts: #"{"deviceManufacturer": "Google", "osVersion": "16", "knoxAttested": false}"#,
                outcome: .allow),
            Row(
                members: #""appActionIfSamsungKnoxAttestationRequired": "blockWhenSettingIsSupported""#,
                facts: #"{"deviceManufacturer": "Google", "osVersion": "16"}"#, outcome: .allow),
            Row(
                members: #""appActionIfSamsungKnoxAttestationRequired": "blockWhenSettingIsSupported""#,
                facts: #"{"osVersion": "16", "knoxAttested": false}"#, outcome: .block,
                missing: .deviceManufacturer),
            Row(
                members: #""appActionIfSamsungKnoxAttestationRequired": "blockWhenSettingIsSupported""#,
                facts: #"{"deviceManufacturer": "samsung", "knoxAttested": false}"#, outcome: .block,
                missing: .osVersion),
            Row(
                members: #""appActionIfSamsungKnoxAttestationRequired": "blockWhenSettingIsSupported""#,
                facts: #"{"deviceManufacturer": " Samsung ", "osVersion": "15", "knoxAttested": false}"#,
                outcome: .block),
            // Warn, block and wipe "apply to all targeted devices … On non-Samsung devices,
            // users can't accept the Knox terms of service and are blocked": blocked whatever
            // the action and whatever a non-Samsung device claims of Knox.
            Row(
                members: #""appActionIfSamsungKnoxAttestationRequired": "block""#,
                facts: #"{"deviceManufacturer": "Google", "osVersion": "16", "knoxAttested": false}"#,
                outcome: .block),
            Row(
                members: #""appActionIfSamsungKnoxAttestationRequired": "block""#,
                facts: #"{"deviceManufacturer": "Google", "knoxAttested": true}"#, outcome: .block),
            Row(
                members: #""appActionIfSamsungKnoxAttestationRequired": "warn""#,
                facts: #"{"deviceManufacturer": "google", "knoxAttested": false}"#, outcome: .block),
            Row(
                members: #""appActionIfSamsungKnoxAttestationRequired": "wipe""#,
                facts: #"{"deviceManufacturer": "Pixel", "knoxAttested": false}"#, outcome: .block),
            Row(
                members: #""appActionIfSamsungKnoxAttestationRequired": "wipe""#,
                facts: #"{"deviceManufacturer": "samsung", "knoxAttested": false}"#, outcome: .wipe),
            Row(
                members: #""appActionIfSamsungKnoxAttestationRequired": "warn""#,
                facts: #"{"deviceManufacturer": "samsung", "osVersion": "13", "knoxAttested": false}"#,
                outcome: .warn),
            Row(
                members: #""appActionIfSamsungKnoxAttestationRequired": "warn""#,
                facts: #"{"deviceManufacturer": "samsung", "knoxAttested": true}"#, outcome: .allow),
            // A failed attestation fails whoever made the device (the settings "apply to all
            // targeted devices"); a pass needs the maker, since only Samsung can pass.
            Row(
                members: #""appActionIfSamsungKnoxAttestationRequired": "wipe""#,
                facts: #"{"knoxAttested": false}"#, outcome: .wipe),
            Row(
                members: #""appActionIfSamsungKnoxAttestationRequired": "block""#,
                facts: #"{"knoxAttested": true}"#, outcome: .block, missing: .deviceManufacturer),
        ])
    func knoxOnSupportedDevices(row: Row) throws {
        try Self.verify(row)
    }

    /// Android settings page, "Max Company Portal version age (days)": "You can set a maximum
    /// number of days as the age of the Company Portal (CP) version … When the setting for the
    /// devices isn't met, the action for this setting is triggered. Actions include Block
    /// access, Wipe data, or Warn." Graph: "Maximum number of days Company Portal update can be
    /// deferred on the device or app access will be blocked."
    @Test(
        "Company Portal version age: older than the days given acts; at the limit it does not",
        arguments: [
            Row(
                members: #""blockAfterCompanyPortalUpdateDeferralInDays": 30"#,
                facts: #"{"companyPortalVersionAgeDays": 31}"#, outcome: .block),
            Row(
                members: #""blockAfterCompanyPortalUpdateDeferralInDays": 30"#,
                facts: #"{"companyPortalVersionAgeDays": 30}"#, outcome: .allow),
            Row(
                members:
                    #""warnAfterCompanyPortalUpdateDeferralInDays": 10, "blockAfterCompanyPortalUpdateDeferralInDays": 60"#,
                facts: #"{"companyPortalVersionAgeDays": 11}"#, outcome: .warn),
            Row(
                members:
                    #""warnAfterCompanyPortalUpdateDeferralInDays": 10, "wipeAfterCompanyPortalUpdateDeferralInDays": 90"#,
                facts: #"{"companyPortalVersionAgeDays": 91}"#, outcome: .wipe),
            Row(
                members: #""blockAfterCompanyPortalUpdateDeferralInDays": 0"#,
                facts: #"{"companyPortalVersionAgeDays": 365}"#, outcome: .allow),
            Row(
                members: #""wipeAfterCompanyPortalUpdateDeferralInDays": 90"#, facts: "{}", outcome: .block,
                missing: .companyPortalVersionAgeDays),
        ])
    func companyPortalAge(row: Row) throws {
        try Self.verify(row)
    }

    /// Android settings page, "Play integrity verdict": "The MAM policy blocks devices that
    /// don't support strong integrity checks if they're targeted with this setting. … Devices
    /// that don't support this evaluation type are blocked or wiped based on the Device
    /// integrity check action."
    @Test(
        "Play Integrity 'check strong integrity': a verdict not evaluated in hardware takes the integrity check's action",
        arguments: [
            Row(
                members:
                    #""requiredAndroidSafetyNetDeviceAttestationType": "basicIntegrity", "requiredAndroidSafetyNetEvaluationType": "hardwareBacked", "appActionIfAndroidSafetyNetDeviceAttestationFailed": "wipe""#,
                facts: #"{"deviceIntegrity": "basicIntegrity", "integrityEvaluationType": "basic"}"#, outcome: .wipe),
            Row(
                members:
                    #""requiredAndroidSafetyNetDeviceAttestationType": "basicIntegrity", "requiredAndroidSafetyNetEvaluationType": "hardwareBacked""#,
                facts: #"{"deviceIntegrity": "basicIntegrity", "integrityEvaluationType": "hardwareBacked"}"#,
                outcome: .allow),
            Row(
                members:
                    #""requiredAndroidSafetyNetDeviceAttestationType": "basicIntegrity", "requiredAndroidSafetyNetEvaluationType": "basic""#,
                facts: #"{"deviceIntegrity": "basicIntegrity", "integrityEvaluationType": "basic"}"#, outcome: .allow),
            // The verdict check warns; a device without strong integrity is still blocked:
            // "The MAM policy blocks devices that don't support strong integrity checks".
            Row(
                members:
                    #""requiredAndroidSafetyNetDeviceAttestationType": "basicIntegrity", "requiredAndroidSafetyNetEvaluationType": "hardwareBacked", "appActionIfAndroidSafetyNetDeviceAttestationFailed": "warn""#,
                facts: #"{"deviceIntegrity": "basicIntegrity", "integrityEvaluationType": "basic"}"#, outcome: .block),
            Row(
                members:
                    #""requiredAndroidSafetyNetDeviceAttestationType": "basicIntegrity", "requiredAndroidSafetyNetEvaluationType": "hardwareBacked", "appActionIfAndroidSafetyNetDeviceAttestationFailed": "warn""#,
                facts: #"{"deviceIntegrity": "basicIntegrity"}"#, outcome: .block,
                missing: .integrityEvaluationType),
        ])
    func strongIntegrity(row: Row) throws {
        try Self.verify(row)
    }

    struct OrderRow: Sendable, CustomTestStringConvertible {
        let platform: Platform
        /// The policy's members, written in the opposite order to the expected one.
        let members: String
        let facts: String
        let order: [String]
        var testDescription: String { "\(platform): \(order.joined(separator: ", "))" }
    }

    /// The MAM FAQ, iOS: "an Intune App SDK version requirement would take precedence, and then
    /// an app version requirement, followed by the iOS/iPadOS operating system version
    /// requirement. Then, any warnings for all types of settings in the same order are
    /// checked." Android: "an app version requirement would take precedence, followed by
    /// Android operating system version requirement and Android patch version requirement.
    /// Then, any warnings for all types of settings in the same order are checked."
    @Test(
        "checks of one severity are listed in the MAM FAQ's order, the deciding one first",
        arguments: [
            OrderRow(
                platform: .ios,
                members:
                    #""minimumWarningOsVersion": "18", "minimumWarningAppVersion": "3", "minimumWarningSdkVersion": "20", "minimumRequiredOsVersion": "17", "minimumRequiredAppVersion": "2", "minimumRequiredSdkVersion": "19""#,
                facts: #"{"osVersion": "16", "appVersion": "1", "sdkVersion": "18"}"#,
                order: [
                    "minimumRequiredSdkVersion", "minimumRequiredAppVersion", "minimumRequiredOsVersion",
                    "minimumWarningSdkVersion", "minimumWarningAppVersion", "minimumWarningOsVersion",
                ]),
            OrderRow(
                platform: .android,
                members:
                    #""minimumWarningPatchVersion": "2026-06-01", "minimumWarningOsVersion": "15", "minimumWarningAppVersion": "3", "minimumRequiredPatchVersion": "2026-01-01", "minimumRequiredOsVersion": "14", "minimumRequiredAppVersion": "2""#,
                facts: #"{"osVersion": "13", "appVersion": "1", "patchVersion": "2025-01-01"}"#,
                order: [
                    "minimumRequiredAppVersion", "minimumRequiredOsVersion", "minimumRequiredPatchVersion",
                    "minimumWarningAppVersion", "minimumWarningOsVersion", "minimumWarningPatchVersion",
                ]),
        ])
    func checkOrder(row: OrderRow) throws {
        let decision = try Self.decide(row.members, platform: row.platform, facts: row.facts)
        #expect(decision.checks.map(\.setting) == row.order)
        #expect(decision.decidingCheck?.setting == row.order.first)
        #expect(decision.outcome == .block)
    }

    /// The iOS and Android settings pages, Access requirements, "PIN for access": "Default
    /// value = Require". DESIGN: a property the export leaves out is not configured, so no
    /// PIN-attempts check is made then, but the PIN settings the export does carry are listed as
    /// not enforced whether or not `pinRequired` is there.
    @Test(
        "PIN settings are listed as not enforced whether or not pinRequired is in the export",
        arguments: [
            (#""minimumPinLength": 6, "fingerprintBlocked": true"#, true, false),
            (#""pinRequired": true, "minimumPinLength": 6, "fingerprintBlocked": true"#, true, true),
            (#""pinRequired": false, "minimumPinLength": 6, "fingerprintBlocked": true"#, false, false),
        ] as [(String, Bool, Bool)])
    func pinSettingsListed(members: String, listed: Bool, attemptsChecked: Bool) throws {
        let bundle = try loadBundle(
            tenant: Base.tenant, documents: [Base.policy("ios", "P", group: "g-a", members)])
        let notice = bundle.warnings.first { $0.code == .notEnforced }
        #expect((notice?.message.contains("minimumPinLength (6)") ?? false) == listed, "\(bundle.warnings)")
        #expect((notice?.message.contains("fingerprintBlocked (true)") ?? false) == listed, "\(bundle.warnings)")
        if members.hasPrefix(#""minimumPinLength""#) {
            #expect(notice?.message.contains("pinRequired (not in the export") == true, "\(bundle.warnings)")
        }
        let decision = try Self.decide(members, platform: .ios, facts: "{}")
        #expect(decision.checks.contains { $0.setting == "maximumPinRetries" } == attemptsChecked)
    }

    /// Graph, `windowsManagedAppProtection.periodOfflineBeforeWipeIsEnforced`: "A timespan value
    /// of PT0S indicates that managed data will never be wiped when the device is not connected
    /// to the internet." (iOS and Android read the same way: docs/decisions.md.) Access is still
    /// blocked after the access-check period.
    @Test(
        "a wipe period of PT0S never wipes; the access check still blocks",
        arguments: [Platform.windows, .ios, .android])
    func zeroWipePeriod(platform: Platform) throws {
        let snapshot = try Base.snapshot(
            [
                Base.policy(
                    platform.rawValue, "P", group: "g-a",
                    #""periodOfflineBeforeWipeIsEnforced": "PT0S", "periodOfflineBeforeAccessCheck": "PT12H""#)
            ], platform: platform)
        var facts = LaunchFacts()
        facts.lastCheckIn = Base.now - .seconds(3_600)
        #expect(
            snapshot.launch(account: Base.alice, facts: facts, now: Base.now, missingFacts: .ignore).outcome == .allow)
        facts.lastCheckIn = Base.now - .seconds(400 * 86_400)
        let long = snapshot.launch(account: Base.alice, facts: facts, now: Base.now, missingFacts: .ignore)
        #expect(long.outcome == .block, "\(long.reason)")
        let access = snapshot.offlineAccess(account: Base.alice, offlineFor: .seconds(400 * 86_400))
        #expect(!access.isAllowed)
        #expect(!access.reason.contains("wipe"), "\(access.reason)")
    }

    /// The Android settings page, "Min patch version": "This policy setting supports the date
    /// format of YYYY-MM-DD." A reported level that is not such a date is refused, as is a
    /// policy's.
    @Test(
        "a patch level is a calendar date YYYY-MM-DD, in a query and in a policy",
        arguments: [
            ("2026-09-01", true), ("2024-02-29", true), ("2026-02-30", false), ("2026-13-01", false),
            ("9999", false), ("2027", false), ("2026.11.01", false), ("2026-9-1", false), ("9999-99-99", false),
        ])
    func patchDates(text: String, valid: Bool) throws {
        #expect(((try? Base.readFacts(#"{"patchVersion": "\#(text)"}"#)) != nil) == valid)
        let policy = Base.policy("android", "P", group: "g-a", #""minimumRequiredPatchVersion": "\#(text)""#)
        let bundle = try? PolicyBundle.load(
            tenant: PolicyBundle.File(name: "tenant.json", bytes: Array(Base.tenant.utf8)),
            documents: [PolicyBundle.File(name: "p.json", bytes: Array(policy.utf8))])
        #expect((bundle != nil) == valid)
    }

    /// Settings the export carries that do nothing as written are warnings, not silence: a
    /// threat-scan wipe (the Android settings page lists Warn and Block access for "Require
    /// threat scan on apps"), PIN attempts without a PIN, a property spelt with other capitals.
    @Test(
        "a wipe for the threat scan blocks, PIN attempts without pinRequired and a mis-capitalised property are warnings",
        arguments: [
            (
                #""requiredAndroidSafetyNetAppsVerificationType": "enabled", "appActionIfAndroidSafetyNetAppsVerificationFailed": "wipe""#,
                "wipe is not an action for the threat scan on apps"
            ),
            (
                #""maximumPinRetries": 3, "appActionIfMaximumPinRetriesExceeded": "wipe""#,
                "pinRequired is not in the export"
            ),
            (#""minimumRequiredOSVersion": "14""#, "did you mean 'minimumRequiredOsVersion'?"),
        ])
    func notAsWritten(members: String, warning: String) throws {
        let bundle = try loadBundle(
            tenant: Base.tenant, documents: [Base.policy("android", "P", group: "g-a", members)])
        let found = bundle.warnings.first { $0.message.contains(warning) }
        #expect(found?.severity == .warning, "\(bundle.warnings)")
        let decision = try Self.decide(
            members, facts: #"{"appsVerified": false, "pinFailures": 9, "osVersion": "13"}"#, missing: .ignore)
        #expect(decision.outcome == (members.contains("AppsVerification") ? .block : .allow), "\(decision.reason)")
    }
}
