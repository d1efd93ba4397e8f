import ArgumentParser
import Custody
import CustodyPolicy
import CustodyProtection
import CustodyStore
import Foundation

/// `custody bundle`: sign bundles, look back over, roll back or freeze what was in force, and run a
/// candidate in shadow.
struct BundleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bundle",
        abstract:
            "Sign bundles; list, show, compare and roll back the bundles a state applied; freeze the policy in force; run a candidate in shadow.",
        discussion: """
            Once the state trusts a signing key (custody trust add), every bundle that comes in \
            (custody apply, custody watch, serve --bundle, PUT /v1/bundle, a Graph sync) must \
            carry .custody-signature.json with a valid signature by a trusted, unrevoked key over \
            exactly its files, and a sequence above every one applied before. See docs/bundles.md.
            """,
        subcommands: [
            Keygen.self, Sign.self, Verify.self, History.self, Show.self, Diff.self, Rollback.self, Freeze.self,
            Unfreeze.self, ResetSequence.self, Shadow.self,
        ]
    )

    struct Keygen: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "keygen",
            abstract: "Make an Ed25519 signing key: the private key to a new file (mode 600), the public key printed.",
            discussion: """
                The key file is PKCS#8 PEM, as `openssl genpkey -algorithm ed25519` writes (a key \
                made that way signs too). Prints the public key (ed25519:<base64>), to give to \
                `custody trust add`, and its key id on standard error.
                """)

        @Option(help: ArgumentHelp("The new private key file (must not exist).", valueName: "file"))
        var out: String

        func run() async throws {
            let key = BundleSigningKey()
            try key.write(to: out)
            StandardError.write("wrote \(out); key id \(key.publicKey.keyID)\n")
            StandardOutput.write(key.publicKey.text + "\n")
        }
    }

    struct Sign: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "sign",
            abstract: "Sign a bundle directory: write (or add a signature to) DIR/.custody-signature.json.",
            discussion: """
                The manifest lists every bundle file (name, size, SHA-256), the sequence (by default \
                the time in milliseconds: give --sequence to set it; it must exceed every sequence \
                the state applied), when it was made and, with --expires, until when it holds. \
                When the directory already holds another key's signature over the same files (and \
                no --sequence or --expires is given, nor another --audience), this key's signature \
                is added beside it, for the audience already signed for: how two keys sign during \
                a rotation. Otherwise (other files, or the same key signing \
                again) the manifest is made anew, with a new sequence, and earlier signatures, over \
                another manifest, are dropped (said on standard error). A bundle that no state would \
                apply (one that does not load, or one that manages no account, without --allow-empty) is \
                refused with its diagnostics, and nothing is signed.
                """)

        @Argument(help: ArgumentHelp("The bundle directory.", valueName: "dir"))
        var directory: String

        @Option(help: ArgumentHelp("The private key file (custody bundle keygen).", valueName: "file"))
        var key: String

        @Option(
            help: ArgumentHelp(
                "The manifest's sequence number (default: now, in milliseconds; at most a day above it).",
                valueName: "n"))
        var sequence: Int64?

        @Option(help: ArgumentHelp("Until when the bundle may be applied (RFC 3339).", valueName: "time"))
        var expires: String?

        @Option(
            help: ArgumentHelp(
                "The installation the bundle is for (its name in custody trust add --audience); a key trusted for another audience does not count.",
                valueName: "name"))
        var audience: String?

        @Flag(
            help: """
                Sign a bundle with no tenant.json and no app protection policy: one that clears the policy \
                (it is applied with --allow-empty too).
                """)
        var allowEmpty = false

        func validate() throws {
            try refuseEmptyPath(directory, named: "<dir>", give: "the bundle directory")
            try refuseEmptyPath(key, named: "--key", give: "the private key file")
            if let audience, !BundleManifest.isAudience(audience) {
                throw ValidationError("--audience must be 1 to 64 letters, digits, '.', '-' or '_'")
            }
            let now = Date()
            if let sequence {
                if sequence < 1 { throw ValidationError("--sequence must be at least 1") }
                if sequence > BundleManifest.highestSequence(at: now) {
                    throw ValidationError(
                        "--sequence \(sequence) is more than a day above the time in milliseconds (\(Int64(now.timeIntervalSince1970 * 1_000))): a state would refuse it"
                    )
                }
            }
            if let expires {
                guard let date = try? Date(expires, strategy: Date.ISO8601FormatStyle()), expires.hasSuffix("Z"),
                    expires.utf8.count == 20
                else {
                    throw ValidationError(
                        "--expires '\(expires)' is not an RFC 3339 time in UTC to the second (2027-01-31T00:00:00Z)")
                }
                if date <= now { throw ValidationError("--expires \(expires) is past: no state would take the bundle") }
            }
        }

        func run() async throws {
            let signingKey = try BundleSigningKey.load(file: key)
            let files = try BundleFiles.read(directory: directory)
            // A signature vouches for a bundle: one that no state would apply (broken, or
            // knowing nothing when that is not meant) is refused, not signed.
            do throws(BundleError) {
                _ = try files.load(allowingEmpty: allowEmpty)
            } catch {
                StandardError.write(lines: error.diagnostics.map(\.description))
                let empty = error.diagnostics.contains { $0.code == .emptyBundle }
                StandardError.write(
                    "error: \(directory) is not signed: "
                        + (empty
                            ? "a bundle that clears the policy on purpose is signed with --allow-empty\n"
                            : "no state would apply it\n"))
                throw ExitCode.failure
            }
            let now = Date()
            let fresh = BundleManifest(
                describing: files, sequence: sequence ?? Int64(now.timeIntervalSince1970 * 1_000), created: now,
                expires: expires.flatMap { try? Date($0, strategy: Date.ISO8601FormatStyle()) }, audience: audience)
            var signature = BundleSignatureFile(manifest: fresh)
            if let bytes = files.signature, let existing = try? BundleSignatureFile.parse(bytes) {
                // Without --audience, a co-signature keeps the audience the manifest was signed for.
                if sequence == nil, expires == nil, existing.manifest.files == fresh.files,
                    audience == nil || existing.manifest.audience == audience,
                    !existing.signatures.contains(where: { $0.keyId == signingKey.publicKey.keyID })
                {
                    signature = existing
                } else if !existing.signatures.isEmpty {
                    StandardError.write(
                        "note: the earlier signatures (\(existing.signatures.map(\.keyId).joined(separator: ", "))) were over another manifest and are dropped\n"
                    )
                }
            }
            signature.sign(with: signingKey)
            let path = (directory as NSString).appendingPathComponent(BundleFiles.signatureName)
            try signature.write(to: path)
            StandardOutput.write(
                "signed \(directory): revision \(files.contentHash), sequence \(signature.manifest.sequence)\(signature.manifest.audience.map { ", for \($0)" } ?? ""), by \(signature.signatures.map(\.keyId).joined(separator: ", "))\n"
            )
        }
    }

    struct Verify: AsyncParsableCommand, StateCommand {
        static let configuration = CommandConfiguration(
            commandName: "verify",
            abstract:
                "Say whether a bundle directory's signature holds: for the keys a state trusts, or for given keys.",
            discussion: """
                With --public-key (repeatable), those keys are the trusted ones; otherwise the \
                state's trusted keys are, and the sequence is checked against the highest the state \
                applied. Exit 0 when the bundle would be accepted, 1 with the reason when not.
                """)

        @Argument(help: ArgumentHelp("The bundle directory.", valueName: "dir"))
        var directory: String

        @Option(
            name: .customLong("public-key"),
            help: ArgumentHelp("A public key to verify with (ed25519:<base64>; repeatable).", valueName: "key"))
        var publicKeys: [String] = []

        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var loggingOptions: LoggingOptions

        func run() async throws {
            let files = try BundleFiles.read(directory: directory)
            let verified: VerifiedSignature
            if publicKeys.isEmpty {
                let engine = try await openEngine(
                    state: stateOptions, logging: loggingOptions, access: .readOnly, restoring: true)
                verified = try await engine.verifySignature(of: files)
            } else {
                let keys = try publicKeys.map { text in
                    let key = try BundleSigningPublicKey(text: text)
                    return TrustedKeyRecord(keyID: key.keyID, publicKey: key.text, name: nil, addedAt: Date())
                }
                verified = try BundleVerifier.verify(files, keys: keys, at: Date())
            }
            var lines = [
                "verified \(directory): revision \(files.contentHash)",
                "sequence \(verified.manifest.sequence), created \(verified.manifest.created)"
                    + (verified.manifest.expires.map { ", expires \($0)" } ?? ""),
                "signed by \(verified.signers.joined(separator: ", "))",
            ]
            if !verified.unknownSigners.isEmpty {
                lines.append("also signed by keys not trusted here: \(verified.unknownSigners.joined(separator: ", "))")
            }
            StandardOutput.write(lines.joined(separator: "\n") + "\n")
        }
    }

    struct History: AsyncParsableCommand, StateCommand {
        static let configuration = CommandConfiguration(
            commandName: "history",
            abstract:
                "List the bundles offered to the state, newest first: applied or refused, sequence, signers, who and why."
        )

        @Option(help: ArgumentHelp("How many entries at most (1 to 1000).", valueName: "n"))
        var limit = 50

        @Flag(help: "One JSON array.")
        var json = false

        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var loggingOptions: LoggingOptions

        func validate() throws {
            // As GET /v1/bundle/history takes it: 0 printed one entry.
            guard (1...1_000).contains(limit) else { throw ValidationError("--limit must be from 1 to 1000") }
        }

        func run() async throws {
            let engine = try await openEngine(
                state: stateOptions, logging: loggingOptions, access: .existing, restoring: false)
            let records = try await engine.bundleHistory(limit: limit)
            if json {
                StandardOutput.write(try JSONLine.encode(records.map(BundleRecordAnswer.init)))
                return
            }
            for record in records {
                let provenance = record.provenance
                let result =
                    record.result == .rejected
                    ? (provenance.isRollback ? "rejected rollback" : "rejected")
                    : (provenance.isRollback ? "rollback" : "applied")
                var fields = [
                    formatTime(record.appliedAt), result,
                    record.contentHash.isEmpty ? "-" : record.contentHash,
                    provenance.sequence.map { "sequence \($0)" } ?? (provenance.signature == nil ? "unsigned" : "-"),
                    provenance.signers.isEmpty ? "-" : "signed by \(provenance.signers.joined(separator: ","))",
                    "by \(provenance.appliedBy ?? "-")", record.source,
                ]
                if let reason = provenance.reason { fields.append("reason: \(reason)") }
                if let message = record.message {
                    fields.append(message.split(separator: "\n").first.map(String.init) ?? "")
                }
                // Reasons and names came from callers: escaped, one record per line.
                StandardOutput.write(fields.map(\.escapingControlCharacters).joined(separator: "\t") + "\n")
            }
        }
    }

    struct Show: AsyncParsableCommand, StateCommand {
        static let configuration = CommandConfiguration(
            commandName: "show",
            abstract: "Show a kept revision: when and how it was applied, and its files (names, sizes, SHA-256).")

        @Argument(help: ArgumentHelp("The revision, or at least its first 8 hex digits.", valueName: "revision"))
        var revision: String

        @Flag(help: "One JSON object.")
        var json = false

        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var loggingOptions: LoggingOptions

        func run() async throws {
            let engine = try await openEngine(
                state: stateOptions, logging: loggingOptions, access: .existing, restoring: false)
            let stored = try await engine.keptBundle(revision)
            if json {
                StandardOutput.write(try JSONLine.encode(KeptBundleAnswer(stored)))
                return
            }
            let record = stored.record
            var lines = [
                "revision \(record.contentHash)",
                "applied \(formatTime(record.appliedAt)) from \(record.source) by \(record.provenance.appliedBy ?? "-")",
                record.provenance.sequence.map {
                    "sequence \($0), signed by \(record.provenance.signers.joined(separator: ", "))"
                } ?? "unsigned",
            ]
            lines += stored.files.map { "\($0.name)\t\($0.bytes.count) bytes\t\(BundleManifest.sha256($0.bytes))" }
            StandardOutput.write(lines.map(\.escapingControlCharacters).joined(separator: "\n") + "\n")
        }
    }

    struct Diff: AsyncParsableCommand, StateCommand {
        static let configuration = CommandConfiguration(
            commandName: "diff",
            abstract:
                "Compare two kept revisions (the second defaults to the one in force, the first to the one before it): settings per policy, and every decision that flips."
        )

        @Argument(help: ArgumentHelp("The older revision, then the newer one (both optional).", valueName: "revision"))
        var revisions: [String] = []

        @Flag(help: "One JSON object.")
        var json = false

        @OptionGroup var contextOptions: ContextOptions
        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var loggingOptions: LoggingOptions

        func validate() throws {
            if revisions.count > 2 { throw ValidationError("give at most two revisions") }
        }

        func run() async throws {
            let engine = try await openEngine(
                state: stateOptions, logging: loggingOptions, access: .existing, context: contextOptions.context,
                restoring: true)
            let diff = try await engine.bundleDiff(from: revisions.first, to: revisions.count == 2 ? revisions[1] : nil)
            if json {
                StandardOutput.write(try JSONLine.encode(diff))
                return
            }
            var lines = ["from \(diff.from)", "to   \(diff.to)"]
            lines += diff.added.map { "added \($0)" } + diff.removed.map { "removed \($0)" }
            lines += diff.settings.map { "\($0.file): \($0.setting) changed" }
            lines.append("\(diff.decisions.count) decision(s) flip")
            StandardOutput.write(lines.map(\.escapingControlCharacters).joined(separator: "\n") + "\n")
            if !diff.decisions.isEmpty {
                StandardOutput.write(try JSONLine.encode(diff.decisions, pretty: true))
            }
        }
    }

    struct Rollback: AsyncParsableCommand, StateCommand {
        static let configuration = CommandConfiguration(
            commandName: "rollback",
            abstract: "Put a kept revision back in force, audited with a reason.",
            discussion: """
                Goes past a freeze and below the highest sequence applied (the state's highest \
                sequence stays, so the bundle rolled back from is not taken again as new), but \
                not past trust: when the state trusts signing keys, the kept revision's signature \
                must still hold with them. Every replica follows within a second.
                """)

        @Argument(help: ArgumentHelp("The revision, or at least its first 8 hex digits.", valueName: "revision"))
        var revision: String

        @Option(help: ArgumentHelp("Why (kept in the history and the audit log).", valueName: "text"))
        var reason: String

        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var loggingOptions: LoggingOptions

        func run() async throws {
            let engine = try await openEngine(
                state: stateOptions, logging: loggingOptions, access: .existing, restoring: false)
            await engine.restoreBundleInForceIfItLoads()
            let result = try await engine.rollback(to: revision, reason: reason, by: commandLineOperator)
            StandardOutput.write(
                "\(result.unchanged ? "already in force" : "rolled back to") \(result.bundle.revision)\n")
        }
    }

    struct Freeze: AsyncParsableCommand, StateCommand {
        static let configuration = CommandConfiguration(
            commandName: "freeze",
            abstract: "Freeze the policy in force: every new bundle is refused with the reason until unfreeze.")

        @Option(help: ArgumentHelp("Why (shown in every refusal).", valueName: "text"))
        var reason: String

        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var loggingOptions: LoggingOptions

        func run() async throws {
            let engine = try await openEngine(
                state: stateOptions, logging: loggingOptions, access: .existing, restoring: false)
            let freeze = try await engine.freeze(reason: reason, by: commandLineOperator)
            StandardOutput.write("frozen: \(freeze.reason)".escapingControlCharacters + "\n")
        }
    }

    struct Unfreeze: AsyncParsableCommand, StateCommand {
        static let configuration = CommandConfiguration(commandName: "unfreeze", abstract: "Lift the freeze.")

        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var loggingOptions: LoggingOptions

        func run() async throws {
            let engine = try await openEngine(
                state: stateOptions, logging: loggingOptions, access: .existing, restoring: false)
            let lifted = try await engine.unfreeze(by: commandLineOperator)
            StandardOutput.write(lifted ? "unfrozen\n" : "was not frozen\n")
        }
    }
}

extension BundleCommand {
    struct ResetSequence: AsyncParsableCommand, StateCommand {
        static let configuration = CommandConfiguration(
            commandName: "reset-sequence",
            abstract: "Lower the highest bundle sequence the state took, audited with a reason.",
            discussion: """
                A signed bundle is taken only when its sequence is above the highest one applied, \
                so that an older bundle is never replayed. When the signer's numbering starts \
                again (a new signing pipeline, a lost counter), lower the mark here: the bundle in \
                force stays, and the next signed bundle above --to is taken. Bundles signed before \
                become acceptable again too, which is why the reset needs a reason, and is kept in \
                the audit log with who did it. Every replica of a shared state follows at once.
                """)

        @Option(help: ArgumentHelp("Why (kept in the audit log).", valueName: "text"))
        var reason: String

        // Unconditional: `--to -1` is the value -1 (refused as such), not an option named -1.
        @Option(
            parsing: .unconditional,
            help: ArgumentHelp("The new highest sequence, below the current one; 0 takes any.", valueName: "n"))
        var to: Int64 = 0

        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var loggingOptions: LoggingOptions

        func run() async throws {
            let engine = try await openEngine(
                state: stateOptions, logging: loggingOptions, access: .existing, restoring: false)
            let before = try await engine.resetBundleSequence(to: to, reason: reason, by: commandLineOperator)
            StandardOutput.write("highest sequence reset from \(before) to \(to)\n")
        }
    }
}

/// Who applies from the command line, as the history records it.
var commandLineOperator: String {
    "cli" + (ProcessInfo.processInfo.environment["USER"].map { " (\($0))" } ?? "")
}

/// `custody trust`: the keys bundles must be signed with.
struct TrustCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trust",
        abstract: "Trust, list and revoke the public keys bundles must be signed with.",
        discussion: """
            Kept in the state, audited, and shared by every replica. From the first key on, every \
            bundle that comes in must be signed by a trusted, unrevoked key; a revoked key's \
            signature never counts, even beside a valid one.
            """,
        subcommands: [Add.self, List.self, Revoke.self]
    )

    struct Add: AsyncParsableCommand, StateCommand {
        static let configuration = CommandConfiguration(commandName: "add", abstract: "Trust a public key.")

        @Option(
            name: .customLong("public-key"), help: ArgumentHelp("The key (ed25519:<base64>).", valueName: "key"))
        var publicKey: String

        @Option(help: ArgumentHelp("What the key is, shown in lists.", valueName: "name"))
        var name: String?

        @Option(
            help: ArgumentHelp(
                "This installation's name: the key's signature counts only on bundles signed for it (custody bundle sign --audience).",
                valueName: "name"))
        var audience: String?

        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var loggingOptions: LoggingOptions

        func validate() throws {
            if let audience, !BundleManifest.isAudience(audience) {
                throw ValidationError("--audience must be 1 to 64 letters, digits, '.', '-' or '_'")
            }
        }

        func run() async throws {
            let key = try BundleSigningPublicKey(text: publicKey)
            let engine = try await openEngine(
                state: stateOptions, logging: loggingOptions, access: .readWrite, restoring: false)
            let record = try await engine.trust(key, name: name, audience: audience)
            StandardOutput.write("trusted \(record.keyID)\(record.audience.map { " for \($0)" } ?? "")\n")
        }
    }

    struct List: AsyncParsableCommand, StateCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "List the keys the state knows, revoked ones too.")

        @Flag(help: "One JSON array.")
        var json = false

        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var loggingOptions: LoggingOptions

        func run() async throws {
            let engine = try await openEngine(
                state: stateOptions, logging: loggingOptions, access: .existing, restoring: false)
            let keys = try await engine.trustedKeys()
            if json {
                StandardOutput.write(try JSONLine.encode(keys.map(TrustedKeyAnswer.init)))
                return
            }
            for key in keys {
                let status = key.revokedAt.map { "revoked \(formatTime($0))" } ?? "trusted"
                let audience = key.audience.map { "for \($0)" } ?? "any audience"
                StandardOutput.write(
                    "\(key.keyID)\t\(key.publicKey)\t\(key.name?.escapingControlCharacters ?? "-")\tadded \(formatTime(key.addedAt))\t\(status)\t\(audience)\n"
                )
            }
        }
    }

    struct Revoke: AsyncParsableCommand, StateCommand {
        static let configuration = CommandConfiguration(
            commandName: "revoke",
            abstract: "Revoke a key by id: its signatures never count again.")

        @Argument(help: ArgumentHelp("The key id (as `trust list` shows it).", valueName: "key-id"))
        var keyID: String

        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var loggingOptions: LoggingOptions

        func run() async throws {
            let engine = try await openEngine(
                state: stateOptions, logging: loggingOptions, access: .existing, restoring: false)
            try await engine.revokeTrust(keyID: keyID)
            StandardOutput.write("revoked \(keyID)\n")
        }
    }
}

/// `custody fleet status`: every replica serving from this state.
struct FleetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fleet",
        abstract: "Show every replica serving from this state: the revision it runs, its last contact and error.",
        subcommands: [Status.self]
    )

    struct Status: AsyncParsableCommand, StateCommand {
        static let configuration = CommandConfiguration(
            commandName: "status",
            abstract:
                "List the replicas (stale ones marked; gone ones expire after an hour). Exit 1 when one is behind or stale.",
            discussion: """
                Each `custody serve` records its status in the state every 5 seconds: its id (host, \
                process, start time), version, the revision and change it has in force, when it \
                last reached the state and its last error. Not heard from for 15 seconds: stale. \
                Behind: it reported another revision than the newest applied, after that one was \
                applied (a replica that has not reported since is not judged yet). Gone: not heard \
                from for 20 seconds (stale, and a status period more): stopped or replaced; shown, \
                and forgotten after an hour. Exits 1 while a replica that is not gone is stale or \
                behind, 0 once the fleet is whole.
                """)

        @Flag(help: "One JSON object.")
        var json = false

        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var loggingOptions: LoggingOptions

        func run() async throws {
            let engine = try await openEngine(
                state: stateOptions, logging: loggingOptions, access: .existing, restoring: false)
            let status = try await engine.fleetStatus()
            if json {
                struct Answer: Encodable {
                    var replicas: [ReplicaAnswer]
                    var behind: Int
                }
                StandardOutput.write(
                    try JSONLine.encode(
                        Answer(replicas: status.replicas.map(ReplicaAnswer.init), behind: status.behind)))
            } else {
                StandardOutput.write("newest revision: \(status.newestRevision ?? "none")\n")
                for replica in status.replicas {
                    let record = replica.record
                    let marks =
                        replica.isGone
                        ? ["gone"]
                        : [replica.isStale ? "stale" : nil, replica.isBehind ? "behind" : nil].compactMap { $0 }
                    StandardOutput.write(
                        "\(record.id)\t\(record.version)\t\(record.revision ?? "-")\tchange \(record.change)\tlast contact \(formatTime(record.lastContact))\t\(marks.isEmpty ? "current" : marks.joined(separator: ","))\(record.lastError.map { "\t" + $0 } ?? "")\n"
                    )
                }
            }
            if !status.isWhole { throw ExitCode.failure }
        }
    }
}
