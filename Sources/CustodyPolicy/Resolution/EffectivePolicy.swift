/// The per-setting merge of every protection policy that applies to an account, in one
/// evaluation context. Accounts reached by the same policies share one instance.
///
/// Each setting keeps its value and the policies it came from, so every decision can say why.
public final class EffectivePolicy: Sendable {
    /// The policies that apply, in bundle order.
    public let policies: [PolicyReference]
    /// The platform the policy was resolved for (nil: every platform's policies merged).
    public let platform: Platform?

    public let allowedInboundDataTransferSources: ResolvedSetting<DataTransferLevel>
    public let allowedOutboundDataTransferDestinations: ResolvedSetting<DataTransferLevel>
    public let allowedOutboundClipboardSharingLevel: ResolvedSetting<ClipboardSharingLevel>
    public let allowedOutboundClipboardSharingExceptionLength: ResolvedSetting<Int>
    public let saveAsBlocked: ResolvedSetting<Bool>
    public let allowedDataStorageLocations: ResolvedSetting<Set<StorageLocation>>
    public let blockDataIngestionIntoOrganizationDocuments: ResolvedSetting<Bool>
    public let allowedDataIngestionLocations: ResolvedSetting<Set<IngestionLocation>>
    public let printBlocked: ResolvedSetting<Bool>
    public let dataBackupBlocked: ResolvedSetting<Bool>
    public let screenCaptureBlocked: ResolvedSetting<Bool>
    public let screenCaptureConfigurationState: ResolvedSetting<ScreenCaptureState>
    public let notificationRestriction: ResolvedSetting<NotificationRestriction>
    public let appDataEncryptionType: ResolvedSetting<DataEncryptionType>
    public let encryptAppData: ResolvedSetting<Bool>
    public let periodOfflineBeforeAccessCheck: ResolvedSetting<PolicyDuration>
    public let periodOfflineBeforeWipeIsEnforced: ResolvedSetting<PolicyDuration>
    public let exemptedAppProtocols: ResolvedSetting<Set<String>>
    public let exemptedAppPackages: ResolvedSetting<Set<String>>

    /// Policy-managed apps for share decisions, lower-cased: every app the account's policies
    /// target (on any app, in this platform) and the tenant's `managedApps`.
    let managedAppIDs: Set<String>

    /// The location allow-lists as bit masks, for membership tests on the decision hot path.
    private let storageMask: UInt8
    private let ingestionMask: UInt8

    /// Merges `policies` (all applying to one account) for `platform`.
    init(merging policies: [ProtectionPolicy], managedAppIDs: Set<String>, platform: Platform?) {
        self.policies = policies.map(\.reference)
        self.platform = platform
        self.managedAppIDs = managedAppIDs

        func entries<T>(_ keyPath: KeyPath<ProtectionSettings, T?>) -> [SettingMerge.Entry<T>] {
            policies.compactMap { policy in policy.settings[keyPath: keyPath].map { ($0, policy.reference) } }
        }
        let defaults = PolicyDefaults.self
        allowedInboundDataTransferSources = SettingMerge.mostRestrictive(
            entries(\.allowedInboundDataTransferSources), default: defaults.dataTransfer)
        allowedOutboundDataTransferDestinations = SettingMerge.mostRestrictive(
            entries(\.allowedOutboundDataTransferDestinations), default: defaults.dataTransfer)
        allowedOutboundClipboardSharingLevel = SettingMerge.mostRestrictive(
            entries(\.allowedOutboundClipboardSharingLevel), default: defaults.clipboard)
        allowedOutboundClipboardSharingExceptionLength = SettingMerge.agreedOrDefault(
            entries(\.allowedOutboundClipboardSharingExceptionLength), default: defaults.clipboardExceptionLength)
        saveAsBlocked = SettingMerge.anyTrue(entries(\.saveAsBlocked), default: false)
        allowedDataStorageLocations = SettingMerge.intersection(entries(\.allowedDataStorageLocations), default: [])
        blockDataIngestionIntoOrganizationDocuments = SettingMerge.anyTrue(
            entries(\.blockDataIngestionIntoOrganizationDocuments), default: false)
        allowedDataIngestionLocations = SettingMerge.intersection(entries(\.allowedDataIngestionLocations), default: [])
        printBlocked = SettingMerge.anyTrue(entries(\.printBlocked), default: false)
        dataBackupBlocked = SettingMerge.anyTrue(entries(\.dataBackupBlocked), default: false)
        screenCaptureBlocked = SettingMerge.anyTrue(entries(\.screenCaptureBlocked), default: false)
        screenCaptureConfigurationState = SettingMerge.mostRestrictive(
            entries(\.screenCaptureConfigurationState), default: .notConfigured)
        notificationRestriction = SettingMerge.mostRestrictive(entries(\.notificationRestriction), default: .allow)
        appDataEncryptionType = SettingMerge.mostRestrictive(entries(\.appDataEncryptionType), default: defaults.iosEncryption)
        encryptAppData = SettingMerge.anyTrue(entries(\.encryptAppData), default: defaults.androidEncryption)
        periodOfflineBeforeAccessCheck = SettingMerge.agreedOrDefault(
            entries(\.periodOfflineBeforeAccessCheck), default: defaults.offlineBeforeAccessCheck)
        periodOfflineBeforeWipeIsEnforced = SettingMerge.agreedOrDefault(
            entries(\.periodOfflineBeforeWipeIsEnforced), default: defaults.offlineBeforeWipe)
        exemptedAppProtocols = SettingMerge.intersection(entries(\.exemptedAppProtocols), default: [])
        exemptedAppPackages = SettingMerge.intersection(entries(\.exemptedAppPackages), default: [])
        storageMask = allowedDataStorageLocations.value.reduce(0) { $0 | $1.bit }
        ingestionMask = allowedDataIngestionLocations.value.reduce(0) { $0 | $1.bit }
    }

    /// Whether `allowedDataStorageLocations` lists `location`.
    @inline(__always)
    func allowsSaving(to location: StorageLocation) -> Bool {
        storageMask & location.bit != 0
    }

    /// Whether `allowedDataIngestionLocations` lists `location`.
    @inline(__always)
    func allowsOpening(from location: IngestionLocation) -> Bool {
        ingestionMask & location.bit != 0
    }

    /// Policy-managed app ids (lower-cased), sorted: the targets `managedApps` transfer allows.
    public var managedApps: [String] { managedAppIDs.sorted() }

    /// Whether `appID` is a policy-managed app (case-insensitive).
    public func isManagedApp(_ appID: String) -> Bool {
        managedAppIDs.contains(appID.lowercased())
    }

    /// Whether `target` (a URL scheme or package id) is exempted from transfer restrictions on
    /// the evaluated platform (case-insensitive; a `scheme:` or `scheme://...` form matches its scheme).
    public func isExemptedApp(_ target: String) -> Bool {
        var candidate = target.lowercased()
        if let colon = candidate.firstIndex(of: ":") { candidate = String(candidate[..<colon]) }
        switch platform {
        case .ios: return exemptedAppProtocols.value.contains(candidate)
        case .android: return exemptedAppPackages.value.contains(candidate)
        case nil: return exemptedAppProtocols.value.contains(candidate) || exemptedAppPackages.value.contains(candidate)
        }
    }
}

/// Intune's defaults: what a setting is when no applicable policy configures it, and the
/// recommended value that numeric settings fall back to when policies conflict.
public enum PolicyDefaults {
    /// "Send org data to other apps" and "Receive data from other apps": All apps.
    public static let dataTransfer = DataTransferLevel.allApps
    /// "Restrict cut, copy, and paste between other apps": Any app.
    public static let clipboard = ClipboardSharingLevel.allApps
    /// "Cut and copy character limit for any app": 0 (no exception).
    public static let clipboardExceptionLength = 0
    /// iOS "Encrypt org data": required, when the device is locked.
    public static let iosEncryption = DataEncryptionType.whenDeviceLocked
    /// Android "Encrypt org data": required.
    public static let androidEncryption = true
    /// "Recheck the access requirements after (minutes of inactivity)" offline: 720 minutes.
    public static let offlineBeforeAccessCheck = PolicyDuration(seconds: 12 * 3_600)
    /// "Offline grace period" before data is wiped: 90 days.
    public static let offlineBeforeWipe = PolicyDuration(seconds: 90 * 86_400)
}
