import CustodyPolicy
import CustodyPostgres
import CustodyProtection
@testable import CustodyStore
import CustodyTestSupport
import Foundation
import Synchronization
import Testing

let owner = OwnerIdentifier(rawValue: "oid:0d000000-0000-4000-8000-000000000001")!
let other = OwnerIdentifier(rawValue: "upn:bob@contoso.com")!

func wrapped(_ owner: OwnerIdentifier, _ version: UInt32, fill: UInt8 = 0xA5) -> WrappedAccountKey {
    WrappedAccountKey(
        owner: owner, version: version, created: Date(timeIntervalSince1970: 1_790_000_000 + Double(version)),
        nonce: [UInt8](repeating: fill, count: 24), ciphertext: [UInt8](repeating: fill &+ 1, count: 48))
}

/// The error of type `E` that `error` is; nil for none. Any other error fails the test.
func expected<E: Error>(_ type: E.Type, _ error: (any Error)?) -> E? {
    guard let error else { return nil }
    if let error = error as? E { return error }
    Issue.record("expected a \(E.self), got \(error)")
    return nil
}

/// Runs `body` and returns the error of type `E` it threw, or nil; any other error fails the test.
func thrown<E: Error>(_ type: E.Type, _ body: () throws -> Void) -> E? {
    do {
        try body()
        return nil
    } catch {
        return expected(E.self, error)
    }
}

/// `thrown` for a body that awaits.
func thrownAwaiting<E: Error>(_ type: E.Type, _ body: () async throws -> Void) async -> E? {
    do {
        try await body()
        return nil
    } catch {
        return expected(E.self, error)
    }
}

func storeError(_ body: () throws -> Void) -> StoreError? { thrown(StoreError.self, body) }
func storeError(_ body: () async throws -> Void) async -> StoreError? { await thrownAwaiting(StoreError.self, body) }
func protectionError(_ body: () async throws -> Void) async -> ProtectionError? {
    await thrownAwaiting(ProtectionError.self, body)
}

/// The key stores the protection layer can use, each fresh.
enum StoreKind: String, CaseIterable, CustomTestStringConvertible {
    case files, sqliteOnDisk, sqliteInMemory, postgres

    var testDescription: String { rawValue }

    /// Every store the tests can reach here (PostgreSQL: see `TestPostgres`).
    static var reachable: [StoreKind] { TestPostgres.available ? allCases : [.files, .sqliteOnDisk, .sqliteInMemory] }

    func make(in directory: TemporaryDirectory) async throws -> any AccountKeyStore {
        switch self {
        case .files: try FileKeyStore(directory: directory.file("state"))
        case .sqliteOnDisk: StateKeyStore(state: try CustodyDatabase(path: directory.file("state/state.sqlite")))
        case .sqliteInMemory: StateKeyStore(state: try CustodyDatabase())
        case .postgres: StateKeyStore(state: try await PostgresState(url: TestPostgres.freshURL("keys")))
        }
    }
}

@Suite("Key stores")
struct KeyStoreTests {
    /// From an outside run: a first key whose commit the state did not confirm was answered
    /// `422 io`, as if the caller were at fault, where nothing was sealed and a retry works.
    @Test(
        "what the state store throws is the key store's error: a state out of reach or a commit not confirmed is key-store-unavailable (retry), anything else io",
        arguments: [
            (StoreError.Code.unavailable, ProtectionError.Code.keyStoreUnavailable),
            (.outcomeUnknown, .keyStoreUnavailable), (.corrupt, .io), (.database, .io), (.conflict, .io),
        ])
    func stateErrors(thrown: StoreError.Code, expected: ProtectionError.Code) {
        let error = StateKeyStore.protectionError(StoreError(thrown, "adding key version 1", path: "state"))
        #expect(error.code == expected)
        #expect(error.message.contains("adding key version 1"))
    }

    @Test(
        "every store keeps versions in order, refuses a version twice, and forgets an owner wholly",
        arguments: StoreKind.reachable)
    func contract(kind: StoreKind) async throws {
        let directory = try TemporaryDirectory()
        let store = try await kind.make(in: directory)
        #expect(try await store.keys(for: owner).isEmpty)
        try await store.add(wrapped(owner, 2))
        try await store.add(wrapped(owner, 1))
        try await store.add(wrapped(other, 1))
        #expect(try await store.keys(for: owner) == [wrapped(owner, 1), wrapped(owner, 2)])
        #expect(await protectionError { try await store.add(wrapped(owner, 2, fill: 0x11)) }?.code == .keyVersionExists)
        #expect(try await store.keys(for: owner)[1] == wrapped(owner, 2), "the refused add changed nothing")
        #expect(Set(try await store.owners()) == [owner, other])
        #expect(try await store.removeKeys(for: owner) == 2)
        #expect(try await store.keys(for: owner).isEmpty)
        #expect(try await store.removeKeys(for: owner) == 0)
        #expect(try await store.owners() == [other])
    }

    @Test("every store records the master key once", arguments: StoreKind.reachable)
    func masterRecord(kind: StoreKind) async throws {
        let directory = try TemporaryDirectory()
        let store = try await kind.make(in: directory)
        #expect(try await store.masterKeyRecord() == nil)
        let record = MasterKeyRecord(
            kind: .passphrase, salt: [UInt8](repeating: 3, count: 16), opsLimit: 2, memLimit: 67_108_864,
            checkNonce: [UInt8](repeating: 4, count: 24), checkCiphertext: [UInt8](repeating: 5, count: 48))
        try await store.saveMasterKeyRecord(record)
        #expect(try await store.masterKeyRecord() == record)
        #expect(await protectionError { try await store.saveMasterKeyRecord(record) }?.code == .masterKey)
    }

    @Test("a key ring over the database protects, rotates and wipes")
    func keyRing() async throws {
        let directory = try TemporaryDirectory()
        let database = try CustodyDatabase(path: directory.file("state.sqlite"))
        let ring = try await KeyRing(
            store: StateKeyStore(state: database), masterKey: .keyFile(path: directory.file("master.key")))
        let protector = DataProtector(keyRing: ring)
        let alice = AccountID(oid: "0d000000-0000-4000-8000-000000000001")!
        let data = Array("quarterly numbers".utf8)
        let first = try await protector.protect(data, owner: alice, encrypt: true)
        #expect(try await ring.rotate(owner) == 2)
        let second = try await protector.protect(data, owner: alice, encrypt: true)
        #expect(try DataProtector.protectionInfo(second)?.keyVersion == 2)

        // A second process (a second ring on the same file) reads the same keys, and notices
        // the wipe the first one makes (at its next look at the store: at once, here).
        let again = try await KeyRing(
            store: StateKeyStore(state: try CustodyDatabase(path: directory.file("state.sqlite"))),
            masterKey: .keyFile(path: directory.file("master.key")), revalidationInterval: .zero)
        #expect(try await DataProtector(keyRing: again).unprotect(first) == data)

        #expect(try await ring.wipe(owner) == 2)
        #expect(await protectionError { _ = try await protector.unprotect(second) }?.code == .keyUnavailable)
        #expect(
            await protectionError { _ = try await DataProtector(keyRing: again).unprotect(first) }?.code
                == .keyUnavailable)
    }

    @Test(
        "a ring notices keys another process wiped, at its next look at the store",
        arguments: [StoreKind.files, .sqliteOnDisk])
    func staleCache(kind: StoreKind) async throws {
        let directory = try TemporaryDirectory()
        let master = MasterKeySource.keyFile(path: directory.file("master.key"))
        let writer = await DataProtector(
            keyRing: try KeyRing(store: try await kind.make(in: directory), masterKey: master))
        let readerRing = try await KeyRing(
            store: try await kind.make(in: directory), masterKey: master, revalidationInterval: .zero)
        let alice = AccountID(oid: "0d000000-0000-4000-8000-000000000001")!
        let envelope = try await writer.protect([1, 2, 3], owner: alice, encrypt: true)
        #expect(try await DataProtector(keyRing: readerRing).unprotect(envelope) == [1, 2, 3])
        try await writer.keyRing.wipe(owner)
        #expect(
            await protectionError { _ = try await DataProtector(keyRing: readerRing).unprotect(envelope) }?.code
                == .keyUnavailable)
    }

    @Test(
        "a ring that cannot confirm its keys with the store uses none of them: another process's wipe is never missed for longer than the ring's interval",
        arguments: StoreKind.reachable, [ProtectionError.Code.keyStoreUnavailable, .io])
    func unconfirmedCache(kind: StoreKind, failure: ProtectionError.Code) async throws {
        let directory = try TemporaryDirectory()
        let master = MasterKeySource.keyFile(path: directory.file("master.key"))
        let store = FailingKeyStore(try await kind.make(in: directory))
        let ring = try await KeyRing(store: store, masterKey: master, revalidationInterval: .milliseconds(50))
        let protector = DataProtector(keyRing: ring)
        let alice = AccountID(oid: "0d000000-0000-4000-8000-000000000001")!
        let envelope = try await protector.protect([1, 2, 3], owner: alice, encrypt: true)
        #expect(try await protector.unprotect(envelope) == [1, 2, 3], "the key is cached now")

        // Another process wipes the account while this one cannot read the store.
        store.failure.withLock { $0 = failure }
        try await store.base.removeKeys(for: owner)
        try await Task.sleep(for: .milliseconds(60))
        let refused = await protectionError { _ = try await protector.unprotect(envelope) }
        #expect(refused?.code == failure, "refused with the store's own reason")
        #expect(refused?.message.contains("none is used") == true)
        #expect(
            await protectionError { _ = try await protector.protect([4], owner: alice, encrypt: true) }?.code
                == failure,
            "nothing sealed either")

        store.failure.withLock { $0 = nil }
        #expect(
            await protectionError { _ = try await protector.unprotect(envelope) }?.code == .keyUnavailable,
            "the store answers: the wipe holds")
    }

    /// Two stores over one backing, as two processes (or replicas) have.
    static func twoStores(_ kind: StoreKind, in directory: TemporaryDirectory) async throws -> (
        any AccountKeyStore, any AccountKeyStore
    ) {
        switch kind {
        case .files:
            return (
                try FileKeyStore(directory: directory.file("state")),
                try FileKeyStore(directory: directory.file("state"))
            )
        case .sqliteOnDisk, .sqliteInMemory:
            return (
                StateKeyStore(state: try CustodyDatabase(path: directory.file("state.sqlite"))),
                StateKeyStore(state: try CustodyDatabase(path: directory.file("state.sqlite")))
            )
        case .postgres:
            let url = TestPostgres.freshURL("shared")
            return (
                StateKeyStore(state: try await PostgresState(url: url)),
                StateKeyStore(state: try await PostgresState(url: url))
            )
        }
    }

    @Test(
        "a ring that confirms each use opens and seals nothing under a key another process wiped, from its next call; one that does not may, until its interval is up",
        arguments: StoreKind.reachable.filter { $0 != .sqliteInMemory }, [true, false])
    func confirmsEachUse(kind: StoreKind, confirms: Bool) async throws {
        let directory = try TemporaryDirectory()
        let master = MasterKeySource.keyFile(path: directory.file("master.key"))
        let (mine, theirs) = try await Self.twoStores(kind, in: directory)
        let ring = try await KeyRing(
            store: mine, masterKey: master, revalidationInterval: .seconds(600), confirmsEachUse: confirms)
        let protector = DataProtector(keyRing: ring)
        let other = try await KeyRing(store: theirs, masterKey: master)
        let alice = AccountID(oid: "0d000000-0000-4000-8000-000000000001")!
        let data: [UInt8] = [1, 2, 3]
        let before = try await protector.protect(data, owner: alice, encrypt: true)
        #expect(try await protector.unprotect(before) == data, "its key is in memory now")
        try await other.wipe(OwnerIdentifier(alice))

        let opened = await protectionError { _ = try await protector.unprotect(before) }
        let after = try await protector.protect(data, owner: alice, encrypt: true)
        let openedElsewhere = await protectionError {
            _ = try await DataProtector(keyRing: try await KeyRing(store: theirs, masterKey: master)).unprotect(after)
        }
        if confirms {
            #expect(opened?.code == .keyUnavailable, "\(String(describing: opened))")
            #expect(openedElsewhere == nil, "sealed under a key the store has")
        } else {
            // The documented window: the key in memory is used until the ring next looks.
            #expect(opened == nil)
            #expect(openedElsewhere?.code == .keyUnavailable, "sealed under the wiped key")
        }
    }

    @Test("a wiped key leaves no copy in the database file or its log")
    func shredding() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        let store = StateKeyStore(state: try CustodyDatabase(path: path))
        let marker = [UInt8](repeating: 0x5C, count: 48)
        try await store.add(
            WrappedAccountKey(
                owner: owner, version: 1, created: Date(), nonce: [UInt8](repeating: 0x3E, count: 24),
                ciphertext: marker))
        try await store.add(wrapped(other, 1))
        func filesContainMarker() -> Bool {
            [path, path + "-wal"].contains { file in
                guard let bytes = FileManager.default.contents(atPath: file) else { return false }
                return [UInt8](bytes).contains(subsequence: marker)
            }
        }
        #expect(filesContainMarker(), "the key is on disk before the wipe (else this test proves nothing)")
        try await store.removeKeys(for: owner)
        #expect(!filesContainMarker())
        #expect(try await store.keys(for: other).count == 1)
    }
}

extension Array where Element == UInt8 {
    func contains(subsequence: [UInt8]) -> Bool {
        guard !subsequence.isEmpty, subsequence.count <= count else { return false }
        return (0...(count - subsequence.count)).contains {
            self[$0..<$0 + subsequence.count].elementsEqual(subsequence)
        }
    }
}

/// A real key store whose every read and write fails with `failure` while it is set (a state
/// out of reach, a disk error); `base` is the store itself, for another process's writes.
final class FailingKeyStore: AccountKeyStore, Sendable {
    let base: any AccountKeyStore
    let failure = Mutex<ProtectionError.Code?>(nil)

    init(_ base: any AccountKeyStore) {
        self.base = base
    }

    private func check() throws(ProtectionError) {
        if let code = failure.withLock({ $0 }) { throw ProtectionError(code, "the store cannot be read (test)") }
    }

    var isReadOnly: Bool { base.isReadOnly }
    func keys(for owner: OwnerIdentifier) async throws(ProtectionError) -> [WrappedAccountKey] {
        try check()
        return try await base.keys(for: owner)
    }
    func add(_ key: WrappedAccountKey) async throws(ProtectionError) {
        try check()
        try await base.add(key)
    }
    func removeKeys(for owner: OwnerIdentifier) async throws(ProtectionError) -> Int {
        try check()
        return try await base.removeKeys(for: owner)
    }
    func owners() async throws(ProtectionError) -> [OwnerIdentifier] {
        try check()
        return try await base.owners()
    }
    func masterKeyRecord() async throws(ProtectionError) -> MasterKeyRecord? {
        try check()
        return try await base.masterKeyRecord()
    }
    func saveMasterKeyRecord(_ record: MasterKeyRecord) async throws(ProtectionError) {
        try check()
        try await base.saveMasterKeyRecord(record)
    }
    func changeToken() throws(ProtectionError) -> UInt64? {
        try check()
        return try base.changeToken()
    }
}
