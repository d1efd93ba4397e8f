/// Where data owned by an account is saved to: the Intune App SDK's save locations.
///
/// Stored and exchanged as these strings, never as Intune's bit values.
public enum SaveLocation: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case other
    case oneDriveForBusiness
    case sharePoint
    case box
    case dropbox
    case googleDrive
    case localDrive
    case cameraRoll
    case accountDocument
    case iManage
    case egnyte

    public var description: String { rawValue }

    /// The storage location an administrator lists in `allowedDataStorageLocations` to allow
    /// this save location, or nil when no listing can allow it.
    public var storageLocation: StorageLocation? {
        switch self {
        case .oneDriveForBusiness: .oneDriveForBusiness
        case .sharePoint: .sharePoint
        case .box: .box
        case .iManage: .iManage
        case .egnyte: .egnyte
        case .localDrive: .localStorage
        case .cameraRoll: .photoLibrary
        case .other, .dropbox, .googleDrive, .accountDocument: nil
        }
    }
}

/// Where data is opened from into an account's documents: the Intune App SDK's open locations.
public enum OpenLocation: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case other
    case oneDriveForBusiness
    case sharePoint
    case camera
    case localStorage
    case photos
    case accountDocument
    case box
    case iManage
    case egnyte

    public var description: String { rawValue }

    /// The ingestion location an administrator lists in `allowedDataIngestionLocations` to allow
    /// this open location, or nil when no listing can allow it.
    public var ingestionLocation: IngestionLocation? {
        switch self {
        case .oneDriveForBusiness: .oneDriveForBusiness
        case .sharePoint: .sharePoint
        case .camera: .camera
        case .photos: .photoLibrary
        case .other, .localStorage, .accountDocument, .box, .iManage, .egnyte: nil
        }
    }
}

/// Graph `managedAppDataStorageLocation`: a service an administrator allows saving to while
/// "Save copies of org data" is blocked.
public enum StorageLocation: String, Sendable, Hashable, CaseIterable, GraphEnum {
    case oneDriveForBusiness
    case sharePoint
    case box
    case localStorage
    case photoLibrary
    case iManage
    case egnyte
}

/// Graph `managedAppDataIngestionLocation`: a source an administrator allows opening data from
/// while "Open data into org documents" is blocked.
public enum IngestionLocation: String, Sendable, Hashable, CaseIterable, GraphEnum {
    case oneDriveForBusiness
    case sharePoint
    case camera
    case photoLibrary
}

extension StorageLocation {
    /// A distinct bit per location, for allow-list masks.
    var bit: UInt8 {
        switch self {
        case .oneDriveForBusiness: 1 << 0
        case .sharePoint: 1 << 1
        case .box: 1 << 2
        case .localStorage: 1 << 3
        case .photoLibrary: 1 << 4
        case .iManage: 1 << 5
        case .egnyte: 1 << 6
        }
    }
}

extension IngestionLocation {
    /// A distinct bit per location, for allow-list masks.
    var bit: UInt8 {
        switch self {
        case .oneDriveForBusiness: 1 << 0
        case .sharePoint: 1 << 1
        case .camera: 1 << 2
        case .photoLibrary: 1 << 3
        }
    }
}
