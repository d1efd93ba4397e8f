import CustodyPolicy
import Foundation

/// One version of one account's key, unwrapped: what seals and opens envelopes' data keys.
final class AccountKey: Sendable {
    let owner: OwnerIdentifier
    let version: UInt32
    /// XChaCha20-Poly1305 under the account key: wraps and unwraps data keys (algorithms 1, 2).
    let cipher: AEADCipher
    /// The key itself, locked against swapping: derives data keys (algorithms 3, 4).
    private let key: SecretBytes

    /// The label that starts every data-key derivation's input (docs/format.md).
    static let derivationLabel: [UInt8] = Array("custody data key v1".utf8) + [0]
    /// Bytes a derivation yields: the data key, then the key check the header carries.
    static let derivedCount = EnvelopeAlgorithm.keyCount + EnvelopeHeader.keyCheckCount

    init(owner: OwnerIdentifier, version: UInt32, key: SecretBytes) {
        self.owner = owner
        self.version = version
        self.key = key.withUnsafeBytes { SecretBytes(copying: $0, locked: true) }
        self.cipher = key.withUnsafeBytes { AEADCipher(algorithm: .xChaCha20Poly1305, key: $0, lockingKey: true) }
    }

    /// The data key and key check of a derived-key envelope: BLAKE2b with this key, 48 bytes
    /// out, over the label and `input` (the header up to and including its salt). Writes the
    /// data key to the first 32 bytes of `output` and the check to the last 16.
    func derive(from input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) {
        precondition(output.count == Self.derivedCount)
        key.withUnsafeBytes { key in
            Self.derivationLabel.withUnsafeBytes { label in Checksum.keyed(key: key, label, input, into: output) }
        }
    }
}

/// The account keys of a store, unwrapped on demand and kept in memory while in use.
///
/// Creating and rotating keys is safe against other threads (a lock) and other processes (the
/// store refuses a version that already exists, and the ring re-reads and retries). Wiping an
/// account drops its keys from memory and the store: its envelopes can no longer be opened.
/// Keys rotated or wiped by another process are noticed within `revalidationInterval`: the
/// ring compares the store's change token at most that often and forgets its cache when it
/// moved. A store that cannot be read when a comparison is due drops the cache and refuses:
/// keys in memory are never used longer than `revalidationInterval` past the store's last
/// answer.
public final class KeyRing: Sendable {
    public let store: any AccountKeyStore
    private let master: MasterKey
    private let cache: Locked<Cache>
    /// How stale the cache may get about other processes' rotations and wipes.
    public let revalidationInterval: Duration
    /// Serializes creating and rotating keys within this process; counts the versions added.
    private let writer = Locked<UInt64>(0)

    /// The keys unwrapped so far.
    private struct Cache {
        struct Version: Hashable {
            let owner: OwnerIdentifier
            let version: UInt32
        }

        var keys: [Version: AccountKey] = [:]
        /// Each owner's newest version known here: what new envelopes are sealed with.
        var current: [OwnerIdentifier: AccountKey] = [:]
        /// When to compare the store's change token next, and its value then.
        var nextCheck: ContinuousClock.Instant
        var token: UInt64?

        mutating func insert(_ key: AccountKey, asCurrent: Bool) {
            keys[Version(owner: key.owner, version: key.version)] = key
            if asCurrent, key.version >= current[key.owner]?.version ?? 0 { current[key.owner] = key }
        }
    }

    /// Opens the ring: checks (or, on first use, records) the master key against the store.
    /// - Throws: `.masterKey` when the master key is missing, unreadable, too widely readable, or
    ///   not the one the store's keys are wrapped with.
    /// - Parameter revalidationInterval: how often, at most, to ask the store whether another
    ///   process changed its keys.
    public init(
        store: any AccountKeyStore, masterKey source: MasterKeySource, revalidationInterval: Duration = .seconds(1)
    ) throws(ProtectionError) {
        self.store = store
        self.master = try MasterKey.open(source, store: store)
        self.revalidationInterval = revalidationInterval
        self.cache = Locked(Cache(nextCheck: .now + revalidationInterval, token: try store.changeToken()))
    }

    /// Forgets cached keys when the store changed since the last look and a look is due.
    /// - Throws: the store's error when a look is due and the store cannot be read. Not
    ///   hearing from the store is no proof that nothing changed (another process or replica
    ///   may have wiped the account): every cached key is dropped, and nothing is opened or
    ///   sealed until the store answers again.
    private func revalidate(at now: ContinuousClock.Instant) throws(ProtectionError) {
        guard cache.withLock({ now >= $0.nextCheck }) else { return }
        let token: UInt64?
        do {
            token = try store.changeToken()
        } catch {
            cache.withLock { cache in
                cache.keys = [:]
                cache.current = [:]
                cache.token = nil
            }
            throw ProtectionError(
                error.code,
                "the key store cannot be read to confirm that the keys in memory are still valid, so none is used: \(error.message)",
                path: error.path)
        }
        cache.withLock { cache in
            if cache.token != token {
                cache.keys = [:]
                cache.current = [:]
                cache.token = token
            }
            cache.nextCheck = now + revalidationInterval
        }
    }

    /// What `lookup` finds in the cache, once the cache is known to be current: one lock while
    /// no comparison with the store is due (the common case), the comparison first when one is.
    private func cached(_ lookup: (borrowing Cache) -> AccountKey?) throws(ProtectionError) -> AccountKey? {
        let now = ContinuousClock.now
        let (due, key) = cache.withLock { cache in now >= cache.nextCheck ? (true, nil) : (false, lookup(cache)) }
        guard due else { return key }
        try revalidate(at: now)
        return cache.withLock { lookup($0) }
    }

    /// The versions of `owner`'s key that exist, oldest first.
    public func versions(of owner: OwnerIdentifier) throws(ProtectionError) -> [UInt32] {
        try store.keys(for: owner).map(\.version)
    }

    /// The newest version of `owner`'s key, creating version 1 when `creating` and there is none.
    func currentKey(for owner: OwnerIdentifier, creating: Bool) throws(ProtectionError) -> AccountKey {
        if let key = try cached({ $0.current[owner] }) { return key }
        let stored = try store.keys(for: owner)
        if let newest = stored.max(by: { $0.version < $1.version }) {
            return try remember(newest, asLatest: true)
        }
        guard creating else {
            throw ProtectionError(.keyUnavailable, "\(owner) has no key (never created here, or wiped)")
        }
        return try addVersion(for: owner)
    }

    /// Version `version` of `owner`'s key.
    /// - Throws: `.keyUnavailable` when the store does not have it (wiped, made elsewhere, or a
    ///   header altered to name an owner or version that was never there).
    func key(for owner: OwnerIdentifier, version: UInt32) throws(ProtectionError) -> AccountKey {
        if let key = try cached({ $0.keys[Cache.Version(owner: owner, version: version)] }) { return key }
        guard let stored = try store.keys(for: owner).first(where: { $0.version == version }) else {
            throw ProtectionError(
                .keyUnavailable,
                "key version \(version) of \(owner) is not in the key store (wiped, never created here, or the envelope's header was altered)"
            )
        }
        return try remember(stored, asLatest: false)
    }

    /// Adds the next version of `owner`'s key; new envelopes use it, old ones still open with
    /// theirs. Returns the new version.
    @discardableResult
    public func rotate(_ owner: OwnerIdentifier) throws(ProtectionError) -> UInt32 {
        try addVersion(for: owner).version
    }

    /// Deletes every version of `owner`'s key, from memory and the store; returns how many
    /// versions there were.
    @discardableResult
    public func wipe(_ owner: OwnerIdentifier) throws(ProtectionError) -> Int {
        cache.withLock { cache in
            cache.keys = cache.keys.filter { $0.key.owner != owner }
            cache.current[owner] = nil
        }
        return try store.removeKeys(for: owner)
    }

    /// Drops `owners`' keys from memory only, after their rows were deleted from the store by
    /// other means (a wipe in the state database's own transaction).
    public func forget(_ owners: [OwnerIdentifier]) {
        let gone = Set(owners)
        cache.withLock { cache in
            cache.keys = cache.keys.filter { !gone.contains($0.key.owner) }
            for owner in gone { cache.current[owner] = nil }
        }
    }

    /// Drops every key from memory: they are read (and unwrapped) afresh when next used.
    public func forgetAll() {
        cache.withLock { cache in
            cache.keys = [:]
            cache.current = [:]
        }
    }

    private func addVersion(for owner: OwnerIdentifier) throws(ProtectionError) -> AccountKey {
        let result: Result<AccountKey, ProtectionError> = writer.withLock { added in
            // Another process may add the same version between our read and our write: the store
            // refuses it, and we read again.
            for _ in 0..<5 {
                do throws(ProtectionError) {
                    let next = (try store.keys(for: owner).map(\.version).max() ?? 0) + 1
                    let key = SecretBytes(randomCount: EnvelopeAlgorithm.keyCount, locked: true)
                    let wrapped = master.wrap(key, owner: owner, version: next, created: Date())
                    try store.add(wrapped)
                    let accountKey = AccountKey(owner: owner, version: next, key: key)
                    cache.withLock { $0.insert(accountKey, asCurrent: true) }
                    added &+= 1
                    return .success(accountKey)
                } catch  where error.code == .keyVersionExists {
                    continue
                } catch {
                    return .failure(error)
                }
            }
            return .failure(
                ProtectionError(.encryptFailed, "could not add a key version for \(owner): the store kept changing"))
        }
        return try result.get()
    }

    private func remember(_ stored: WrappedAccountKey, asLatest: Bool) throws(ProtectionError) -> AccountKey {
        let key = AccountKey(owner: stored.owner, version: stored.version, key: try master.unwrap(stored))
        cache.withLock { $0.insert(key, asCurrent: asLatest) }
        return key
    }
}
