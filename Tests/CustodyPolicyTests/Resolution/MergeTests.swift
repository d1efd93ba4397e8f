import CustodyPolicy
import Testing

@Suite("Merging several policies: the most restrictive wins")
struct MergeTests {
    /// The effective policy of an account reached by policies "P0", "P1", ... with these settings.
    private func merged(_ settings: [ProtectionSettings], platform: Platform? = .ios) -> EffectivePolicy {
        let policies = settings.enumerated().map { index, settings in
            ProtectionPolicy(
                reference: PolicyReference(
                    index: index, id: "id\(index)", displayName: "P\(index)",
                    kind: platform == .android ? .androidManagedAppProtection : .iosManagedAppProtection,
                    location: DocumentLocation(file: "t", line: 1, column: 1)),
                settings: settings, targeting: PolicyTargeting())
        }
        let tenant = Tenant(accounts: [TenantAccount(id: id("a@contoso.com"), groups: [])])
        let snapshot = PolicySnapshot(
            bundle: PolicyBundle(tenant: tenant, protectionPolicies: policies),
            context: EvaluationContext(platform: platform))
        guard let policy = snapshot.effectivePolicy(for: id("a@contoso.com")) else {
            preconditionFailure("the test's policies must reach its account")
        }
        return policy
    }

    @Test(
        "transfer levels: allApps < managedApps < none",
        arguments: [
            ([DataTransferLevel.allApps, .managedApps], DataTransferLevel.managedApps, ["P1"]),
            ([.managedApps, .none, .allApps], .none, ["P1"]),
            ([.allApps, .allApps], .allApps, ["P0", "P1"]),
            ([.managedApps], .managedApps, ["P0"]),
        ])
    func transfer(levels: [DataTransferLevel], expected: DataTransferLevel, sources: [String]) {
        let policy = merged(
            levels.map { level in
                .with {
                    $0.allowedOutboundDataTransferDestinations = level; $0.allowedInboundDataTransferSources = level
                }
            })
        #expect(policy.allowedOutboundDataTransferDestinations.value == expected)
        #expect(policy.allowedOutboundDataTransferDestinations.sources.map(\.name) == sources)
        #expect(policy.allowedInboundDataTransferSources.value == expected)
    }

    @Test(
        "clipboard: allApps < managedAppsWithPasteIn < managedApps < blocked",
        arguments: [
            ([ClipboardSharingLevel.allApps, .managedAppsWithPasteIn], ClipboardSharingLevel.managedAppsWithPasteIn),
            ([.managedAppsWithPasteIn, .managedApps], .managedApps),
            ([.managedApps, .blocked, .allApps], .blocked),
        ])
    func clipboard(levels: [ClipboardSharingLevel], expected: ClipboardSharingLevel) {
        #expect(
            merged(levels.map { level in .with { $0.allowedOutboundClipboardSharingLevel = level } })
                .allowedOutboundClipboardSharingLevel.value == expected)
    }

    @Test(
        "notifications: allow < blockOrganizationalData < block",
        arguments: [
            (
                [NotificationRestriction.allow, .blockOrganizationalData],
                NotificationRestriction.blockOrganizationalData
            ),
            ([.block, .blockOrganizationalData], .block),
            ([.allow], .allow),
        ])
    func notifications(levels: [NotificationRestriction], expected: NotificationRestriction) {
        #expect(
            merged(levels.map { level in .with { $0.notificationRestriction = level } }).notificationRestriction.value
                == expected)
    }

    @Test(
        "a true *Blocked or *Required flag wins",
        arguments: [
            ([false, true, false], true, ["P1"]), ([false, false], false, ["P0", "P1"]),
            ([true, true], true, ["P0", "P1"]),
        ])
    func flags(values: [Bool], expected: Bool, sources: [String]) {
        let policy = merged(
            values.map { value in
                .with {
                    $0.saveAsBlocked = value
                    $0.printBlocked = value
                    $0.dataBackupBlocked = value
                    $0.blockDataIngestionIntoOrganizationDocuments = value
                    $0.encryptAppData = value
                }
            })
        for setting in [
            policy.saveAsBlocked, policy.printBlocked, policy.dataBackupBlocked,
            policy.blockDataIngestionIntoOrganizationDocuments, policy.encryptAppData,
        ] {
            #expect(setting.value == expected)
            #expect(setting.sources.map(\.name) == sources)
        }
    }

    @Test("location lists intersect, counting only the policies that configure them")
    func locationLists() {
        let policy = merged([
            .with { $0.allowedDataStorageLocations = [.oneDriveForBusiness, .sharePoint, .box] },
            .with { $0.allowedDataStorageLocations = [.sharePoint, .box, .localStorage] },
            .with { $0.printBlocked = true },
        ])
        #expect(policy.allowedDataStorageLocations.value == [.sharePoint, .box])
        #expect(policy.allowedDataStorageLocations.sources.map(\.name) == ["P0", "P1"])
        #expect(policy.allowedDataStorageLocations.resolution == .configured)
        let empty = merged([
            .with { $0.allowedDataIngestionLocations = [.camera] }, .with { $0.allowedDataIngestionLocations = [] },
        ])
        #expect(empty.allowedDataIngestionLocations.value.isEmpty)
    }

    @Test(
        "numbers that disagree take the recommended default",
        arguments: [
            ([20, 50], 0, SettingResolution.conflictDefault), ([20, 20], 20, .configured), ([7], 7, .configured),
        ])
    func numbers(lengths: [Int], expected: Int, resolution: SettingResolution) {
        let policy = merged(
            lengths.map { length in .with { $0.allowedOutboundClipboardSharingExceptionLength = length } })
        #expect(policy.allowedOutboundClipboardSharingExceptionLength.value == expected)
        #expect(policy.allowedOutboundClipboardSharingExceptionLength.resolution == resolution)
        #expect(policy.allowedOutboundClipboardSharingExceptionLength.sources.count == lengths.count)
    }

    /// Microsoft's conflicts rule: numeric entry fields in conflict "are set the same as the
    /// values, as if you created a MAM policy using the recommended settings option"; the iOS
    /// settings page: Offline grace period, Block access "Default value = 1440 minutes (24
    /// hours)", Wipe data "Default value = 90 days".
    @Test("offline periods that disagree take the recommended values (24 hours, 90 days), credited to no policy")
    func offlinePeriods() {
        let policy = merged([
            .with {
                $0.periodOfflineBeforeAccessCheck = PolicyDuration(seconds: 3_600);
                $0.periodOfflineBeforeWipeIsEnforced = PolicyDuration(seconds: 86_400)
            },
            .with {
                $0.periodOfflineBeforeAccessCheck = PolicyDuration(seconds: 7_200);
                $0.periodOfflineBeforeWipeIsEnforced = PolicyDuration(seconds: 86_400)
            },
        ])
        #expect(policy.periodOfflineBeforeAccessCheck.value == PolicyDuration(seconds: 86_400))
        #expect(policy.periodOfflineBeforeAccessCheck.resolution == .conflictDefault)
        #expect(policy.setting(.periodOfflineBeforeAccessCheck).disagreement == "'P0' PT1H, 'P1' PT2H")
        #expect(policy.periodOfflineBeforeWipeIsEnforced.value == PolicyDuration(seconds: 86_400))
    }

    @Test("settings no policy configures take Intune's defaults, with no sources")
    func defaults() {
        let policy = merged([ProtectionSettings()])
        #expect(policy.allowedOutboundDataTransferDestinations.value == .allApps)
        #expect(policy.allowedInboundDataTransferSources.value == .allApps)
        #expect(policy.allowedOutboundClipboardSharingLevel.value == .allApps)
        #expect(policy.allowedOutboundClipboardSharingExceptionLength.value == 0)
        #expect(policy.saveAsBlocked.value == false)
        #expect(policy.notificationRestriction.value == .allow)
        #expect(policy.appDataEncryptionType.value == .whenDeviceLocked)
        #expect(policy.encryptAppData.value == true)
        #expect(policy.periodOfflineBeforeAccessCheck.value == PolicyDuration(seconds: 86_400))
        #expect(policy.periodOfflineBeforeWipeIsEnforced.value == PolicyDuration(seconds: 7_776_000))
        for setting in PolicySetting.allCases {
            #expect(policy.setting(setting).resolution == .notConfigured)
            #expect(policy.setting(setting).sources.isEmpty)
        }
    }

    @Test("an effective policy shows only the settings of its platform")
    func applicableSettings() {
        #expect(!merged([ProtectionSettings()], platform: .ios).applicableSettings.contains(.encryptAppData))
        #expect(!merged([ProtectionSettings()], platform: .android).applicableSettings.contains(.appDataEncryptionType))
        // With no platform named, the bundle's one platform applies.
        #expect(merged([ProtectionSettings()], platform: nil).platform == .ios)
        #expect(
            merged([ProtectionSettings()], platform: nil).applicableSettings
                == PolicySetting.allCases.filter { $0.platforms.contains(.ios) })
    }
}
