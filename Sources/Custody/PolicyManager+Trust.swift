import CustodyPolicy
import CustodyStore
import Foundation

extension PolicyManager {
    /// Whether the state lets `files` in, before anything is parsed: trusted signature (once
    /// the state trusts a key), no freeze, a sequence above the highest applied. Returns the
    /// provenance to record, with the verified sequence and signers.
    /// - Throws: the rejection, recorded and announced, when it does not.
    func admit(_ files: BundleFiles, source: String, provenance given: BundleProvenance) async throws(BundleRejection)
        -> BundleProvenance
    {
        guard let database else { return given }
        var provenance = given
        // Kept with the history row even where no key is trusted yet: a revision applied now
        // can be rolled back to, signed, once one is.
        provenance.signature = files.signature
        let keys: [TrustedKeyRecord]
        let freeze: BundleFreeze?
        let highest: Int64
        do {
            keys = try await database.trustedKeys()
            freeze = given.isRollback ? nil : try await database.bundleFreeze()
            highest = try await database.bundleSequence()
        } catch {
            throw BundleRejection(
                source: source,
                message: "the state could not be read to check the bundle, so it is not applied: \(error)",
                stateFailure: error, revision: files.contentHash)
        }
        if !keys.isEmpty {
            do {
                let verified = try BundleVerifier.verify(files, keys: keys, at: clock())
                provenance.sequence = verified.manifest.sequence
                provenance.signers = verified.signers
                provenance.signature = files.signature
            } catch {
                let message = "the bundle is not trusted: \(error)"
                // The history says which sequence was offered, when the file says one.
                var offered = given
                offered.sequence = files.signature.flatMap { try? BundleSignatureFile.parse($0) }?.manifest.sequence
                throw await reject(
                    source: source, contentHash: files.contentHash, message: message,
                    diagnostics: [Self.refusal(message, files: files, source: source, code: .untrusted, naming: error)],
                    offeredBy: offered)
            }
        }
        if let freeze {
            let message =
                "frozen: the policy in force is frozen since \(formatted(freeze.at))\(freeze.by.map { " by \($0)" } ?? ""): \(freeze.reason); unfreeze it (custody bundle unfreeze), or roll back"
            throw await reject(
                source: source, contentHash: files.contentHash, message: message,
                diagnostics: [Self.refusal(message, files: files, source: source, code: .frozen)], offeredBy: provenance
            )
        }
        if !given.isRollback, let sequence = provenance.sequence, sequence <= highest {
            let message =
                "replayed: the bundle's sequence \(sequence) is not greater than \(highest), the highest applied; sign it again (custody bundle sign) to apply it, or roll back to a kept revision"
            throw await reject(
                source: source, contentHash: files.contentHash, message: message,
                diagnostics: [Self.refusal(message, files: files, source: source, code: .replayed)],
                offeredBy: provenance)
        }
        return provenance
    }

    /// A refusal as a located diagnostic: at the file it names, else the signature file.
    static func refusal(
        _ message: String, files: BundleFiles, source: String, code: Diagnostic.Code? = nil,
        naming error: BundleTrustError? = nil
    ) -> Diagnostic {
        let code =
            code
            ?? (message.hasPrefix("frozen") ? .frozen : message.hasPrefix("replayed") ? .replayed : .untrusted)
        var file = BundleFiles.signatureName
        if let error, [.changedFile, .extraFile, .missingFile].contains(error.reason),
            let name = error.message.split(separator: " ").first
        {
            file = String(name)
        }
        let place = files.directory.map { ($0 as NSString).appendingPathComponent(file) } ?? file
        return Diagnostic(
            severity: .error, code: code, message: message, location: DocumentLocation(file: place, line: 1, column: 1))
    }
}
