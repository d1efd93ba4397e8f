import CustodyPolicy
import Testing

/// Writing Tools, Genmoji, third-party keyboards, widgets and opening URLs.
@Suite("Decision: the 2024–2026 controls")
struct ControlsTests {
    @Test(
        "Writing Tools and Genmoji follow their iOS configuration state; Android has no such setting",
        arguments: [
            (ScreenCaptureState.blocked as ScreenCaptureState?, Platform.ios, false),
            (.notBlocked, .ios, true), (nil, .ios, true), (.blocked, .android, true),
        ])
    func appleIntelligence(state: ScreenCaptureState?, platform: Platform, allowed: Bool) {
        let snapshot = World.snapshot(
            owner: .with {
                $0.writingToolsConfigurationState = state
                $0.genmojiConfigurationState = state
            }, kind: platform == .ios ? .iosManagedAppProtection : .androidManagedAppProtection,
            context: EvaluationContext(platform: platform))
        let writing = snapshot.writingTools(account: World.owner)
        let genmoji = snapshot.genmoji(account: World.owner)
        #expect(writing.isAllowed == allowed, "\(writing.reason)")
        #expect(genmoji.isAllowed == allowed, "\(genmoji.reason)")
        #expect(writing.settingName == "writingToolsConfigurationState")
        #expect(genmoji.settingName == "genmojiConfigurationState")
        #expect(snapshot.writingTools(account: World.outsider).isAllowed)
    }

    @Test(
        "an unknown configuration state (unknownFutureValue) reads as blocked, with a warning",
        arguments: ["unknownFutureValue", "sometimes"])
    func unknownState(value: String) throws {
        let text = """
            {"@odata.type": "#microsoft.graph.iosManagedAppProtection", "displayName": "P",
             "writingToolsConfigurationState": "\(value)"}
            """
        let bundle = try loadBundle(tenant: nil, documents: [text])
        #expect(bundle.protectionPolicies.first?.settings.writingToolsConfigurationState == .blocked)
        #expect(bundle.warnings.contains { $0.code == .unknownEnumValue })
    }

    @Test(
        "keyboards: iOS blocks every third-party keyboard; Android allows the approved ones",
        arguments: [
            (Platform.ios, true as Bool?, nil as Bool?, nil as String?, false),
            (.ios, false, nil, "com.swiftkey", true),
            (.android, nil, true, "com.swiftkey", true),
            (.android, nil, true, "COM.SwiftKey", true),
            (.android, nil, true, "com.evil.keys", false),
            (.android, nil, true, nil, false),
            (.android, nil, false, "com.evil.keys", true),
            (.android, true, nil, "com.evil.keys", true),
        ])
    func keyboards(platform: Platform, iosBlocked: Bool?, restricted: Bool?, keyboard: String?, allowed: Bool) {
        let snapshot = World.snapshot(
            owner: .with {
                $0.thirdPartyKeyboardsBlocked = iosBlocked
                $0.keyboardsRestricted = restricted
                $0.approvedKeyboards = ["com.swiftkey"]
            }, kind: platform == .ios ? .iosManagedAppProtection : .androidManagedAppProtection,
            context: EvaluationContext(platform: platform))
        let decision = snapshot.thirdPartyKeyboard(account: World.owner, keyboard: keyboard)
        #expect(decision.isAllowed == allowed, "\(decision.reason)")
    }

    @Test(
        "widgets: allowWidgetContentSync, else contactSyncBlocked",
        arguments: [
            (true as Bool?, true as Bool?, true), (false, false, false), (nil, true, false), (nil, false, true),
            (nil, nil, true),
        ])
    func widgets(allow: Bool?, contactSyncBlocked: Bool?, allowed: Bool) {
        let snapshot = World.snapshot(
            owner: .with {
                $0.allowWidgetContentSync = allow
                $0.contactSyncBlocked = contactSyncBlocked
            })
        #expect(snapshot.widgetContentSync(account: World.owner).isAllowed == allowed)
    }

    struct URLRow: Sendable, CustomTestStringConvertible {
        let url: String
        let platform: Platform
        let settings: ProtectionSettings
        let outcome: URLOutcome
        let redirect: String?
        var testDescription: String { "\(url) on \(platform) → \(outcome) \(redirect ?? "")" }
    }

    @Test(
        "openURL: dialer, messaging, browser and other schemes",
        arguments: [
            URLRow(
                url: "tel:+15550100", platform: .ios, settings: .with { $0.dialerRestrictionLevel = .allApps },
                outcome: .allowed, redirect: nil),
            URLRow(
                url: "tel:+15550100", platform: .ios, settings: .with { $0.dialerRestrictionLevel = .blocked },
                outcome: .blocked, redirect: nil),
            URLRow(
                url: "telprompt:5550100", platform: .ios,
                settings: .with {
                    $0.dialerRestrictionLevel = .customApp; $0.customDialerAppProtocol = "skype"
                }, outcome: .redirect, redirect: "skype"),
            URLRow(
                url: "tel:5550100", platform: .android,
                settings: .with {
                    $0.dialerRestrictionLevel = .customApp; $0.customDialerAppPackageId = "com.skype.raider"
                }, outcome: .redirect,
                redirect: "com.skype.raider"),
            URLRow(
                url: "tel:5550100", platform: .ios, settings: .with { $0.dialerRestrictionLevel = .customApp },
                outcome: .blocked, redirect: nil),
            URLRow(
                url: "sms:+15550100", platform: .ios,
                settings: .with {
                    $0.protectedMessagingRedirectAppType = .specificApps; $0.messagingRedirectAppUrlScheme = "ms-teams"
                },
                outcome: .redirect, redirect: "ms-teams"),
            URLRow(
                url: "SMS:5550100", platform: .ios, settings: .with { $0.protectedMessagingRedirectAppType = .blocked },
                outcome: .blocked, redirect: nil),
            URLRow(
                url: "smsto:5550100", platform: .android,
                settings: .with { $0.protectedMessagingRedirectAppType = .anyManagedApp }, outcome: .allowed,
                redirect: nil),
            URLRow(
                url: "https://contoso.com", platform: .ios, settings: ProtectionSettings(), outcome: .allowed,
                redirect: nil),
            URLRow(
                url: "https://contoso.com/a", platform: .ios,
                settings: .with { $0.managedBrowserToOpenLinksRequired = true }, outcome: .redirect,
                redirect: "microsoft-edge-https"),
            URLRow(
                url: "http://contoso.com/a", platform: .android,
                settings: .with {
                    $0.managedBrowserToOpenLinksRequired = true; $0.managedBrowser = .microsoftEdge
                }, outcome: .redirect,
                redirect: "com.microsoft.emmx"),
            URLRow(
                url: "https://contoso.com", platform: .ios,
                settings: .with {
                    $0.managedBrowserToOpenLinksRequired = true; $0.customBrowserProtocol = "googlechrome"
                }, outcome: .redirect,
                redirect: "googlechrome"),
            URLRow(
                url: "https://maps.apple.com/?q=x", platform: .ios,
                settings: .with {
                    $0.managedBrowserToOpenLinksRequired = true;
                    $0.allowedOutboundDataTransferDestinations = .managedApps
                    $0.exemptedUniversalLinks = ["http://maps.apple.com", "https://maps.apple.com"]
                }, outcome: .allowed, redirect: nil),
            URLRow(
                url: "skype:echo123", platform: .ios,
                settings: .with {
                    $0.allowedOutboundDataTransferDestinations = .managedApps; $0.exemptedAppProtocols = ["skype"]
                }, outcome: .allowed,
                redirect: nil),
            URLRow(
                url: "zoommtg:join", platform: .ios,
                settings: .with { $0.allowedOutboundDataTransferDestinations = .managedApps }, outcome: .blocked,
                redirect: nil),
            URLRow(
                url: "zoommtg:join", platform: .ios,
                settings: .with { $0.allowedOutboundDataTransferDestinations = DataTransferLevel.none },
                outcome: .blocked, redirect: nil),
        ])
    func openURL(row: URLRow) {
        let snapshot = World.snapshot(
            owner: row.settings, kind: row.platform == .ios ? .iosManagedAppProtection : .androidManagedAppProtection,
            context: EvaluationContext(platform: row.platform))
        let decision = snapshot.openURL(account: World.owner, url: row.url)
        #expect(decision.urlOutcome == row.outcome, "\(decision.reason)")
        #expect(decision.redirect == row.redirect)
        #expect(snapshot.openURL(account: World.outsider, url: row.url).urlOutcome == .allowed)
    }
}
