import CustodyPolicy
import Testing

@Suite("Decision: print, backup, screen capture, notifications, encryption")
struct AccountSettingsTests {
    @Test(
        "print and backup follow their flags; unmanaged accounts are free",
        arguments: [(true as Bool?, false, "is true"), (false, true, "is false (from"), (nil, true, "is false (Intune default")])
    func flags(blocked: Bool?, allowed: Bool, reason: String) {
        let snapshot = World.snapshot(owner: .with { $0.printBlocked = blocked; $0.dataBackupBlocked = blocked })
        let print = snapshot.print(account: World.owner)
        #expect(print.isAllowed == allowed)
        #expect(print.reason.contains("printBlocked \(reason)"), "\(print.reason)")
        #expect(print.settingName == "printBlocked")
        let backup = snapshot.backup(account: World.ownerByOID)
        #expect(backup.isAllowed == allowed)
        #expect(backup.reason.contains("dataBackupBlocked \(reason)"), "\(backup.reason)")
        for account in [World.bystander, World.outsider] {
            #expect(snapshot.print(account: account).isAllowed)
            #expect(snapshot.backup(account: account).isAllowed)
        }
        #expect(snapshot.print(account: nil).reason == "the account is not managed: no protection policy applies to it")
    }

    @Test(
        "notifications: allowed only for allow, with the restriction on the decision",
        arguments: [
            (NotificationRestriction.allow as NotificationRestriction?, true, NotificationRestriction.allow),
            (.blockOrganizationalData, false, .blockOrganizationalData),
            (.block, false, .block),
            (nil, true, .allow),
        ])
    func notifications(restriction: NotificationRestriction?, allowed: Bool, expected: NotificationRestriction) {
        let snapshot = World.snapshot(owner: .with { $0.notificationRestriction = restriction })
        let decision = snapshot.notifications(account: World.owner)
        #expect(decision.isAllowed == allowed)
        #expect(decision.notificationRestriction == expected)
        #expect(decision.reason.contains("notificationRestriction is \(expected)"))
        #expect(snapshot.notifications(account: World.outsider).notificationRestriction == .allow)
        #expect(snapshot.print(account: World.owner).notificationRestriction == nil)
    }

    struct TwoPlatformRow: CustomTestStringConvertible, Sendable {
        let ios: String?
        let android: Bool?
        let platform: Platform?
        let result: Bool
        let setting: String
        var testDescription: String { "iOS \(ios ?? "-"), Android \(android.map(String.init) ?? "-"), on \(platform?.rawValue ?? "any") → \(result)" }
    }

    /// The account is reached by an iOS policy and an Android policy.
    private func twoPlatforms(ios: ProtectionSettings, android: ProtectionSettings, platform: Platform?) -> PolicySnapshot {
        func policy(_ index: Int, _ kind: PolicyKind, _ settings: ProtectionSettings) -> ProtectionPolicy {
            ProtectionPolicy(
                reference: PolicyReference(index: index, id: nil, displayName: kind.rawValue, kind: kind, location: DocumentLocation(file: "t", line: 1, column: 1)),
                settings: settings, targeting: PolicyTargeting())
        }
        let bundle = PolicyBundle(
            tenant: World.tenant,
            protectionPolicies: [policy(0, .iosManagedAppProtection, ios), policy(1, .androidManagedAppProtection, android)])
        return PolicySnapshot(bundle: bundle, context: EvaluationContext(platform: platform))
    }

    static let encryptionRows: [TwoPlatformRow] = [
        TwoPlatformRow(ios: "whenDeviceLocked", android: false, platform: .ios, result: true, setting: "appDataEncryptionType"),
        TwoPlatformRow(ios: "useDeviceSettings", android: true, platform: .ios, result: false, setting: "appDataEncryptionType"),
        TwoPlatformRow(ios: nil, android: false, platform: .ios, result: true, setting: "appDataEncryptionType"),
        TwoPlatformRow(ios: "useDeviceSettings", android: true, platform: .android, result: true, setting: "encryptAppData"),
        TwoPlatformRow(ios: "whenDeviceLocked", android: false, platform: .android, result: false, setting: "encryptAppData"),
        TwoPlatformRow(ios: "whenDeviceLocked", android: nil, platform: .android, result: true, setting: "encryptAppData"),
        TwoPlatformRow(ios: "useDeviceSettings", android: true, platform: nil, result: true, setting: "encryptAppData"),
        TwoPlatformRow(ios: "afterDeviceRestart", android: false, platform: nil, result: true, setting: "appDataEncryptionType"),
        TwoPlatformRow(ios: "useDeviceSettings", android: false, platform: nil, result: false, setting: "appDataEncryptionType"),
        TwoPlatformRow(ios: "useDeviceSettings", android: nil, platform: nil, result: false, setting: "appDataEncryptionType"),
        TwoPlatformRow(ios: nil, android: false, platform: nil, result: false, setting: "encryptAppData"),
        TwoPlatformRow(ios: nil, android: nil, platform: nil, result: true, setting: "appDataEncryptionType"),
    ]

    @Test("encryption required: iOS appDataEncryptionType, Android encryptAppData", arguments: encryptionRows)
    func encryption(row: TwoPlatformRow) {
        let snapshot = twoPlatforms(
            ios: .with { $0.appDataEncryptionType = row.ios.flatMap(DataEncryptionType.init(rawValue:)) },
            android: .with { $0.encryptAppData = row.android }, platform: row.platform)
        let decision = snapshot.encryptionRequired(account: World.owner)
        #expect(decision.isAllowed == row.result)
        #expect(decision.settingName == row.setting)
        #expect(decision.reason.contains("encryption of the account's data is \(row.result ? "required" : "not required")"))
        #expect(!snapshot.encryptionRequired(account: World.outsider).isAllowed)
    }

    static let screenRows: [TwoPlatformRow] = [
        TwoPlatformRow(ios: "blocked", android: false, platform: .ios, result: false, setting: "screenCaptureConfigurationState"),
        TwoPlatformRow(ios: "notBlocked", android: true, platform: .ios, result: true, setting: "screenCaptureConfigurationState"),
        TwoPlatformRow(ios: nil, android: true, platform: .ios, result: true, setting: "screenCaptureConfigurationState"),
        TwoPlatformRow(ios: "blocked", android: false, platform: .android, result: true, setting: "screenCaptureBlocked"),
        TwoPlatformRow(ios: nil, android: true, platform: .android, result: false, setting: "screenCaptureBlocked"),
        TwoPlatformRow(ios: "blocked", android: false, platform: nil, result: false, setting: "screenCaptureConfigurationState"),
        TwoPlatformRow(ios: "notBlocked", android: true, platform: nil, result: false, setting: "screenCaptureBlocked"),
        TwoPlatformRow(ios: "notBlocked", android: false, platform: nil, result: true, setting: "screenCaptureBlocked"),
    ]

    @Test("screen capture: Android screenCaptureBlocked, iOS screenCaptureConfigurationState", arguments: screenRows)
    func screenCapture(row: TwoPlatformRow) {
        let snapshot = twoPlatforms(
            ios: .with { $0.screenCaptureConfigurationState = row.ios.flatMap(ScreenCaptureState.init(rawValue:)) },
            android: .with { $0.screenCaptureBlocked = row.android }, platform: row.platform)
        let decision = snapshot.screenCapture(account: World.owner)
        #expect(decision.isAllowed == row.result)
        #expect(decision.settingName == row.setting)
        #expect(snapshot.screenCapture(account: World.outsider).isAllowed)
    }
}
