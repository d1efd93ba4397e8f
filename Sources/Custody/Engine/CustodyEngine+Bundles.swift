public import CustodyPolicy
public import CustodyStore
import Foundation

/// Trust, history, rollback and freezing: what an operator asks of the bundles an installation
/// applied (`custody trust …`, `custody bundle …`, the service's `/v1/bundle/…` routes).
extension CustodyEngine {
    // MARK: Trusted signing keys

    /// Every key the state was told to trust, revoked ones included, oldest first.
    public func trustedKeys() async throws(CustodyError) -> [TrustedKeyRecord] {
        try await CustodyError.fromState { try await database.trustedKeys() }
    }

    /// Trusts `key` to sign bundles, audited and shared by every replica. From the first key
    /// on, every bundle that comes in must carry a valid signature by a trusted key. With
    /// `audience` (this installation's name), the key's signature counts only on a manifest
    /// signed for that audience (`custody bundle sign --audience`): a bundle signed with the
    /// same key for staging is refused here.
    /// - Throws: `.invalidArgument` when the state knows the key already (a revoked key is never
    ///   trusted again: make a new one).
    @discardableResult
    public func trust(_ key: BundleSigningPublicKey, name: String?, audience: String? = nil) async throws(CustodyError)
        -> TrustedKeyRecord
    {
        if let audience, !BundleManifest.isAudience(audience) {
            throw CustodyError(
                .invalidArgument,
                "the audience '\(audience.escapingControlCharacters)' is not a name (1 to 64 letters, digits, '.', '-', '_')"
            )
        }
        // A name is printed by `trust list` and the console: one that could rewrite a terminal
        // line or reorder what it shows is refused, as account ids are.
        if let name, name.escapingControlCharacters != name {
            throw CustodyError(
                .invalidArgument,
                "the key's name '\(name.escapingControlCharacters)' holds a control or bidirectional-formatting character"
            )
        }
        let record = TrustedKeyRecord(
            keyID: key.keyID, publicKey: key.text, name: name, addedAt: Date(), audience: audience)
        do {
            try await database.addTrustedKey(record)
        } catch  where error.code == .conflict {
            throw CustodyError(.invalidArgument, "\(error.message); a revoked key is never trusted again")
        } catch {
            throw CustodyError(state: error)
        }
        return record
    }

    /// Revokes a trusted key: its signature never counts again, even beside a valid one.
    /// - Throws: `.notFound` when no unrevoked key has that id.
    public func revokeTrust(keyID: String) async throws(CustodyError) {
        guard try await CustodyError.fromState({ try await database.revokeTrustedKey(id: keyID, at: Date()) }) else {
            throw CustodyError(.notFound, "no trusted, unrevoked key has the id \(keyID)")
        }
    }

    /// The highest sequence of a signed bundle applied (0: none since the state began or since
    /// the last reset): a new signed bundle is taken only above it.
    public func highestBundleSequence() async throws(CustodyError) -> Int64 {
        try await CustodyError.fromState { try await database.bundleSequence() }
    }

    /// Lowers the highest sequence to `sequence` (0: any sequence is new again), audited with
    /// the reason and who did it, for a signer whose numbering started again (a new signing
    /// pipeline, a lost counter). The bundle in force stays; the next signed bundle above
    /// `sequence` is taken, so bundles signed before, up to the old mark, can be applied
    /// again: a reset is the one way back below the mark, which is why it needs a reason.
    /// - Returns: the highest sequence before the reset.
    /// - Throws: `.invalidArgument` for an empty reason, a negative `sequence`, or one not
    ///   below the mark (raising it is what applying a bundle does).
    @discardableResult
    public func resetBundleSequence(to sequence: Int64 = 0, reason: String, by who: String?)
        async throws(CustodyError) -> Int64
    {
        let reason = reason.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !reason.isEmpty else { throw CustodyError(.invalidArgument, "a sequence reset needs a reason") }
        guard sequence >= 0 else {
            throw CustodyError(.invalidArgument, "a sequence is a whole number of at least 0, not \(sequence)")
        }
        let current = try await highestBundleSequence()
        guard sequence < current else {
            throw CustodyError(
                .invalidArgument,
                current == 0
                    ? "the highest sequence is 0 already: there is nothing to reset"
                    : "\(sequence) is not below the highest sequence, \(current): a reset only lowers it")
        }
        return try await CustodyError.fromState {
            try await database.resetBundleSequence(to: sequence, reason: reason, by: who, at: Date())
        }
    }

    /// What the state would say of `files`' signature now: verified (with the sequence rule
    /// checked too), or why not. Changes nothing.
    public func verifySignature(of files: BundleFiles) async throws(CustodyError) -> VerifiedSignature {
        let (keys, highest) = try await CustodyError.fromState {
            (try await database.trustedKeys(), try await database.bundleSequence())
        }
        guard !keys.isEmpty else {
            throw CustodyError(.invalidArgument, "the state trusts no signing key (custody trust add)")
        }
        let verified: VerifiedSignature
        do {
            verified = try BundleVerifier.verify(files, keys: keys, at: Date())
        } catch {
            throw CustodyError(.untrusted, "\(error)", underlying: error)
        }
        if verified.manifest.sequence <= highest, bundleInForce?.revision != files.contentHash {
            throw CustodyError(
                .untrusted,
                "replayed: the bundle's sequence \(verified.manifest.sequence) is not greater than \(highest), the highest applied"
            )
        }
        return verified
    }

    /// The last bundle this process refused since one was put in force, if any.
    public var lastBundleRejection: RefusedBundle? {
        manager.lastRejection.withLock { $0.map { RefusedBundle(at: $0.at, source: $0.source, message: $0.message) } }
    }

    // MARK: History

    /// Bundles offered, newest first: applied (with who, the sequence and signers) and refused.
    public func bundleHistory(limit: Int = 100) async throws(CustodyError) -> [BundleRecord] {
        try await CustodyError.fromState { try await database.bundleHistory(limit: limit) }
    }

    /// A kept revision with its files, named by its revision or a prefix of at least 8 hex
    /// digits that names one kept revision.
    /// - Throws: `.notFound` when the state keeps no such revision; `.invalidArgument` when the
    ///   prefix names several.
    public func keptBundle(_ revision: String) async throws(CustodyError) -> StoredBundle {
        let full = try await resolveRevision(revision)
        guard let stored = try await CustodyError.fromState({ try await database.storedBundle(revision: full) }) else {
            throw CustodyError(.notFound, "the state keeps no bundle with revision \(revision)")
        }
        return stored
    }

    /// Whether `text` can name a kept revision: 8 to 64 lower-case hex digits (a revision, or
    /// its start).
    public static func isRevision(_ text: String) -> Bool {
        (8...64).contains(text.utf8.count) && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    private func resolveRevision(_ revision: String) async throws(CustodyError) -> String {
        guard Self.isRevision(revision) else {
            throw CustodyError(
                .invalidArgument,
                "'\(revision.escapingControlCharacters)' is not a revision (8 to 64 lower-case hex digits)"
            )
        }
        guard revision.utf8.count < 64 else { return revision }
        let kept = try await CustodyError.fromState { Array(try await database.storedBundleRevisions().keys) }
        let matches = kept.filter { $0.hasPrefix(revision) }
        guard matches.count <= 1 else {
            throw CustodyError(.invalidArgument, "\(revision) names \(matches.count) kept revisions; give more digits")
        }
        guard let match = matches.first else {
            throw CustodyError(.notFound, "the state keeps no bundle with revision \(revision)")
        }
        return match
    }

    /// The files the state keeps for `revision` do not hash to it.
    static func damagedRevision(_ revision: String) -> CustodyError {
        CustodyError(
            .state,
            "the files the state keeps for revision \(revision) do not hash to it: the state is damaged, and they are not used"
        )
    }

    /// Puts a kept revision back in force, audited with `reason`: past a freeze and below the
    /// highest sequence (an operator's explicit choice), never past the trust rule (its
    /// signature must still hold with the keys trusted now).
    /// - Throws: `.notFound` for a revision the state does not keep; `.bundleRefused` when its
    ///   signature no longer holds; `.invalidArgument` for an empty reason.
    @discardableResult
    public func rollback(to revision: String, reason: String, by who: String?) async throws(CustodyError)
        -> ApplyResult
    {
        guard !reason.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            throw CustodyError(.invalidArgument, "a rollback needs a reason")
        }
        let stored = try await keptBundle(revision)
        guard let files = stored.files(signed: true) else { throw Self.damagedRevision(revision) }
        do {
            return try await apply(
                files: files, source: stored.record.source, allowingEmpty: true,
                provenance: BundleProvenance(
                    sequence: stored.record.provenance.sequence, appliedBy: who, reason: reason, isRollback: true))
        } catch  where error.code == .untrusted {
            let why = error.diagnostics.first?.message ?? error.message
            throw CustodyError(
                .untrusted,
                "the kept revision \(stored.record.contentHash) cannot be rolled back to (applied \(stored.record.provenance.signature == nil ? "unsigned" : "signed") \(formatted(stored.record.appliedAt))): \(why); to put these files back, sign them again and apply them",
                diagnostics: error.diagnostics, underlying: error.underlying)
        }
    }

    // MARK: Freezing

    /// The freeze in force, if any.
    public func bundleFreeze() async throws(CustodyError) -> BundleFreeze? {
        try await CustodyError.fromState { try await database.bundleFreeze() }
    }

    /// Freezes the policy in force on every replica: each new bundle is refused with `reason`
    /// until `unfreeze`; a rollback still goes through.
    @discardableResult
    public func freeze(reason: String, by who: String?) async throws(CustodyError) -> BundleFreeze {
        let reason = reason.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !reason.isEmpty else { throw CustodyError(.invalidArgument, "a freeze needs a reason") }
        let freeze = BundleFreeze(reason: reason, by: who, at: Date())
        _ = try await CustodyError.fromState { try await database.setBundleFreeze(freeze, by: who, at: freeze.at) }
        return freeze
    }

    /// Lifts the freeze, audited with who did; false when there was none. A watched bundle
    /// directory is offered again at its next look: an edit the freeze refused goes in now.
    @discardableResult
    public func unfreeze(by who: String? = nil) async throws(CustodyError) -> Bool {
        let lifted = try await CustodyError.fromState { try await database.setBundleFreeze(nil, by: who, at: Date()) }
        if lifted { manager.offerAgain() }
        return lifted
    }

    // MARK: Differences

    /// What changes from kept revision `from` to `to` (default: the one in force): the settings
    /// that differ per policy document, and every decision that flips (what `custody matrix
    /// diff` computes), for this engine's evaluation context. Without `from`, from the revision
    /// in force before `to` (the last change; `to` itself when there was none).
    public func bundleDiff(from: String?, to: String?) async throws(CustodyError) -> BundleDiff {
        guard let newRevision = to ?? bundleInForce.map(\.revision) else {
            throw CustodyError(.noPolicy, "no bundle is in force to compare with; name a second revision")
        }
        let new = try await keptBundle(newRevision)
        let old: StoredBundle
        if let from {
            old = try await keptBundle(from)
        } else {
            let kept = try await CustodyError.fromState { try await database.storedBundleRevisions() }
            let history = try await bundleHistory(limit: 1_000)
            let since = history.firstIndex { $0.result == .applied && $0.contentHash == new.record.contentHash }
            let previous = history[(since.map { $0 + 1 } ?? history.endIndex)...].first {
                $0.result == .applied && $0.contentHash != new.record.contentHash && kept[$0.contentHash] != nil
            }
            if let previous { old = try await keptBundle(previous.contentHash) } else { old = new }
        }
        // A revision is its content: the comparison of two is the same every time, and at
        // 100,000 accounts it takes seconds. The last few are kept.
        let key = DiffKey(from: old.record.contentHash, to: new.record.contentHash)
        let kept = diffs.withLock { diffs -> BundleDiff? in
            guard let index = diffs.firstIndex(where: { $0.key == key }) else { return nil }
            let entry = diffs.remove(at: index)
            diffs.insert(entry, at: 0)
            return entry.diff
        }
        if let kept { return kept }
        let diff = try BundleDiff(old: old, new: new, context: context, logger: logger)
        diffs.withLock { diffs in
            diffs.removeAll { $0.key == key }
            diffs.insert((key, diff), at: 0)
            if diffs.count > Self.keptDiffs { diffs.removeLast() }
        }
        return diff
    }

    /// How many comparisons of kept revisions `bundleDiff(from:to:)` keeps.
    static let keptDiffs = 8

    /// What applying `candidate` would change, before anything is applied: the bundle in force
    /// compared with it, as `bundleDiff(from:to:)` compares two kept revisions. The candidate's
    /// signature is not checked here (applying it checks it).
    /// - Throws: `.noPolicy` with no bundle in force; `.bundle` with the candidate's diagnostics
    ///   when it does not load.
    public func bundleDiff(candidate: BundleFiles) async throws(CustodyError) -> BundleDiff {
        guard let inForce = bundleInForce else {
            throw CustodyError(.noPolicy, "no bundle is in force to compare the candidate with")
        }
        let current = try await keptBundle(inForce.revision)
        return try BundleDiff(
            from: BundleDiff.Side(
                revision: current.record.contentHash, files: current.files.map { ($0.name, $0.bytes) }, isKept: true),
            to: BundleDiff.Side(
                revision: candidate.contentHash, files: candidate.entries.map { ($0.name, $0.bytes) }, isKept: false),
            context: context, logger: logger)
    }
}

extension StoredBundle {
    /// The files the state keeps for the bundle, as a bundle directory would give them; nil when
    /// they no longer hash to the revision recorded for them (a damaged state).
    /// - Parameter signed: with the signature the bundle was applied with.
    func files(signed: Bool = false) -> BundleFiles? {
        BundleFiles(
            stored: files.map { BundleFiles.Entry(name: $0.name, bytes: $0.bytes) }, contentHash: record.contentHash,
            signature: signed ? record.provenance.signature : nil)
    }
}
