public import Foundation

// What the `StateStore` protocol hands back, as named structs (both implementations, SQLite and
// PostgreSQL, return these).

/// The two ends of a log (the event log, the change log).
public struct LogBounds: Sendable, Hashable {
    /// The oldest id the log still holds; nil when it holds none.
    public var oldest: Int64?
    /// The newest id ever written (0 before any), pruned or not.
    public var newest: Int64

    public init(oldest: Int64?, newest: Int64) {
        self.oldest = oldest
        self.newest = newest
    }
}

/// When an identifier's keys were wiped, and as which account.
public struct WipeRecord: Sendable, Hashable {
    public var account: String
    public var at: Date

    public init(account: String, at: Date) {
        self.account = account
        self.at = at
    }
}

/// The installation's recorded evaluation context (`custody apply --platform ...`); each nil
/// when never recorded.
public struct InstallationContext: Sendable, Hashable {
    public var platform: String?
    public var appID: String?
    public var managementLevel: String?
    public var precedence: String?

    public init(
        platform: String? = nil, appID: String? = nil, managementLevel: String? = nil, precedence: String? = nil
    ) {
        self.platform = platform
        self.appID = appID
        self.managementLevel = managementLevel
        self.precedence = precedence
    }
}

/// One file of a stored bundle.
public struct StoredFile: Sendable, Hashable {
    public var name: String
    public var bytes: [UInt8]

    public init(name: String, bytes: [UInt8]) {
        self.name = name
        self.bytes = bytes
    }
}

/// A bundle as the state keeps it: its history record and its files.
public struct StoredBundle: Sendable, Hashable {
    public var record: BundleRecord
    public var files: [StoredFile]

    public init(record: BundleRecord, files: [StoredFile]) {
        self.record = record
        self.files = files
    }
}

/// What recording a bundle wrote: its history record and the ids its events were given.
public struct RecordedBundle: Sendable, Hashable {
    public var record: BundleRecord
    public var eventIDs: [Int64]

    public init(record: BundleRecord, eventIDs: [Int64]) {
        self.record = record
        self.eventIDs = eventIDs
    }
}

/// An account the state records as seen (`accounts`), with the other identifiers it is known by.
public struct SeenAccount: Sendable, Hashable {
    /// Its canonical identifier (`oid:...` or `upn:...`).
    public var owner: String
    public var aliases: [String]

    public init(owner: String, aliases: [String]) {
        self.owner = owner
        self.aliases = aliases
    }
}

/// The policies that reach one account (by name), as a bundle assigns them.
public struct PolicyReach: Sendable, Hashable {
    public var account: String
    public var policies: [String]

    public init(account: String, policies: [String]) {
        self.account = account
        self.policies = policies
    }
}
