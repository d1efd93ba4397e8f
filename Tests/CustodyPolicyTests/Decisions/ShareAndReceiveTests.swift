import CustodyPolicy
import Testing

@Suite("Decision: share (Open in / Copy to) and receive")
struct ShareAndReceiveTests {
    struct ShareRow: CustomTestStringConvertible, Sendable {
        var owner: Holder = .owner
        let sends: DataTransferLevel?
        var platform: Platform = .ios
        let target: String
        let allowed: Bool
        let reason: String
        var testDescription: String {
            "\(owner) sends to \(sends?.rawValue ?? "default") on \(platform), target \(target) → \(allowed ? "allow" : "block")"
        }
    }

    static let shareRows: [ShareRow] = [
        ShareRow(
            owner: .bystander, sends: DataTransferLevel.none, target: "com.getdropbox.Dropbox", allowed: true,
            reason: "the data's owner is not managed"),
        ShareRow(
            owner: .outsider, sends: DataTransferLevel.none, target: "anything", allowed: true, reason: "not managed"),
        ShareRow(
            sends: nil, target: "com.getdropbox.Dropbox", allowed: true,
            reason: "allowedOutboundDataTransferDestinations is allApps: any app may receive the data (Intune default"),
        ShareRow(sends: .allApps, target: "com.getdropbox.Dropbox", allowed: true, reason: "is allApps"),
        // managedApps: policy apps, tenant apps, exemptions.
        ShareRow(
            sends: .managedApps, target: "com.microsoft.office.word", allowed: true,
            reason:
                "allowedOutboundDataTransferDestinations is managedApps and com.microsoft.office.word is a policy-managed app (from \"Owner policy\")"
        ),
        ShareRow(
            sends: .managedApps, target: "COM.MICROSOFT.OFFICE.WORD", allowed: true, reason: "is a policy-managed app"),
        ShareRow(sends: .managedApps, target: "com.contoso.expenses", allowed: true, reason: "is a policy-managed app"),
        ShareRow(
            sends: .managedApps, target: "skype", allowed: true,
            reason:
                "allowedOutboundDataTransferDestinations is managedApps and skype is exempted in exemptedAppProtocols"),
        ShareRow(sends: .managedApps, target: "Skype:", allowed: true, reason: "is exempted"),
        ShareRow(sends: .managedApps, target: "skype://call?id=1", allowed: true, reason: "is exempted"),
        ShareRow(
            sends: .managedApps, target: "com.getdropbox.Dropbox", allowed: false,
            reason:
                "allowedOutboundDataTransferDestinations is managedApps and com.getdropbox.Dropbox is neither a policy-managed app nor exempted"
        ),
        ShareRow(sends: .managedApps, target: "com.microsoft.office.wordx", allowed: false, reason: "neither"),
        // none: no target, exempted or not ("Select apps to exempt" is available only with
        // Policy managed apps).
        ShareRow(
            sends: DataTransferLevel.none, target: "com.microsoft.office.word", allowed: false,
            reason:
                "allowedOutboundDataTransferDestinations is none: no app may receive the data, com.microsoft.office.word included (exemptions apply only to transfer to policy-managed apps)"
        ),
        ShareRow(
            sends: DataTransferLevel.none, target: "tel", allowed: false,
            reason: "allowedOutboundDataTransferDestinations is none: no app may receive the data, tel included"),
        ShareRow(
            sends: DataTransferLevel.none, platform: .android, target: "com.google.android.apps.maps", allowed: false,
            reason: "is none: no app may receive the data"),
        // Universal links (iOS): exempted ones open in an unmanaged app, managed ones in a managed app.
        ShareRow(
            sends: .managedApps, target: "https://maps.apple.com/?q=cafe", allowed: true,
            reason: "is exempted in exemptedUniversalLinks"),
        ShareRow(
            sends: .managedApps, target: "http://maps.apple.com", allowed: true,
            reason: "is exempted in exemptedUniversalLinks"),
        ShareRow(
            sends: .managedApps, target: "https://maps.apple.com.evil.example/x", allowed: false, reason: "neither"),
        ShareRow(
            sends: .managedApps, target: "https://contoso.sharepoint.com/sites/finance", allowed: true,
            reason: "is in managedUniversalLinks: it opens in a managed app"),
        ShareRow(
            sends: .managedApps, target: "https://sharepoint.com.evil.example/", allowed: false, reason: "neither"),
        ShareRow(sends: DataTransferLevel.none, target: "https://maps.apple.com/", allowed: false, reason: "is none"),
        ShareRow(
            sends: .managedApps, platform: .android, target: "https://maps.apple.com/", allowed: false,
            reason: "neither"),
        // Exemption lists belong to their platform.
        ShareRow(
            sends: .managedApps, platform: .android, target: "com.google.android.apps.maps", allowed: true,
            reason: "is exempted in exemptedAppPackages"),
        ShareRow(sends: .managedApps, platform: .android, target: "skype", allowed: false, reason: "neither"),
        ShareRow(
            sends: .managedApps, platform: .ios, target: "com.google.android.apps.maps", allowed: false,
            reason: "neither"),
    ]

    @Test("each target gets its own decision", arguments: shareRows)
    func share(row: ShareRow) throws {
        let settings = ProtectionSettings.with {
            $0.allowedOutboundDataTransferDestinations = row.sends
            $0.exemptedAppProtocols = ["skype", "tel"]
            $0.exemptedAppPackages = ["com.google.android.apps.maps"]
            $0.exemptedUniversalLinks = ["http://maps.apple.com", "https://maps.apple.com"]
            $0.managedUniversalLinks = ["https://*.sharepoint.com/*"]
        }
        let snapshot = World.snapshot(
            owner: settings, kind: row.platform == .ios ? .iosManagedAppProtection : .androidManagedAppProtection,
            ownerApps: ["com.microsoft.office.word"], context: EvaluationContext(platform: row.platform))
        let share = snapshot.share(owner: row.owner.account, targets: [row.target])
        let target = try #require(share.targets.first)
        #expect(target.id == row.target)
        #expect(target.decision.isAllowed == row.allowed)
        #expect(target.decision.reason.contains(row.reason), "\(target.decision.reason)")
        #expect(share.isAllowed == row.allowed)
    }

    @Test("a share is allowed only when every target is; allowed targets keep their order")
    func shareSheet() {
        let snapshot = World.snapshot(
            owner: .with { $0.allowedOutboundDataTransferDestinations = .managedApps },
            ownerApps: ["com.microsoft.office.word"])
        let share = snapshot.share(
            owner: World.owner,
            targets: ["com.getdropbox.Dropbox", "com.microsoft.office.word", "com.contoso.expenses"])
        #expect(!share.isAllowed)
        #expect(share.allowedTargets == ["com.microsoft.office.word", "com.contoso.expenses"])
        #expect(share.reason == "2 of 3 targets allowed")
        #expect(
            share.targets.map(\.decision.settingName)
                == Array(repeating: "allowedOutboundDataTransferDestinations", count: 3))
    }

    /// iOS "Policy managed apps with OS sharing": on an MDM-enrolled device, apps the MDM
    /// manages may receive files; elsewhere (or when the device's management is unknown)
    /// Policy managed apps applies.
    @Test(
        "Policy managed apps with OS sharing reaches MDM-managed apps on enrolled devices only",
        arguments: [
            (Platform.ios, AppManagementLevel.mdm as AppManagementLevel?, true as Bool?, "com.contoso.mdm-only", true),
            (.ios, .mdm, true, "COM.CONTOSO.MDM-ONLY", true),
            (.ios, .unmanaged, true, "com.contoso.mdm-only", false),
            (.ios, nil, true, "com.contoso.mdm-only", false),
            (.ios, .mdm, false, "com.contoso.mdm-only", false),
            (.ios, .mdm, nil, "com.contoso.mdm-only", false),
            (.ios, .mdm, true, "com.getdropbox.Dropbox", false),
            (.android, .mdm, true, "com.contoso.mdm-only", false),
        ] as [(Platform, AppManagementLevel?, Bool?, String, Bool)])
    func osSharing(platform: Platform, level: AppManagementLevel?, flag: Bool?, target: String, allowed: Bool) throws {
        let settings = ProtectionSettings.with {
            $0.allowedOutboundDataTransferDestinations = .managedApps
            $0.disableProtectionOfManagedOutboundOpenInData = flag
        }
        let snapshot = World.snapshot(
            owner: settings, kind: platform == .ios ? .iosManagedAppProtection : .androidManagedAppProtection,
            context: EvaluationContext(platform: platform, managementLevel: level))
        let decision = try #require(snapshot.share(owner: World.owner, targets: [target]).targets.first).decision
        #expect(decision.isAllowed == allowed)
        #expect(
            decision.settingName
                == (allowed
                    ? "disableProtectionOfManagedOutboundOpenInData" : "allowedOutboundDataTransferDestinations"))
        if allowed { #expect(decision.reason.contains("Policy managed apps with OS sharing")) }
    }

    /// "Policy managed apps with Open-In/Share filtering" (iOS): the answer tells the caller to
    /// hide, not refuse, the targets it does not allow.
    @Test(
        "Open-In/Share filtering marks the share answer",
        arguments: [
            (Platform.ios, DataTransferLevel.managedApps, true as Bool?, true),
            (.ios, .managedApps, false, false),
            (.ios, .managedApps, nil, false),
            (.ios, .allApps, true, false),
            (.android, .managedApps, true, false),
        ] as [(Platform, DataTransferLevel, Bool?, Bool)])
    func filtering(platform: Platform, sends: DataTransferLevel, flag: Bool?, filters: Bool) {
        let settings = ProtectionSettings.with {
            $0.allowedOutboundDataTransferDestinations = sends
            $0.filterOpenInToOnlyManagedApps = flag
        }
        let snapshot = World.snapshot(
            owner: settings, kind: platform == .ios ? .iosManagedAppProtection : .androidManagedAppProtection,
            context: EvaluationContext(platform: platform))
        let share = snapshot.share(owner: World.owner, targets: ["com.getdropbox.Dropbox"])
        #expect(share.filtersShareSheet == filters)
        #expect(snapshot.share(owner: World.outsider, targets: ["x"]).filtersShareSheet == false)
        if filters {
            #expect(
                share.targets[0].decision.reason.contains("Open-In/Share filtering: the share sheet does not offer it"))
        }
    }

    struct ReceiveRow: CustomTestStringConvertible, Sendable {
        var receiver: Holder = .owner
        let accepts: DataTransferLevel?
        var peerSends: DataTransferLevel? = nil
        let itemOwner: Holder
        let allowed: Bool
        let reason: String
        var testDescription: String {
            "\(receiver) accepts from \(accepts?.rawValue ?? "default"), item of \(itemOwner)\(peerSends.map { " (sends to \($0))" } ?? "") → \(allowed ? "allow" : "block")"
        }
    }

    static let receiveRows: [ReceiveRow] = [
        ReceiveRow(
            accepts: .allApps, itemOwner: .none, allowed: true,
            reason:
                "allowedInboundDataTransferSources is allApps: data from any app may be received (from \"Owner policy\")"
        ),
        ReceiveRow(
            accepts: nil, itemOwner: .outsider, allowed: true,
            reason: "is allApps: data from any app may be received (Intune default"),
        ReceiveRow(accepts: .allApps, itemOwner: .bystander, allowed: true, reason: "is allApps"),
        ReceiveRow(
            accepts: .allApps, peerSends: .allApps, itemOwner: .peer, allowed: true,
            reason:
                "the shared item's owner is another managed account, whose allowedOutboundDataTransferDestinations is allApps"
        ),
        ReceiveRow(
            accepts: .allApps, peerSends: DataTransferLevel.none, itemOwner: .peer, allowed: false,
            reason: "whose allowedOutboundDataTransferDestinations is none (from \"Peer policy\")"),

        ReceiveRow(
            accepts: .managedApps, itemOwner: .none, allowed: false,
            reason:
                "allowedInboundDataTransferSources is managedApps and the shared item's owner is not managed (from \"Owner policy\")"
        ),
        ReceiveRow(
            accepts: .managedApps, itemOwner: .bystander, allowed: false,
            reason: "the shared item's owner is not managed"),
        ReceiveRow(accepts: .managedApps, itemOwner: .outsider, allowed: false, reason: "is not managed"),
        ReceiveRow(
            accepts: .managedApps, peerSends: .managedApps, itemOwner: .peer, allowed: true,
            reason: "is managedApps and the receiving side is managed"),
        ReceiveRow(
            accepts: .managedApps, peerSends: DataTransferLevel.none, itemOwner: .peer, allowed: false,
            reason: "whose allowedOutboundDataTransferDestinations is none"),
        ReceiveRow(
            accepts: .managedApps, itemOwner: .owner, allowed: true, reason: "the shared item's owner is managed"),

        ReceiveRow(
            accepts: DataTransferLevel.none, itemOwner: .none, allowed: false,
            reason: "allowedInboundDataTransferSources is none and the shared item's owner is not the receiving account"
        ),
        ReceiveRow(
            accepts: DataTransferLevel.none, itemOwner: .owner, allowed: true,
            reason: "the shared item's owner is the receiving account"),
        ReceiveRow(
            accepts: DataTransferLevel.none, itemOwner: .ownerByOID, allowed: true, reason: "is the receiving account"),
        ReceiveRow(
            accepts: DataTransferLevel.none, peerSends: .allApps, itemOwner: .peer, allowed: false,
            reason: "is not the receiving account"),

        ReceiveRow(
            receiver: .bystander, accepts: DataTransferLevel.none, itemOwner: .none, allowed: true,
            reason: "the receiving account is not managed"),
        ReceiveRow(
            receiver: .bystander, accepts: DataTransferLevel.none, peerSends: .managedApps, itemOwner: .peer,
            allowed: false, reason: "and the receiving side is not managed"),
        ReceiveRow(
            receiver: .none, accepts: DataTransferLevel.none, peerSends: .allApps, itemOwner: .peer, allowed: true,
            reason: "is allApps"),
    ]

    @Test(
        "a shared item is received by the receiver's inbound rule, then its owner's send rule", arguments: receiveRows)
    func receive(row: ReceiveRow) {
        let snapshot = World.snapshot(
            owner: .with { $0.allowedInboundDataTransferSources = row.accepts },
            peer: .with { $0.allowedOutboundDataTransferDestinations = row.peerSends })
        let decision = snapshot.receive(receiver: row.receiver.account, dataOwner: row.itemOwner.account)
        #expect(decision.action == .receive)
        #expect(decision.isAllowed == row.allowed)
        #expect(decision.reason.contains(row.reason), "\(decision.reason)")
    }
}

@Suite("Decision: clipboard")
struct ClipboardTests {
    struct CopyRow: CustomTestStringConvertible, Sendable {
        var owner: Holder = .owner
        let level: ClipboardSharingLevel?
        var limit: Int? = nil
        let destinationManaged: Bool
        let length: Int?
        let allowed: Bool
        let reason: String
        var setting = "allowedOutboundClipboardSharingLevel"
        var testDescription: String {
            "copy \(length.map(String.init) ?? "?") characters under \(level?.rawValue ?? "default") (limit \(limit.map(String.init) ?? "default")) to \(destinationManaged ? "managed" : "unmanaged") → \(allowed ? "allow" : "block")"
        }
    }

    static let copyRows: [CopyRow] = [
        CopyRow(
            owner: .bystander, level: .blocked, destinationManaged: false, length: 500, allowed: true,
            reason: "the data's owner is not managed", setting: ""),
        CopyRow(
            level: nil, destinationManaged: false, length: nil, allowed: true,
            reason:
                "allowedOutboundClipboardSharingLevel is allApps: copying to an unmanaged app is allowed (Intune default"
        ),
        CopyRow(
            level: .allApps, destinationManaged: false, length: 10_000, allowed: true,
            reason: "is allApps: copying to an unmanaged app is allowed"),
        CopyRow(
            level: .managedAppsWithPasteIn, destinationManaged: true, length: nil, allowed: true,
            reason: "is managedAppsWithPasteIn: copying to a policy-managed app is allowed"),
        CopyRow(
            level: .managedAppsWithPasteIn, destinationManaged: false, length: nil, allowed: false,
            reason: "is managedAppsWithPasteIn: copying to an unmanaged app is blocked (from \"Owner policy\")"),
        CopyRow(
            level: .managedApps, destinationManaged: true, length: 5, allowed: true,
            reason: "is managedApps: copying to a policy-managed app is allowed"),
        CopyRow(
            level: .managedApps, destinationManaged: false, length: 5, allowed: false,
            reason:
                "is managedApps: copying to an unmanaged app is blocked (from \"Owner policy\"); 5 characters is more than allowedOutboundClipboardSharingExceptionLength 0 (Intune default"
        ),
        CopyRow(
            level: .blocked, destinationManaged: true, length: nil, allowed: false,
            reason: "is blocked: copying to other apps is blocked"),
        CopyRow(level: .blocked, destinationManaged: false, length: nil, allowed: false, reason: "is blocked"),
        // The character exception.
        CopyRow(
            level: .blocked, limit: 10, destinationManaged: false, length: 10, allowed: true,
            reason:
                "allowedOutboundClipboardSharingLevel is blocked, but 10 characters is within allowedOutboundClipboardSharingExceptionLength 10 (from \"Owner policy\")",
            setting: "allowedOutboundClipboardSharingExceptionLength"),
        CopyRow(
            level: .managedApps, limit: 10, destinationManaged: false, length: 0, allowed: true,
            reason: "0 characters is within",
            setting: "allowedOutboundClipboardSharingExceptionLength"),
        CopyRow(
            level: .managedApps, limit: 10, destinationManaged: false, length: 11, allowed: false,
            reason: "11 characters is more than allowedOutboundClipboardSharingExceptionLength 10"),
        CopyRow(
            level: .managedApps, limit: 10, destinationManaged: false, length: nil, allowed: false,
            reason: "copying to an unmanaged app is blocked"),
        CopyRow(
            level: .managedApps, limit: 0, destinationManaged: false, length: 0, allowed: true,
            reason: "0 characters is within allowedOutboundClipboardSharingExceptionLength 0",
            setting: "allowedOutboundClipboardSharingExceptionLength"),
    ]

    @Test("copy out", arguments: copyRows)
    func copyOut(row: CopyRow) {
        let snapshot = World.snapshot(
            owner: .with {
                $0.allowedOutboundClipboardSharingLevel = row.level
                $0.allowedOutboundClipboardSharingExceptionLength = row.limit
            })
        let decision = snapshot.copyOut(
            owner: row.owner.account, destinationManaged: row.destinationManaged, length: row.length)
        #expect(decision.isAllowed == row.allowed)
        #expect(decision.reason.contains(row.reason), "\(decision.reason)")
        #expect((decision.settingName ?? "") == row.setting)
    }

    @Test(
        "paste in",
        arguments: [
            (ClipboardSharingLevel.allApps, false, true, "is allApps: pasting from an unmanaged app is allowed"),
            (
                .managedAppsWithPasteIn, false, true,
                "is managedAppsWithPasteIn: pasting from an unmanaged app is allowed"
            ),
            (.managedApps, false, false, "is managedApps: pasting from an unmanaged app is blocked"),
            (.managedApps, true, true, "is managedApps: pasting from a policy-managed app is allowed"),
            (.blocked, true, false, "is blocked: pasting from other apps is blocked"),
        ])
    func pasteIn(level: ClipboardSharingLevel, sourceManaged: Bool, allowed: Bool, reason: String) {
        let snapshot = World.snapshot(owner: .with { $0.allowedOutboundClipboardSharingLevel = level })
        let decision = snapshot.pasteIn(owner: World.owner, sourceManaged: sourceManaged)
        #expect(decision.isAllowed == allowed)
        #expect(decision.reason.contains(reason), "\(decision.reason)")
        #expect(snapshot.pasteIn(owner: World.outsider, sourceManaged: false).isAllowed)
    }
}
