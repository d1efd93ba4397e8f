/// A Microsoft Graph enum, read from and written as its exported string values.
public protocol GraphEnum: RawRepresentable<String>, CaseIterable, Sendable, Hashable, CustomStringConvertible {}

extension GraphEnum {
    public var description: String { rawValue }
}

/// A Graph enum whose cases are declared from least to most restrictive, so that merging
/// several policies takes the greatest value, and an unknown value reads as the last case.
public protocol RestrictionOrdered: GraphEnum, Comparable where AllCases == [Self] {}

extension RestrictionOrdered {
    /// Orders by restriction: `a < b` when `b` restricts more.
    public static func < (lhs: Self, rhs: Self) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }

    /// The strictest value: what an unknown value in a document counts as.
    public static var mostRestrictive: Self { allCases[allCases.count - 1] }
}

/// The platform a policy is written for and a decision is evaluated on.
public enum Platform: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case ios
    case android
    /// Windows MAM (Microsoft Edge for Business on unmanaged Windows devices).
    case windows

    public var description: String { rawValue }
}

/// Graph `managedAppDataTransferLevel`: which apps org data may be sent to or received from.
public enum DataTransferLevel: String, RestrictionOrdered {
    case allApps
    case managedApps
    case none
}

/// Graph `managedAppClipboardSharingLevel`: which apps may exchange org data by clipboard.
public enum ClipboardSharingLevel: String, RestrictionOrdered {
    /// Cut, copy and paste with any app.
    case allApps
    /// Copy out to policy-managed apps; paste in from any app.
    case managedAppsWithPasteIn
    /// Cut, copy and paste with policy-managed apps only.
    case managedApps
    /// No cut, copy or paste with other apps.
    case blocked
}

/// Graph `windowsManagedAppClipboardSharingLevel` (beta): Windows MAM's "Allow cut, copy, and
/// paste for", read into the level of the other platforms. The admin center offers the first
/// and the last; Graph defines the two org-only levels between them.
public enum WindowsClipboardLevel: String, RestrictionOrdered {
    case anyDestinationAnySource
    case orgDestinationAnySource
    case orgDestinationOrgSource
    case none

    /// The shared level: any destination and source is `allApps`, org destinations with any
    /// source `managedAppsWithPasteIn`, org both ways `managedApps`, none `blocked`.
    public var level: ClipboardSharingLevel {
        switch self {
        case .anyDestinationAnySource: .allApps
        case .orgDestinationAnySource: .managedAppsWithPasteIn
        case .orgDestinationOrgSource: .managedApps
        case .none: .blocked
        }
    }
}

/// Graph `managedAppNotificationRestriction`: what notifications of org data may show.
public enum NotificationRestriction: String, RestrictionOrdered {
    case allow
    case blockOrganizationalData
    case block
}

/// Graph `managedAppDataEncryptionType` (iOS): when app data is encrypted.
/// Anything but `useDeviceSettings` means Custody encrypts the account's data.
public enum DataEncryptionType: String, RestrictionOrdered {
    case useDeviceSettings
    case afterDeviceRestart
    case whenDeviceLockedExceptOpenFiles
    case whenDeviceLocked
}

/// Graph iOS `screenCaptureConfigurationState` (iOS 26 and later), and the same states of
/// `writingToolsConfigurationState` and `genmojiConfigurationState`.
public enum ScreenCaptureState: String, RestrictionOrdered {
    case notConfigured
    case notBlocked
    case blocked
}

/// Graph `managedAppPhoneNumberRedirectLevel`: which dialer a phone number may open in.
public enum DialerRedirectLevel: String, RestrictionOrdered {
    case allApps
    case managedApps
    case customApp
    case blocked
}

/// Graph `messagingRedirectAppType`: which app a messaging link may open in.
public enum MessagingRedirectType: String, RestrictionOrdered {
    case anyApp
    case anyManagedApp
    case specificApps
    case blocked
}

/// Graph `managedBrowserType`: the managed browser web links open in.
public enum ManagedBrowser: String, RestrictionOrdered {
    case notConfigured
    case microsoftEdge
}

/// Graph `targetedManagedAppGroupType`: which apps a policy targets.
public enum AppGroupType: String, GraphEnum {
    case selectedPublicApps
    case allCoreMicrosoftApps
    case allMicrosoftApps
    case allApps
}

/// Graph `appManagementLevel`: the device management states a policy targets (a flags enum,
/// exported comma-joined, such as `"mdm,androidEnterprise"`).
public enum AppManagementLevel: String, GraphEnum {
    case unspecified
    case unmanaged
    case mdm
    case androidEnterprise
    case androidEnterpriseDedicatedDevicesWithAzureAdSharedMode
    case androidOpenSourceProjectUserAssociated
    case androidOpenSourceProjectUserless
}
