@testable import Custody
import CustodyPolicy
import CustodyProtection
import CustodyStore
import CustodyTestSupport
import Foundation
import Synchronization
import Testing
import X509

/// A clock a test moves.
final class TestClock: Sendable {
    private let date: Mutex<Date>
    init(_ date: Date) { self.date = Mutex(date) }
    var now: Date { date.withLock { $0 } }
    func set(_ newDate: Date) { date.withLock { $0 = newDate } }
}

@Suite("Secrets providers", .timeLimit(.minutes(1)))
struct SecretsTests {
    let a0 = TestBundle.account("A", 0)
    let a1 = TestBundle.account("A", 1)
    static let t0 = Date(timeIntervalSince1970: 1_790_000_000)
    static let day: TimeInterval = 86_400

    struct Fixture {
        let directory: TemporaryDirectory
        let manager: PolicyManager
        let secrets: SecretsProvider
        let database: CustodyDatabase
        let clock: TestClock
        let logs: LogCapture
    }

    func fixture() async throws -> Fixture {
        let directory = try TemporaryDirectory()
        let database = try CustodyDatabase(path: directory.file("state.sqlite"))
        try await database.setAuditEnabled(true)
        let ring = try await KeyRing(
            store: StateKeyStore(state: database), masterKey: .keyFile(path: directory.file("master.key")))
        let clock = TestClock(Self.t0)
        let logs = LogCapture()
        let manager = await PolicyManager(
            context: EvaluationContext(platform: .ios), database: database, keyRing: ring, logger: logs.logger(),
            now: { clock.now })
        await manager.apply(try TestBundle().bundle(), source: "test")
        return Fixture(
            directory: directory, manager: manager, secrets: try #require(manager.secrets), database: database,
            clock: clock, logs: logs)
    }

    @Test("passwords per account and app-wide: the account's own wins, the account in effect is used, misses are typed")
    func passwords() async throws {
        let f = try await fixture()
        try await f.secrets.storePassword("app-wide-pw", identifier: "vpn", for: nil)
        try await f.secrets.storePassword("a0-pw", identifier: "vpn", for: a0)
        try await f.secrets.storePassword("only-a0", identifier: "mail", for: a0)

        #expect(try await f.secrets.password(withIdentifier: "vpn", account: .account(a0)) == "a0-pw")
        #expect(try await f.secrets.password(withIdentifier: "vpn", account: .account(a1)) == "app-wide-pw")
        #expect(try await f.secrets.password(withIdentifier: "vpn", account: .unmanaged) == "app-wide-pw")
        #expect(try await withAccount(a0) { try await f.secrets.password(withIdentifier: "mail") } == "only-a0")
        // The UPN and the OID of one tenant account are one owner.
        #expect(
            try await f.secrets.password(withIdentifier: "mail", account: .account(AccountID(upn: "a0@contoso.com")!))
                == "only-a0")

        await #expect(throws: SecretError(.notFound, identifier: "mail", "no such secret for \(a1) or app-wide")) {
            try await f.secrets.password(withIdentifier: "mail", account: .account(a1))
        }
        try await f.secrets.storeCertificate(
            Array(
                try TestCertificates.make(
                    .p256, commonName: "c", notBefore: Self.t0 - Self.day, notAfter: Self.t0 + Self.day
                ).certificatePEM.utf8),
            identifier: "cert", for: nil)
        await #expect { try await f.secrets.password(withIdentifier: "cert") } throws: {
            ($0 as? SecretError)?.code == .wrongKind
        }
        await #expect(throws: SecretError.self) { try await f.secrets.storePassword("x", identifier: "", for: nil) }
        await #expect(throws: SecretError.self) {
            try await f.secrets.storePassword("x", identifier: "bad\nname", for: nil)
        }
        #expect(try await f.secrets.remove(identifier: "vpn", for: a0))
        #expect(try await f.secrets.password(withIdentifier: "vpn", account: .account(a0)) == "app-wide-pw")
    }

    @Test("certificates in PEM and DER: subject, issuer and validity; expired and not yet valid are typed errors")
    func certificates() async throws {
        let f = try await fixture()
        let made = try TestCertificates.make(
            .p384, commonName: "Contoso Root", notBefore: Self.t0 - Self.day, notAfter: Self.t0 + Self.day)
        let stored = try await f.secrets.storeCertificate(Array(made.certificatePEM.utf8), identifier: "root", for: a0)
        try await f.secrets.storeCertificate(made.certificateDER, identifier: "root-der", for: nil)
        #expect(stored.subject.contains("CN=Contoso Root"))

        let fetched = try await f.secrets.certificate(withIdentifier: "root", account: .account(a0))
        #expect(fetched.certificate == made.certificate)
        #expect(fetched.issuer == fetched.subject)
        #expect(fetched.notValidAfter == made.certificate.notValidAfter)
        #expect(try await f.secrets.certificate(withIdentifier: "root-der").derBytes == made.certificateDER)

        f.clock.set(Self.t0 + 2 * Self.day)
        await #expect { try await f.secrets.certificate(withIdentifier: "root", account: .account(a0)) } throws: {
            ($0 as? SecretError)?.code == .expired
        }
        f.clock.set(Self.t0 - 2 * Self.day)
        await #expect { try await f.secrets.certificate(withIdentifier: "root-der") } throws: {
            ($0 as? SecretError)?.code == .notYetValid
        }

        await #expect {
            try await f.secrets.storeCertificate(
                Array("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".utf8), identifier: "bad",
                for: nil)
        } throws: { ($0 as? SecretError)?.code == .invalid }
        await #expect {
            try await f.secrets.storeCertificate([0x30, 0x03, 0x02, 0x01, 0x01], identifier: "bad", for: nil)
        } throws: { ($0 as? SecretError)?.code == .invalid }
    }

    @Test(
        "identities with P-256, P-384, Ed25519 and RSA keys round-trip; a key of another certificate is refused",
        arguments: TestCertificates.Algorithm.allCases)
    func identities(_ algorithm: TestCertificates.Algorithm) async throws {
        let f = try await fixture()
        let made = try TestCertificates.make(
            algorithm, commonName: "Device \(algorithm)", notBefore: Self.t0 - Self.day, notAfter: Self.t0 + Self.day)
        try await f.secrets.storeIdentity(
            certificate: Array(made.certificatePEM.utf8), privateKey: Array(made.keyPEM.utf8), identifier: "device",
            for: a0)
        let identity = try await f.secrets.identity(withIdentifier: "device", account: .account(a0))
        #expect(identity.certificate.certificate == made.certificate)
        #expect(identity.privateKey.publicKey == made.certificate.publicKey)
        #expect(!identity.description.contains(made.keyPEM.split(separator: "\n")[1]))

        let other = try TestCertificates.make(
            algorithm, commonName: "Other", notBefore: Self.t0 - Self.day, notAfter: Self.t0 + Self.day)
        await #expect {
            try await f.secrets.storeIdentity(
                certificate: made.certificateDER, privateKey: Array(other.keyPEM.utf8), identifier: "mixed", for: a0)
        } throws: { ($0 as? SecretError)?.code == .invalid }
    }

    @Test("identifiers yield the current list, then each change, including a wipe")
    func identifiers() async throws {
        let f = try await fixture()
        try await f.secrets.storePassword("p", identifier: "shared", for: nil)
        var lists = f.secrets.identifiers(account: .account(a0)).makeAsyncIterator()
        #expect(await lists.next() == ["shared"])
        try await f.secrets.storePassword("p", identifier: "mine", for: a0)
        #expect(await lists.next() == ["mine", "shared"])
        try await f.secrets.storePassword("p", identifier: "theirs", for: a1)  // not a0's: no new list
        try await f.secrets.storePassword("p", identifier: "also-shared", for: nil)
        #expect(await lists.next() == ["also-shared", "mine", "shared"])
        try await f.manager.wipe(account: a0, reason: "signed out")
        #expect(await lists.next() == ["also-shared", "shared"])
    }

    @Test("a wiped account's secrets are unreadable, even when their sealed rows are put back; moved rows do not open")
    func wipedAndTampered() async throws {
        let f = try await fixture()
        try await f.secrets.storePassword("a0-secret-value", identifier: "vpn", for: a0)
        try await f.secrets.storePassword("a1-secret-value", identifier: "vpn", for: a1)
        let scope0 = f.manager.owner(of: a0).rawValue
        let scope1 = f.manager.owner(of: a1).rawValue
        let sealed = try #require(try await f.database.secret(scope: scope0, identifier: "vpn"))

        // A row moved to another identifier of the same account does not open.
        try await f.database.saveSecret(
            SealedSecret(scope: scope0, identifier: "moved", kind: "password", sealed: sealed.sealed, updated: Self.t0))
        await #expect { try await f.secrets.password(withIdentifier: "moved", account: .account(a0)) } throws: {
            ($0 as? SecretError)?.code == .unreadable
        }
        // Nor one moved to another account.
        try await f.database.saveSecret(
            SealedSecret(scope: scope1, identifier: "vpn", kind: "password", sealed: sealed.sealed, updated: Self.t0))
        await #expect { try await f.secrets.password(withIdentifier: "vpn", account: .account(a1)) } throws: {
            ($0 as? SecretError)?.code == .unreadable
        }
        // Nor a flipped byte.
        var flipped = sealed.sealed
        flipped[flipped.count - 3] ^= 1
        try await f.database.saveSecret(
            SealedSecret(scope: scope0, identifier: "flipped", kind: "password", sealed: flipped, updated: Self.t0))
        await #expect { try await f.secrets.password(withIdentifier: "flipped", account: .account(a0)) } throws: {
            ($0 as? SecretError)?.code == .unreadable
        }

        try await f.manager.wipe(account: a0)
        #expect(try await f.database.secrets(scope: scope0).isEmpty)
        await #expect { try await f.secrets.password(withIdentifier: "vpn", account: .account(a0)) } throws: {
            ($0 as? SecretError)?.code == .notFound
        }
        try await f.database.saveSecret(sealed)
        await #expect { try await f.secrets.password(withIdentifier: "vpn", account: .account(a0)) } throws: {
            ($0 as? SecretError)?.code == .unreadable
        }
    }

    @Test("secret values never reach logs, errors, the audit log or the database file in the clear")
    func neverDisclosed() async throws {
        let f = try await fixture()
        let password = "Hunter2-\(UUID().uuidString)"
        let made = try TestCertificates.make(
            .p256, commonName: "Leak check", notBefore: Self.t0 - Self.day, notAfter: Self.t0 + Self.day)
        let keyLine = String(made.keyPEM.split(separator: "\n")[1])
        try await f.secrets.storePassword(password, identifier: "vpn", for: a0)
        try await f.secrets.storeIdentity(
            certificate: made.certificateDER, privateKey: Array(made.keyPEM.utf8), identifier: "device", for: a0)
        _ = try await f.secrets.password(withIdentifier: "vpn", account: .account(a0))
        _ = try await f.secrets.identity(withIdentifier: "device", account: .account(a0))

        var errors: [String] = []
        for attempt in [
            { () async throws in _ = try await f.secrets.password(withIdentifier: "device", account: .account(self.a0))
            },
            { () async throws in _ = try await f.secrets.certificate(withIdentifier: "vpn", account: .account(self.a0))
            },
            { () async throws in
                try await f.secrets.storeIdentity(
                    certificate: made.certificateDER, privateKey: Array(made.keyPEM.utf8.dropLast(30)), identifier: "x",
                    for: nil)
            },
            { () async throws in try await f.secrets.storePassword(password, identifier: "", for: nil) },
        ] {
            do { try await attempt() } catch { errors.append("\(error)") }
        }
        #expect(errors.count == 4)
        try await f.manager.wipe(account: a0, reason: "test")

        let logged = f.logs.records.map { "\($0.message) \($0.metadata)" }
        let audited = try await f.database.auditEntries().map { "\($0)" }
        for text in errors + logged + audited {
            #expect(!text.contains(password) && !text.contains(keyLine), "disclosed in: \(text)")
        }
        #expect(!logged.isEmpty && !audited.isEmpty, "the check must have something to look at")
        // At rest: the database and its log hold only sealed bytes.
        for file in ["state.sqlite", "state.sqlite-wal"] {
            let bytes = (try? Data(contentsOf: URL(fileURLWithPath: f.directory.file(file)))) ?? Data()
            #expect(bytes.range(of: Data(password.utf8)) == nil, "\(file) holds the password")
        }
    }
}
