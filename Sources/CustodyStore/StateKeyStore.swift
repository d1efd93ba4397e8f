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

    public func keys(for owner: OwnerIdentifier) async throws(ProtectionError) -> [WrappedAccountKey] {
        try await mapped { () async throws(StoreError) in try await state.accountKeys(owner: owner.rawValue) }
    }

    public func add(_ key: WrappedAccountKey) async throws(ProtectionError) {
        do {
            try await state.addAccountKey(key)
        } catch  where error.code == .conflict {
            throw ProtectionError(
                .keyVersionExists, "key version \(key.version) of \(key.owner) already exists", path: state.path)
        } catch {
            throw Self.protectionError(error)
        }
    }

    @discardableResult
    public func removeKeys(for owner: OwnerIdentifier) async throws(ProtectionError) -> Int {
        try await mapped { () async throws(StoreError) in try await state.removeAccountKeys(owner: owner.rawValue) }
    }

    public func owners() async throws(ProtectionError) -> [OwnerIdentifier] {
        let names = try await mapped { () async throws(StoreError) in try await state.accountKeyOwners() }
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

    public func masterKeyRecord() async throws(ProtectionError) -> MasterKeyRecord? {
        try await mapped { () async throws(StoreError) in try await state.masterKeyRecord() }
    }

    public func saveMasterKeyRecord(_ record: MasterKeyRecord) async throws(ProtectionError) {
        do {
            try await state.saveMasterKeyRecord(record)
        } catch  where error.code == .conflict {
            throw ProtectionError(.masterKey, "a master key record already exists", path: state.path)
        } catch {
            throw Self.protectionError(error)
        }
    }

    public func changeToken() async throws(ProtectionError) -> UInt64? {
        UInt64(bitPattern: try await mapped { () async throws(StoreError) in try await state.keyGeneration() })
    }

    private func mapped<T>(_ body: () async throws(StoreError) -> T) async throws(ProtectionError) -> T {
        do {
            return try await body()
        } catch {
            throw Self.protectionError(error)
        }
    }

    static func protectionError(_ error: StoreError) -> ProtectionError {
        // Nothing was sealed or opened, and the same call may succeed once the state answers (a
        // key whose commit was not confirmed is found, or made, by the next call): the state's
        // failure, never the caller's.
        if [.unavailable, .outcomeUnknown].contains(error.code) {
            return ProtectionError(.keyStoreUnavailable, error.message, path: error.path)
        }
        let message = error.code == .corrupt ? "the key store is damaged: \(error.message)" : error.message
        return ProtectionError(.io, message, path: error.path)
    }
}
