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

    public var description: String { rawValue }

    /// The platforms whose policies carry this setting (the default policy carries all).
    public var platforms: Set<Platform> {
        switch self {
        case .appDataEncryptionType, .exemptedAppProtocols, .screenCaptureConfigurationState: [.ios]
        case .encryptAppData, .exemptedAppPackages, .screenCaptureBlocked: [.android]
        default: [.ios, .android]
        }
    }
}
