import CustodyPolicy
import Testing

@Suite("Decision: open from a location")
struct OpenFromTests {
    struct Row: CustomTestStringConvertible, Sendable {
        var receiver: Holder = .owner
        let preset: Preset
        var peerSends: DataTransferLevel? = nil
        let location: OpenLocation
        let holder: Holder
        let allowed: Bool
        let reason: String
        var setting: String? = nil
        var platform: Platform = .ios
        var testDescription: String {
            "\(platform): \(receiver) (\(preset)) opens from \(location) of \(holder)\(peerSends.map { ", peer sends to \($0)" } ?? "") → \(allowed ? "allow" : "block")"
        }
    }

    static let ingestionAllowed: [Row] =
        OpenLocation.allCases.map {
            Row(
                preset: .ingestionAllowed, location: $0, holder: .owner, allowed: true,
                reason: "blockDataIngestionIntoOrganizationDocuments is false",
                setting: "blockDataIngestionIntoOrganizationDocuments")
        } + [
            Row(
                preset: .nothingConfigured, location: .other, holder: .none, allowed: true,
                reason:
                    "allowedInboundDataTransferSources is allApps: opening data into org documents is not restricted (blockDataIngestionIntoOrganizationDocuments is in effect only when data may come from policy-managed apps) (Intune default: no applicable policy configures allowedInboundDataTransferSources)",
                setting: "allowedInboundDataTransferSources"),
            Row(
                preset: .ingestionAllowed, location: .box, holder: .bystander, allowed: true,
                reason: "blockDataIngestionIntoOrganizationDocuments is false"),
            // Step 2: the data leaves another managed account.
            Row(
                preset: .ingestionAllowed, peerSends: .allApps, location: .oneDriveForBusiness, holder: .peer,
                allowed: true,
                reason:
                    "the location's account is another managed account, whose allowedOutboundDataTransferDestinations is allApps (from \"Peer policy\")"
            ),
            Row(
                preset: .ingestionAllowed, peerSends: .managedApps, location: .oneDriveForBusiness, holder: .peer,
                allowed: true,
                reason: "is managedApps and the receiving side is managed",
                setting: "allowedOutboundDataTransferDestinations"),
            Row(
                preset: .ingestionAllowed, peerSends: DataTransferLevel.none, location: .sharePoint, holder: .peer,
                allowed: false,
                reason: "whose allowedOutboundDataTransferDestinations is none",
                setting: "allowedOutboundDataTransferDestinations"),
            Row(
                preset: .ingestionAllowed, peerSends: DataTransferLevel.none, location: .sharePoint,
                holder: .ownerByOID, allowed: true,
                reason: "blockDataIngestionIntoOrganizationDocuments is false"),
        ]

    static let listed: [Row] = [OpenLocation.oneDriveForBusiness, .sharePoint].flatMap { location in
        [
            Row(
                preset: .ingestionBlockedAllListed, location: location, holder: .owner, allowed: true,
                reason: "\(location.ingestionLocation!) is in allowedDataIngestionLocations",
                setting: "allowedDataIngestionLocations"),
            Row(
                preset: .ingestionBlockedAllListed, location: location, holder: .ownerByOID, allowed: true,
                reason: "belongs to the receiving account"),
        ]
            + [Holder.peer, .bystander, .outsider, .none].map { holder in
                Row(
                    preset: .ingestionBlockedAllListed, location: location, holder: holder, allowed: false,
                    reason: "only in the receiving account's own location", setting: "allowedDataIngestionLocations")
            }
    }

    static let ingestionBlocked: [Row] =
        [
            Row(
                preset: .ingestionBlockedAllListed, location: .camera, holder: .none, allowed: true,
                reason: "camera is in allowedDataIngestionLocations"),
            Row(
                preset: .ingestionBlockedAllListed, location: .photos, holder: .none, allowed: true,
                reason: "photoLibrary is in allowedDataIngestionLocations"),
            // Local storage is no service the allow-list can name (ms-intune-app-sdk-ios#251): blocked, whoever's it is.
            Row(
                preset: .ingestionBlockedAllListed, location: .localStorage, holder: .owner, allowed: false,
                reason:
                    "blockDataIngestionIntoOrganizationDocuments is true and localStorage is not a location allowedDataIngestionLocations can list: opening from local storage is blocked, whoever it belongs to",
                setting: "blockDataIngestionIntoOrganizationDocuments"),
            Row(
                preset: .ingestionBlockedAllListed, location: .accountDocument, holder: .owner, allowed: true,
                reason:
                    "blockDataIngestionIntoOrganizationDocuments is true, but the document belongs to the receiving account"
            ),
            Row(
                preset: .ingestionBlockedAllListed, location: .accountDocument, holder: .ownerByOID, allowed: true,
                reason: "belongs to the receiving account"),
            Row(
                preset: .ingestionBlockedAllListed, location: .localStorage, holder: .none, allowed: false,
                reason: "opening from local storage is blocked, whoever it belongs to",
                setting: "blockDataIngestionIntoOrganizationDocuments"),
            Row(
                preset: .ingestionBlockedAllListed, location: .accountDocument, holder: .peer, allowed: false,
                reason: "belongs to another account or to none"),
        ]
        + [OpenLocation.box, .iManage, .egnyte, .other].map { location in
            Row(
                preset: .ingestionBlockedAllListed, location: location, holder: .owner, allowed: false,
                reason: "\(location) is never an allowed source", setting: "blockDataIngestionIntoOrganizationDocuments"
            )
        } + [
            Row(
                preset: .ingestionBlockedNoneListed, location: .oneDriveForBusiness, holder: .owner, allowed: false,
                reason:
                    "blockDataIngestionIntoOrganizationDocuments is true and oneDriveForBusiness is not in allowedDataIngestionLocations [] (from \"Owner policy\")"
            ),
            Row(
                preset: .ingestionBlockedNoneListed, location: .sharePoint, holder: .owner, allowed: false,
                reason: "sharePoint is not in allowedDataIngestionLocations []"),
            Row(
                preset: .ingestionBlockedNoneListed, location: .camera, holder: .none, allowed: false,
                reason: "camera is not in allowedDataIngestionLocations []"),
            Row(
                preset: .ingestionBlockedNoneListed, location: .photos, holder: .none, allowed: false,
                reason: "photoLibrary is not in allowedDataIngestionLocations []"),
            Row(
                preset: .ingestionBlockedNoneListed, location: .localStorage, holder: .owner, allowed: false,
                reason: "opening from local storage is blocked"),
            Row(
                preset: .ingestionBlockedNoneListed, location: .accountDocument, holder: .owner, allowed: true,
                reason: "belongs to the receiving account"),
            Row(
                preset: .ingestionBlocked, location: .camera, holder: .none, allowed: false,
                reason: "camera is not in allowedDataIngestionLocations [] (Intune default"),
        ]

    static let unmanagedReceiver: [Row] = [
        Row(
            receiver: .none, preset: .ingestionBlockedNoneListed, location: .other, holder: .none, allowed: true,
            reason: "the receiving account is not managed: no protection policy applies to it"),
        Row(
            receiver: .bystander, preset: .ingestionBlockedNoneListed, peerSends: .managedApps,
            location: .oneDriveForBusiness, holder: .peer, allowed: false,
            reason: "is managedApps and the receiving side is not managed"),
        Row(
            receiver: .outsider, preset: .ingestionBlockedNoneListed, peerSends: .allApps,
            location: .oneDriveForBusiness, holder: .peer, allowed: true,
            reason: "is allApps"),
        Row(
            receiver: .bystander, preset: .ingestionBlockedNoneListed, peerSends: DataTransferLevel.none,
            location: .photos, holder: .peer, allowed: false,
            reason: "is none"),
    ]

    /// Open data into Org documents is in effect only under Receive data = Policy managed apps
    /// (iOS settings reference; ms-intune-app-sdk-ios#251); Android keeps the flag under All
    /// apps. Receive None closes every location but the receiver's own documents.
    static let transferLevels: [Row] =
        Platform.allCases.flatMap { platform in
            [
                Row(
                    preset: .receiveNone, location: .oneDriveForBusiness, holder: .owner, allowed: false,
                    reason:
                        "allowedInboundDataTransferSources is none: opening data into org documents is blocked, from oneDriveForBusiness as from every location",
                    setting: "allowedInboundDataTransferSources", platform: platform),
                Row(
                    preset: .receiveNone, location: .camera, holder: .none, allowed: false,
                    reason: "is none: opening data into org documents is blocked",
                    platform: platform),
                Row(
                    preset: .receiveNone, location: .localStorage, holder: .owner, allowed: false,
                    reason: "is none: opening data into org documents is blocked",
                    platform: platform),
                Row(
                    preset: .receiveNone, location: .accountDocument, holder: .owner, allowed: true,
                    reason:
                        "allowedInboundDataTransferSources is none, but the document belongs to the receiving account",
                    platform: platform),
                Row(
                    preset: .receiveNone, location: .accountDocument, holder: .peer, allowed: false,
                    reason:
                        "allowedInboundDataTransferSources is none and the document belongs to another account or to none",
                    platform: platform),
            ]
        } + [
            Row(
                preset: .receiveAllAppsIngestionBlocked, location: .localStorage, holder: .none, allowed: true,
                reason:
                    "allowedInboundDataTransferSources is allApps: opening data into org documents is not restricted",
                setting: "allowedInboundDataTransferSources"),
            Row(
                preset: .receiveAllAppsIngestionBlocked, location: .other, holder: .none, allowed: true,
                reason: "is allApps: opening data into org documents is not restricted"),
            Row(
                preset: .receiveAllAppsIngestionBlocked, location: .localStorage, holder: .none, allowed: false,
                reason: "opening from local storage is blocked", platform: .android),
            Row(
                preset: .receiveAllAppsIngestionBlocked, location: .other, holder: .none, allowed: false,
                reason: "other is never an allowed source", platform: .android),
        ]

    @Test("the receive level decides whether the ingestion restriction is in effect", arguments: transferLevels)
    func transferLevelRows(row: Row) { check(row) }

    /// "All apps with incoming Org data" (iOS): data without an owner becomes the receiver's,
    /// on MDM-enrolled devices (and, the protective reading, when the level is not known).
    @Test(
        "incoming data without an owner becomes the receiver's under All apps with incoming Org data",
        arguments: [
            (AppManagementLevel?.none, OpenLocation.other, Holder.none, true),
            (.mdm, .localStorage, .none, true),
            (.unmanaged, .other, .none, false),
            (.mdm, .oneDriveForBusiness, .owner, false),
            (.mdm, .box, .bystander, false),
        ] as [(AppManagementLevel?, OpenLocation, Holder, Bool)])
    func unknownSources(level: AppManagementLevel?, location: OpenLocation, holder: Holder, adopts: Bool) {
        let settings = ProtectionSettings.with {
            $0.allowedInboundDataTransferSources = .allApps
            $0.protectInboundDataFromUnknownSources = true
        }
        let snapshot = World.snapshot(
            owner: settings, context: EvaluationContext(platform: .ios, managementLevel: level))
        let decision = snapshot.openFrom(receiver: World.owner, location: location, locationAccount: holder.account)
        #expect(decision.isAllowed)
        #expect(decision.protectsAsReceiver == adopts)
        #expect(decision.reason.contains("becomes the receiving account's org data") == adopts, "\(decision.reason)")
        let received = snapshot.receive(receiver: World.owner, dataOwner: holder.account)
        #expect(received.protectsAsReceiver == (adopts && holder == .none))
        // Android has no such setting: the same policy on Android adopts nothing.
        let android = World.snapshot(
            owner: settings, kind: .androidManagedAppProtection,
            context: EvaluationContext(platform: .android, managementLevel: level))
        #expect(
            !android.openFrom(receiver: World.owner, location: location, locationAccount: holder.account)
                .protectsAsReceiver)
    }

    @Test("ingestion allowed", arguments: ingestionAllowed)
    func ingestionAllowedRows(row: Row) { check(row) }

    @Test("ingestion blocked: OneDrive and SharePoint need listing and the receiver's account", arguments: listed)
    func listedRows(row: Row) { check(row) }

    @Test("ingestion blocked: camera, photos, local sources and unlistable services", arguments: ingestionBlocked)
    func ingestionBlockedRows(row: Row) { check(row) }

    @Test("unmanaged receivers", arguments: unmanagedReceiver)
    func unmanagedReceiverRows(row: Row) { check(row) }

    @Test("every open location appears in the tables, allowed and blocked")
    func coverage() {
        let rows =
            Self.ingestionAllowed + Self.listed + Self.ingestionBlocked + Self.unmanagedReceiver + Self.transferLevels
        for location in OpenLocation.allCases {
            #expect(rows.contains { $0.location == location && $0.allowed }, "\(location) allowed")
            #expect(rows.contains { $0.location == location && !$0.allowed }, "\(location) blocked")
        }
    }

    private func check(_ row: Row) {
        let peer = ProtectionSettings.with { $0.allowedOutboundDataTransferDestinations = row.peerSends }
        let snapshot = World.snapshot(
            owner: row.preset.settings, peer: peer,
            kind: row.platform.protectionKind,
            context: EvaluationContext(platform: row.platform))
        let decision = snapshot.openFrom(
            receiver: row.receiver.account, location: row.location, locationAccount: row.holder.account)
        #expect(decision.action == .openFrom)
        #expect(decision.isAllowed == row.allowed)
        #expect(decision.reason.contains(row.reason), "\(decision.reason)")
        if let setting = row.setting { #expect(decision.settingName == setting) }
    }
}
