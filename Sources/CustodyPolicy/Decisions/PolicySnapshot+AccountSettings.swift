extension PolicySnapshot {
    /// May org data of `account` be printed? (`printBlocked`)
    public func print(account: AccountID?) -> Decision {
        flag(.print, account: account, \.printBlocked) { .print(blocked: $0) }
    }

    /// May the app back up org data of `account`? (`dataBackupBlocked`)
    public func backup(account: AccountID?) -> Decision {
        flag(.backup, account: account, \.dataBackupBlocked) { .backup(blocked: $0) }
    }

    /// May the screen be captured while org data of `account` shows?
    ///
    /// Android: `screenCaptureBlocked`. iOS: `screenCaptureConfigurationState` (iOS 26).
    /// With no platform in the context, either blocking blocks.
    public func screenCapture(account: AccountID?) -> Decision {
        let party = resolve(account)
        if let refusal = party.refusal(.account) { return .refused(.screenCapture, refusal) }
        guard let policy = party.policy else {
            return Decision(.screenCapture, allowed: true, Finding(.unmanaged(.account), nil))
        }
        let androidBlocked = policy.screenCaptureBlocked.value
        let iosBlocked = policy.screenCaptureConfigurationState.value == .blocked
        let setting: PolicySetting
        let blocked: Bool
        switch context.platform {
        case .android: (setting, blocked) = (.screenCaptureBlocked, androidBlocked)
        case .ios: (setting, blocked) = (.screenCaptureConfigurationState, iosBlocked)
        // Windows MAM has no screen capture setting: neither flag is ever set by its policies.
        case .windows, nil:
            (setting, blocked) =
                iosBlocked && !androidBlocked
                ? (.screenCaptureConfigurationState, true) : (.screenCaptureBlocked, androidBlocked)
        }
        return Decision(.screenCapture, allowed: !blocked, Finding(.screenCapture(setting, blocked: blocked), policy))
    }

    /// May notifications show org data of `account`? (`notificationRestriction`)
    ///
    /// `isAllowed` is true only for `allow`; `notificationRestriction` on the decision tells an
    /// app that may still show a notification without org data (`blockOrganizationalData`).
    public func notifications(account: AccountID?) -> Decision {
        let party = resolve(account)
        if let refusal = party.refusal(.account) { return .refused(.notifications, refusal) }
        guard let policy = party.policy else {
            return Decision(.notifications, allowed: true, Finding(.unmanaged(.account), nil))
        }
        let restriction = policy.notificationRestriction.value
        return Decision(.notifications, allowed: restriction == .allow, Finding(.notifications(restriction), policy))
    }

    /// Must data of `account` be encrypted? `isAllowed` on the decision means "required".
    ///
    /// iOS: `appDataEncryptionType` other than `useDeviceSettings`. Android: `encryptAppData`.
    /// With no platform in the context, encryption is required when any configured setting
    /// requires it, or, when neither is configured, by Intune's default (required).
    /// Unmanaged accounts need no encryption (their data is only tagged).
    public func encryptionRequired(account: AccountID?) -> Decision {
        let party = resolve(account)
        if let refusal = party.refusal(.account) { return .refused(.encryptionRequired, refusal) }
        guard let policy = party.policy else {
            return Decision(.encryptionRequired, allowed: false, Finding(.unmanaged(.account), nil))
        }
        let ios = (
            setting: PolicySetting.appDataEncryptionType,
            required: policy.appDataEncryptionType.value != .useDeviceSettings
        )
        let android = (setting: PolicySetting.encryptAppData, required: policy.encryptAppData.value)
        let chosen: (setting: PolicySetting, required: Bool)
        switch context.platform {
        case .ios: chosen = ios
        case .android:
            if android.required, policy.disableAppEncryptionIfDeviceEncryptionIsEnabled.value, context.isEnrolledDevice
            {
                return Decision(.encryptionRequired, allowed: false, Finding(.encryptionWaivedOnEnrolledDevice, policy))
            }
            chosen = android
        // Windows MAM has no encryption setting: Intune's default (required) stands, the safe
        // side for the files Custody writes.
        case .windows, nil:
            let iosConfigured = policy.appDataEncryptionType.resolution != .notConfigured
            let androidConfigured = policy.encryptAppData.resolution != .notConfigured
            switch (iosConfigured, androidConfigured) {
            case (true, true): chosen = ios.required || !android.required ? ios : android
            case (false, true): chosen = android
            default: chosen = ios
            }
        }
        return Decision(
            .encryptionRequired, allowed: chosen.required,
            Finding(.encryption(chosen.setting, required: chosen.required), policy))
    }

    /// May org data of `account` be shared through the system's share sheet and document
    /// interaction at all (`isAppSharingAllowed`; on Linux, browser extensions and
    /// native-messaging hosts)? Blocked only when `allowedOutboundDataTransferDestinations`
    /// is `none`; under `managedApps` sharing goes on, to the targets `share` allows.
    public func appSharing(account: AccountID?) -> Decision {
        level(.appSharing, account: account) { level in (.appSharing(level), level != .none) }
    }

    /// May org data of `account` reach Siri, App Intents, Spotlight and other system
    /// assistants? Microsoft's settings reference: they are blocked unless "Send org data to
    /// other apps" is All apps.
    public func appIntents(account: AccountID?) -> Decision {
        level(.appIntents, account: account) { level in (.appIntents(level), level == .allApps) }
    }

    /// May org data of `account` be synced to the system's own contacts, calendar and widgets,
    /// or used by add-ins? (`contactSyncBlocked`)
    public func contactSync(account: AccountID?) -> Decision {
        flag(.contactSync, account: account, \.contactSyncBlocked) { .contactSync(blocked: $0) }
    }

    private func level(
        _ action: DecisionAction, account: AccountID?, _ rule: (DataTransferLevel) -> (Finding.Code, Bool)
    ) -> Decision {
        let party = resolve(account)
        if let refusal = party.refusal(.account) { return .refused(action, refusal) }
        guard let policy = party.policy else {
            return Decision(action, allowed: true, Finding(.unmanaged(.account), nil))
        }
        let (code, allowed) = rule(policy.allowedOutboundDataTransferDestinations.value)
        return Decision(action, allowed: allowed, Finding(code, policy))
    }

    private func flag(
        _ action: DecisionAction, account: AccountID?, _ keyPath: KeyPath<EffectivePolicy, ResolvedSetting<Bool>>,
        _ code: (Bool) -> Finding.Code
    ) -> Decision {
        let party = resolve(account)
        if let refusal = party.refusal(.account) { return .refused(action, refusal) }
        guard let policy = party.policy else {
            return Decision(action, allowed: true, Finding(.unmanaged(.account), nil))
        }
        let blocked = policy[keyPath: keyPath].value
        return Decision(action, allowed: !blocked, Finding(code(blocked), policy))
    }
}
