public import CustodyPolicy
public import CustodyProtection
import CustodyStore
import Foundation

/// How `CustodyEngine.protect` treats the data's owner.
public enum ProtectionMode: Sendable, Hashable {
    /// As the owner's policy in force says: encrypted unless it says encryption is not
    /// required. An owner the policy in force does not know is an error.
    case policy
    /// Tag only, for data of an account the policy in force does not manage (the Intune
    /// behaviour for unmanaged accounts). Refused for an account whose policy requires
    /// encryption.
    case unmanaged
    /// Encrypted whatever the policy says. An owner the policy does not know gets keys of its
    /// own, recorded in the state so that a wipe finds them.
    case forceEncryption
}

/// What `protect` did, or will do, for an owner.
public struct ProtectionPlan: Sendable, Hashable {
    /// The identifier the envelope records (and the keys are kept under).
    public let owner: OwnerIdentifier
    /// Whether the payload is encrypted (otherwise only tagged).
    public let encrypted: Bool
    /// Why, in words.
    public let reason: String
}

/// What `CustodyEngine.rewrap(file:)` found or did.
public enum RewrapResult: Sendable, Hashable {
    /// Re-sealed from the first key version to the second.
    case rewrapped(from: UInt32, to: UInt32)
    case alreadyNewest
    case notEncrypted
    case notProtected
}

extension CustodyEngine {
    // MARK: Protecting

    /// How data of `owner` would be protected in `mode` under the policy in force.
    /// - Throws: `CustodyError` `.noPolicy` with no policy in force; `.account` for an owner
    ///   whose forms contradict each other, or one the policy does not know in `.policy` mode;
    ///   `.refused` for `.unmanaged` data of an account whose policy requires encryption.
    public func protectionPlan(owner: AccountID, mode: ProtectionMode = .policy, context: EvaluationContext? = nil)
        throws(CustodyError) -> ProtectionPlan
    {
        try plan(owner: owner, mode: mode, context: context).plan
    }

    /// The plan, the account to seal for, and the account to record as holding keys.
    private func plan(
        owner: AccountID, mode: ProtectionMode, context: EvaluationContext? = nil
    ) throws(CustodyError) -> (plan: ProtectionPlan, sealFor: AccountID, holder: ResolvedAccount?) {
        let snapshot = try policyAndRevision(for: context).snapshot
        switch snapshot.resolveAccount(owner) {
        case .contradictory(let why):
            let message = "\(owner) is ambiguous: \(why)"
            throw CustodyError(
                .account, message, underlying: AccountError(code: .ambiguous, account: owner, message: message))
        case .tenant(let account):
            let identifier = OwnerIdentifier(account.id)
            let required = snapshot.encryptionRequired(account: account.id)
            // What a wipe will look under: the tenant's forms of the account (the state's older
            // aliases are recorded already).
            let holder = ResolvedAccount(
                id: account.id, owner: identifier,
                identifiers: [identifier] + ResolvedAccount.identifiers(of: account.id).filter { $0 != identifier },
                tenantAccount: account)
            switch mode {
            case .policy:
                return (
                    ProtectionPlan(owner: identifier, encrypted: required.isAllowed, reason: required.reason),
                    account.id, holder
                )
            case .unmanaged:
                guard !required.isAllowed else {
                    throw CustodyError(
                        .refused,
                        "\(owner) is managed by the policy in force, which requires its data to be encrypted (\(required.reason)); only data of accounts the policy does not manage may be tagged without encryption"
                    )
                }
                return (
                    ProtectionPlan(
                        owner: identifier, encrypted: false, reason: "tagged only, as asked: \(required.reason)"),
                    account.id, nil
                )
            case .forceEncryption:
                return (
                    ProtectionPlan(owner: identifier, encrypted: true, reason: "encryption forced"), account.id, holder
                )
            }
        case .unknown:
            let identifier = OwnerIdentifier(owner)
            let inForce = bundleInForce.map { "revision \(PolicyManager.shortRevision($0.revision))" } ?? ""
            switch mode {
            case .policy:
                let message =
                    "\(owner) is not an account of the policy in force (\(inForce)), so Custody cannot tell whether its data must be encrypted; protect it as unmanaged data (tagged only) or force encryption (a key of its own)"
                throw CustodyError(
                    .account, message, underlying: AccountError(code: .unknown, account: owner, message: message))
            case .unmanaged:
                return (
                    ProtectionPlan(
                        owner: identifier, encrypted: false,
                        reason: "\(owner) is not managed by the policy in force: tagged only"), owner, nil
                )
            case .forceEncryption:
                let holder = ResolvedAccount(
                    id: owner, owner: identifier, identifiers: [identifier], tenantAccount: nil)
                return (
                    ProtectionPlan(
                        owner: identifier, encrypted: true,
                        reason: "encryption forced; \(owner) is not in the policy in force"), owner, holder
                )
            }
        }
    }

    /// A protector over the key ring that seals exactly as a plan says (the engine decides,
    /// not the protector).
    private func protector(_ purpose: String) throws(CustodyError) -> DataProtector {
        DataProtector(keyRing: try requireKeyRing(purpose))
    }

    /// Records the owner in the state's registry before its keys are made.
    private func record(_ holder: ResolvedAccount?) async throws(CustodyError) {
        guard let holder else { return }
        try await CustodyError.fromState { try await manager.register(holder) }
    }

    /// Protects the data of `source` into `sink` for `owner`, as `mode` and the policy in
    /// force say (see `ProtectionMode`): data of an account the policy manages is never
    /// written unencrypted when its policy requires encryption. A file sink is replaced
    /// atomically. Returns what was done.
    @discardableResult
    public func protect(
        from source: DataProtector.Source, to sink: DataProtector.Sink, owner: AccountID,
        mode: ProtectionMode = .policy,
        progress: DataProtector.Progress? = nil
    ) async throws(CustodyError) -> ProtectionPlan {
        try CustodyError.mapping(otherwise: .protection) {
            try DataProtector.checkFiles(source: source, sink: sink, protecting: true)
        }
        let (plan, sealFor, holder) = try plan(owner: owner, mode: mode)
        let protector = try protector("protecting data needs the account keys it is sealed under")
        if plan.encrypted { try await record(holder) }
        try await CustodyError.mapping(otherwise: .protection) {
            try await protector.protect(
                checked: source, to: sink, owner: sealFor, encrypt: plan.encrypted, progress: progress)
        }
        return plan
    }

    /// Protects a buffer for `owner` (see `protect(from:to:owner:mode:progress:)`), under the
    /// policy in force resolved for `context` (nil: the engine's).
    public func protect(
        _ data: [UInt8], owner: AccountID, mode: ProtectionMode = .policy, context: EvaluationContext? = nil
    ) async throws(CustodyError) -> ProtectedBuffer {
        let (plan, sealFor, holder) = try plan(owner: owner, mode: mode, context: context)
        let protector = try protector("protecting data needs the account keys it is sealed under")
        if plan.encrypted { try await record(holder) }
        return try await CustodyError.mapping(otherwise: .protection) {
            ProtectedBuffer(
                envelope: try await protector.protect(data, owner: sealFor, encrypt: plan.encrypted), plan: plan)
        }
    }

    /// Protects the file at `path` in place for `owner` unless it already is protected for
    /// that owner (Intune's `verifyAndProtect`; see `protect(from:to:owner:mode:progress:)` for
    /// `mode`). Returns the plan, and why the file was left as it was when it was.
    public func verifyAndProtect(
        file path: String, owner: AccountID, mode: ProtectionMode = .policy, progress: DataProtector.Progress? = nil
    ) async throws(CustodyError) -> FileVerification {
        try CustodyError.mapping(otherwise: .protection) {
            try DataProtector.checkFiles(source: .file(path), sink: .file(path), protecting: true)
        }
        let (plan, sealFor, holder) = try plan(owner: owner, mode: mode)
        let protector = try protector("protecting data needs the account keys it is sealed under")
        return try await CustodyError.mapping(otherwise: .protection) {
            if let reason = try protector.alreadyProtected(file: path, for: sealFor, encrypt: plan.encrypted) {
                return FileVerification(plan: plan, skipped: reason)
            }
            if plan.encrypted { try await record(holder) }
            try await protector.protect(file: path, owner: sealFor, encrypt: plan.encrypted, progress: progress)
            return FileVerification(plan: plan, skipped: nil)
        }
    }

    /// Protects every file in `directory` and below it for `owner`, as `mode` and the policy in
    /// force say, and records `owner` as the directory's owner for files created in it later.
    /// Files already protected for `owner` are skipped; a file that fails is reported and left
    /// as it was. Returns the plan and the report.
    public func protect(
        directory: String, owner: AccountID, mode: ProtectionMode = .policy, progress: DataProtector.TreeProgress? = nil
    ) async throws(CustodyError) -> DirectoryProtection {
        let (plan, sealFor, holder) = try plan(owner: owner, mode: mode)
        let protector = try protector("protecting data needs the account keys it is sealed under")
        if plan.encrypted { try await record(holder) }
        return try await CustodyError.mapping(otherwise: .protection) {
            DirectoryProtection(
                plan: plan,
                report: try await protector.protect(
                    directory: directory, owner: sealFor, encrypt: plan.encrypted, progress: progress))
        }
    }

    // MARK: Unprotecting

    /// Writes the plaintext of the envelope in `source` to `sink`; a source that is not an
    /// envelope is an error, or with `passThrough` is copied to `sink` unchanged (in place: left
    /// as it is). A file sink appears only once every chunk authenticated.
    /// - Returns: whether the source was an envelope.
    /// - Throws: `CustodyError` `.protection`; for data whose owner was wiped, the message says
    ///   so and when.
    @discardableResult
    public func unprotect(
        from source: DataProtector.Source, to sink: DataProtector.Sink, passThrough: Bool = false,
        progress: DataProtector.Progress? = nil
    ) async throws(CustodyError) -> Bool {
        let protector = try protector("opening encrypted data needs the account keys it was sealed under")
        do {
            return try await protector.unprotect(from: source, to: sink, passThrough: passThrough, progress: progress)
        } catch {
            var owner: OwnerIdentifier?
            if case .file(let path) = source { owner = (try? DataProtector.protectionInfo(file: path))??.owner }
            throw await explained(error, owner: owner)
        }
    }

    /// Replaces every protected file in `directory` and below it with its plaintext and removes
    /// the directory's owner record. A file that fails (wiped keys: the message says when) is
    /// reported and left as it was.
    public func unprotect(directory: String, progress: DataProtector.TreeProgress? = nil) async throws(CustodyError)
        -> DirectoryReport
    {
        let protector = try protector("opening encrypted data needs the account keys it was sealed under")
        var report = try await CustodyError.mapping(otherwise: .protection) {
            try await protector.unprotect(directory: directory, progress: progress)
        }
        for index in report.failed.indices {
            let failure = report.failed[index]
            report.failed[index].message =
                await explained(failure.error, owner: (try? DataProtector.protectionInfo(file: failure.path))??.owner)
                .message
        }
        return report
    }

    /// The data inside an envelope. Bytes that are not an envelope come back unchanged
    /// (Intune's behaviour), or, with `requireEnvelope`, are an error.
    public func unprotect(_ envelope: [UInt8], requireEnvelope: Bool = false) async throws(CustodyError) -> [UInt8] {
        let protector = try protector("opening encrypted data needs the account keys it was sealed under")
        do throws(ProtectionError) {
            if requireEnvelope, try DataProtector.protectionInfo(envelope) == nil {
                throw ProtectionError(
                    .invalidArguments, "the data is not an envelope (no envelope header); nothing to unprotect")
            }
            return try await protector.unprotect(envelope)
        } catch {
            throw await explained(error, owner: (try? DataProtector.protectionInfo(envelope))??.owner)
        }
    }

    /// `error`, said as a wipe when the owner's keys were wiped and the envelope's key is what
    /// is missing: its version is not in the store, or a key of that version exists (made after
    /// the wipe) and is not the one it was sealed with. An envelope whose key is right and
    /// whose chunks do not authenticate was damaged, wiped or not: that is what it is told.
    private func explained(_ error: ProtectionError, owner: OwnerIdentifier?) async -> CustodyError {
        if error.code == .keyUnavailable || (error.code == .decryptFailed && error.isKeyMismatch), let owner,
            let wiped = try? await database.wipeRecord(of: owner.rawValue)
        {
            let prefix = error.path.map { "\($0): " } ?? ""
            return CustodyError(
                .protection,
                "\(prefix)the data belongs to \(owner), whose keys were wiped at \(formatted(wiped.at)) (account \(wiped.account)): it can never be opened again",
                underlying: error)
        }
        return CustodyError(protection: error)
    }

    // MARK: Keys

    /// Adds a new version of `account`'s key (new envelopes use it; old ones still open with
    /// theirs), recorded in the audit log. Returns the account and the new version.
    /// - Parameter by: who asked (a service token's operator name), kept in the audit entry.
    public func rotateKey(account: AccountID, by: String? = nil) async throws(CustodyError) -> KeyRotation {
        let resolved = try await resolve(account)
        let keyRing = try requireKeyRing("rotating a key needs the master key that wraps it")
        return try await CustodyError.mapping(otherwise: .state) {
            try await manager.register(resolved)
            let version = try await keyRing.rotate(resolved.owner)
            try await database.audit(
                .key, account: resolved.owner.rawValue, action: "rotate",
                detail: "version \(version)" + (by.map { " by \($0)" } ?? ""),
                at: configuration.now())
            // Every replica's event stream says so (re-protect with the new version if wanted).
            await manager.announce(.keyRotated(account: account, version: version))
            return KeyRotation(owner: resolved.owner, version: version)
        }
    }

    /// Re-seals an encrypted file under its owner's newest key version, when it uses an older
    /// one.
    public func rewrap(file path: String) async throws(CustodyError) -> RewrapResult {
        let protector = try protector("rewrapping needs the account keys")
        do {
            guard let before = try DataProtector.protectionInfo(file: path) else { return .notProtected }
            guard before.isEncrypted, let from = before.keyVersion else { return .notEncrypted }
            guard try await protector.rewrap(file: path) else { return .alreadyNewest }
            return .rewrapped(from: from, to: try DataProtector.protectionInfo(file: path)?.keyVersion ?? from)
        } catch {
            throw await explained(error, owner: (try? DataProtector.protectionInfo(file: path))??.owner)
        }
    }

    /// One owner of keys in the state.
    public struct KeyOwner: Sendable, Hashable {
        public let owner: OwnerIdentifier
        /// The key versions there are, oldest first.
        public let versions: [UInt32]
        /// The account as the tenant in force names it, when it knows the identifier.
        public let account: AccountID?
    }

    /// Every owner with keys in the state, with its versions. Needs no master key.
    public func keyOwners() async throws(CustodyError) -> [KeyOwner] {
        let store = StateKeyStore(state: database)
        let snapshot = manager.snapshot
        // Every failure here is the state's (the key store only reads it): `.state`, whatever
        // the key store called it.
        do {
            var owners: [KeyOwner] = []
            for owner in try await store.owners() {
                owners.append(
                    KeyOwner(
                        owner: owner, versions: try await store.keys(for: owner).map(\.version),
                        account: snapshot.tenantAccount(for: owner.account)?.id))
            }
            return owners
        } catch {
            throw CustodyError(state: error)
        }
    }
}

/// A receive decision about a shared item, with what its protection tag said.
public struct SharedItemDecision: Sendable {
    public let decision: Decision
    /// The owner the item's envelope names; nil for data that is not an envelope (untagged).
    public let dataOwner: AccountID?
    /// Whether the owner is proven: an encrypted envelope whose data key opened under the
    /// owner's key. An unencrypted envelope's owner is only a claim (see `receive(receiver:item:)`).
    public let ownerVerified: Bool
    /// The revision of the bundle it was decided with.
    public let revision: String
    /// With decision auditing on, the id of the decision's audit entry (stored before the
    /// decision was returned); nil when decisions are not audited.
    public internal(set) var decisionID: String?

    init(decision: Decision, dataOwner: AccountID?, ownerVerified: Bool, revision: String) {
        self.decision = decision
        self.dataOwner = dataOwner
        self.ownerVerified = ownerVerified
        self.revision = revision
    }

    /// The answer as one line of JSON, as both front ends give it: the decision as
    /// `custody decide` writes it, then `decisionId` (when audited), `file` (when given),
    /// `dataOwner`, `ownerVerified`, and `revision` (with `includingRevision`).
    package func json(file: String? = nil, includingRevision: Bool) -> [UInt8] {
        var writer = JSONWriter()
        DecisionEncoding.write(
            .single(decision), to: &writer,
            trailer: { writer in
                if let decisionID {
                    writer.key("decisionId")
                    writer.value(decisionID)
                }
                if let file {
                    writer.key("file")
                    writer.value(file)
                }
                writer.key("dataOwner")
                writer.value(dataOwner?.description)
                writer.key("ownerVerified")
                writer.value(ownerVerified)
                if includingRevision {
                    writer.key("revision")
                    writer.value(revision)
                }
            })
        writer.newline()
        return writer.bytes
    }
}

extension CustodyEngine {
    // MARK: Receiving shared items

    /// May the shared item `item` (an envelope, or its first bytes: the header is enough; or
    /// untagged data) be received into `receiver`'s documents? The owner is read from the
    /// item's own protection tag, as Intune's `canReceiveSharedFile:` does.
    ///
    /// Fail closed: an encrypted envelope's owner is verified when the engine holds keys (its
    /// data-key wrap must open under that owner's key; a changed header, or an owner whose keys
    /// were wiped, is an error). An unencrypted envelope's owner is a claim anyone can write,
    /// so the item is received only when both readings allow it: as the named owner's data,
    /// and as untagged data.
    ///
    /// With decision auditing on, the decision is in the audit log before it is returned (its
    /// `decisionID` names the entry), as every decision of `decisionSession` is; when the log
    /// cannot be written, no decision is returned.
    /// - Throws: `CustodyError` `.protection` for a damaged or unverifiable envelope; `.noPolicy`,
    ///   `.platform` as `policy()`; `.state` when the audit log cannot be written.
    /// - Parameter context: the evaluation context; nil: the engine's.
    public func receive(receiver: AccountID?, item: [UInt8], context: EvaluationContext? = nil)
        async throws(CustodyError)
        -> SharedItemDecision
    {
        var result = try await decideReceive(receiver: receiver, item: item, context: context)
        result.decisionID = try await auditDecision(
            account: receiver ?? result.dataOwner, action: .receive, allowed: result.decision.isAllowed,
            reason: result.decision.reason)
        return result
    }

    private func decideReceive(receiver: AccountID?, item: [UInt8], context: EvaluationContext?)
        async throws(CustodyError)
        -> SharedItemDecision
    {
        let (snapshot, revision) = try policyAndRevision(for: context)
        let info: ProtectionInfo?
        var verified = false
        // Without a master key an encrypted item's owner is a claim (which gains nothing: the
        // item cannot be read without the key); with one, it is verified or the item refused.
        let protector = keyRing == nil ? nil : try protector("verifying the owner of an encrypted item needs its key")
        do throws(ProtectionError) {
            if let protector, try DataProtector.protectionInfo(item)?.isEncrypted == true {
                info = try await protector.verifiedProtectionInfo(item)
                verified = true
            } else {
                info = try DataProtector.protectionInfo(item)
            }
        } catch {
            throw await explained(error, owner: (try? DataProtector.protectionInfo(item))??.owner)
        }
        guard let info else {
            return SharedItemDecision(
                decision: snapshot.receive(receiver: receiver, dataOwner: nil), dataOwner: nil, ownerVerified: false,
                revision: revision)
        }
        let owner = snapshot.tenantAccount(for: info.owner.account)?.id ?? info.owner.account
        let claimed = snapshot.receive(receiver: receiver, dataOwner: owner)
        // Encrypted: nobody without the owner's key can read it, so even an unverified claim
        // gains nothing. Unencrypted: the stricter of the claim and no owner at all.
        guard !info.isEncrypted else {
            return SharedItemDecision(decision: claimed, dataOwner: owner, ownerVerified: verified, revision: revision)
        }
        let untagged = snapshot.receive(receiver: receiver, dataOwner: nil)
        let decision = claimed.isAllowed && !untagged.isAllowed ? untagged : claimed
        return SharedItemDecision(decision: decision, dataOwner: owner, ownerVerified: false, revision: revision)
    }

    /// `receive(receiver:item:)` for a file: its header is read (the rest is not).
    public func receive(receiver: AccountID?, file path: String, context: EvaluationContext? = nil)
        async throws(CustodyError)
        -> SharedItemDecision
    {
        let head = try CustodyError.mapping(otherwise: .protection) {
            try DataProtector.head(ofFile: path, count: 4_096)
        }
        do {
            return try await receive(receiver: receiver, item: head, context: context)
        } catch {
            throw CustodyError(
                error.code, "\(path): \(error.message)", diagnostics: error.diagnostics, underlying: error.underlying)
        }
    }
}
