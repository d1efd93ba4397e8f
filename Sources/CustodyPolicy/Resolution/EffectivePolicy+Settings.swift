/// A setting's value in a form that does not depend on its type: for showing, comparing and
/// writing as JSON.
public enum SettingValue: Sendable, Hashable, CustomStringConvertible {
    case bool(Bool)
    case int(Int)
    case string(String)
    /// Sorted, for stable output and comparison.
    case list([String])

    public var description: String {
        switch self {
        case .bool(let value): String(value)
        case .int(let value): String(value)
        case .string(let value): value
        case .list(let values): "[" + values.joined(separator: ", ") + "]"
        }
    }
}

/// One setting of an effective policy, type-erased.
public struct SettingSummary: Sendable, Hashable {
    public let setting: PolicySetting
    public let value: SettingValue
    public let sources: [PolicyReference]
    public let resolution: SettingResolution
    /// For a numeric conflict, what each source set, in the order of `sources`.
    public let sourceValues: [SettingValue]

    /// For a numeric conflict, who set what: `'A' 3, 'B' 10`; nil otherwise.
    public var disagreement: String? {
        guard resolution == .conflictDefault else { return nil }
        return zip(sources, sourceValues).map { "'\($0.name)' \($1)" }.joined(separator: ", ")
    }
}

extension EffectivePolicy {
    /// Whether being offline long enough wipes: not when the wipe period is zero. Graph,
    /// `windowsManagedAppProtection.periodOfflineBeforeWipeIsEnforced`: "A timespan value of
    /// PT0S indicates that managed data will never be wiped when the device is not connected
    /// to the internet"; iOS and Android are read the same way (their portal allows 1 to 90
    /// days, so a zero can only come from Graph, and a wipe on every offline launch is not a
    /// reading anyone would choose).
    public var wipesWhenOffline: Bool { periodOfflineBeforeWipeIsEnforced.value.duration > .zero }

    /// The settings that mean something on the evaluated platform (all when it is nil).
    public var applicableSettings: [PolicySetting] {
        guard let platform else { return PolicySetting.allCases }
        return PolicySetting.allCases.filter { $0.platforms.contains(platform) }
    }

    /// One setting's value, sources and how it was resolved.
    public func setting(_ setting: PolicySetting) -> SettingSummary {
        func summary<T>(_ resolved: ResolvedSetting<T>, _ value: (T) -> SettingValue) -> SettingSummary {
            SettingSummary(
                setting: setting, value: value(resolved.value), sources: resolved.sources,
                resolution: resolved.resolution, sourceValues: resolved.sourceValues.map(value))
        }
        func enumValue<E: GraphEnum>(_ value: E) -> SettingValue { .string(value.rawValue) }
        func enumList<E: GraphEnum>(_ values: Set<E>) -> SettingValue { .list(values.map(\.rawValue).sorted()) }
        switch setting {
        case .allowedInboundDataTransferSources: return summary(allowedInboundDataTransferSources, enumValue)
        case .allowedOutboundDataTransferDestinations:
            return summary(allowedOutboundDataTransferDestinations, enumValue)
        case .allowedOutboundClipboardSharingLevel: return summary(allowedOutboundClipboardSharingLevel, enumValue)
        case .allowedOutboundClipboardSharingExceptionLength:
            return summary(allowedOutboundClipboardSharingExceptionLength, SettingValue.int)
        case .saveAsBlocked: return summary(saveAsBlocked, SettingValue.bool)
        case .allowedDataStorageLocations: return summary(allowedDataStorageLocations, enumList)
        case .blockDataIngestionIntoOrganizationDocuments:
            return summary(blockDataIngestionIntoOrganizationDocuments, SettingValue.bool)
        case .allowedDataIngestionLocations: return summary(allowedDataIngestionLocations, enumList)
        case .printBlocked: return summary(printBlocked, SettingValue.bool)
        case .dataBackupBlocked: return summary(dataBackupBlocked, SettingValue.bool)
        case .screenCaptureBlocked: return summary(screenCaptureBlocked, SettingValue.bool)
        case .screenCaptureConfigurationState: return summary(screenCaptureConfigurationState, enumValue)
        case .notificationRestriction: return summary(notificationRestriction, enumValue)
        case .appDataEncryptionType: return summary(appDataEncryptionType, enumValue)
        case .encryptAppData: return summary(encryptAppData, SettingValue.bool)
        case .periodOfflineBeforeAccessCheck: return summary(periodOfflineBeforeAccessCheck) { .string($0.description) }
        case .periodOfflineBeforeWipeIsEnforced:
            return summary(periodOfflineBeforeWipeIsEnforced) { .string($0.description) }
        case .exemptedAppProtocols: return summary(exemptedAppProtocols) { .list($0.sorted()) }
        case .exemptedAppPackages: return summary(exemptedAppPackages) { .list($0.sorted()) }
        case .filterOpenInToOnlyManagedApps: return summary(filterOpenInToOnlyManagedApps, SettingValue.bool)
        case .disableProtectionOfManagedOutboundOpenInData:
            return summary(disableProtectionOfManagedOutboundOpenInData, SettingValue.bool)
        case .protectInboundDataFromUnknownSources:
            return summary(protectInboundDataFromUnknownSources, SettingValue.bool)
        case .disableAppEncryptionIfDeviceEncryptionIsEnabled:
            return summary(disableAppEncryptionIfDeviceEncryptionIsEnabled, SettingValue.bool)
        case .exemptedUniversalLinks: return summary(exemptedUniversalLinks) { .list($0.sorted()) }
        case .managedUniversalLinks: return summary(managedUniversalLinks) { .list($0.sorted()) }
        case .contactSyncBlocked: return summary(contactSyncBlocked, SettingValue.bool)
        case .writingToolsConfigurationState: return summary(writingToolsConfigurationState, enumValue)
        case .genmojiConfigurationState: return summary(genmojiConfigurationState, enumValue)
        case .thirdPartyKeyboardsBlocked: return summary(thirdPartyKeyboardsBlocked, SettingValue.bool)
        case .keyboardsRestricted: return summary(keyboardsRestricted, SettingValue.bool)
        case .approvedKeyboards: return summary(approvedKeyboards) { .list($0.sorted()) }
        case .allowWidgetContentSync: return summary(allowWidgetContentSync, SettingValue.bool)
        case .dialerRestrictionLevel: return summary(dialerRestrictionLevel, enumValue)
        case .customDialerAppProtocol: return summary(customDialerAppProtocol, SettingValue.string)
        case .customDialerAppPackageId: return summary(customDialerAppPackageId, SettingValue.string)
        case .protectedMessagingRedirectAppType: return summary(protectedMessagingRedirectAppType, enumValue)
        case .messagingRedirectAppUrlScheme: return summary(messagingRedirectAppUrlScheme, SettingValue.string)
        case .messagingRedirectAppPackageId: return summary(messagingRedirectAppPackageId, SettingValue.string)
        case .managedBrowserToOpenLinksRequired: return summary(managedBrowserToOpenLinksRequired, SettingValue.bool)
        case .managedBrowser: return summary(managedBrowser, enumValue)
        case .customBrowserProtocol: return summary(customBrowserProtocol, SettingValue.string)
        case .customBrowserPackageId: return summary(customBrowserPackageId, SettingValue.string)
        }
    }
}

extension EffectivePolicy {
    /// Whether `other` decides everything as this one does: the same value for every setting
    /// and the same policy-managed apps. Which policies the values came from (their names,
    /// their ids) does not count: a rename changes no decision.
    public func decidesAlike(_ other: EffectivePolicy) -> Bool {
        if self === other { return true }
        guard platform == other.platform, managedAppIDs == other.managedAppIDs,
            launchConditions == other.launchConditions
        else { return false }
        return PolicySetting.allCases.allSatisfy { name in setting(name).value == other.setting(name).value }
    }
}
