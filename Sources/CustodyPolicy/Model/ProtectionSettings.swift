/// The app protection settings Custody evaluates, as one policy document configures them.
///
/// Each is optional: nil means the document leaves the setting "not configured" (missing, null
/// or `""`), so the policy takes no part in that setting's merge.
public struct ProtectionSettings: Sendable, Hashable {
    public var allowedInboundDataTransferSources: DataTransferLevel?
    public var allowedOutboundDataTransferDestinations: DataTransferLevel?
    public var allowedOutboundClipboardSharingLevel: ClipboardSharingLevel?
    public var allowedOutboundClipboardSharingExceptionLength: Int?
    public var saveAsBlocked: Bool?
    public var allowedDataStorageLocations: Set<StorageLocation>?
    public var blockDataIngestionIntoOrganizationDocuments: Bool?
    public var allowedDataIngestionLocations: Set<IngestionLocation>?
    public var printBlocked: Bool?
    public var dataBackupBlocked: Bool?
    public var screenCaptureBlocked: Bool?
    public var screenCaptureConfigurationState: ScreenCaptureState?
    public var notificationRestriction: NotificationRestriction?
    public var appDataEncryptionType: DataEncryptionType?
    public var encryptAppData: Bool?
    public var periodOfflineBeforeAccessCheck: PolicyDuration?
    public var periodOfflineBeforeWipeIsEnforced: PolicyDuration?
    /// iOS: URL schemes of unmanaged apps that may still receive org data.
    public var exemptedAppProtocols: Set<String>?
    /// Android: package ids of unmanaged apps that may still receive org data.
    public var exemptedAppPackages: Set<String>?
    /// iOS "Policy managed apps with Open-In/Share filtering": the OS share sheet offers only
    /// policy-managed apps.
    public var filterOpenInToOnlyManagedApps: Bool?
    /// iOS "Policy managed apps with OS sharing": on MDM-enrolled devices, files may also go to
    /// apps the device's MDM manages.
    public var disableProtectionOfManagedOutboundOpenInData: Bool?
    /// iOS "All apps with incoming Org data": on MDM-enrolled devices, incoming data without an
    /// owner becomes the receiving account's org data.
    public var protectInboundDataFromUnknownSources: Bool?
    /// Android "Encrypt org data on enrolled devices" = Not required: no app-layer encryption on
    /// enrolled devices, whose storage is encrypted.
    public var disableAppEncryptionIfDeviceEncryptionIsEnabled: Bool?
    /// iOS: universal links (lower-cased, `*` wildcards) that may open in an unmanaged app.
    public var exemptedUniversalLinks: Set<String>?
    /// iOS: universal links (lower-cased, `*` wildcards) that open in a managed app.
    public var managedUniversalLinks: Set<String>?
    /// "Sync policy managed app data with native apps or add-ins" (contacts, calendar, widgets).
    public var contactSyncBlocked: Bool?
    /// iOS: Apple Intelligence Writing Tools (iOS 18 and later).
    public var writingToolsConfigurationState: ScreenCaptureState?
    /// iOS: Apple Intelligence Genmoji (iOS 18 and later).
    public var genmojiConfigurationState: ScreenCaptureState?
    /// iOS: third-party keyboards are blocked in the app.
    public var thirdPartyKeyboardsBlocked: Bool?
    /// Android: only the keyboards in `approvedKeyboards` may be used.
    public var keyboardsRestricted: Bool?
    /// Android: the approved keyboards' package ids (lower-cased).
    public var approvedKeyboards: Set<String>?
    /// iOS: widgets may show the app's org data.
    public var allowWidgetContentSync: Bool?
    /// Which dialer a phone number (`tel:`) may open in.
    public var dialerRestrictionLevel: DialerRedirectLevel?
    /// iOS: the URL scheme of the custom dialer app.
    public var customDialerAppProtocol: String?
    /// Android: the package id of the custom dialer app.
    public var customDialerAppPackageId: String?
    /// Which app a messaging link (`sms:`) may open in.
    public var protectedMessagingRedirectAppType: MessagingRedirectType?
    /// iOS: the URL scheme of the app messaging links are redirected to.
    public var messagingRedirectAppUrlScheme: String?
    /// Android: the package id of the app messaging links are redirected to.
    public var messagingRedirectAppPackageId: String?
    /// Web links open only in a managed browser (`managedBrowser`) or the custom one.
    public var managedBrowserToOpenLinksRequired: Bool?
    public var managedBrowser: ManagedBrowser?
    /// iOS: the URL scheme of the custom browser web links open in.
    public var customBrowserProtocol: String?
    /// Android: the package id of the custom browser web links open in.
    public var customBrowserPackageId: String?
    /// The conditional-launch checks the policy configures, in Graph property order
    /// (`PolicySnapshot.launch`). Offline grace is not among them: it is merged like a setting.
    public var launchConditions: [LaunchCondition] = []

    /// Creates settings with nothing configured.
    public init() {}
}

/// A setting Custody evaluates, named by its Microsoft Graph property.
public enum PolicySetting: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case allowedInboundDataTransferSources
    case allowedOutboundDataTransferDestinations
    case allowedOutboundClipboardSharingLevel
    case allowedOutboundClipboardSharingExceptionLength
    case saveAsBlocked
    case allowedDataStorageLocations
    case blockDataIngestionIntoOrganizationDocuments
    case allowedDataIngestionLocations
    case printBlocked
    case dataBackupBlocked
    case screenCaptureBlocked
    case screenCaptureConfigurationState
    case notificationRestriction
    case appDataEncryptionType
    case encryptAppData
    case periodOfflineBeforeAccessCheck
    case periodOfflineBeforeWipeIsEnforced
    case exemptedAppProtocols
    case exemptedAppPackages
    case filterOpenInToOnlyManagedApps
    case disableProtectionOfManagedOutboundOpenInData
    case protectInboundDataFromUnknownSources
    case disableAppEncryptionIfDeviceEncryptionIsEnabled
    case exemptedUniversalLinks
    case managedUniversalLinks
    case contactSyncBlocked
    case writingToolsConfigurationState
    case genmojiConfigurationState
    case thirdPartyKeyboardsBlocked
    case keyboardsRestricted
    case approvedKeyboards
    case allowWidgetContentSync
    case dialerRestrictionLevel
    case customDialerAppProtocol
    case customDialerAppPackageId
    case protectedMessagingRedirectAppType
    case messagingRedirectAppUrlScheme
    case messagingRedirectAppPackageId
    case managedBrowserToOpenLinksRequired
    case managedBrowser
    case customBrowserProtocol
    case customBrowserPackageId

    public var description: String { rawValue }

    /// The platforms whose policies carry this setting (the default policy carries iOS's and
    /// Android's). Windows MAM carries the transfer levels, the clipboard, print and the offline
    /// periods (Microsoft's "App protection policy settings for Windows").
    public var platforms: Set<Platform> {
        switch self {
        case .allowedInboundDataTransferSources, .allowedOutboundDataTransferDestinations,
            .allowedOutboundClipboardSharingLevel, .printBlocked, .periodOfflineBeforeAccessCheck,
            .periodOfflineBeforeWipeIsEnforced:
            [.ios, .android, .windows]
        case .appDataEncryptionType, .exemptedAppProtocols, .screenCaptureConfigurationState,
            .filterOpenInToOnlyManagedApps,
            .disableProtectionOfManagedOutboundOpenInData, .protectInboundDataFromUnknownSources,
            .exemptedUniversalLinks,
            .managedUniversalLinks, .writingToolsConfigurationState, .genmojiConfigurationState,
            .thirdPartyKeyboardsBlocked, .allowWidgetContentSync, .customDialerAppProtocol,
            .messagingRedirectAppUrlScheme, .customBrowserProtocol:
            [.ios]
        case .encryptAppData, .exemptedAppPackages, .screenCaptureBlocked,
            .disableAppEncryptionIfDeviceEncryptionIsEnabled, .keyboardsRestricted, .approvedKeyboards,
            .customDialerAppPackageId, .messagingRedirectAppPackageId, .customBrowserPackageId:
            [.android]
        default: [.ios, .android]
        }
    }
}
