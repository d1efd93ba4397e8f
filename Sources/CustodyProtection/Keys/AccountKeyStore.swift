public import Foundation

/// Where wrapped account keys and the master key's record are kept.
///
/// Keys are stored wrapped by the master key; a store never sees key material in the clear.
/// Implementations: `FileKeyStore` (a state directory) and `StateKeyStore` (in `CustodyStore`:
/// the state database, SQLite or PostgreSQL). Every method is safe to call from several threads
/// and, for stores on disk, several processes.
public protocol AccountKeyStore: Sendable {
    /// Every version of `owner`'s key, oldest first; empty when there is none.
    func keys(for owner: OwnerIdentifier) async throws(ProtectionError) -> [WrappedAccountKey]

    /// Adds a key version. Fails with `.keyVersionExists` when that version of the owner's key
    /// already exists (another process created or rotated it first); callers re-read and retry.
    func add(_ key: WrappedAccountKey) async throws(ProtectionError)

    /// Deletes every version of `owner`'s key, returning how many there were. Their envelopes
    /// can then never be opened again.
    @discardableResult
    func removeKeys(for owner: OwnerIdentifier) async throws(ProtectionError) -> Int

    /// Every owner with at least one key.
    func owners() async throws(ProtectionError) -> [OwnerIdentifier]

    /// The record that says which master key the keys are wrapped with; nil before first use.
    func masterKeyRecord() async throws(ProtectionError) -> MasterKeyRecord?

    /// Saves the master key record the first time a master key is used with this store. Fails
    /// when a record already exists.
    func saveMasterKeyRecord(_ record: MasterKeyRecord) async throws(ProtectionError)

    /// A value that changes whenever any process adds or removes a key: key rings compare it
    /// now and then to notice keys rotated or wiped elsewhere. Nil: the store cannot tell.
    func changeToken() async throws(ProtectionError) -> UInt64?

    /// Whether the store was opened for reading only: then a missing master key record means
    /// the store holds no keys, and opening it creates no key file and records nothing.
    var isReadOnly: Bool { get }
}

extension AccountKeyStore {
    public func changeToken() throws(ProtectionError) -> UInt64? { nil }
    public var isReadOnly: Bool { false }
}

/// One version of an account key, wrapped (XChaCha20-Poly1305) by the master key.
public struct WrappedAccountKey: Sendable, Hashable {
    public let owner: OwnerIdentifier
    /// 1, 2, ...: rotation adds the next version; envelopes name the version they used.
    public let version: UInt32
    public let created: Date
    /// 24 bytes.
    public let nonce: [UInt8]
    /// The 32-byte key and its 16-byte tag.
    public let ciphertext: [UInt8]

    public init(owner: OwnerIdentifier, version: UInt32, created: Date, nonce: [UInt8], ciphertext: [UInt8]) {
        self.owner = owner
        self.version = version
        self.created = created
        self.nonce = nonce
        self.ciphertext = ciphertext
    }
}

/// How a store's master key is derived, and a check value that tells a wrong master key from
/// damaged keys.
public struct MasterKeyRecord: Sendable, Hashable {
    /// Where the master key comes from.
    public enum Kind: String, Sendable, Hashable {
        case keyFile
        case passphrase
    }

    public let kind: Kind
    /// Argon2id salt (16 bytes), for passphrases.
    public let salt: [UInt8]?
    public let opsLimit: UInt64?
    public let memLimit: UInt64?
    /// 24-byte nonce and sealed 32 zero bytes (48 bytes): opening it proves the master key.
    public let checkNonce: [UInt8]
    public let checkCiphertext: [UInt8]

    public init(
        kind: Kind, salt: [UInt8]?, opsLimit: UInt64?, memLimit: UInt64?, checkNonce: [UInt8], checkCiphertext: [UInt8]
    ) {
        self.kind = kind
        self.salt = salt
        self.opsLimit = opsLimit
        self.memLimit = memLimit
        self.checkNonce = checkNonce
        self.checkCiphertext = checkCiphertext
    }
}
