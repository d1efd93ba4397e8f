import CustodyPolicy
import Foundation
import Testing

@testable import CustodyProtection

/// The shortcuts a small buffer's protect and unprotect take (issue 28) decide exactly what the
/// long way decides: an identifier compared on its bytes, the key ring's last keys, the coarse
/// clock's deadlines.
@Suite("Fast paths")
struct FastPathTests {
    @Test(
        "an identifier names an account on the bytes exactly when it equals the identifier built for it",
        arguments: [
            // (oid, upn, identifier)
            ("0d000000-0000-4000-8000-000000000001", nil, "oid:0d000000-0000-4000-8000-000000000001"),
            ("0D000000-0000-4000-8000-00000000000A", nil, "oid:0d000000-0000-4000-8000-00000000000a"),
            ("0d000000-0000-4000-8000-000000000001", "alice@contoso.com", "oid:0d000000-0000-4000-8000-000000000001"),
            // The OID is the identifier when there is one, never the UPN.
            ("0d000000-0000-4000-8000-000000000001", "alice@contoso.com", "upn:alice@contoso.com"),
            (nil, "Alice@Contoso.COM", "upn:alice@contoso.com"),
            (nil, "alice@contoso.com", "oid:alice@contoso.com"),
            (nil, "alice@contoso.com", "upn:alice@contoso.co"),
            (nil, "alice@contoso.com", "upn:alice@contoso.comm"),
            (nil, "alice@contoso.com", "upn:alicf@contoso.com"),
            (nil, "bob@contoso.com", "upn:bob@contoso.org"),
            (nil, "[bob]@contoso.com", "upn:{bob}@contoso.com"),
            // Not ASCII: lower-casing can change the length; built and compared.
            (nil, "ÉMILE@contoso.com", "upn:émile@contoso.com"),
            (nil, "Émile@contoso.com", "upn:emile@contoso.com"),
            (nil, "İ@contoso.com", "upn:i̇@contoso.com"),
            (nil, "ǅ@contoso.com", "upn:ǆ@contoso.com"),
            (nil, "ß@contoso.com", "upn:ß@contoso.com"),
            (nil, "AB@contoso.com\u{301}", "upn:ab@contoso.com\u{301}"),
        ] as [(String?, String?, String)])
    func namesAgreesWithBuilding(oid: String?, upn: String?, identifier: String) throws {
        let account = try #require(AccountID(oid: oid, upn: upn))
        let owner = try #require(OwnerIdentifier(rawValue: identifier))
        #expect(owner.names(account) == (OwnerIdentifier(account) == owner))
        #expect(OwnerIdentifier(account).names(account), "the identifier built for an account names it")
    }

    @Test(
        "a header names its own owner whatever owner the reader expected",
        arguments: [nil, "oid:0d000000-0000-4000-8000-000000000001", "oid:0d000000-0000-4000-8000-000000000002"])
    func headerOwnerIsTheHeaders(expected: String?) async throws {
        let state = try await TestState()
        let protector = state.protector()
        let envelope = try await protector.protect(pattern(64), owner: alice, encrypt: true)
        let known = expected.flatMap(OwnerIdentifier.init(rawValue:))
        let fields = try envelope.withUnsafeBytes { try EnvelopeHeader.read($0, knownOwner: known) }
        #expect(fields?.owner == OwnerIdentifier(alice))
        #expect(fields?.owner.rawValue == "oid:0d000000-0000-4000-8000-000000000001")
    }

    @Test(
        "identifiers are one owner exactly when their bytes are equal, as every key store tells them apart",
        arguments: [
            ("upn:\u{E9}mile@fabrikam.com", "upn:e\u{301}mile@fabrikam.com"),
            ("upn:\u{1E69}@fabrikam.com", "upn:s\u{323}\u{307}@fabrikam.com"),
            ("upn:\u{212B}@fabrikam.com", "upn:\u{E5}@fabrikam.com"),
            ("oid:0d000000-0000-4000-8000-000000000001", "oid:0d000000-0000-4000-8000-000000000001"),
            ("upn:alice@contoso.com", "oid:alice@contoso.com"),
        ])
    func identifiersCompareBytes(first: String, second: String) throws {
        let one = try #require(OwnerIdentifier(rawValue: first))
        let other = try #require(OwnerIdentifier(rawValue: second))
        let sameBytes = Array(one.rawValue.utf8) == Array(other.rawValue.utf8)
        #expect((one == other) == sameBytes)
        #expect(Set([one, other]).count == (sameBytes ? 1 : 2))
        if sameBytes { #expect(one.hashValue == other.hashValue) }
    }

    @Test(
        "two spellings of one name are two owners in memory as in the store: each opens with its own key, a wipe of one leaves the other",
        arguments: [true, false])
    func spellingsAreOwners(composedFirst: Bool) async throws {
        let state = try await TestState()
        let protector = state.protector()
        let composed = try #require(AccountID(upn: "\u{E9}mile@fabrikam.com"))
        let decomposed = try #require(AccountID(upn: "e\u{301}mile@fabrikam.com"))
        let (first, second) = composedFirst ? (composed, decomposed) : (decomposed, composed)
        let firstEnvelope = try await protector.protect(pattern(50), owner: first, encrypt: true)
        let secondEnvelope = try await protector.protect(pattern(51), owner: second, encrypt: true)
        #expect(try protector.protectionInfo(firstEnvelope)?.owner == OwnerIdentifier(first))
        #expect(try protector.protectionInfo(secondEnvelope)?.owner == OwnerIdentifier(second))
        #expect(try await protector.unprotect(firstEnvelope) == pattern(50))
        #expect(try await protector.unprotect(secondEnvelope) == pattern(51))
        #expect(try await Set(state.keyRing.store.owners()).count == 2)
        // A process that starts afresh agrees with the one that sealed.
        let reopened = DataProtector(
            keyRing: try await KeyRing(
                store: FileKeyStore(directory: state.directory + "/state"), masterKey: .keyFile(path: state.keyFile)))
        #expect(try await reopened.unprotect(secondEnvelope) == pattern(51))
        try await state.keyRing.wipe(OwnerIdentifier(first))
        #expect(await protectionError { _ = try await protector.unprotect(firstEnvelope) }?.code == .keyUnavailable)
        #expect(try await protector.unprotect(secondEnvelope) == pattern(51))
    }

    @Test(
        "simultaneous first seals for a new account share one key, in one process and across two",
        arguments: [1, 2])
    func simultaneousFirstSeals(rings: Int) async throws {
        let state = try await TestState()
        var protectors = [state.protector()]
        for _ in 1..<rings {
            protectors.append(
                DataProtector(
                    keyRing: try await KeyRing(
                        store: FileKeyStore(directory: state.directory + "/state"),
                        masterKey: .keyFile(path: state.keyFile))))
        }
        let accounts = (0..<3).map { AccountID(upn: "first\($0)@fabrikam.com")! }
        let envelopes = Locked<[(AccountID, Result<[UInt8], ProtectionError>)]>([])
        for account in accounts {
            // Eight tasks, started together, each sealing the account's first envelope.
            await withTaskGroup { group in
                for index in 0..<8 {
                    group.addTask { [protectors] in
                        let sealed: Result<[UInt8], ProtectionError>
                        do throws(ProtectionError) {
                            sealed = .success(
                                try await protectors[index % rings].protect(pattern(30), owner: account, encrypt: true))
                        } catch {
                            sealed = .failure(error)
                        }
                        envelopes.withLock { $0.append((account, sealed)) }
                    }
                }
            }
        }
        #expect(envelopes.withLock { $0.count } == 3 * 8)
        for (account, sealed) in envelopes.withLock({ $0 }) {
            let envelope = try sealed.get()
            #expect(try protectors[0].protectionInfo(envelope)?.keyVersion == 1, "\(account)")
            #expect(try await protectors[0].unprotect(envelope) == pattern(30))
        }
        for account in accounts {
            #expect(try await state.keyRing.versions(of: OwnerIdentifier(account)) == [1], "\(account)")
        }
    }

    enum Change: String, CaseIterable {
        case wipe, forget, forgetAll, rotate
    }

    @Test(
        "the key sealed and opened with last is dropped with its owner's keys, and never stands for another owner",
        arguments: Change.allCases)
    func lastKeysFollowTheRing(change: Change) async throws {
        let state = try await TestState()
        let protector = state.protector()
        // Alternate owners so that the last key is each one's in turn.
        let first = try await protector.protect(pattern(40), owner: alice, encrypt: true)
        let other = try await protector.protect(pattern(41), owner: bob, encrypt: true)
        #expect(try await protector.unprotect(first) == pattern(40))
        #expect(try await protector.unprotect(other) == pattern(41))
        #expect(try await protector.unprotect(first) == pattern(40))
        #expect(try protector.protectionInfo(other)?.owner == OwnerIdentifier(bob))

        let owner = OwnerIdentifier(alice)
        switch change {
        case .wipe: try await state.keyRing.wipe(owner)
        case .forget: state.keyRing.forget([owner])
        case .forgetAll: state.keyRing.forgetAll()
        case .rotate: try await state.keyRing.rotate(owner)
        }
        let opened = await protectionError { _ = try await protector.unprotect(first) }
        #expect(opened?.code == (change == .wipe ? .keyUnavailable : nil), "\(String(describing: opened))")
        let next = try await protector.protect(pattern(42), owner: alice, encrypt: true)
        let version = try #require(try protector.protectionInfo(next)?.keyVersion)
        #expect(version == (change == .rotate ? 2 : 1))
        #expect(try await state.keyRing.versions(of: owner).last == version, "sealed with the key the store has now")
        #expect(try await protector.unprotect(next) == pattern(42))
        #expect(try await protector.unprotect(other) == pattern(41), "bob's key is untouched")
        if change == .wipe {
            #expect(
                await protectionError { _ = try await protector.unprotect(first) }?.code == .decryptFailed,
                "a new key 1")
        }
    }

    @Test(
        "a coarse deadline is never later than asked, and never before the time it was asked from",
        arguments: [
            Duration.zero, .nanoseconds(1), .milliseconds(1), .milliseconds(50), .seconds(1), .seconds(-1),
            .seconds(Int64.max),
        ])
    func coarseDeadlines(interval: Duration) {
        let now = CoarseClock.now()
        let deadline = CoarseClock.deadline(after: interval, from: now)
        #expect(deadline >= now)
        let (seconds, attoseconds) = interval.components
        if interval <= .zero {
            #expect(deadline == now)
        } else if seconds < Int64(UInt64.max / 2_000_000_000) {
            let asked = UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
            #expect(deadline <= now + asked)
        } else {
            #expect(deadline > now + 1_000_000_000 * 3_600 * 24 * 365)
        }
        #expect(CoarseClock.now() >= now, "monotonic")
    }
}
