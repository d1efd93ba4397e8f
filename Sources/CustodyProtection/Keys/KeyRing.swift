import CustodyPolicy
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

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
    /// Whether every sealing or opening that may wait for the store (the `async` calls) first
    /// compares the store's change token, whatever the interval: a wipe another process has
    /// acknowledged is then in force here for the next call, at one read of the store per call.
    /// The calls into the caller's memory (`DataProtector.prepare` first) keep the interval.
    public let confirmsEachUse: Bool
    /// Serializes creating and rotating keys within this process; counts the versions added.
    /// One key version added at a time in this process (see `addVersion`).
    private let writer = SerialGate()

    /// The keys unwrapped so far.
    private struct Cache {
        struct Version: Hashable {
            let owner: OwnerIdentifier
            let version: UInt32
        }

        private(set) var keys: [Version: AccountKey] = [:]
        /// Each owner's newest version known here: what new envelopes are sealed with.
        private(set) var current: [OwnerIdentifier: AccountKey] = [:]
        /// The key sealed with last and the key opened with last: an application (or a
        /// request) protects and reads one account's data many times in a row, and comparing
        /// with the last key costs a fraction of hashing an identifier. Always keys of `current`
        /// and `keys`: every change below that removes a key forgets them.
        private(set) var lastSealing: AccountKey?
        private(set) var lastOpening: AccountKey?
        /// When to compare the store's change token next, and its value then.
        var nextCheck: CoarseClock.Instant
        var token: UInt64?

        init(nextCheck: CoarseClock.Instant, token: UInt64?) {
            self.nextCheck = nextCheck
            self.token = token
        }

        mutating func insert(_ key: AccountKey, asCurrent: Bool) {
            keys[Version(owner: key.owner, version: key.version)] = key
            if let last = lastOpening, last.owner == key.owner, last.version == key.version { lastOpening = key }
            if asCurrent, key.version >= current[key.owner]?.version ?? 0 {
                current[key.owner] = key
                if lastSealing?.owner == key.owner { lastSealing = key }
            }
        }

        /// `owner`'s newest key, remembered for the next seal.
        mutating func sealing(_ owner: OwnerIdentifier) -> AccountKey? {
            if let last = lastSealing, last.owner == owner { return last }
            let found = current[owner]
            if found != nil { lastSealing = found }
            return found
        }

        /// The newest key of the account `owner` names (`OwnerIdentifier(owner)`), found without
        /// building its identifier when it is the last key sealed with.
        func lastSealing(for owner: AccountID) -> AccountKey? {
            guard let last = lastSealing, last.owner.names(owner) else { return nil }
            return last
        }

        /// Version `version` of `owner`'s key, remembered for the next opening.
        mutating func opening(_ owner: OwnerIdentifier, version: UInt32) -> AccountKey? {
            if let last = lastOpening, last.version == version, last.owner == owner { return last }
            let found = keys[Version(owner: owner, version: version)]
            if found != nil { lastOpening = found }
            return found
        }

        /// Forgets every key.
        mutating func removeAll() {
            keys = [:]
            current = [:]
            lastSealing = nil
            lastOpening = nil
        }

        /// Forgets the keys of the owners `gone` holds.
        mutating func remove(where gone: (OwnerIdentifier) -> Bool) {
            keys = keys.filter { !gone($0.key.owner) }
            current = current.filter { !gone($0.key) }
            if let last = lastSealing, gone(last.owner) { lastSealing = nil }
            if let last = lastOpening, gone(last.owner) { lastOpening = nil }
        }
    }

    /// Opens the ring: checks (or, on first use, records) the master key against the store.
    /// - Throws: `.masterKey` when the master key is missing, unreadable, too widely readable, or
    ///   not the one the store's keys are wrapped with.
    /// - Parameter revalidationInterval: how often, at most, to ask the store whether another
    ///   process changed its keys.
    /// - Parameter confirmsEachUse: ask it before every `async` sealing or opening instead (see
    ///   `confirmsEachUse`).
    public init(
        store: any AccountKeyStore, masterKey source: MasterKeySource, revalidationInterval: Duration = .seconds(1),
        confirmsEachUse: Bool = false
    ) async throws(ProtectionError) {
        self.store = store
        self.master = try await MasterKey.open(source, store: store)
        self.revalidationInterval = revalidationInterval
        self.confirmsEachUse = confirmsEachUse
        self.cache = Locked(
            Cache(
                nextCheck: CoarseClock.deadline(after: revalidationInterval, from: CoarseClock.now()),
                token: try await store.changeToken()))
    }

    /// Forgets cached keys when the store changed since the last look and a look is due.
    /// - Throws: the store's error when a look is due and the store cannot be read. Not
    ///   hearing from the store is no proof that nothing changed (another process or replica
    ///   may have wiped the account): every cached key is dropped, and nothing is opened or
    ///   sealed until the store answers again.
    private func revalidate(at now: CoarseClock.Instant, ahead: UInt64 = 0, always: Bool = false)
        async throws(ProtectionError)
    {
        guard always || cache.withLock({ now &+ ahead >= $0.nextCheck }) else { return }
        let token: UInt64?
        do {
            token = try await store.changeToken()
        } catch {
            cache.withLock { cache in
                cache.removeAll()
                cache.token = nil
            }
            throw ProtectionError(
                error.code,
                "the key store cannot be read to confirm that the keys in memory are still valid, so none is used: \(error.message)",
                path: error.path)
        }
        cache.withLock { cache in
            if cache.token != token {
                cache.removeAll()
                cache.token = token
            }
            cache.nextCheck = CoarseClock.deadline(after: revalidationInterval, from: now)
        }
    }

    /// What `lookup` finds in the cache, once the cache is known to be current: one lock while
    /// no comparison with the store is due (the common case), the comparison first when one is.
    private func cached(_ lookup: (inout Cache) -> AccountKey?) async throws(ProtectionError) -> AccountKey? {
        let now = CoarseClock.now()
        if confirmsEachUse {
            try await revalidate(at: now, always: true)
            return cache.withLock { lookup(&$0) }
        }
        let (due, key) = cache.withLock { cache in now >= cache.nextCheck ? (true, nil) : (false, lookup(&cache)) }
        guard due else { return key }
        try await revalidate(at: now)
        return cache.withLock { lookup(&$0) }
    }

    /// What `lookup` finds in memory, without asking the store: nil when it is not there or a
    /// comparison with the store is due (the key may have been wiped elsewhere since). For
    /// the calls that cannot wait (`DataProtector`'s, into the caller's memory): their keys
    /// are loaded first with `DataProtector.prepare`.
    private func ready(_ lookup: (inout Cache) -> AccountKey?) -> AccountKey? {
        let now = CoarseClock.now()
        return cache.withLock { cache in now >= cache.nextCheck ? nil : lookup(&cache) }
    }

    /// Compares the keys in memory with the store now when the next comparison is due within
    /// half the revalidation interval: what `DataProtector.prepare` does first, so that a key
    /// it makes ready stays usable (`ready`) for at least that long.
    func confirmAhead() async throws(ProtectionError) {
        try await revalidate(at: CoarseClock.now(), ahead: CoarseClock.nanoseconds(revalidationInterval / 2))
    }

    /// The newest version of `account`'s key if it is in memory and current (see `ready`).
    func readySealingKey(for account: AccountID) throws(ProtectionError) -> AccountKey {
        if let key = ready({ $0.lastSealing(for: account) }) { return key }
        let owner = OwnerIdentifier(account)
        guard let key = ready({ $0.sealing(owner) }) else { throw Self.notReady(owner) }
        return key
    }

    /// Version `version` of `owner`'s key if it is in memory and current (see `ready`).
    func readyKey(for owner: OwnerIdentifier, version: UInt32) throws(ProtectionError) -> AccountKey {
        guard let key = ready({ $0.opening(owner, version: version) }) else { throw Self.notReady(owner) }
        return key
    }

    private static func notReady(_ owner: OwnerIdentifier) -> ProtectionError {
        ProtectionError(
            .keyUnavailable,
            "the key of \(owner) is not in memory, or has not been confirmed against the key store lately: prepare it first (DataProtector.prepare)"
        )
    }

    /// The owner of the key opened with last: what the next envelope read most likely names.
    var lastOpeningOwner: OwnerIdentifier? {
        cache.withLock { $0.lastOpening?.owner }
    }

    /// The versions of `owner`'s key that exist, oldest first.
    public func versions(of owner: OwnerIdentifier) async throws(ProtectionError) -> [UInt32] {
        try await store.keys(for: owner).map(\.version)
    }

    /// The newest version of the key of `account` (as `OwnerIdentifier(account)` names it),
    /// creating version 1 when `creating` and there is none. The identifier is built only when
    /// the key is not the one sealed with last.
    func currentKey(for account: AccountID, creating: Bool) async throws(ProtectionError) -> AccountKey {
        if let key = try await cached({ $0.lastSealing(for: account) }) { return key }
        return try await currentKey(for: OwnerIdentifier(account), creating: creating)
    }

    /// The newest version of `owner`'s key, creating version 1 when `creating` and there is none.
    func currentKey(for owner: OwnerIdentifier, creating: Bool) async throws(ProtectionError) -> AccountKey {
        if let key = try await cached({ $0.sealing(owner) }) { return key }
        let stored = try await store.keys(for: owner)
        if let newest = stored.max(by: { $0.version < $1.version }) {
            return try remember(newest, asLatest: true)
        }
        guard creating else {
            throw ProtectionError(.keyUnavailable, "\(owner) has no key (never created here, or wiped)")
        }
        return try await addVersion(for: owner, unlessOneExists: true)
    }

    /// Version `version` of `owner`'s key.
    /// - Throws: `.keyUnavailable` when the store does not have it (wiped, made elsewhere, or a
    ///   header altered to name an owner or version that was never there).
    func key(for owner: OwnerIdentifier, version: UInt32) async throws(ProtectionError) -> AccountKey {
        if let key = try await cached({ $0.opening(owner, version: version) }) { return key }
        guard let stored = try await store.keys(for: owner).first(where: { $0.version == version }) else {
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
    public func rotate(_ owner: OwnerIdentifier) async throws(ProtectionError) -> UInt32 {
        try await addVersion(for: owner).version
    }

    /// Deletes every version of `owner`'s key, from memory and the store; returns how many
    /// versions there were.
    @discardableResult
    public func wipe(_ owner: OwnerIdentifier) async throws(ProtectionError) -> Int {
        cache.withLock { $0.remove { $0 == owner } }
        return try await store.removeKeys(for: owner)
    }

    /// Drops `owners`' keys from memory only, after their rows were deleted from the store by
    /// other means (a wipe in the state database's own transaction).
    public func forget(_ owners: [OwnerIdentifier]) {
        let gone = Set(owners)
        cache.withLock { $0.remove(where: gone.contains) }
    }

    /// Drops every key from memory: they are read (and unwrapped) afresh when next used.
    public func forgetAll() {
        cache.withLock { $0.removeAll() }
    }

    /// Adds the next version of `owner`'s key. With `unlessOneExists` (a first key, made on
    /// first use), a key that another thread or process made since the caller looked is used
    /// instead: simultaneous first seals for a new account share one key, not one version each.
    private func addVersion(for owner: OwnerIdentifier, unlessOneExists: Bool = false) async throws(ProtectionError)
        -> AccountKey
    {
        try await writer.run { () async throws(ProtectionError) -> AccountKey in
            // Another process may add the same version between our read and our write: the store
            // refuses it, and we read again.
            for _ in 0..<5 {
                do throws(ProtectionError) {
                    let stored = try await store.keys(for: owner)
                    if unlessOneExists, let newest = stored.max(by: { $0.version < $1.version }) {
                        return try remember(newest, asLatest: true)
                    }
                    let next = (stored.map(\.version).max() ?? 0) + 1
                    let key = SecretBytes(randomCount: EnvelopeAlgorithm.keyCount, locked: true)
                    let wrapped = master.wrap(key, owner: owner, version: next, created: Date())
                    try await store.add(wrapped)
                    let accountKey = AccountKey(owner: owner, version: next, key: key)
                    cache.withLock { $0.insert(accountKey, asCurrent: true) }
                    return accountKey
                } catch  where error.code == .keyVersionExists {
                    continue
                }
            }
            throw ProtectionError(.encryptFailed, "could not add a key version for \(owner): the store kept changing")
        }
    }

    private func remember(_ stored: WrappedAccountKey, asLatest: Bool) throws(ProtectionError) -> AccountKey {
        let key = AccountKey(owner: stored.owner, version: stored.version, key: try master.unwrap(stored))
        cache.withLock { $0.insert(key, asCurrent: asLatest) }
        return key
    }
}

/// Monotonic time from the kernel's coarse clock, for the key ring's checks on every seal and
/// open: a read costs a few nanoseconds where `ContinuousClock.now` costs tens, and is as fine
/// as the scheduler's tick (1 to 10 ms). A coarse reading lags the time by up to that
/// resolution, so a deadline is brought forward by it: a check is never later than asked.
enum CoarseClock {
    /// Nanoseconds since an arbitrary start.
    typealias Instant = UInt64

    #if os(Linux)
        private static let clock = CLOCK_MONOTONIC_COARSE
    #else
        private static let clock = CLOCK_MONOTONIC
    #endif

    /// How far a reading may lag the time.
    private static let resolution: UInt64 = {
        var step = timespec()
        guard clock_getres(clock, &step) == 0 else { return 10_000_000 }
        return UInt64(step.tv_sec) * 1_000_000_000 + UInt64(step.tv_nsec)
    }()

    static func now() -> Instant {
        var time = timespec()
        clock_gettime(clock, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// The reading at which `interval` after `now` has surely passed.
    static func deadline(after interval: Duration, from now: Instant) -> Instant {
        let span = nanoseconds(interval)
        guard span < .max else { return .max }
        let (end, late) = now.addingReportingOverflow(span)
        guard !late else { return .max }
        return end >= resolution ? max(now, end - resolution) : now
    }

    /// `interval` in nanoseconds: 0 when negative, `.max` when it does not fit.
    static func nanoseconds(_ interval: Duration) -> UInt64 {
        let (seconds, attoseconds) = interval.components
        guard seconds >= 0, attoseconds >= 0 else { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return .max }
        let (total, over) = whole.addingReportingOverflow(UInt64(attoseconds / 1_000_000_000))
        return over ? .max : total
    }
}
