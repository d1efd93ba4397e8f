public import CustodyPolicy
public import CustodyProtection
public import CustodyStore
public import Foundation
public import Logging

/// Passwords, certificates and identities handed to the app by its administrators, per account
/// or app-wide: Apple ManagedApp's `ManagedAppPasswordsProvider`, `ManagedAppCertificatesProvider`
/// and `ManagedAppIdentitiesProvider`.
///
/// Secrets are sealed at rest with the protection layer (an encrypted envelope under the
/// account's key, or under an app-wide key for app-wide secrets) in the state database. The
/// sealed bytes also carry the secret's kind, identifier and scope, so a row moved to another
/// identifier or account does not open. A wiped account's secrets are deleted with its keys.
///
/// Lookups read the store each time: nothing is cached beyond the call, and the plaintext
/// buffers a lookup uses are zeroed before it returns (a `String` password cannot be; callers
/// that can take bytes should use `withPassword`).
///
/// Which secrets an account sees: its own, then the app-wide ones; its own win. The account is
/// the one in effect (as `PolicyManager.account(_:)` resolves it) unless a call names one.
public final class SecretsProvider: Sendable {
    /// What a secret is.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case password
        case certificate
        case identity
    }

    /// A stored secret as a list shows it: never its value.
    public struct Summary: Sendable, Hashable {
        public let identifier: String
        public let kind: Kind
        /// The account it belongs to; nil for an app-wide secret.
        public let owner: OwnerIdentifier?
        public let updated: Date
    }

    /// The owner app-wide secrets are sealed for. `.invalid` is reserved (RFC 2606), so no
    /// real account can ever have it, and no account's wipe touches it.
    public static let appWideOwner = AccountID(upn: "app-secrets@custody.invalid")!

    /// The longest identifier accepted, in bytes.
    public static let maximumIdentifierLength = 256

    public let database: any StateStore
    private let protector: DataProtector
    let journal: EventJournal
    var hub: EventHub<PolicyEvent> { journal.hub }
    private let resolveAccount: @Sendable (AccountScope?) -> AccountID?
    private let ownerOf: @Sendable (AccountID) -> OwnerIdentifier
    private let clock: @Sendable () -> Date
    private let logger: Logger

    /// A provider on its own (a `PolicyManager` with a database and a key ring has one, as
    /// `secrets`, which follows the policy in force and the process default account).
    /// Accounts are those `withAccount` sets, or the ones calls name.
    /// - Parameter policy: its tenant files an account's secrets under the tenant's OID for it,
    ///   as a manager does, so every form of the account finds them.
    public convenience init(
        database: any StateStore, keyRing: KeyRing, policy: PolicySnapshot? = nil,
        logger: Logger = Logger(label: "custody.secrets"),
        now: @escaping @Sendable () -> Date = Date.init
    ) async {
        self.init(
            database: database, keyRing: keyRing,
            journal: await EventJournal(database: database, clock: now, logger: logger),
            logger: logger, now: now,
            resolveAccount: { ($0 ?? AccountScope.current)?.account },
            ownerOf: { OwnerIdentifier($0, policy: policy) })
    }

    init(
        database: any StateStore, keyRing: KeyRing, journal: EventJournal, logger: Logger,
        now: @escaping @Sendable () -> Date,
        resolveAccount: @escaping @Sendable (AccountScope?) -> AccountID?,
        ownerOf: @escaping @Sendable (AccountID) -> OwnerIdentifier
    ) {
        self.database = database
        self.protector = DataProtector(keyRing: keyRing)
        self.journal = journal
        self.logger = logger
        self.clock = now
        self.resolveAccount = resolveAccount
        self.ownerOf = ownerOf
    }

    // MARK: Storing

    /// Stores (or replaces) a password for `account` (nil: app-wide).
    public func storePassword(_ password: String, identifier: String, for account: AccountID?) async throws(SecretError)
    {
        var bytes = Array(password.utf8)
        defer { SecureMemory.zero(&bytes) }
        guard !bytes.isEmpty else { throw SecretError(.invalid, identifier: identifier, "the password is empty") }
        try await store(kind: .password, identifier: identifier, account: account, body: bytes)
    }

    /// Stores (or replaces) a certificate (PEM or DER) for `account` (nil: app-wide).
    @discardableResult
    public func storeCertificate(_ certificate: [UInt8], identifier: String, for account: AccountID?)
        async throws(SecretError) -> ManagedCertificate
    {
        let parsed: ManagedCertificate
        do {
            parsed = try ManagedCertificate(bytes: certificate)
        } catch {
            throw SecretError(.invalid, identifier: identifier, error.message)
        }
        try await store(kind: .certificate, identifier: identifier, account: account, body: parsed.derBytes)
        return parsed
    }

    /// Stores (or replaces) an identity: a certificate (PEM or DER) and its PEM private key,
    /// for `account` (nil: app-wide).
    @discardableResult
    public func storeIdentity(
        certificate: [UInt8], privateKey: [UInt8], identifier: String, for account: AccountID?
    ) async throws(SecretError) -> ManagedIdentity {
        let parsed: ManagedIdentity
        do {
            parsed = try ManagedIdentity(certificate: certificate, privateKey: privateKey)
        } catch {
            throw SecretError(.invalid, identifier: identifier, error.message)
        }
        var body = Self.identityBody(certificate: parsed.certificate.derBytes, privateKey: privateKey)
        defer { SecureMemory.zero(&body) }
        try await store(kind: .identity, identifier: identifier, account: account, body: body)
        return parsed
    }

    /// Removes a secret of `account` (nil: app-wide); returns whether there was one.
    @discardableResult
    public func remove(identifier: String, for account: AccountID?) async throws(SecretError) -> Bool {
        let scope = scope(of: account)
        let removed: Bool
        do {
            removed = try await database.removeSecret(scope: scope, identifier: identifier)
        } catch {
            throw SecretError(.storage, identifier: identifier, "\(error)")
        }
        if removed {
            await audit("remove", identifier: identifier, scope: scope)
            try await announce(account)
        }
        return removed
    }

    /// The secrets stored for `account` (nil: the app-wide ones), by identifier.
    public func list(for account: AccountID?) async throws(SecretError) -> [Summary] {
        do {
            return try await database.secrets(scope: scope(of: account)).map { secret in
                Summary(
                    identifier: secret.identifier, kind: Kind(rawValue: secret.kind) ?? .password,
                    owner: secret.scope.isEmpty ? nil : OwnerIdentifier(rawValue: secret.scope), updated: secret.updated
                )
            }
        } catch {
            throw SecretError(.storage, identifier: "*", "\(error)")
        }
    }

    // MARK: Looking up

    /// The password `identifier` of the account in effect (or app-wide).
    public func password(withIdentifier identifier: String, account scope: AccountScope? = nil)
        async throws(SecretError) -> String
    {
        try await withPassword(identifier: identifier, account: scope) { String(decoding: $0, as: UTF8.self) }
    }

    /// Calls `body` with the password's UTF-8 bytes, zeroed when `body` returns.
    public func withPassword<Value>(
        identifier: String, account scope: AccountScope? = nil,
        _ body: (UnsafeRawBufferPointer) throws(SecretError) -> Value
    ) async throws(SecretError) -> Value {
        var plaintext = try await open(kind: .password, identifier: identifier, scope: scope)
        defer { SecureMemory.zero(&plaintext) }
        let result = plaintext.withUnsafeBytes { bytes in Result { () throws(SecretError) in try body(bytes) } }
        return try result.get()
    }

    /// The certificate `identifier` of the account in effect (or app-wide).
    /// - Throws: `.expired` or `.notYetValid` outside its validity period.
    public func certificate(withIdentifier identifier: String, account scope: AccountScope? = nil)
        async throws(SecretError) -> ManagedCertificate
    {
        let der = try await open(kind: .certificate, identifier: identifier, scope: scope)
        let certificate: ManagedCertificate
        do {
            certificate = try ManagedCertificate(bytes: der)
        } catch {
            throw SecretError(
                .unreadable, identifier: identifier, "the stored certificate does not parse: \(error.message)")
        }
        try checkValidity(certificate, identifier: identifier)
        return certificate
    }

    /// The identity `identifier` of the account in effect (or app-wide).
    /// - Throws: `.expired` or `.notYetValid` outside its certificate's validity period.
    public func identity(withIdentifier identifier: String, account scope: AccountScope? = nil)
        async throws(SecretError) -> ManagedIdentity
    {
        var body = try await open(kind: .identity, identifier: identifier, scope: scope)
        defer { SecureMemory.zero(&body) }
        guard var (certificate, key) = Self.identityParts(body) else {
            throw SecretError(.unreadable, identifier: identifier, "the stored identity is damaged")
        }
        defer { SecureMemory.zero(&key) }
        let identity: ManagedIdentity
        do {
            identity = try ManagedIdentity(certificate: certificate, privateKey: key)
        } catch {
            throw SecretError(
                .unreadable, identifier: identifier, "the stored identity does not parse: \(error.message)")
        }
        certificate = []
        try checkValidity(identity.certificate, identifier: identifier)
        return identity
    }

    /// The identifiers the account in effect sees (its own and the app-wide ones, sorted) now,
    /// then after every change made through this provider (or its manager, including wipes).
    public func identifiers(account scope: AccountScope? = nil) -> AsyncStream<[String]> {
        let account = resolveAccount(scope)
        let owner = account.map(ownerOf)
        // The first event stands for "now".
        let events = hub.subscribe { [.secretsChanged(account: account, identifiers: [])] }
        let (stream, continuation) = AsyncStream.makeStream(of: [String].self)
        let task = Task { [self] in
            var last: [String]?
            for await event in events {
                guard case .secretsChanged(let changed, _) = event, changed == nil || changed.map(ownerOf) == owner
                else { continue }
                let visible = await (try? visibleIdentifiers(owner: owner)) ?? []
                if visible == last { continue }
                last = visible
                continuation.yield(visible)
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    // MARK: Internals

    private func scope(of account: AccountID?) -> String { account.map(ownerOf)?.rawValue ?? "" }

    private func visibleIdentifiers(owner: OwnerIdentifier?) async throws(StoreError) -> [String] {
        var identifiers = Set(try await database.secrets(scope: "").map(\.identifier))
        if let owner { identifiers.formUnion(try await database.secrets(scope: owner.rawValue).map(\.identifier)) }
        return identifiers.sorted()
    }

    /// Tells subscribers what `account` (nil: app-wide) holds now.
    func announce(_ account: AccountID?) async throws(SecretError) {
        let identifiers: [String]
        do {
            identifiers = try await database.secrets(scope: scope(of: account)).map(\.identifier)
        } catch {
            throw SecretError(.storage, identifier: "*", "\(error)")
        }
        await journal.publish([.secretsChanged(account: account, identifiers: identifiers)])
    }

    private func store(kind: Kind, identifier: String, account: AccountID?, body: [UInt8]) async throws(SecretError) {
        try Self.validate(identifier)
        let scope = scope(of: account)
        let sealingOwner = account.map { ownerOf($0).account } ?? Self.appWideOwner
        var payload = Self.frame(kind: kind, identifier: identifier, scope: scope) + body
        defer { SecureMemory.zero(&payload) }
        do {
            let sealed = try await protector.protect(payload, owner: sealingOwner, encrypt: true)
            try await database.saveSecret(
                SealedSecret(
                    scope: scope, identifier: identifier, kind: kind.rawValue, sealed: sealed, updated: clock()))
        } catch {
            throw SecretError(.storage, identifier: identifier, "cannot seal and store it: \(error)")
        }
        logger.info(
            "secret stored",
            metadata: [
                "identifier": "\(identifier)", "kind": "\(kind.rawValue)", "scope": "\(scope.isEmpty ? "app" : scope)",
            ])
        await audit("store \(kind.rawValue)", identifier: identifier, scope: scope)
        try await announce(account)
    }

    /// The plaintext body of a secret the account in effect sees; the caller zeroes it.
    private func open(kind: Kind, identifier: String, scope requested: AccountScope?) async throws(SecretError)
        -> [UInt8]
    {
        let account = resolveAccount(requested)
        var scopes = [""]
        if let account { scopes.insert(ownerOf(account).rawValue, at: 0) }
        var found: SealedSecret?
        do {
            for scope in scopes {
                if let secret = try await database.secret(scope: scope, identifier: identifier) {
                    found = secret
                    break
                }
            }
        } catch {
            throw SecretError(.storage, identifier: identifier, "\(error)")
        }
        guard let secret = found else {
            throw SecretError(
                .notFound, identifier: identifier,
                "no such secret for \(account.map { "\($0)" } ?? "the app") or app-wide")
        }
        guard secret.kind == kind.rawValue else {
            throw SecretError(.wrongKind, identifier: identifier, "it holds a \(secret.kind), not a \(kind.rawValue)")
        }
        let expectedOwner =
            secret.scope.isEmpty ? OwnerIdentifier(Self.appWideOwner) : OwnerIdentifier(rawValue: secret.scope)
        guard let info = try? DataProtector.protectionInfo(secret.sealed), info.isEncrypted, info.owner == expectedOwner
        else {
            throw SecretError(.unreadable, identifier: identifier, "the stored secret is not sealed for its owner")
        }
        var plaintext: [UInt8]
        do {
            plaintext = try await protector.unprotect(secret.sealed)
        } catch {
            throw SecretError(
                .unreadable, identifier: identifier,
                "the sealed secret does not open (\(error.code)): its account may have been wiped")
        }
        let frame = Self.frame(kind: kind, identifier: identifier, scope: secret.scope)
        guard plaintext.count >= frame.count, plaintext.starts(with: frame) else {
            SecureMemory.zero(&plaintext)
            throw SecretError(
                .unreadable, identifier: identifier, "the sealed secret belongs to another identifier or account")
        }
        let body = Array(plaintext[frame.count...])
        SecureMemory.zero(&plaintext)
        return body
    }

    /// Records a change (never a value) when auditing is on; a failure to audit is logged.
    private func audit(_ action: String, identifier: String, scope: String) async {
        do {
            try await database.audit(
                .secret, account: scope.isEmpty ? nil : scope, action: action, detail: identifier, at: clock())
        } catch {
            logger.error(
                "cannot audit a secret change", metadata: ["identifier": "\(identifier)", "error": "\(error)"])
        }
    }

    private func checkValidity(_ certificate: ManagedCertificate, identifier: String) throws(SecretError) {
        let now = clock()
        if now > certificate.notValidAfter {
            throw SecretError(
                .expired, identifier: identifier,
                "the certificate \(certificate.subject) expired at \(certificate.notValidAfter)")
        }
        if now < certificate.notValidBefore {
            throw SecretError(
                .notYetValid, identifier: identifier,
                "the certificate \(certificate.subject) is valid from \(certificate.notValidBefore)")
        }
    }

    static func validate(_ identifier: String) throws(SecretError) {
        guard !identifier.isEmpty, identifier.utf8.count <= maximumIdentifierLength,
            !identifier.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else {
            throw SecretError(
                .invalid, identifier: identifier,
                "an identifier is 1 to \(maximumIdentifierLength) bytes without control characters")
        }
    }

    /// What the sealed bytes start with: binds them to their kind, identifier and scope.
    private static func frame(kind: Kind, identifier: String, scope: String) -> [UInt8] {
        Array("custody-secret/1\0\(kind.rawValue)\0\(identifier)\0\(scope)\0".utf8)
    }

    /// An identity's body: the certificate's DER length (4 bytes, big-endian), the DER, the PEM key.
    private static func identityBody(certificate: [UInt8], privateKey: [UInt8]) -> [UInt8] {
        let count = UInt32(certificate.count)
        return [UInt8(count >> 24), UInt8((count >> 16) & 0xFF), UInt8((count >> 8) & 0xFF), UInt8(count & 0xFF)]
            + certificate + privateKey
    }

    private static func identityParts(_ body: [UInt8]) -> (certificate: [UInt8], privateKey: [UInt8])? {
        guard body.count > 4 else { return nil }
        let count = Int(body[0]) << 24 | Int(body[1]) << 16 | Int(body[2]) << 8 | Int(body[3])
        guard count > 0, body.count > 4 + count else { return nil }
        return (Array(body[4..<(4 + count)]), Array(body[(4 + count)...]))
    }
}
