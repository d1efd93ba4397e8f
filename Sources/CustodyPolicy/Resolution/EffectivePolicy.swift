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
    public let filterOpenInToOnlyManagedApps: ResolvedSetting<Bool>
    public let disableProtectionOfManagedOutboundOpenInData: ResolvedSetting<Bool>
    public let protectInboundDataFromUnknownSources: ResolvedSetting<Bool>
    public let disableAppEncryptionIfDeviceEncryptionIsEnabled: ResolvedSetting<Bool>
    public let exemptedUniversalLinks: ResolvedSetting<Set<String>>
    public let managedUniversalLinks: ResolvedSetting<Set<String>>
    public let contactSyncBlocked: ResolvedSetting<Bool>
    public let writingToolsConfigurationState: ResolvedSetting<ScreenCaptureState>
    public let genmojiConfigurationState: ResolvedSetting<ScreenCaptureState>
    public let thirdPartyKeyboardsBlocked: ResolvedSetting<Bool>
    public let keyboardsRestricted: ResolvedSetting<Bool>
    public let approvedKeyboards: ResolvedSetting<Set<String>>
    public let allowWidgetContentSync: ResolvedSetting<Bool>
    public let dialerRestrictionLevel: ResolvedSetting<DialerRedirectLevel>
    public let customDialerAppProtocol: ResolvedSetting<String>
    public let customDialerAppPackageId: ResolvedSetting<String>
    public let protectedMessagingRedirectAppType: ResolvedSetting<MessagingRedirectType>
    public let messagingRedirectAppUrlScheme: ResolvedSetting<String>
    public let messagingRedirectAppPackageId: ResolvedSetting<String>
    public let managedBrowserToOpenLinksRequired: ResolvedSetting<Bool>
    public let managedBrowser: ResolvedSetting<ManagedBrowser>
    public let customBrowserProtocol: ResolvedSetting<String>
    public let customBrowserPackageId: ResolvedSetting<String>

    /// Every conditional-launch check of the applying policies made on this platform: launch
    /// checks are not merged, every policy's own are made. `launchSources[i]` is the position
    /// in `policies` of the policy of `launchConditions[i]` (kept apart so that a check that
    /// passes, the common case, is read in place and copies nothing).
    public let launchConditions: [LaunchCondition]
    let launchSources: [Int]
    /// The launch conditions whose number the applying policies disagree on, by position in
    /// `launchConditions`: made once, at the recommended value, with the most restrictive action,
    /// credited to no policy. The text says who set what ("'A' 3, 'B' 10").
    let launchDisagreements: [Int: String]

    /// What "Save copies of org data" amounts to once the send level is taken into account.
    let saveGate: Gate
    /// What "Open data into Org documents" amounts to once the receive level is taken into account.
    let ingestionGate: Gate

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
        appDataEncryptionType = SettingMerge.mostRestrictive(
            entries(\.appDataEncryptionType), default: defaults.iosEncryption)
        encryptAppData = SettingMerge.anyTrue(entries(\.encryptAppData), default: defaults.androidEncryption)
        periodOfflineBeforeAccessCheck = SettingMerge.agreedOrDefault(
            entries(\.periodOfflineBeforeAccessCheck), default: defaults.offlineBeforeAccessCheck(on: platform))
        periodOfflineBeforeWipeIsEnforced = SettingMerge.agreedOrDefault(
            entries(\.periodOfflineBeforeWipeIsEnforced), default: defaults.offlineBeforeWipe)
        exemptedAppProtocols = SettingMerge.intersection(entries(\.exemptedAppProtocols), default: [])
        exemptedAppPackages = SettingMerge.intersection(entries(\.exemptedAppPackages), default: [])
        filterOpenInToOnlyManagedApps = SettingMerge.anyTrue(entries(\.filterOpenInToOnlyManagedApps), default: false)
        // Turning protection off is the permissive side: every configuring policy must agree.
        disableProtectionOfManagedOutboundOpenInData = SettingMerge.allTrue(
            entries(\.disableProtectionOfManagedOutboundOpenInData), default: false)
        protectInboundDataFromUnknownSources = SettingMerge.anyTrue(
            entries(\.protectInboundDataFromUnknownSources), default: false)
        disableAppEncryptionIfDeviceEncryptionIsEnabled = SettingMerge.allTrue(
            entries(\.disableAppEncryptionIfDeviceEncryptionIsEnabled), default: false)
        exemptedUniversalLinks = SettingMerge.intersection(entries(\.exemptedUniversalLinks), default: [])
        managedUniversalLinks = SettingMerge.intersection(entries(\.managedUniversalLinks), default: [])
        contactSyncBlocked = SettingMerge.anyTrue(entries(\.contactSyncBlocked), default: false)
        writingToolsConfigurationState = SettingMerge.mostRestrictive(
            entries(\.writingToolsConfigurationState), default: .notConfigured)
        genmojiConfigurationState = SettingMerge.mostRestrictive(
            entries(\.genmojiConfigurationState), default: .notConfigured)
        thirdPartyKeyboardsBlocked = SettingMerge.anyTrue(entries(\.thirdPartyKeyboardsBlocked), default: false)
        keyboardsRestricted = SettingMerge.anyTrue(entries(\.keyboardsRestricted), default: false)
        approvedKeyboards = SettingMerge.intersection(entries(\.approvedKeyboards), default: [])
        // Allowing widgets is the permissive side: every configuring policy must agree.
        allowWidgetContentSync = SettingMerge.allTrue(entries(\.allowWidgetContentSync), default: false)
        dialerRestrictionLevel = SettingMerge.mostRestrictive(entries(\.dialerRestrictionLevel), default: .allApps)
        customDialerAppProtocol = SettingMerge.agreedOrDefault(entries(\.customDialerAppProtocol), default: "")
        customDialerAppPackageId = SettingMerge.agreedOrDefault(entries(\.customDialerAppPackageId), default: "")
        protectedMessagingRedirectAppType = SettingMerge.mostRestrictive(
            entries(\.protectedMessagingRedirectAppType), default: .anyApp)
        messagingRedirectAppUrlScheme = SettingMerge.agreedOrDefault(
            entries(\.messagingRedirectAppUrlScheme), default: "")
        messagingRedirectAppPackageId = SettingMerge.agreedOrDefault(
            entries(\.messagingRedirectAppPackageId), default: "")
        managedBrowserToOpenLinksRequired = SettingMerge.anyTrue(
            entries(\.managedBrowserToOpenLinksRequired), default: false)
        managedBrowser = SettingMerge.mostRestrictive(entries(\.managedBrowser), default: .notConfigured)
        customBrowserProtocol = SettingMerge.agreedOrDefault(entries(\.customBrowserProtocol), default: "")
        customBrowserPackageId = SettingMerge.agreedOrDefault(entries(\.customBrowserPackageId), default: "")
        var launchConditions: [LaunchCondition] = []
        var launchSources: [Int] = []
        for (position, policy) in policies.enumerated() {
            for condition in policy.settings.launchConditions
            where platform == nil || condition.platform == nil || condition.platform == platform {
                launchConditions.append(condition)
                launchSources.append(position)
            }
        }
        // Microsoft's conflicts rule: "numeric entry fields, such as PIN attempts before reset
        // ... are set the same as the values, as if you created a MAM policy using the
        // recommended settings option"; the action, a choice, is the most restrictive.
        var launchDisagreements: [Int: String] = [:]
        let retries = launchConditions.indices.filter { launchConditions[$0].setting == "maximumPinRetries" }
        if Set(retries.map { launchConditions[$0].test.threshold }).count > 1 {
            let action = retries.map { launchConditions[$0].action }.max { $0.outcome < $1.outcome }!
            let who = retries.map {
                "'\(policies[launchSources[$0]].reference.name)' \(launchConditions[$0].test.threshold)"
            }
            let kept = retries[0]
            launchConditions[kept] = LaunchCondition(
                setting: "maximumPinRetries", test: .pinRetries(defaults.maximumPinRetries), action: action,
                platform: launchConditions[kept].platform)
            launchDisagreements[kept] = who.joined(separator: ", ")
            for index in retries.dropFirst().reversed() {
                launchConditions.remove(at: index)
                launchSources.remove(at: index)
            }
        }
        self.launchConditions = launchConditions
        self.launchSources = launchSources
        self.launchDisagreements = launchDisagreements

        saveGate = Gate.save(
            blocked: saveAsBlocked.value, send: allowedOutboundDataTransferDestinations.value, platform: platform)
        ingestionGate = Gate.ingestion(
            blocked: blockDataIngestionIntoOrganizationDocuments.value,
            receive: allowedInboundDataTransferSources.value,
            platform: platform)
        storageMask = saveGate == .closedBySend ? 0 : allowedDataStorageLocations.value.reduce(0) { $0 | $1.bit }
        ingestionMask =
            ingestionGate == .closedByReceive ? 0 : allowedDataIngestionLocations.value.reduce(0) { $0 | $1.bit }
    }

    /// A location restriction ("Save copies of org data", "Open data into Org documents") as
    /// it stands once the transfer level it depends on is taken into account.
    ///
    /// Microsoft's iOS settings reference: Save copies "will be Allow" when Send org data is All
    /// apps and "Block with no allowed service locations" when it is None; Open data into Org
    /// documents "will be Allow" when Receive data is All apps and Block with no locations when
    /// it is None. On Android the documentation says the same of Open data, but Microsoft's
    /// issue tracker (MicrosoftDocs/memdocs#1199) shows the Android client enforcing a Block
    /// left under All apps, so on Android (and with no platform) Custody keeps the stricter,
    /// literal reading: the flag applies whatever the level, except that None closes it.
    enum Gate: Sendable, Hashable {
        /// No restriction: the flag is false (under the level that lets it apply).
        case open
        /// No restriction because the transfer level is All apps (the flag is not in effect).
        case openByLevel
        /// The flag is true: only the listed locations (and the account's own data).
        case listed
        /// The transfer level is None: blocked, with no location allowed.
        case closedBySend
        /// The receive level is None: blocked, with no location allowed.
        case closedByReceive

        var restricts: Bool { self == .listed || self == .closedBySend || self == .closedByReceive }

        static func save(blocked: Bool, send: DataTransferLevel, platform: Platform?) -> Gate {
            switch send {
            case .none: .closedBySend
            case .allApps where platform == .ios: .openByLevel
            default: blocked ? .listed : .open
            }
        }

        static func ingestion(blocked: Bool, receive: DataTransferLevel, platform: Platform?) -> Gate {
            switch receive {
            case .none: .closedByReceive
            case .allApps where platform == .ios: .openByLevel
            default: blocked ? .listed : .open
            }
        }
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

    /// The exemption list that exempts `target` on the evaluated platform, or nil: a URL scheme
    /// in `exemptedAppProtocols` (iOS; `scheme`, `scheme:` and `scheme://...` match `scheme`), a
    /// package id in `exemptedAppPackages` (Android), a universal link (`http(s)://...`) matching
    /// a pattern of `exemptedUniversalLinks` (iOS). Case-insensitive.
    public func exemption(of target: String) -> PolicySetting? {
        let lowered = target.lowercased()
        if UniversalLink.isLink(lowered) {
            guard platform == .ios else { return nil }
            return exemptedUniversalLinks.value.contains { UniversalLink.matches(pattern: $0, link: lowered) }
                ? .exemptedUniversalLinks : nil
        }
        switch platform {
        case .ios:
            return exemptedAppProtocols.value.contains(UniversalLink.scheme(of: lowered)) ? .exemptedAppProtocols : nil
        case .android:
            return exemptedAppPackages.value.contains(lowered) ? .exemptedAppPackages : nil
        case .windows, nil:
            return nil
        }
    }

    /// Whether `target` is a universal link (iOS) matching a pattern of `managedUniversalLinks`:
    /// it opens in a managed app.
    public func isManagedUniversalLink(_ target: String) -> Bool {
        let lowered = target.lowercased()
        guard platform == .ios, UniversalLink.isLink(lowered) else { return false }
        return managedUniversalLinks.value.contains { UniversalLink.matches(pattern: $0, link: lowered) }
    }
}

/// iOS universal links in share targets and the patterns of `exemptedUniversalLinks` and
/// `managedUniversalLinks` (both lower-cased by the caller).
enum UniversalLink {
    static func isLink(_ target: String) -> Bool {
        target.hasPrefix("http://") || target.hasPrefix("https://")
    }

    /// The URL scheme a share target names: `skype`, `skype:` and `skype://call` are `skype`.
    static func scheme(of target: String) -> String {
        guard let colon = target.firstIndex(of: ":") else { return target }
        return String(target[..<colon])
    }

    /// Whether `link` matches `pattern`: `*` stands for any run of characters; a pattern
    /// without one names a site (`http://maps.apple.com` matches that address and every path
    /// and query under it).
    static func matches(pattern: String, link: String) -> Bool {
        guard pattern.contains("*") else {
            guard link.hasPrefix(pattern) else { return false }
            let rest = link.utf8.dropFirst(pattern.utf8.count)
            guard let next = rest.first else { return true }
            return next == UInt8(ascii: "/") || next == UInt8(ascii: "?") || next == UInt8(ascii: "#")
                || pattern.hasSuffix("/")
        }
        return glob(Array(pattern.utf8)[...], Array(link.utf8)[...])
    }

    /// Wildcard matching (`*` only), iterative with one backtrack point: linear in practice.
    private static func glob(_ pattern: ArraySlice<UInt8>, _ text: ArraySlice<UInt8>) -> Bool {
        var p = pattern.startIndex
        var t = text.startIndex
        var star: Int?
        var resume = t
        while t < text.endIndex {
            if p < pattern.endIndex, pattern[p] == UInt8(ascii: "*") {
                star = p
                p += 1
                resume = t
            } else if p < pattern.endIndex, pattern[p] == text[t] {
                p += 1
                t += 1
            } else if let star {
                p = star + 1
                resume += 1
                t = resume
            } else {
                return false
            }
        }
        while p < pattern.endIndex, pattern[p] == UInt8(ascii: "*") { p += 1 }
        return p == pattern.endIndex
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
    /// "Offline grace period", Block access: 1440 minutes on iOS and Android (their settings
    /// pages: "Default value = 1440 minutes (24 hours)"), 720 on Windows (its settings page:
    /// "720 minutes (12 hours)").
    public static func offlineBeforeAccessCheck(on platform: Platform?) -> PolicyDuration {
        PolicyDuration(seconds: platform == .windows ? 12 * 3_600 : 24 * 3_600)
    }
    /// "Max PIN attempts": "Default value = 5" (iOS and Android settings pages).
    public static let maximumPinRetries = 5
    /// "Offline grace period" before data is wiped: 90 days.
    public static let offlineBeforeWipe = PolicyDuration(seconds: 90 * 86_400)
}
