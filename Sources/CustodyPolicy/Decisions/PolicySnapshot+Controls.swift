extension PolicySnapshot {
    /// May Apple Intelligence Writing Tools work on org data of `account`? iOS
    /// `writingToolsConfigurationState`; Android policies have no such setting.
    public func writingTools(account: AccountID?) -> Decision {
        featureState(.writingTools, account: account, \.writingToolsConfigurationState, .writingToolsConfigurationState)
    }

    /// May Genmoji be used in org data of `account`? iOS `genmojiConfigurationState`.
    public func genmoji(account: AccountID?) -> Decision {
        featureState(.genmoji, account: account, \.genmojiConfigurationState, .genmojiConfigurationState)
    }

    private func featureState(
        _ action: DecisionAction, account: AccountID?,
        _ keyPath: KeyPath<EffectivePolicy, ResolvedSetting<ScreenCaptureState>>,
        _ setting: PolicySetting
    ) -> Decision {
        let party = resolve(account)
        if let refusal = party.refusal(.account) { return .refused(action, refusal) }
        guard let policy = party.policy else {
            return Decision(action, allowed: true, Finding(.unmanaged(.account), nil))
        }
        if context.platform == .android {
            return Decision(action, allowed: true, Finding(.noSettingOnPlatform(setting, .android), policy))
        }
        let blocked = policy[keyPath: keyPath].value == .blocked
        return Decision(action, allowed: !blocked, Finding(.configurationState(setting, blocked: blocked), policy))
    }

    /// May a third-party keyboard type into the app while org data of `account` shows?
    ///
    /// iOS: `thirdPartyKeyboardsBlocked` blocks every third-party keyboard. Android: with
    /// `keyboardsRestricted`, only a keyboard whose package id is in `approvedKeyboards`; a
    /// query that names no keyboard is blocked then (it cannot be shown approved). With no
    /// platform in the context, either restriction restricts.
    public func thirdPartyKeyboard(account: AccountID?, keyboard: String?) -> Decision {
        let party = resolve(account)
        if let refusal = party.refusal(.account) { return .refused(.thirdPartyKeyboard, refusal) }
        guard let policy = party.policy else {
            return Decision(.thirdPartyKeyboard, allowed: true, Finding(.unmanaged(.account), nil))
        }
        if context.platform != .android, policy.thirdPartyKeyboardsBlocked.value {
            return Decision(.thirdPartyKeyboard, allowed: false, Finding(.thirdPartyKeyboards(blocked: true), policy))
        }
        if context.platform != .ios, policy.keyboardsRestricted.value {
            guard let keyboard, policy.approvedKeyboards.value.contains(keyboard.lowercased()) else {
                return Decision(
                    .thirdPartyKeyboard, allowed: false, Finding(.keyboardNotApproved(keyboard), policy))
            }
            return Decision(.thirdPartyKeyboard, allowed: true, Finding(.keyboardApproved(keyboard), policy))
        }
        return Decision(
            .thirdPartyKeyboard, allowed: true,
            Finding(
                context.platform == .android ? .keyboardNotRestricted : .thirdPartyKeyboards(blocked: false), policy))
    }

    /// May widgets show org data of `account`? iOS `allowWidgetContentSync`; not configured, the
    /// widgets follow "Sync policy managed app data with native apps" (`contactSyncBlocked`).
    public func widgetContentSync(account: AccountID?) -> Decision {
        let party = resolve(account)
        if let refusal = party.refusal(.account) { return .refused(.widgetContentSync, refusal) }
        guard let policy = party.policy else {
            return Decision(.widgetContentSync, allowed: true, Finding(.unmanaged(.account), nil))
        }
        if policy.allowWidgetContentSync.resolution != .notConfigured {
            let allowed = policy.allowWidgetContentSync.value
            return Decision(
                .widgetContentSync, allowed: allowed,
                Finding(.widgetContentSync(allowed: allowed, setting: .allowWidgetContentSync), policy))
        }
        let allowed = !policy.contactSyncBlocked.value
        return Decision(
            .widgetContentSync, allowed: allowed,
            Finding(.widgetContentSync(allowed: allowed, setting: .contactSyncBlocked), policy))
    }

    /// May the app open `url` from org data of `account`, and where?
    ///
    /// - `tel:` and `telprompt:`: `dialerRestrictionLevel`: any app; only a policy-managed
    ///   dialer; redirected to the custom dialer (`customDialerAppProtocol` on iOS,
    ///   `customDialerAppPackageId` on Android); or blocked.
    /// - `sms:`, `smsto:`, `mms:`, `mmsto:`: `protectedMessagingRedirectAppType`: any app; any
    ///   policy-managed app; redirected to the chosen app (`messagingRedirectAppUrlScheme`,
    ///   `messagingRedirectAppPackageId`); or blocked.
    /// - `http:` and `https:`: with `managedBrowserToOpenLinksRequired`, redirected to Microsoft
    ///   Edge, or to the custom browser (`customBrowserProtocol`, `customBrowserPackageId`) when
    ///   no managed browser is named; an iOS universal link in `exemptedUniversalLinks` or
    ///   `managedUniversalLinks` opens its app instead.
    /// - any other scheme: the app that handles it receives org data: the send rule of `share`.
    ///
    /// A redirect that names no app (a custom app the applying policies disagree on, or leave
    /// empty) is blocked: Custody never sends the link to an app it cannot name.
    public func openURL(account: AccountID?, url: String) -> Decision {
        let party = resolve(account)
        if let refusal = party.refusal(.account) { return .refused(.openURL, refusal) }
        guard let policy = party.policy else {
            return Decision(.openURL, allowed: true, Finding(.unmanaged(.account), nil))
        }
        let scheme = UniversalLink.scheme(of: url.lowercased())
        switch scheme {
        case "tel", "telprompt":
            let level = policy.dialerRestrictionLevel.value
            switch level {
            case .allApps, .managedApps:
                return Decision(.openURL, allowed: true, Finding(.urlDialer(level, redirect: nil), policy))
            case .blocked:
                return Decision(.openURL, allowed: false, Finding(.urlDialer(level, redirect: nil), policy))
            case .customApp:
                let app = customApp(policy.customDialerAppProtocol.value, policy.customDialerAppPackageId.value)
                return Decision(.openURL, allowed: app != nil, Finding(.urlDialer(level, redirect: app), policy))
            }
        case "sms", "smsto", "mms", "mmsto":
            let type = policy.protectedMessagingRedirectAppType.value
            switch type {
            case .anyApp, .anyManagedApp:
                return Decision(.openURL, allowed: true, Finding(.urlMessaging(type, redirect: nil), policy))
            case .blocked:
                return Decision(.openURL, allowed: false, Finding(.urlMessaging(type, redirect: nil), policy))
            case .specificApps:
                let app = customApp(
                    policy.messagingRedirectAppUrlScheme.value, policy.messagingRedirectAppPackageId.value)
                return Decision(.openURL, allowed: app != nil, Finding(.urlMessaging(type, redirect: app), policy))
            }
        case "http", "https":
            guard policy.managedBrowserToOpenLinksRequired.value else {
                return Decision(.openURL, allowed: true, Finding(.urlBrowser(redirect: nil), policy))
            }
            if let list = policy.exemption(of: url), list == .exemptedUniversalLinks {
                return Decision(.openURL, allowed: true, Finding(.urlLinkExempted(list), policy))
            }
            if policy.isManagedUniversalLink(url) {
                return Decision(.openURL, allowed: true, Finding(.urlLinkExempted(.managedUniversalLinks), policy))
            }
            let custom = customApp(policy.customBrowserProtocol.value, policy.customBrowserPackageId.value)
            let browser: String
            if policy.managedBrowser.value == .microsoftEdge || custom == nil {
                browser = context.platform == .android ? "com.microsoft.emmx" : "microsoft-edge-\(scheme)"
            } else {
                browser = custom!
            }
            return Decision(.openURL, allowed: true, Finding(.urlBrowser(redirect: browser), policy))
        default:
            let decision = shareDecision(owner: party, target: url)
            return Decision(.openURL, allowed: decision.isAllowed, decision.primary)
        }
    }

    /// The custom app of a redirect on the evaluated platform: the iOS URL scheme or the
    /// Android package id; with no platform, the one configured. Nil when none is agreed.
    private func customApp(_ iosScheme: String, _ androidPackage: String) -> String? {
        let chosen: String
        switch context.platform {
        case .ios: chosen = iosScheme
        case .android: chosen = androidPackage
        // Windows MAM has no redirect settings.
        case .windows: chosen = ""
        case nil: chosen = iosScheme.isEmpty ? androidPackage : iosScheme
        }
        return chosen.isEmpty ? nil : chosen
    }
}

/// How `openURL` answers: open it as asked, open it in another app, or not at all.
public enum URLOutcome: String, Sendable, Hashable, CustomStringConvertible {
    case allowed
    case redirect
    case blocked

    public var description: String { rawValue }
}

extension Decision {
    /// For `openURL`: the app (a URL scheme or package id) the link is to be opened in instead.
    public var redirect: String? {
        switch primary.code {
        case .urlDialer(_, let app), .urlMessaging(_, let app), .urlBrowser(let app): app
        default: nil
        }
    }

    /// For `openURL`: allowed, redirected or blocked.
    public var urlOutcome: URLOutcome? {
        guard action == .openURL else { return nil }
        if !isAllowed { return .blocked }
        return redirect == nil ? .allowed : .redirect
    }

    /// For `openURL`: the link may open only in a policy-managed app (a managed dialer or
    /// messaging app).
    public var onlyManagedApps: Bool {
        switch primary.code {
        case .urlDialer(.managedApps, _), .urlMessaging(.anyManagedApp, _): true
        default: false
        }
    }
}
