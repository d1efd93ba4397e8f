import CustodyPolicy
public import CustodyProtection

/// The account keys and master key record of a state (`StateStore`, SQLite or PostgreSQL) as
/// a key ring's store: wrapped keys, one row per owner and version. The store's key
/// generation moves with every key added or deleted, by any process or replica, so key rings
/// notice rotations and wipes made elsewhere.
public struct StateKeyStore: AccountKeyStore {
    public let state: any StateStore

    public init(state: any StateStore) {
        self.state = state
    }

    public var isReadOnly: Bool { state.isReadOnly }

    public func keys(for owner: OwnerIdentifier) throws(ProtectionError) -> [WrappedAccountKey] {
        try mapped { () throws(StoreError) in try state.accountKeys(owner: owner.rawValue) }
    }

    public func add(_ key: WrappedAccountKey) throws(ProtectionError) {
        do {
            try state.addAccountKey(key)
        } catch  where error.code == .conflict {
            throw ProtectionError(
                .keyVersionExists, "key version \(key.version) of \(key.owner) already exists", path: state.path)
        } catch {
            throw Self.protectionError(error)
        }
    }

    @discardableResult
    public func removeKeys(for owner: OwnerIdentifier) throws(ProtectionError) -> Int {
        try mapped { () throws(StoreError) in try state.removeAccountKeys(owner: owner.rawValue) }
    }

    public func owners() throws(ProtectionError) -> [OwnerIdentifier] {
        let names = try mapped { () throws(StoreError) in try state.accountKeyOwners() }
        var owners: [OwnerIdentifier] = []
        for name in names {
            guard let owner = OwnerIdentifier(rawValue: name) else {
                throw ProtectionError(
                    .io,
                    "the key store is damaged: an account key names the owner \"\(name.escapingControlCharacters)\", which is not an owner identifier",
                    path: state.path)
            }
            owners.append(owner)
        }
        return owners
    }

    public func masterKeyRecord() throws(ProtectionError) -> MasterKeyRecord? {
        try mapped { () throws(StoreError) in try state.masterKeyRecord() }
    }

    public func saveMasterKeyRecord(_ record: MasterKeyRecord) throws(ProtectionError) {
        do {
            try state.saveMasterKeyRecord(record)
        } catch  where error.code == .conflict {
            throw ProtectionError(.masterKey, "a master key record already exists", path: state.path)
        } catch {
            throw Self.protectionError(error)
        }
    }

    public func changeToken() throws(ProtectionError) -> UInt64? {
        UInt64(bitPattern: try mapped { () throws(StoreError) in try state.keyGeneration() })
    }

    private func mapped<T>(_ body: () throws(StoreError) -> T) throws(ProtectionError) -> T {
        do {
            return try body()
        } catch {
            throw Self.protectionError(error)
        }
    }

    private static func protectionError(_ error: StoreError) -> ProtectionError {
        if error.code == .unavailable { return ProtectionError(.keyStoreUnavailable, error.message, path: error.path) }
        let message = error.code == .corrupt ? "the key store is damaged: \(error.message)" : error.message
        return ProtectionError(.io, message, path: error.path)
    }
}
