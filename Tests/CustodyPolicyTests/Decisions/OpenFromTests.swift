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
        var testDescription: String {
            "\(receiver) (\(preset)) opens from \(location) of \(holder)\(peerSends.map { ", peer sends to \($0)" } ?? "") → \(allowed ? "allow" : "block")"
        }
    }

    static let ingestionAllowed: [Row] = OpenLocation.allCases.map {
        Row(preset: .ingestionAllowed, location: $0, holder: .owner, allowed: true,
            reason: "blockDataIngestionIntoOrganizationDocuments is false", setting: "blockDataIngestionIntoOrganizationDocuments")
    } + [
        Row(preset: .nothingConfigured, location: .other, holder: .none, allowed: true, reason: "(Intune default: no applicable policy configures blockDataIngestionIntoOrganizationDocuments)"),
        Row(preset: .ingestionAllowed, location: .box, holder: .bystander, allowed: true, reason: "blockDataIngestionIntoOrganizationDocuments is false"),
        // Step 2: the data leaves another managed account.
        Row(preset: .ingestionAllowed, peerSends: .allApps, location: .oneDriveForBusiness, holder: .peer, allowed: true,
            reason: "the location's account is another managed account, whose allowedOutboundDataTransferDestinations is allApps (from \"Peer policy\")"),
        Row(preset: .ingestionAllowed, peerSends: .managedApps, location: .oneDriveForBusiness, holder: .peer, allowed: true,
            reason: "is managedApps and the receiving side is managed", setting: "allowedOutboundDataTransferDestinations"),
        Row(preset: .ingestionAllowed, peerSends: DataTransferLevel.none, location: .sharePoint, holder: .peer, allowed: false,
            reason: "whose allowedOutboundDataTransferDestinations is none", setting: "allowedOutboundDataTransferDestinations"),
        Row(preset: .ingestionAllowed, peerSends: DataTransferLevel.none, location: .sharePoint, holder: .ownerByOID, allowed: true,
            reason: "blockDataIngestionIntoOrganizationDocuments is false"),
    ]

    static let listed: [Row] = [OpenLocation.oneDriveForBusiness, .sharePoint].flatMap { location in
        [
            Row(preset: .ingestionBlockedAllListed, location: location, holder: .owner, allowed: true,
                reason: "\(location.ingestionLocation!) is in allowedDataIngestionLocations", setting: "allowedDataIngestionLocations"),
            Row(preset: .ingestionBlockedAllListed, location: location, holder: .ownerByOID, allowed: true, reason: "belongs to the receiving account"),
        ] + [Holder.peer, .bystander, .outsider, .none].map { holder in
            Row(preset: .ingestionBlockedAllListed, location: location, holder: holder, allowed: false,
                reason: "only in the receiving account's own location", setting: "allowedDataIngestionLocations")
        }
    }

    static let ingestionBlocked: [Row] = [
        Row(preset: .ingestionBlockedAllListed, location: .camera, holder: .none, allowed: true, reason: "camera is in allowedDataIngestionLocations"),
        Row(preset: .ingestionBlockedAllListed, location: .photos, holder: .none, allowed: true, reason: "photoLibrary is in allowedDataIngestionLocations"),
        Row(preset: .ingestionBlockedAllListed, location: .localStorage, holder: .owner, allowed: true, reason: "the localStorage data belongs to the receiving account"),
        Row(preset: .ingestionBlockedAllListed, location: .accountDocument, holder: .ownerByOID, allowed: true, reason: "belongs to the receiving account"),
        Row(preset: .ingestionBlockedAllListed, location: .localStorage, holder: .none, allowed: false,
            reason: "the localStorage data belongs to another account or to none", setting: "blockDataIngestionIntoOrganizationDocuments"),
        Row(preset: .ingestionBlockedAllListed, location: .accountDocument, holder: .peer, allowed: false, reason: "belongs to another account or to none"),
    ] + [OpenLocation.box, .iManage, .egnyte, .other].map { location in
        Row(preset: .ingestionBlockedAllListed, location: location, holder: .owner, allowed: false,
            reason: "\(location) is never an allowed source", setting: "blockDataIngestionIntoOrganizationDocuments")
    } + [
        Row(preset: .ingestionBlockedNoneListed, location: .oneDriveForBusiness, holder: .owner, allowed: false,
            reason: "blockDataIngestionIntoOrganizationDocuments is true and oneDriveForBusiness is not in allowedDataIngestionLocations [] (from \"Owner policy\")"),
        Row(preset: .ingestionBlockedNoneListed, location: .sharePoint, holder: .owner, allowed: false, reason: "sharePoint is not in allowedDataIngestionLocations []"),
        Row(preset: .ingestionBlockedNoneListed, location: .camera, holder: .none, allowed: false, reason: "camera is not in allowedDataIngestionLocations []"),
        Row(preset: .ingestionBlockedNoneListed, location: .photos, holder: .none, allowed: false, reason: "photoLibrary is not in allowedDataIngestionLocations []"),
        Row(preset: .ingestionBlockedNoneListed, location: .localStorage, holder: .owner, allowed: true, reason: "belongs to the receiving account"),
        Row(preset: .ingestionBlocked, location: .camera, holder: .none, allowed: false, reason: "camera is not in allowedDataIngestionLocations [] (Intune default"),
    ]

    static let unmanagedReceiver: [Row] = [
        Row(receiver: .none, preset: .ingestionBlockedNoneListed, location: .other, holder: .none, allowed: true,
            reason: "the receiving account is not managed: no protection policy applies to it"),
        Row(receiver: .bystander, preset: .ingestionBlockedNoneListed, peerSends: .managedApps, location: .oneDriveForBusiness, holder: .peer, allowed: false,
            reason: "is managedApps and the receiving side is not managed"),
        Row(receiver: .outsider, preset: .ingestionBlockedNoneListed, peerSends: .allApps, location: .oneDriveForBusiness, holder: .peer, allowed: true,
            reason: "is allApps"),
        Row(receiver: .bystander, preset: .ingestionBlockedNoneListed, peerSends: DataTransferLevel.none, location: .photos, holder: .peer, allowed: false,
            reason: "is none"),
    ]

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
        let rows = Self.ingestionAllowed + Self.listed + Self.ingestionBlocked + Self.unmanagedReceiver
        for location in OpenLocation.allCases {
            #expect(rows.contains { $0.location == location && $0.allowed }, "\(location) allowed")
            #expect(rows.contains { $0.location == location && !$0.allowed }, "\(location) blocked")
        }
    }

    private func check(_ row: Row) {
        let peer = ProtectionSettings.with { $0.allowedOutboundDataTransferDestinations = row.peerSends }
        let snapshot = World.snapshot(owner: row.preset.settings, peer: peer)
        let decision = snapshot.openFrom(receiver: row.receiver.account, location: row.location, locationAccount: row.holder.account)
        #expect(decision.action == .openFrom)
        #expect(decision.isAllowed == row.allowed)
        #expect(decision.reason.contains(row.reason), "\(decision.reason)")
        if let setting = row.setting { #expect(decision.settingName == setting) }
    }
}
