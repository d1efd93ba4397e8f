import CustodyPolicy
import Testing

/// Conditional launch: versions, devices, threat, account, PIN, clock, offline, facts missing,
/// several policies, precedence.
@Suite("Decision: conditional launch")
struct LaunchTests {
    static let tenant = """
        {"accounts": [
          {"oid": "0a000000-0000-4000-8000-000000000001", "upn": "alice@contoso.com", "groups": ["g-a", "g-b"]},
          {"oid": "0a000000-0000-4000-8000-000000000002", "upn": "bob@contoso.com", "groups": ["g-b"]}
        ]}
        """
    static let alice = try! AccountID(validating: "alice@contoso.com")
    static let bob = try! AccountID(validating: "bob@contoso.com")
    static let now = Duration.seconds(1_800_000_000)

    static func policy(_ kind: String, _ name: String, group: String, _ members: String) -> String {
        """
        {"@odata.type": "#microsoft.graph.\(kind)ManagedAppProtection", "id": "\(name)", "displayName": "\(name)",
         "assignments": [{"target": {"@odata.type": "#microsoft.graph.groupAssignmentTarget", "groupId": "\(group)"}}]\(members.isEmpty ? "" : ", " + members)}
        """
    }

    static func snapshot(
        _ documents: [String], platform: Platform = .ios, precedence: PolicyPrecedence = .mostRestrictive
    ) throws -> PolicySnapshot {
        PolicySnapshot(
            bundle: try loadBundle(tenant: tenant, documents: documents),
            context: EvaluationContext(platform: platform),
            precedence: precedence)
    }

    /// Facts that pass everything but what a row sets.
    static func facts(_ configure: (inout LaunchFacts) -> Void = { _ in }) -> LaunchFacts {
        var facts = LaunchFacts()
        facts.lastCheckIn = now - .seconds(60)
        configure(&facts)
        return facts
    }

    struct VersionRow: Sendable, CustomTestStringConvertible {
        let setting: String
        let threshold: String
        let fact: LaunchFact
        let reported: String
        let outcome: LaunchOutcome
        var testDescription: String { "\(setting) \(threshold), \(fact) \(reported) → \(outcome)" }
    }

    @Test(
        "versions: below a required or warning minimum, at or below a wipe minimum, above a maximum",
        arguments: [
            VersionRow(
                setting: "minimumRequiredOsVersion", threshold: "16.1", fact: .osVersion, reported: "16.0.9",
                outcome: .block),
            VersionRow(
                setting: "minimumRequiredOsVersion", threshold: "16.1", fact: .osVersion, reported: "16.1",
                outcome: .allow),
            VersionRow(
                setting: "minimumRequiredOsVersion", threshold: "16.1", fact: .osVersion, reported: "16.1.0",
                outcome: .allow),
            VersionRow(
                setting: "minimumRequiredOsVersion", threshold: "1.9", fact: .osVersion, reported: "1.10",
                outcome: .allow),
            VersionRow(
                setting: "minimumRequiredOsVersion", threshold: "1.10", fact: .osVersion, reported: "1.9",
                outcome: .block),
            VersionRow(
                setting: "minimumWarningOsVersion", threshold: "17", fact: .osVersion, reported: "16.7", outcome: .warn),
            VersionRow(
                setting: "minimumWarningOsVersion", threshold: "17", fact: .osVersion, reported: "17.0", outcome: .allow
            ),
            VersionRow(
                setting: "minimumWipeOsVersion", threshold: "15.0", fact: .osVersion, reported: "15", outcome: .wipe),
            VersionRow(
                setting: "minimumWipeOsVersion", threshold: "15.0", fact: .osVersion, reported: "15.0.1",
                outcome: .allow),
            VersionRow(
                setting: "maximumRequiredOsVersion", threshold: "18.0", fact: .osVersion, reported: "18.0",
                outcome: .allow),
            VersionRow(
                setting: "maximumRequiredOsVersion", threshold: "18.0", fact: .osVersion, reported: "18.0.1",
                outcome: .block),
            VersionRow(
                setting: "maximumWarningOsVersion", threshold: "18", fact: .osVersion, reported: "19", outcome: .warn),
            VersionRow(
                setting: "maximumWipeOsVersion", threshold: "18", fact: .osVersion, reported: "26.1", outcome: .wipe),
            VersionRow(
                setting: "minimumRequiredAppVersion", threshold: "11.0.0.94", fact: .appVersion, reported: "11.0.0.93",
                outcome: .block),
            VersionRow(
                setting: "minimumWarningAppVersion", threshold: "2.0", fact: .appVersion, reported: "1.99.99",
                outcome: .warn),
            VersionRow(
                setting: "minimumWipeAppVersion", threshold: "2.0", fact: .appVersion, reported: "2.0.0.0",
                outcome: .wipe),
            VersionRow(
                setting: "minimumRequiredSdkVersion", threshold: "19.7.12", fact: .sdkVersion, reported: "19.7.9",
                outcome: .block),
            VersionRow(
                setting: "minimumWipeSdkVersion", threshold: "17.0", fact: .sdkVersion, reported: "20.4.0",
                outcome: .allow),
            // Graph, minimumWipeSdkVersion: "Versions less than the specified version will
            // wipe": the version itself does not (unlike the OS and app wipe minimums, "less
            // than or equal to").
            VersionRow(
                setting: "minimumWipeSdkVersion", threshold: "17.0", fact: .sdkVersion, reported: "17.0",
                outcome: .allow),
            VersionRow(
                setting: "minimumWipeSdkVersion", threshold: "17.0", fact: .sdkVersion, reported: "16.9",
                outcome: .wipe),
        ])
    func versionsIOS(row: VersionRow) throws {
        let snapshot = try Self.snapshot([
            Self.policy("ios", "P", group: "g-a", #""\#(row.setting)": "\#(row.threshold)""#)
        ])
        var facts = Self.facts()
        switch row.fact {
        case .osVersion: facts.osVersion = SoftwareVersion(row.reported)
        case .appVersion: facts.appVersion = SoftwareVersion(row.reported)
        default: facts.sdkVersion = SoftwareVersion(row.reported)
        }
        let decision = snapshot.launch(account: Self.alice, facts: facts, now: Self.now)
        #expect(decision.outcome == row.outcome, "\(decision.reason)")
        if row.outcome != .allow {
            let check = try #require(decision.checks.first)
            #expect(check.setting == row.setting)
            #expect(check.value == row.threshold)
            #expect(check.reported == row.reported)
            #expect(check.policy?.name == "P")
        } else {
            #expect(decision.checks.isEmpty)
        }
    }

    @Test(
        "Android: patch level, Company Portal, models, manufacturers, device lock, passcode, integrity, Knox",
        arguments: [
            (#""minimumRequiredPatchVersion": "2026-09-01""#, "patchVersion", "2026-08-05", LaunchOutcome.block),
            (#""minimumRequiredPatchVersion": "2026-09-01""#, "patchVersion", "2026-09-01", .allow),
            (#""minimumWipePatchVersion": "0000-00-00""#, "patchVersion", "2019-01-01", .allow),
            (#""minimumWarningCompanyPortalVersion": "5.0.6000""#, "companyPortalVersion", "5.0.5999", .warn),
            (
                #""allowedAndroidDeviceModels": ["Pixel 9", "SM-S921B"], "appActionIfAndroidDeviceModelNotAllowed": "wipe""#,
                "deviceModel", "pixel 9", .allow
            ),
            (
                #""allowedAndroidDeviceModels": ["Pixel 9"], "appActionIfAndroidDeviceModelNotAllowed": "wipe""#,
                "deviceModel", "Pixel 8", .wipe
            ),
            (
                #""allowedAndroidDeviceManufacturers": "Google;Samsung", "appActionIfAndroidDeviceManufacturerNotAllowed": "block""#,
                "deviceManufacturer", "samsung", .allow
            ),
            (#""allowedAndroidDeviceManufacturers": "Google;Samsung""#, "deviceManufacturer", "Xiaomi", .block),
            (#""deviceLockRequired": true, "appActionIfDeviceLockNotSet": "warn""#, "deviceLockSet", "false", .warn),
            (#""deviceLockRequired": true, "appActionIfDeviceLockNotSet": "warn""#, "deviceLockSet", "true", .allow),
            (#""appActionIfDevicePasscodeComplexityLessThanMedium": "block""#, "passcodeComplexity", "low", .block),
            (#""appActionIfDevicePasscodeComplexityLessThanMedium": "block""#, "passcodeComplexity", "high", .allow),
            (
                #""requiredAndroidSafetyNetDeviceAttestationType": "basicIntegrityAndDeviceCertification""#,
                "deviceIntegrity", "basicIntegrity", .block
            ),
            (
                #""requiredAndroidSafetyNetDeviceAttestationType": "basicIntegrity", "appActionIfAndroidSafetyNetDeviceAttestationFailed": "warn""#,
                "deviceIntegrity", "basicIntegrity", .allow
            ),
            (
                #""requiredAndroidSafetyNetAppsVerificationType": "enabled", "appActionIfAndroidSafetyNetAppsVerificationFailed": "warn""#,
                "appsVerified", "false", .warn
            ),
            (
                #""deviceComplianceRequired": true, "appActionIfDeviceComplianceRequired": "wipe""#, "rooted", "true",
                .wipe
            ),
            // Graph, minimumWipeCompanyPortalVersion: the version that "must be installed on
            // the device or app data will be wiped": at it, nothing; minimumWipePatchVersion:
            // "less than or equal to" wipes.
            (#""minimumWipeCompanyPortalVersion": "5.0""#, "companyPortalVersion", "5.0", .allow),
            (#""minimumWipeCompanyPortalVersion": "5.0""#, "companyPortalVersion", "4.9", .wipe),
            (#""minimumWipePatchVersion": "2026-01-01""#, "patchVersion", "2026-01-01", .wipe),
            // Android settings page, Conditional launch, "Non-working time" (Block access or
            // Warn), as on iOS (issue 46): clocked out, the configured action.
            (#""appActionIfAccountIsClockedOut": "block""#, "clockedOut", "true", .block),
            (#""appActionIfAccountIsClockedOut": "warn""#, "clockedOut", "true", .warn),
            (#""appActionIfAccountIsClockedOut": "block""#, "clockedOut", "false", .allow),
            // Graph: "either block or warn, if the user is clocked out": a wipe is read as block
            // (with a warning), never carried out for being off shift.
            (#""appActionIfAccountIsClockedOut": "wipe""#, "clockedOut", "true", .block),
        ])
    func android(members: String, fact: String, reported: String, outcome: LaunchOutcome) throws {
        let snapshot = try Self.snapshot([Self.policy("android", "A", group: "g-a", members)], platform: .android)
        let value = reported == "true" || reported == "false" ? reported : "\"\(reported)\""
        let facts = try Self.readFacts(#"{"lastCheckIn": "2027-01-15T07:59:00Z", "\#(fact)": \#(value)}"#)
        let decision = snapshot.launch(account: Self.alice, facts: facts, now: Self.now)
        #expect(decision.outcome == outcome, "\(decision.reason)")
    }

    @Test(
        "iOS device models, threat level, account state, PIN retries, clocked out, jailbreak",
        arguments: [
            (
                #""allowedIosDeviceModels": "iPhone15,2;iPad14,1", "appActionIfIosDeviceModelNotAllowed": "block""#,
                #""deviceModel": "iphone15,2""#, LaunchOutcome.allow
            ),
            (
                #""allowedIosDeviceModels": "iPhone15,2;iPad14,1", "appActionIfIosDeviceModelNotAllowed": "wipe""#,
                #""deviceModel": "iPhone12,1""#, .wipe
            ),
            (
                #""maximumAllowedDeviceThreatLevel": "low", "mobileThreatDefenseRemediationAction": "wipe""#,
                #""threatLevel": "low""#, .allow
            ),
            (
                #""maximumAllowedDeviceThreatLevel": "low", "mobileThreatDefenseRemediationAction": "wipe""#,
                #""threatLevel": "medium""#, .wipe
            ),
            (#""maximumAllowedDeviceThreatLevel": "secured""#, #""threatLevel": "low""#, .block),
            (#""maximumAllowedDeviceThreatLevel": "notConfigured""#, #""threatLevel": "high""#, .allow),
            (#""appActionIfUnableToAuthenticateUser": "wipe""#, #""accountState": "deleted""#, .wipe),
            (#""appActionIfUnableToAuthenticateUser": "block""#, #""accountState": "disabled""#, .block),
            (#""appActionIfUnableToAuthenticateUser": "block""#, #""accountState": "active""#, .allow),
            (#""appActionIfUnableToAuthenticateUser": null"#, #""accountState": "deleted""#, .allow),
            (
                #""pinRequired": true, "maximumPinRetries": 3, "appActionIfMaximumPinRetriesExceeded": "wipe""#,
                #""pinFailures": 2"#, .allow
            ),
            (
                #""pinRequired": true, "maximumPinRetries": 3, "appActionIfMaximumPinRetriesExceeded": "wipe""#,
                #""pinFailures": 3"#, .wipe
            ),
            (#""pinRequired": false, "maximumPinRetries": 3"#, #""pinFailures": 30"#, .allow),
            (#""appActionIfAccountIsClockedOut": "warn""#, #""clockedOut": true"#, .warn),
            (#""appActionIfAccountIsClockedOut": "block""#, #""clockedOut": false"#, .allow),
            (#""deviceComplianceRequired": true"#, #""jailbroken": true"#, .block),
            (
                #""deviceComplianceRequired": false, "appActionIfDeviceComplianceRequired": "wipe""#,
                #""jailbroken": true"#, .allow
            ),
            (
                #""appActionIfUnableToAuthenticateUser": "blockWhenSettingIsSupported""#,
                #""accountState": "disabled""#, .block
            ),
        ])
    func conditionsIOS(members: String, fact: String, outcome: LaunchOutcome) throws {
        let snapshot = try Self.snapshot([Self.policy("ios", "P", group: "g-a", members)])
        let facts = try Self.readFacts(#"{"lastCheckIn": "2027-01-15T07:59:00Z", \#(fact)}"#)
        let decision = snapshot.launch(account: Self.alice, facts: facts, now: Self.now)
        #expect(decision.outcome == outcome, "\(decision.reason)")
    }

    @Test(
        "offline grace: block from periodOfflineBeforeAccessCheck, wipe from periodOfflineBeforeWipeIsEnforced",
        arguments: [
            (Int64(3_599), LaunchOutcome.allow), (3_600, .block), (86_399, .block), (86_400, .wipe), (-300, .allow),
        ] as [(Int64, LaunchOutcome)])
    func offline(seconds: Int64, outcome: LaunchOutcome) throws {
        let snapshot = try Self.snapshot([
            Self.policy(
                "ios", "P", group: "g-a",
                #""periodOfflineBeforeAccessCheck": "PT1H", "periodOfflineBeforeWipeIsEnforced": "P1D""#)
        ])
        let facts = Self.facts { $0.lastCheckIn = Self.now - .seconds(seconds) }
        let launch = snapshot.launch(account: Self.alice, facts: facts, now: Self.now)
        #expect(launch.outcome == outcome, "\(launch.reason)")
        // The launch decision and the offlineAccess decision agree.
        let offline = snapshot.offlineAccess(account: Self.alice, offlineFor: .seconds(seconds))
        #expect(offline.isAllowed == (outcome == .allow))
    }

    @Test(
        "a check-in more than five minutes after now is not believed: it blocks, whatever missing facts say",
        arguments: [(Int64(301), MissingFacts.strict), (86_400 * 365, .ignore)] as [(Int64, MissingFacts)])
    func futureCheckIn(ahead: Int64, missing: MissingFacts) throws {
        let snapshot = try Self.snapshot([Self.policy("ios", "P", group: "g-a", "")])
        let facts = Self.facts { $0.lastCheckIn = Self.now + .seconds(ahead) }
        let launch = snapshot.launch(account: Self.alice, facts: facts, now: Self.now, missingFacts: missing)
        #expect(launch.outcome == .block, "\(launch.reason)")
        #expect(launch.checks.first?.requirement.contains("lastCheckIn not after") == true)
        // offlineAccess, asked for the same time offline, agrees.
        #expect(
            snapshot.offlineAccess(account: Self.alice, offlineFor: .seconds(-ahead)).offlineState == .accessBlocked)
    }

    static let everything = #"""
        "minimumRequiredOsVersion": "16.0", "minimumWipeAppVersion": "1.0", "deviceComplianceRequired": true,
        "maximumAllowedDeviceThreatLevel": "medium", "appActionIfUnableToAuthenticateUser": "block",
        "pinRequired": true, "maximumPinRetries": 5, "appActionIfAccountIsClockedOut": "warn"
        """#

    @Test(
        "each fact missing: reported, and counted as its check's action, a wipe as a block, unless missing facts are ignored",
        arguments: LaunchFact.allCases.filter {
            [
                .osVersion, .appVersion, .jailbroken, .threatLevel, .accountState, .pinFailures, .clockedOut,
                .lastCheckIn,
            ]
            .contains($0)
        })
    func missing(fact: LaunchFact) throws {
        let snapshot = try Self.snapshot([Self.policy("ios", "P", group: "g-a", Self.everything)])
        var all = try Self.readFacts(
            #"{"osVersion": "17.1", "appVersion": "2.0", "jailbroken": false, "threatLevel": "low", "accountState": "active", "pinFailures": 0, "clockedOut": false, "lastCheckIn": "2027-01-15T07:00:00Z"}"#
        )
        #expect(snapshot.launch(account: Self.alice, facts: all, now: Self.now).outcome == .allow)
        switch fact {
        case .osVersion: all.osVersion = nil
        case .appVersion: all.appVersion = nil
        case .jailbroken: all.jailbroken = nil
        case .threatLevel: all.threatLevel = nil
        case .accountState: all.accountState = nil
        case .pinFailures: all.pinFailures = nil
        case .clockedOut: all.clockedOut = nil
        default: all.lastCheckIn = nil
        }
        let strict = snapshot.launch(account: Self.alice, facts: all, now: Self.now)
        // appVersion (minimumWipeAppVersion) and lastCheckIn (the P90D wipe period) would wipe
        // on a reported value; missing, they block: a missing fact never wipes.
        let expected: LaunchOutcome = fact == .clockedOut ? .warn : .block
        #expect(strict.outcome == expected, "\(strict.reason)")
        #expect(strict.missingFacts == [fact])
        #expect(!strict.wipeIsConfirmed)
        #expect(strict.reason.contains("needs \(fact), which was not given: counted as failed"))
        let ignoring = snapshot.launch(account: Self.alice, facts: all, now: Self.now, missingFacts: .ignore)
        #expect(ignoring.outcome == .allow)
        #expect(ignoring.missingFacts == [fact])
        #expect(ignoring.checks.allSatisfy { !$0.counts })
    }

    @Test("several policies: every policy's checks are made, the most severe action wins, ordered wipe, block, warn")
    func severalPolicies() throws {
        let snapshot = try Self.snapshot([
            Self.policy("ios", "Warns", group: "g-a", #""minimumWarningOsVersion": "17.0""#),
            Self.policy("ios", "Blocks", group: "g-b", #""minimumRequiredOsVersion": "17.0""#),
            Self.policy("ios", "Wipes", group: "g-a", #""minimumWipeOsVersion": "15.0""#),
        ])
        let old = Self.facts { $0.osVersion = SoftwareVersion("14.8") }
        let alice = snapshot.launch(account: Self.alice, facts: old, now: Self.now)
        #expect(alice.outcome == .wipe)
        #expect(alice.checks.map(\.outcome) == [.wipe, .block, .warn])
        #expect(alice.checks.map { $0.policy?.name } == ["Wipes", "Blocks", "Warns"])
        #expect(alice.wipeIsConfirmed)
        let middling = Self.facts { $0.osVersion = SoftwareVersion("16.4") }
        #expect(snapshot.launch(account: Self.alice, facts: middling, now: Self.now).outcome == .block)
        // Bob is reached by the blocking policy only.
        #expect(snapshot.launch(account: Self.bob, facts: old, now: Self.now).outcome == .block)
        // An account outside the tenant is unmanaged: allowed.
        let outsider = try AccountID(validating: "eve@fabrikam.com")
        #expect(snapshot.launch(account: outsider, facts: old, now: Self.now).outcome == .allow)
    }

    @Test("incumbent precedence: a policy that reached the account later is set aside, with its launch checks")
    func incumbent() throws {
        let documents = [
            Self.policy("ios", "First", group: "g-a", #""minimumWarningOsVersion": "17.0""#),
            Self.policy("ios", "Later", group: "g-b", #""minimumWipeOsVersion": "16.0""#),
        ]
        let key = "0a000000-0000-4000-8000-000000000001"
        let precedence = PolicyPrecedence(rule: .incumbent, firstReached: [key: ["First": 1, "Later": 2]])
        let facts = Self.facts { $0.osVersion = SoftwareVersion("15.1") }
        let incumbent = try Self.snapshot(documents, precedence: precedence)
        #expect(incumbent.launch(account: Self.alice, facts: facts, now: Self.now).outcome == .warn)
        let merged = try Self.snapshot(documents)
        #expect(merged.launch(account: Self.alice, facts: facts, now: Self.now).outcome == .wipe)
    }

    @Test("a default policy's iOS checks are not made on Android, and its Android checks not on iOS")
    func defaultPolicyPlatforms() throws {
        let document = """
            {"@odata.type": "#microsoft.graph.defaultManagedAppProtection", "displayName": "D",
             "allowedIosDeviceModels": "iPhone15,2", "allowedAndroidDeviceManufacturers": "Google"}
            """
        for (platform, model, maker, outcome) in [
            (Platform.ios, "iPhone15,2", "Samsung", LaunchOutcome.allow), (.ios, "iPhone9,1", "Google", .block),
            (.android, "iPhone9,1", "google", .allow), (.android, "Pixel", "Samsung", .block),
        ] {
            let snapshot = try Self.snapshot([document], platform: platform)
            let facts = Self.facts {
                $0.deviceModel = model
                $0.deviceManufacturer = maker
            }
            #expect(snapshot.launch(account: Self.alice, facts: facts, now: Self.now).outcome == outcome)
        }
    }

    @Test(
        "versions compare as numbers, component by component",
        arguments: [
            ("1.10", "1.9", 1), ("16", "16.0.0", 0), ("2026-09-01", "2026-08-31", 1), ("11.0.0.94", "11.0.0.100", -1),
            ("0.0", "0", 0),
        ])
    func versionOrder(lhs: String, rhs: String, order: Int) throws {
        let left = try #require(SoftwareVersion(lhs))
        let right = try #require(SoftwareVersion(rhs))
        #expect((left < right ? -1 : left == right ? 0 : 1) == order)
    }

    @Test(
        "what is not a version is refused",
        arguments: ["", "1.", ".1", "1..2", "v1.2", "1.2-3", "1234567890", "1.2.3.4.5.6.7.8.9", "16.1 (20B82)"])
    func notVersions(text: String) {
        #expect(SoftwareVersion(text) == nil)
    }

    @Test(
        "a policy's bad version is an error naming where it is",
        arguments: [#""minimumRequiredOsVersion": "sixteen""#, #""maximumWipeOsVersion": "16.x""#])
    func badPolicyVersion(members: String) {
        #expect(throws: BundleError.self) {
            try PolicyBundle.load(
                tenant: nil,
                documents: [
                    PolicyBundle.File(
                        name: "p.json", bytes: Array(Self.policy("ios", "P", group: "g-a", members).utf8))
                ])
        }
    }

    @Test(
        "facts: bad values are errors naming the fact",
        arguments: [
            (#"{"osVersion": 17}"#, "osVersion"), (#"{"threatLevel": "notConfigured"}"#, "threatLevel"),
            (#"{"accountState": "gone"}"#, "accountState"), (#"{"pinFailures": -1}"#, "pinFailures"),
            (#"{"jailbroken": "no"}"#, "jailbroken"), (#"{"rooted": true, "jailbroken": false}"#, "more than once"),
            (#"{"colour": "red"}"#, "unknown fact 'colour'"), (#"{"lastCheckIn": "yesterday"}"#, "lastCheckIn"),
            (#"[]"#, "must be an object"),
        ])
    func badFacts(json: String, message: String) {
        do {
            _ = try Self.readFacts(json)
            Issue.record("accepted \(json)")
        } catch {
            #expect("\(error)".contains(message), "\(error)")
        }
    }

    /// A wipe-capable check: the policy members that configure it with a wipe, the fact it
    /// reads, and a reported value that fails it.
    struct WipeRow: Sendable, CustomTestStringConvertible {
        let platform: Platform
        let members: String
        let fact: LaunchFact
        let failing: String
        /// Other facts given in both queries (JSON members), such as the manufacturer a Knox
        /// check needs before it reads the attestation.
        var also: String = ""
        var testDescription: String { "\(platform) \(fact)" }
    }

    static let wipeRows: [WipeRow] = [
        WipeRow(platform: .ios, members: #""minimumWipeOsVersion": "16.0""#, fact: .osVersion, failing: #""15.0""#),
        WipeRow(platform: .ios, members: #""minimumWipeAppVersion": "2.0""#, fact: .appVersion, failing: #""1.0""#),
        WipeRow(platform: .ios, members: #""minimumWipeSdkVersion": "19.0""#, fact: .sdkVersion, failing: #""18.0""#),
        WipeRow(
            platform: .android, members: #""minimumWipePatchVersion": "2026-01-01""#, fact: .patchVersion,
            failing: #""2025-01-01""#),
        WipeRow(
            platform: .android, members: #""minimumWipeCompanyPortalVersion": "5.0""#, fact: .companyPortalVersion,
            failing: #""4.0""#),
        WipeRow(
            platform: .ios,
            members: #""deviceComplianceRequired": true, "appActionIfDeviceComplianceRequired": "wipe""#,
            fact: .jailbroken, failing: "true"),
        WipeRow(
            platform: .ios,
            members: #""pinRequired": true, "maximumPinRetries": 5, "appActionIfMaximumPinRetriesExceeded": "wipe""#,
            fact: .pinFailures, failing: "5"),
        WipeRow(
            platform: .ios, members: #""appActionIfUnableToAuthenticateUser": "wipe""#, fact: .accountState,
            failing: #""disabled""#),
        WipeRow(
            platform: .ios,
            members: #""maximumAllowedDeviceThreatLevel": "low", "mobileThreatDefenseRemediationAction": "wipe""#,
            fact: .threatLevel, failing: #""high""#),
        WipeRow(
            platform: .ios,
            members: #""allowedIosDeviceModels": "iPhone15,2", "appActionIfIosDeviceModelNotAllowed": "wipe""#,
            fact: .deviceModel, failing: #""iPad13,1""#),
        WipeRow(
            platform: .android,
            members:
                #""allowedAndroidDeviceManufacturers": "Samsung", "appActionIfAndroidDeviceManufacturerNotAllowed": "wipe""#,
            fact: .deviceManufacturer, failing: #""Google""#),
        WipeRow(
            platform: .ios, members: #""periodOfflineBeforeWipeIsEnforced": "P30D""#, fact: .lastCheckIn,
            failing: #""2026-01-01T00:00:00Z""#),
        WipeRow(platform: .ios, members: #""maximumWipeOsVersion": "18.0""#, fact: .osVersion, failing: #""26.1""#),
        WipeRow(
            platform: .android, members: #""deviceLockRequired": true, "appActionIfDeviceLockNotSet": "wipe""#,
            fact: .deviceLockSet, failing: "false"),
        WipeRow(
            platform: .android, members: #""appActionIfDevicePasscodeComplexityLessThanLow": "wipe""#,
            fact: .passcodeComplexity, failing: #""none""#),
        WipeRow(
            platform: .android,
            members:
                #""requiredAndroidSafetyNetDeviceAttestationType": "basicIntegrity", "appActionIfAndroidSafetyNetDeviceAttestationFailed": "wipe""#,
            fact: .deviceIntegrity, failing: #""none""#),
        WipeRow(
            platform: .android,
            members:
                #""requiredAndroidSafetyNetDeviceAttestationType": "basicIntegrity", "requiredAndroidSafetyNetEvaluationType": "hardwareBacked", "appActionIfAndroidSafetyNetDeviceAttestationFailed": "wipe""#,
            fact: .integrityEvaluationType, failing: #""basic""#),
        WipeRow(
            platform: .android, members: #""appActionIfSamsungKnoxAttestationRequired": "wipe""#, fact: .knoxAttested,
            failing: "false", also: #""deviceManufacturer": "samsung""#),
        WipeRow(
            platform: .android, members: #""wipeAfterCompanyPortalUpdateDeferralInDays": 60"#,
            fact: .companyPortalVersionAgeDays, failing: "61"),
    ]

    /// The product's fail-closed rule (issue 46): absence of evidence blocks and destroys
    /// nothing; a wipe is answered only on a reported value that calls for it.
    @Test(
        "a missing fact never wipes: each wipe-capable check blocks without its fact and wipes on a failing one",
        arguments: wipeRows)
    func missingNeverWipes(row: WipeRow) throws {
        let snapshot = try Self.snapshot(
            [Self.policy(row.platform.rawValue, "P", group: "g-a", row.members)], platform: row.platform)
        var given = try Self.readFacts("{\(row.also)}")
        given.lastCheckIn = row.fact == .lastCheckIn ? nil : Self.now - .seconds(60)
        let missing = snapshot.launch(account: Self.alice, facts: given, now: Self.now)
        let check = try #require(missing.checks.first { $0.fact == row.fact }, "\(missing.reason)")
        #expect(check.isMissing)
        #expect(check.outcome == .block)
        #expect(missing.outcome == .block, "\(missing.reason)")
        #expect(!missing.checks.contains { $0.outcome == .wipe })
        #expect(missing.reason.contains("a missing fact never wipes"))

        var reported = try Self.readFacts(
            #"{"\#(row.fact.rawValue)": \#(row.failing)\#(row.also.isEmpty ? "" : ", " + row.also)}"#)
        if row.fact != .lastCheckIn { reported.lastCheckIn = Self.now - .seconds(60) }
        let failed = snapshot.launch(account: Self.alice, facts: reported, now: Self.now, missingFacts: .ignore)
        #expect(failed.outcome == .wipe, "\(failed.reason)")
        #expect(failed.wipeIsConfirmed)
    }

    /// Microsoft's conflicts rule: "numeric entry fields, such as PIN attempts before reset ...
    /// are set the same as the values, as if you created a MAM policy using the recommended
    /// settings option" (the iOS settings page: Max PIN attempts "Default value = 5"; Offline
    /// grace period, Block access "Default value = 1440 minutes"). The action, a choice, is the
    /// most restrictive. The answer credits no policy with the recommended value.
    @Test(
        "numbers in conflict take the recommended value: PIN attempts 5 with the most restrictive action, offline 24 hours",
        arguments: [
            (#""pinFailures": 4"#, LaunchOutcome.allow), (#""pinFailures": 5"#, .wipe),
        ])
    func numericConflicts(facts: String, outcome: LaunchOutcome) throws {
        let snapshot = try Self.snapshot([
            Self.policy(
                "ios", "A", group: "g-a",
                #""pinRequired": true, "maximumPinRetries": 3, "appActionIfMaximumPinRetriesExceeded": "block", "periodOfflineBeforeAccessCheck": "PT1H""#
            ),
            Self.policy(
                "ios", "B", group: "g-b",
                #""pinRequired": true, "maximumPinRetries": 10, "appActionIfMaximumPinRetriesExceeded": "wipe", "periodOfflineBeforeAccessCheck": "PT2H""#
            ),
        ])
        var reported = try Self.readFacts("{\(facts)}")
        reported.lastCheckIn = Self.now - .seconds(3 * 3_600)
        let decision = snapshot.launch(account: Self.alice, facts: reported, now: Self.now, missingFacts: .ignore)
        #expect(decision.outcome == outcome, "\(decision.reason)")
        if outcome == .wipe {
            let check = try #require(decision.decidingCheck)
            #expect(check.setting == "maximumPinRetries")
            #expect(check.value == "5")
            #expect(check.policy == nil, "no policy set 5")
            #expect(
                decision.reason.contains("(recommended value; policies disagree: 'A' 3, 'B' 10)"), "\(decision.reason)")
        }
        // 25 hours offline: past the recommended 24, blocked, credited to no policy.
        reported.lastCheckIn = Self.now - .seconds(25 * 3_600)
        reported.pinFailures = 0
        let offline = snapshot.launch(account: Self.alice, facts: reported, now: Self.now, missingFacts: .ignore)
        #expect(offline.outcome == .block)
        #expect(offline.decidingCheck?.policy == nil)
        #expect(
            offline.reason.contains("recommended value; policies disagree: 'A' PT1H, 'B' PT2H"), "\(offline.reason)")
        // The offlineAccess answer agrees, and credits no policy either.
        let access = snapshot.offlineAccess(account: Self.alice, offlineFor: .seconds(25 * 3_600))
        #expect(!access.isAllowed)
        #expect(access.sourcePolicies.isEmpty, "\(access.sourcePolicies)")
        #expect(access.reason.contains("recommended value; policies disagree: 'A' PT1H, 'B' PT2H"), "\(access.reason)")
    }

    static func readFacts(_ json: String) throws -> LaunchFacts {
        let document = try JSONDocument(parsing: Array(json.utf8))
        return try LaunchFacts(json: document.root)
    }
}
