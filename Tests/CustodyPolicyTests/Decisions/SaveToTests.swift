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

    var settings: ProtectionSettings {
        switch self {
        case .nothingConfigured: ProtectionSettings()
        case .saveAllowed: .with { $0.saveAsBlocked = false }
        case .saveBlockedAllListed: .with { $0.saveAsBlocked = true; $0.allowedDataStorageLocations = Set(StorageLocation.allCases) }
        case .saveBlockedNoneListed: .with { $0.saveAsBlocked = true; $0.allowedDataStorageLocations = [] }
        case .saveBlockedSharePointOnly: .with { $0.saveAsBlocked = true; $0.allowedDataStorageLocations = [.sharePoint] }
        case .ingestionBlocked: .with { $0.blockDataIngestionIntoOrganizationDocuments = true }
        case .ingestionAllowed: .with { $0.blockDataIngestionIntoOrganizationDocuments = false }
        case .ingestionBlockedAllListed:
            .with { $0.blockDataIngestionIntoOrganizationDocuments = true; $0.allowedDataIngestionLocations = Set(IngestionLocation.allCases) }
        case .ingestionBlockedNoneListed:
            .with { $0.blockDataIngestionIntoOrganizationDocuments = true; $0.allowedDataIngestionLocations = [] }
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
        var testDescription: String {
            "\(owner) (\(preset)) saves to \(location) of \(holder)\(peer == .nothingConfigured ? "" : ", peer \(peer)") → \(allowed ? "allow" : "block")"
        }
    }

    /// saveAsBlocked false: every location is allowed in the owner's own account.
    static let saveAllowed: [Row] = SaveLocation.allCases.map {
        Row(preset: .saveAllowed, location: $0, holder: .owner, allowed: true, reason: "saveAsBlocked is false", setting: "saveAsBlocked")
    } + [
        Row(preset: .nothingConfigured, location: .dropbox, holder: .none, allowed: true, reason: "(Intune default: no applicable policy configures saveAsBlocked)"),
        Row(preset: .saveAllowed, location: .box, holder: .bystander, allowed: true, reason: "saveAsBlocked is false"),
        Row(preset: .saveAllowed, location: .googleDrive, holder: .outsider, allowed: true, reason: "saveAsBlocked is false"),
        // Step 2: the data enters another managed account's documents.
        Row(preset: .saveAllowed, peer: .ingestionBlocked, location: .oneDriveForBusiness, holder: .peer, allowed: false,
            reason: "the location belongs to another managed account, whose blockDataIngestionIntoOrganizationDocuments is true (from \"Peer policy\")",
            setting: "blockDataIngestionIntoOrganizationDocuments"),
        Row(preset: .saveAllowed, peer: .ingestionAllowed, location: .oneDriveForBusiness, holder: .peer, allowed: true,
            reason: "whose blockDataIngestionIntoOrganizationDocuments is false"),
        Row(preset: .saveAllowed, peer: .nothingConfigured, location: .sharePoint, holder: .peer, allowed: true,
            reason: "whose blockDataIngestionIntoOrganizationDocuments is false (Intune default"),
        Row(preset: .saveAllowed, peer: .ingestionBlocked, location: .oneDriveForBusiness, holder: .ownerByOID, allowed: true,
            reason: "saveAsBlocked is false"),
    ]

    /// saveAsBlocked true, every storage location listed: the account decides.
    static let listedCloud: [Row] = [SaveLocation.oneDriveForBusiness, .sharePoint, .box, .iManage, .egnyte].flatMap { location in
        [
            Row(preset: .saveBlockedAllListed, location: location, holder: .owner, allowed: true,
                reason: "\(location.storageLocation!) is in allowedDataStorageLocations", setting: "allowedDataStorageLocations"),
            Row(preset: .saveBlockedAllListed, location: location, holder: .ownerByOID, allowed: true, reason: "belongs to the owner's account"),
        ] + [Holder.peer, .bystander, .outsider, .none].map { holder in
            Row(preset: .saveBlockedAllListed, location: location, holder: holder, allowed: false,
                reason: "only in the owner's own account", setting: "allowedDataStorageLocations")
        }
    }

    static let saveBlocked: [Row] = [
        Row(preset: .saveBlockedAllListed, location: .localDrive, holder: .none, allowed: true, reason: "localStorage is in allowedDataStorageLocations"),
        Row(preset: .saveBlockedAllListed, location: .cameraRoll, holder: .none, allowed: true, reason: "photoLibrary is in allowedDataStorageLocations"),
        Row(preset: .saveBlockedAllListed, location: .localDrive, holder: .peer, allowed: true, reason: "localStorage is in allowedDataStorageLocations"),
        Row(preset: .saveBlockedAllListed, location: .accountDocument, holder: .owner, allowed: true, reason: "the document belongs to the owner's own account", setting: "saveAsBlocked"),
        Row(preset: .saveBlockedAllListed, location: .accountDocument, holder: .ownerByOID, allowed: true, reason: "the owner's own account"),
        Row(preset: .saveBlockedAllListed, location: .accountDocument, holder: .peer, allowed: false, reason: "belongs to another account or to none"),
        Row(preset: .saveBlockedAllListed, location: .accountDocument, holder: .none, allowed: false, reason: "belongs to another account or to none"),
        Row(preset: .saveBlockedAllListed, location: .dropbox, holder: .owner, allowed: false, reason: "dropbox is never an allowed save location", setting: "saveAsBlocked"),
        Row(preset: .saveBlockedAllListed, location: .googleDrive, holder: .owner, allowed: false, reason: "googleDrive is never an allowed save location"),
        Row(preset: .saveBlockedAllListed, location: .other, holder: .none, allowed: false, reason: "other is never an allowed save location"),
    ] + [SaveLocation.oneDriveForBusiness, .sharePoint, .box, .iManage, .egnyte].map { location in
        Row(preset: .saveBlockedNoneListed, location: location, holder: .owner, allowed: false,
            reason: "saveAsBlocked is true and \(location.storageLocation!) is not in allowedDataStorageLocations [] (from \"Owner policy\")")
    } + [
        Row(preset: .saveBlockedNoneListed, location: .localDrive, holder: .none, allowed: false, reason: "localStorage is not in allowedDataStorageLocations []"),
        Row(preset: .saveBlockedNoneListed, location: .cameraRoll, holder: .none, allowed: false, reason: "photoLibrary is not in allowedDataStorageLocations []"),
        Row(preset: .saveBlockedNoneListed, location: .accountDocument, holder: .owner, allowed: true, reason: "the owner's own account"),
        Row(preset: .saveBlockedSharePointOnly, location: .oneDriveForBusiness, holder: .owner, allowed: false,
            reason: "oneDriveForBusiness is not in allowedDataStorageLocations [sharePoint]"),
        Row(preset: .saveBlockedSharePointOnly, location: .sharePoint, holder: .owner, allowed: true,
            reason: "saveAsBlocked is true, but sharePoint is in allowedDataStorageLocations [sharePoint] and the location belongs to the owner's account (from \"Owner policy\")"),
    ]

    /// An unmanaged owner is not restricted, but the location's account still has its say.
    static let unmanagedOwner: [Row] = [
        Row(owner: .bystander, preset: .saveBlockedNoneListed, location: .dropbox, holder: .none, allowed: true,
            reason: "the data's owner is not managed: no protection policy applies to it"),
        Row(owner: .outsider, preset: .saveBlockedNoneListed, location: .box, holder: .outsider, allowed: true, reason: "not managed"),
        Row(owner: .none, preset: .saveBlockedNoneListed, location: .box, holder: .none, allowed: true, reason: "not managed"),
        Row(owner: .bystander, preset: .saveBlockedNoneListed, peer: .ingestionBlocked, location: .oneDriveForBusiness, holder: .peer, allowed: false,
            reason: "the data's owner is not managed: no protection policy applies to it; the location belongs to another managed account, whose blockDataIngestionIntoOrganizationDocuments is true"),
        Row(owner: .outsider, preset: .saveBlockedNoneListed, peer: .ingestionAllowed, location: .oneDriveForBusiness, holder: .peer, allowed: true,
            reason: "whose blockDataIngestionIntoOrganizationDocuments is false"),
        Row(owner: .none, preset: .saveBlockedNoneListed, peer: .ingestionBlocked, location: .sharePoint, holder: .peer, allowed: false,
            reason: "blockDataIngestionIntoOrganizationDocuments is true"),
    ]

    @Test("saveAsBlocked false", arguments: saveAllowed)
    func saveAllowedRows(row: Row) { check(row) }

    @Test("saveAsBlocked true: cloud services need listing and the owner's account", arguments: listedCloud)
    func listedCloudRows(row: Row) { check(row) }

    @Test("saveAsBlocked true: local drive, camera roll, account documents and unlistable services", arguments: saveBlocked)
    func saveBlockedRows(row: Row) { check(row) }

    @Test("unmanaged owners", arguments: unmanagedOwner)
    func unmanagedOwnerRows(row: Row) { check(row) }

    @Test("every save location appears in the tables, allowed and blocked")
    func coverage() {
        let rows = Self.saveAllowed + Self.listedCloud + Self.saveBlocked + Self.unmanagedOwner
        for location in SaveLocation.allCases {
            #expect(rows.contains { $0.location == location && $0.allowed }, "\(location) allowed")
            #expect(rows.contains { $0.location == location && !$0.allowed }, "\(location) blocked")
        }
    }

    private func check(_ row: Row) {
        let snapshot = World.snapshot(owner: row.preset.settings, peer: row.peer.settings)
        let decision = snapshot.saveTo(owner: row.owner.account, location: row.location, locationAccount: row.holder.account)
        #expect(decision.action == .saveTo)
        #expect(decision.isAllowed == row.allowed)
        #expect(decision.reason.contains(row.reason), "\(decision.reason)")
        if let setting = row.setting { #expect(decision.settingName == setting) }
    }
}
