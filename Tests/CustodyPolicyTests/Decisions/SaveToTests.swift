import CustodyPolicy
import Testing

/// Who a location belongs to, in the decision tables.
enum Holder: String, Sendable, CaseIterable {
    case owner, ownerByOID, peer, bystander, outsider, none

    var account: AccountID? {
        switch self {
        case .owner: World.owner
        case .ownerByOID: World.ownerByOID
        case .peer: World.peer
        case .bystander: World.bystander
        case .outsider: World.outsider
        case .none: nil
        }
    }
}

/// Owner-side settings used across the tables.
enum Preset: String, Sendable {
    case nothingConfigured, saveAllowed, saveBlockedAllListed, saveBlockedNoneListed, saveBlockedSharePointOnly
    case ingestionBlocked, ingestionAllowed
    case ingestionBlockedAllListed, ingestionBlockedNoneListed
    /// The transfer level a location restriction depends on, configured inconsistently.
    case sendAllAppsSaveBlocked, sendNone, receiveNone, receiveAllAppsIngestionBlocked

    var settings: ProtectionSettings {
        switch self {
        case .nothingConfigured: ProtectionSettings()
        // "Save copies of org data" is in effect under Send org data = Policy managed apps, and
        // "Open data into Org documents" under Receive data = Policy managed apps.
        case .saveAllowed:
            .with {
                $0.saveAsBlocked = false; $0.allowedOutboundDataTransferDestinations = .managedApps
            }
        case .saveBlockedAllListed:
            .with {
                $0.saveAsBlocked = true; $0.allowedDataStorageLocations = Set(StorageLocation.allCases);
                $0.allowedOutboundDataTransferDestinations = .managedApps
            }
        case .saveBlockedNoneListed:
            .with {
                $0.saveAsBlocked = true; $0.allowedDataStorageLocations = [];
                $0.allowedOutboundDataTransferDestinations = .managedApps
            }
        case .saveBlockedSharePointOnly:
            .with {
                $0.saveAsBlocked = true; $0.allowedDataStorageLocations = [.sharePoint];
                $0.allowedOutboundDataTransferDestinations = .managedApps
            }
        case .ingestionBlocked:
            .with {
                $0.blockDataIngestionIntoOrganizationDocuments = true;
                $0.allowedInboundDataTransferSources = .managedApps
            }
        case .ingestionAllowed:
            .with {
                $0.blockDataIngestionIntoOrganizationDocuments = false;
                $0.allowedInboundDataTransferSources = .managedApps
            }
        case .ingestionBlockedAllListed:
            .with {
                $0.blockDataIngestionIntoOrganizationDocuments = true;
                $0.allowedDataIngestionLocations = Set(IngestionLocation.allCases)
                $0.allowedInboundDataTransferSources = .managedApps
            }
        case .ingestionBlockedNoneListed:
            .with {
                $0.blockDataIngestionIntoOrganizationDocuments = true; $0.allowedDataIngestionLocations = []
                $0.allowedInboundDataTransferSources = .managedApps
            }
        case .sendAllAppsSaveBlocked:
            .with {
                $0.saveAsBlocked = true; $0.allowedDataStorageLocations = [];
                $0.allowedOutboundDataTransferDestinations = .allApps
            }
        case .sendNone:
            .with {
                $0.saveAsBlocked = false; $0.allowedDataStorageLocations = Set(StorageLocation.allCases);
                $0.allowedOutboundDataTransferDestinations = DataTransferLevel.none
            }
        case .receiveNone:
            .with {
                $0.blockDataIngestionIntoOrganizationDocuments = false;
                $0.allowedDataIngestionLocations = Set(IngestionLocation.allCases)
                $0.allowedInboundDataTransferSources = DataTransferLevel.none
            }
        case .receiveAllAppsIngestionBlocked:
            .with {
                $0.blockDataIngestionIntoOrganizationDocuments = true; $0.allowedDataIngestionLocations = []
                $0.allowedInboundDataTransferSources = .allApps
            }
        }
    }
}

@Suite("Decision: save to a location")
struct SaveToTests {
    struct Row: CustomTestStringConvertible, Sendable {
        var owner: Holder = .owner
        let preset: Preset
        var peer: Preset = .nothingConfigured
        let location: SaveLocation
        let holder: Holder
        let allowed: Bool
        let reason: String
        var setting: String? = nil
        var platform: Platform = .ios
        var testDescription: String {
            "\(platform): \(owner) (\(preset)) saves to \(location) of \(holder)\(peer == .nothingConfigured ? "" : ", peer \(peer)") → \(allowed ? "allow" : "block")"
        }
    }

    /// saveAsBlocked false: every location is allowed in the owner's own account.
    static let saveAllowed: [Row] =
        SaveLocation.allCases.map {
            Row(
                preset: .saveAllowed, location: $0, holder: .owner, allowed: true, reason: "saveAsBlocked is false",
                setting: "saveAsBlocked")
        } + [
            Row(
                preset: .nothingConfigured, location: .dropbox, holder: .none, allowed: true,
                reason: "allowedOutboundDataTransferDestinations is allApps: saving copies is not restricted",
                setting: "allowedOutboundDataTransferDestinations"),
            Row(
                preset: .saveAllowed, location: .box, holder: .bystander, allowed: true,
                reason: "saveAsBlocked is false"),
            Row(
                preset: .saveAllowed, location: .googleDrive, holder: .outsider, allowed: true,
                reason: "saveAsBlocked is false"),
            // Step 2: the data enters another managed account's documents.
            Row(
                preset: .saveAllowed, peer: .ingestionBlocked, location: .oneDriveForBusiness, holder: .peer,
                allowed: false,
                reason:
                    "the location belongs to another managed account, whose blockDataIngestionIntoOrganizationDocuments is true (from \"Peer policy\")",
                setting: "blockDataIngestionIntoOrganizationDocuments"),
            Row(
                preset: .saveAllowed, peer: .ingestionAllowed, location: .oneDriveForBusiness, holder: .peer,
                allowed: true,
                reason: "whose blockDataIngestionIntoOrganizationDocuments is false"),
            Row(
                preset: .saveAllowed, peer: .nothingConfigured, location: .sharePoint, holder: .peer, allowed: true,
                reason: "whose allowedInboundDataTransferSources is allApps: data may enter its documents"),
            Row(
                preset: .saveAllowed, peer: .ingestionBlocked, location: .oneDriveForBusiness, holder: .ownerByOID,
                allowed: true,
                reason: "saveAsBlocked is false"),
        ]

    /// saveAsBlocked true, every storage location listed: the account decides.
    static let listedCloud: [Row] = [SaveLocation.oneDriveForBusiness, .sharePoint, .box, .iManage, .egnyte].flatMap {
        location in
        [
            Row(
                preset: .saveBlockedAllListed, location: location, holder: .owner, allowed: true,
                reason: "\(location.storageLocation!) is in allowedDataStorageLocations",
                setting: "allowedDataStorageLocations"),
            Row(
                preset: .saveBlockedAllListed, location: location, holder: .ownerByOID, allowed: true,
                reason: "belongs to the owner's account"),
        ]
            + [Holder.peer, .bystander, .outsider, .none].map { holder in
                Row(
                    preset: .saveBlockedAllListed, location: location, holder: holder, allowed: false,
                    reason: "only in the owner's own account", setting: "allowedDataStorageLocations")
            }
    }

    static let saveBlocked: [Row] =
        [
            // The local drive is the app's own storage of the account that owns it: nil is unmanaged (SDK 15.1).
            Row(
                preset: .saveBlockedAllListed, location: .localDrive, holder: .owner, allowed: true,
                reason:
                    "localStorage is in allowedDataStorageLocations [box, egnyte, iManage, localStorage, oneDriveForBusiness, photoLibrary, sharePoint] and the local storage is the owner's"
            ),
            Row(
                preset: .saveBlockedAllListed, location: .localDrive, holder: .ownerByOID, allowed: true,
                reason: "the local storage is the owner's"),
            Row(
                preset: .saveBlockedAllListed, location: .localDrive, holder: .none, allowed: false,
                reason:
                    "but only for the owner's own local storage, and this one belongs to another account or to none",
                setting: "allowedDataStorageLocations"),
            Row(
                preset: .saveBlockedAllListed, location: .localDrive, holder: .peer, allowed: false,
                reason: "only for the owner's own local storage"),
            Row(
                preset: .saveBlockedAllListed, location: .cameraRoll, holder: .none, allowed: true,
                reason: "photoLibrary is in allowedDataStorageLocations"),
            Row(
                preset: .saveBlockedAllListed, location: .cameraRoll, holder: .peer, allowed: true,
                reason: "photoLibrary is in allowedDataStorageLocations"),
            Row(
                preset: .saveBlockedAllListed, location: .accountDocument, holder: .owner, allowed: true,
                reason: "the document belongs to the owner's own account", setting: "saveAsBlocked"),
            Row(
                preset: .saveBlockedAllListed, location: .accountDocument, holder: .ownerByOID, allowed: true,
                reason: "the owner's own account"),
            Row(
                preset: .saveBlockedAllListed, location: .accountDocument, holder: .peer, allowed: false,
                reason: "belongs to another account or to none"),
            Row(
                preset: .saveBlockedAllListed, location: .accountDocument, holder: .none, allowed: false,
                reason: "belongs to another account or to none"),
            Row(
                preset: .saveBlockedAllListed, location: .dropbox, holder: .owner, allowed: false,
                reason: "dropbox is never an allowed save location", setting: "saveAsBlocked"),
            Row(
                preset: .saveBlockedAllListed, location: .googleDrive, holder: .owner, allowed: false,
                reason: "googleDrive is never an allowed save location"),
            Row(
                preset: .saveBlockedAllListed, location: .other, holder: .none, allowed: false,
                reason: "other is never an allowed save location"),
        ]
        + [SaveLocation.oneDriveForBusiness, .sharePoint, .box, .iManage, .egnyte].map { location in
            Row(
                preset: .saveBlockedNoneListed, location: location, holder: .owner, allowed: false,
                reason:
                    "saveAsBlocked is true and \(location.storageLocation!) is not in allowedDataStorageLocations [] (from \"Owner policy\")"
            )
        } + [
            Row(
                preset: .saveBlockedNoneListed, location: .localDrive, holder: .owner, allowed: false,
                reason: "localStorage is not in allowedDataStorageLocations []"),
            Row(
                preset: .saveBlockedNoneListed, location: .cameraRoll, holder: .none, allowed: false,
                reason: "photoLibrary is not in allowedDataStorageLocations []"),
            Row(
                preset: .saveBlockedNoneListed, location: .accountDocument, holder: .owner, allowed: true,
                reason: "the owner's own account"),
            Row(
                preset: .saveBlockedSharePointOnly, location: .oneDriveForBusiness, holder: .owner, allowed: false,
                reason: "oneDriveForBusiness is not in allowedDataStorageLocations [sharePoint]"),
            Row(
                preset: .saveBlockedSharePointOnly, location: .sharePoint, holder: .owner, allowed: true,
                reason:
                    "saveAsBlocked is true, but sharePoint is in allowedDataStorageLocations [sharePoint] and the location belongs to the owner's account (from \"Owner policy\")"
            ),
        ]

    /// An unmanaged owner is not restricted, but the location's account still has its say.
    static let unmanagedOwner: [Row] = [
        Row(
            owner: .bystander, preset: .saveBlockedNoneListed, location: .dropbox, holder: .none, allowed: true,
            reason: "the data's owner is not managed: no protection policy applies to it"),
        Row(
            owner: .outsider, preset: .saveBlockedNoneListed, location: .box, holder: .outsider, allowed: true,
            reason: "not managed"),
        Row(
            owner: .none, preset: .saveBlockedNoneListed, location: .box, holder: .none, allowed: true,
            reason: "not managed"),
        Row(
            owner: .bystander, preset: .saveBlockedNoneListed, peer: .ingestionBlocked, location: .oneDriveForBusiness,
            holder: .peer, allowed: false,
            reason:
                "the data's owner is not managed: no protection policy applies to it; the location belongs to another managed account, whose blockDataIngestionIntoOrganizationDocuments is true"
        ),
        Row(
            owner: .outsider, preset: .saveBlockedNoneListed, peer: .ingestionAllowed, location: .oneDriveForBusiness,
            holder: .peer, allowed: true,
            reason: "whose blockDataIngestionIntoOrganizationDocuments is false"),
        Row(
            owner: .none, preset: .saveBlockedNoneListed, peer: .ingestionBlocked, location: .sharePoint, holder: .peer,
            allowed: false,
            reason: "blockDataIngestionIntoOrganizationDocuments is true"),
    ]

    /// Save copies is in effect only under Send org data = Policy managed apps (iOS settings
    /// reference); Android keeps the flag under All apps (the stricter, literal reading). Send
    /// None closes every location; another account's Receive None closes its documents.
    static let transferLevels: [Row] =
        Platform.allCases.flatMap { platform in
            [
                Row(
                    preset: .sendNone, location: .oneDriveForBusiness, holder: .owner, allowed: false,
                    reason:
                        "allowedOutboundDataTransferDestinations is none: saving copies of org data is blocked, to oneDriveForBusiness as to every location",
                    setting: "allowedOutboundDataTransferDestinations", platform: platform),
                Row(
                    preset: .sendNone, location: .localDrive, holder: .owner, allowed: false,
                    reason: "is none: saving copies of org data is blocked", platform: platform),
                Row(
                    preset: .sendNone, location: .accountDocument, holder: .owner, allowed: true,
                    reason:
                        "allowedOutboundDataTransferDestinations is none, but the document belongs to the owner's own account",
                    platform: platform),
                Row(
                    preset: .sendNone, location: .accountDocument, holder: .peer, allowed: false,
                    reason:
                        "allowedOutboundDataTransferDestinations is none and the document belongs to another account",
                    platform: platform),
                // Another managed account's receive level: None closes its documents.
                Row(
                    preset: .saveAllowed, peer: .receiveNone, location: .oneDriveForBusiness, holder: .peer,
                    allowed: false,
                    reason: "whose allowedInboundDataTransferSources is none: no data may enter its documents",
                    setting: "allowedInboundDataTransferSources", platform: platform),
                Row(
                    owner: .bystander, preset: .nothingConfigured, peer: .receiveNone, location: .sharePoint,
                    holder: .peer, allowed: false,
                    reason:
                        "the data's owner is not managed: no protection policy applies to it; the location belongs to another managed account, whose allowedInboundDataTransferSources is none",
                    platform: platform),
                Row(
                    preset: .saveAllowed, peer: .receiveNone, location: .oneDriveForBusiness, holder: .owner,
                    allowed: true,
                    reason: "saveAsBlocked is false", platform: platform),
            ]
        } + [
            Row(
                preset: .sendAllAppsSaveBlocked, location: .dropbox, holder: .none, allowed: true,
                reason:
                    "allowedOutboundDataTransferDestinations is allApps: saving copies is not restricted (saveAsBlocked is in effect only when org data may go to policy-managed apps)",
                setting: "allowedOutboundDataTransferDestinations"),
            Row(
                preset: .sendAllAppsSaveBlocked, location: .dropbox, holder: .none, allowed: false,
                reason: "saveAsBlocked is true and dropbox is never an allowed save location", setting: "saveAsBlocked",
                platform: .android),
            Row(
                preset: .saveAllowed, peer: .receiveAllAppsIngestionBlocked, location: .oneDriveForBusiness,
                holder: .peer, allowed: true,
                reason: "whose allowedInboundDataTransferSources is allApps: data may enter its documents"),
            Row(
                preset: .saveAllowed, peer: .receiveAllAppsIngestionBlocked, location: .oneDriveForBusiness,
                holder: .peer, allowed: false,
                reason: "whose blockDataIngestionIntoOrganizationDocuments is true", platform: .android),
        ]

    @Test("the transfer level decides whether a location restriction is in effect", arguments: transferLevels)
    func transferLevelRows(row: Row) { check(row) }

    @Test("saveAsBlocked false", arguments: saveAllowed)
    func saveAllowedRows(row: Row) { check(row) }

    @Test("saveAsBlocked true: cloud services need listing and the owner's account", arguments: listedCloud)
    func listedCloudRows(row: Row) { check(row) }

    @Test(
        "saveAsBlocked true: local drive, camera roll, account documents and unlistable services",
        arguments: saveBlocked)
    func saveBlockedRows(row: Row) { check(row) }

    @Test("unmanaged owners", arguments: unmanagedOwner)
    func unmanagedOwnerRows(row: Row) { check(row) }

    @Test("every save location appears in the tables, allowed and blocked")
    func coverage() {
        let rows = Self.saveAllowed + Self.listedCloud + Self.saveBlocked + Self.unmanagedOwner + Self.transferLevels
        for location in SaveLocation.allCases {
            #expect(rows.contains { $0.location == location && $0.allowed }, "\(location) allowed")
            #expect(rows.contains { $0.location == location && !$0.allowed }, "\(location) blocked")
        }
    }

    private func check(_ row: Row) {
        let snapshot = World.snapshot(
            owner: row.preset.settings, peer: row.peer.settings,
            kind: row.platform.protectionKind,
            context: EvaluationContext(platform: row.platform))
        let decision = snapshot.saveTo(
            owner: row.owner.account, location: row.location, locationAccount: row.holder.account)
        #expect(decision.action == .saveTo)
        #expect(decision.isAllowed == row.allowed)
        #expect(decision.reason.contains(row.reason), "\(decision.reason)")
        if let setting = row.setting { #expect(decision.settingName == setting) }
    }
}
