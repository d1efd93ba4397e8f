import CustodyPolicy
import Testing

@Suite("Decision: print, backup, screen capture, notifications, encryption")
struct AccountSettingsTests {
    @Test(
        "print and backup follow their flags; unmanaged accounts are free",
        arguments: [
            (true as Bool?, false, "is true"), (false, true, "is false (from"), (nil, true, "is false (Intune default"),
        ])
    func flags(blocked: Bool?, allowed: Bool, reason: String) {
        let snapshot = World.snapshot(
            owner: .with {
                $0.printBlocked = blocked; $0.dataBackupBlocked = blocked
            })
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
        var testDescription: String {
            "iOS \(ios ?? "-"), Android \(android.map(String.init) ?? "-"), on \(platform?.rawValue ?? "any") → \(result)"
        }
    }

    /// The account is reached by an iOS policy and an Android policy.
    private func twoPlatforms(ios: ProtectionSettings, android: ProtectionSettings, platform: Platform?)
        -> PolicySnapshot
    {
        func policy(_ index: Int, _ kind: PolicyKind, _ settings: ProtectionSettings) -> ProtectionPolicy {
            ProtectionPolicy(
                reference: PolicyReference(
                    index: index, id: nil, displayName: kind.rawValue, kind: kind,
                    location: DocumentLocation(file: "t", line: 1, column: 1)),
                settings: settings, targeting: PolicyTargeting())
        }
        let bundle = PolicyBundle(
            tenant: World.tenant,
            protectionPolicies: [
                policy(0, .iosManagedAppProtection, ios), policy(1, .androidManagedAppProtection, android),
            ])
        return PolicySnapshot(bundle: bundle, context: EvaluationContext(platform: platform))
    }

    static let encryptionRows: [TwoPlatformRow] = [
        TwoPlatformRow(
            ios: "whenDeviceLocked", android: false, platform: .ios, result: true, setting: "appDataEncryptionType"),
        TwoPlatformRow(
            ios: "useDeviceSettings", android: true, platform: .ios, result: false, setting: "appDataEncryptionType"),
        TwoPlatformRow(ios: nil, android: false, platform: .ios, result: true, setting: "appDataEncryptionType"),
        TwoPlatformRow(
            ios: "useDeviceSettings", android: true, platform: .android, result: true, setting: "encryptAppData"),
        TwoPlatformRow(
            ios: "whenDeviceLocked", android: false, platform: .android, result: false, setting: "encryptAppData"),
        TwoPlatformRow(
            ios: "whenDeviceLocked", android: nil, platform: .android, result: true, setting: "encryptAppData"),
    ]

    @Test("encryption required: iOS appDataEncryptionType, Android encryptAppData", arguments: encryptionRows)
    func encryption(row: TwoPlatformRow) {
        let snapshot = twoPlatforms(
            ios: .with { $0.appDataEncryptionType = row.ios.flatMap(DataEncryptionType.init(rawValue:)) },
            android: .with { $0.encryptAppData = row.android }, platform: row.platform)
        let decision = snapshot.encryptionRequired(account: World.owner)
        #expect(decision.isAllowed == row.result)
        #expect(decision.settingName == row.setting)
        #expect(
            decision.reason.contains("encryption of the account's data is \(row.result ? "required" : "not required")"))
        #expect(!snapshot.encryptionRequired(account: World.outsider).isAllowed)
    }

    static let screenRows: [TwoPlatformRow] = [
        TwoPlatformRow(
            ios: "blocked", android: false, platform: .ios, result: false, setting: "screenCaptureConfigurationState"),
        TwoPlatformRow(
            ios: "notBlocked", android: true, platform: .ios, result: true, setting: "screenCaptureConfigurationState"),
        TwoPlatformRow(
            ios: nil, android: true, platform: .ios, result: true, setting: "screenCaptureConfigurationState"),
        TwoPlatformRow(
            ios: "blocked", android: false, platform: .android, result: true, setting: "screenCaptureBlocked"),
        TwoPlatformRow(ios: nil, android: true, platform: .android, result: false, setting: "screenCaptureBlocked"),
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

    /// A decision is for one platform: with iOS and Android policies and no platform named,
    /// every decision about a managed account is refused (the most restrictive answer) and
    /// says why; an account no policy reaches is still unmanaged.
    @Test("with policies of both platforms and no platform, decisions about managed accounts are refused")
    func noPlatform() {
        let snapshot = twoPlatforms(
            ios: .with { $0.printBlocked = false }, android: .with { $0.printBlocked = false }, platform: nil)
        #expect(snapshot.isPlatformAmbiguous)
        let decisions = [
            snapshot.print(account: World.owner), snapshot.encryptionRequired(account: World.owner),
            snapshot.screenCapture(account: World.owner),
            snapshot.notifications(account: World.owner), snapshot.appSharing(account: World.owner),
            snapshot.copyOut(owner: World.owner, destinationManaged: true, length: 1),
            snapshot.saveTo(owner: World.owner, location: .dropbox, locationAccount: nil),
            snapshot.receive(receiver: World.outsider, dataOwner: World.owner),
        ]
        for decision in decisions {
            #expect(decision.isRefusal)
            #expect(decision.isAllowed == (decision.action == .encryptionRequired), "\(decision.action)")
            #expect(decision.reason.contains("iOS and Android settings are never merged"))
            #expect(decision.settingName == nil)
        }
        #expect(snapshot.print(account: World.outsider).isAllowed)
        #expect(throws: QueryError.self) { try snapshot.checkPlatform() }
        #expect(throws: PlatformError.self) { try snapshot.bundle.platform(for: snapshot.context) }
        // A bundle of one platform's policies implies it.
        let ios = World.snapshot(owner: .with { $0.printBlocked = true }, context: EvaluationContext())
        #expect(!ios.isPlatformAmbiguous)
        #expect(ios.context.platform == .ios)
        #expect(!ios.print(account: World.owner).isAllowed)
    }

    struct LevelRow: CustomTestStringConvertible, Sendable {
        let action: DecisionAction
        let send: DataTransferLevel?
        let allowed: Bool
        let reason: String
        var testDescription: String { "\(action) with send \(send?.rawValue ?? "-") → \(allowed ? "allow" : "block")" }
    }

    /// isAppSharingAllowed: blocked only by Send None. Siri, App Intents and Spotlight: "blocked
    /// unless set to All apps" (iOS settings reference).
    static let levelRows: [LevelRow] = [
        LevelRow(
            action: .appSharing, send: .allApps, allowed: true,
            reason:
                "allowedOutboundDataTransferDestinations is allApps: sharing through the system share sheet is allowed"),
        LevelRow(
            action: .appSharing, send: .managedApps, allowed: true,
            reason:
                "is managedApps: sharing through the system share sheet is allowed, to the targets a share decision allows"
        ),
        LevelRow(
            action: .appSharing, send: DataTransferLevel.none, allowed: false,
            reason: "is none: sharing through the system share sheet is blocked"),
        LevelRow(action: .appSharing, send: nil, allowed: true, reason: "(Intune default"),
        LevelRow(
            action: .appIntents, send: .allApps, allowed: true,
            reason: "is allApps: Siri, App Intents and Spotlight may use org data"),
        LevelRow(
            action: .appIntents, send: .managedApps, allowed: false,
            reason: "is managedApps: Siri, App Intents and Spotlight are blocked unless it is allApps"),
        LevelRow(
            action: .appIntents, send: DataTransferLevel.none, allowed: false,
            reason: "are blocked unless it is allApps"),
        LevelRow(action: .appIntents, send: nil, allowed: true, reason: "(Intune default"),
    ]

    @Test("app sharing and app intents follow the send level", arguments: levelRows, Platform.allCases)
    func levels(row: LevelRow, platform: Platform) {
        let snapshot = World.snapshot(
            owner: .with { $0.allowedOutboundDataTransferDestinations = row.send },
            kind: platform.protectionKind,
            context: EvaluationContext(platform: platform))
        let decision =
            row.action == .appSharing
            ? snapshot.appSharing(account: World.owner) : snapshot.appIntents(account: World.owner)
        #expect(decision.action == row.action)
        #expect(decision.isAllowed == row.allowed)
        #expect(decision.reason.contains(row.reason), "\(decision.reason)")
        #expect(decision.settingName == "allowedOutboundDataTransferDestinations")
        let unmanaged =
            row.action == .appSharing
            ? snapshot.appSharing(account: World.outsider) : snapshot.appIntents(account: World.outsider)
        #expect(unmanaged.isAllowed)
    }

    @Test("contact sync follows contactSyncBlocked", arguments: [(true as Bool?, false), (false, true), (nil, true)])
    func contactSync(blocked: Bool?, allowed: Bool) {
        let snapshot = World.snapshot(owner: .with { $0.contactSyncBlocked = blocked })
        let decision = snapshot.contactSync(account: World.owner)
        #expect(decision.isAllowed == allowed)
        #expect(decision.settingName == "contactSyncBlocked")
        #expect(decision.reason.contains("contactSyncBlocked is \(!allowed)"))
        #expect(snapshot.contactSync(account: World.bystander).isAllowed)
    }

    /// Android "Encrypt org data on enrolled devices: Not required": no app-level encryption on
    /// an enrolled device; an unknown management level is not enrolled.
    @Test(
        "Android encryption is waived on enrolled devices only when the policy says so",
        arguments: [
            (true as Bool?, AppManagementLevel.mdm as AppManagementLevel?, false),
            (true, .androidEnterprise, false),
            (true, .unmanaged, true),
            (true, nil, true),
            (false, .mdm, true),
            (nil, .mdm, true),
        ] as [(Bool?, AppManagementLevel?, Bool)])
    func enrolledDevice(waived: Bool?, level: AppManagementLevel?, required: Bool) {
        let snapshot = World.snapshot(
            owner: .with {
                $0.encryptAppData = true; $0.disableAppEncryptionIfDeviceEncryptionIsEnabled = waived
            },
            kind: .androidManagedAppProtection, context: EvaluationContext(platform: .android, managementLevel: level))
        let decision = snapshot.encryptionRequired(account: World.owner)
        #expect(decision.isAllowed == required)
        #expect(
            decision.settingName == (required ? "encryptAppData" : "disableAppEncryptionIfDeviceEncryptionIsEnabled"))
    }
}
