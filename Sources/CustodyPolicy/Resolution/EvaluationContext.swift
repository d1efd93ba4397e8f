/// What a bundle is evaluated for: the platform, the app asking, and the device's management.
///
/// A field left nil does not filter: with no app, policies apply whatever apps they list; with
/// no management level, whatever levels they target. With no platform, the bundle's own
/// platform applies when its policies are all for one; otherwise decisions need one
/// (`PolicyBundle.platform(for:)`): iOS and Android settings never merge.
public struct EvaluationContext: Sendable, Hashable, CustomStringConvertible {
    /// The platform whose policies apply.
    public var platform: Platform?
    /// The evaluating app's bundle or package id (or Graph app id), matched against policies'
    /// `apps` lists case-insensitively.
    public var appID: String?
    /// The device's management state, matched against `targetedAppManagementLevels`.
    public var managementLevel: AppManagementLevel?

    /// Creates a context.
    public init(platform: Platform? = nil, appID: String? = nil, managementLevel: AppManagementLevel? = nil) {
        self.platform = platform
        self.appID = appID
        self.managementLevel = managementLevel
    }

    /// Whether the context says the device is enrolled in device management (MDM or Android
    /// Enterprise), whose storage encryption the enrollment enforces. An unknown management
    /// level is not enrolled: nothing is waived on a guess.
    public var isEnrolledDevice: Bool {
        switch managementLevel {
        case .mdm, .androidEnterprise, .androidEnterpriseDedicatedDevicesWithAzureAdSharedMode,
            .androidOpenSourceProjectUserAssociated, .androidOpenSourceProjectUserless:
            true
        case .unspecified, .unmanaged, nil: false
        }
    }

    public var description: String {
        "platform \(platform?.rawValue ?? "any"), app \(appID ?? "any"), management \(managementLevel?.rawValue ?? "any")"
    }
}

extension PolicyTargeting {
    /// Whether the policy's app list and management levels admit the context.
    /// - Parameter ignoringApp: evaluate for every app (used to collect policy-managed apps).
    func admits(_ context: EvaluationContext, ignoringApp: Bool = false) -> Bool {
        if let level = context.managementLevel, !managementLevels.isEmpty,
            !managementLevels.contains(.unspecified), !managementLevels.contains(level)
        {
            return false
        }
        guard !ignoringApp, let appID = context.appID, appGroupType != .allApps, let apps, !apps.isEmpty else {
            return true
        }
        return apps.contains { $0.matches(appID) }
    }
}

extension ProtectionPolicy {
    /// Whether the policy's platform admits the context. The default policy is for iOS and
    /// Android (its Graph type carries both platforms' settings and no Windows one): it
    /// admits either, never Windows.
    func admits(platform: Platform?) -> Bool {
        guard let platform else { return true }
        guard let own = kind.platform else { return platform != .windows }
        return own == platform
    }
}
