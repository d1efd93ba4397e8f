import CustodyPolicy
public import CustodyProtection
public import CustodyStore
public import Foundation
import PostgresNIO

// The tables, as `CustodyDatabase` keeps them in SQLite (see its extensions for what each
// method means); only the SQL differs.

extension PostgresState {
    // MARK: Accounts and wipes

    public func recordAccounts(_ accounts: [SeenAccount], at date: Date) async throws(StoreError) {
        guard !accounts.isEmpty else { return }
        try await write("recording accounts", bound: .request) { session in
            try await Self.recordAccounts(accounts, at: date, in: session)
        }
    }

    static func recordAccounts(
        _ accounts: [SeenAccount], at date: Date, in session: PostgresSession
    ) async throws {
        for (owner, aliases) in accounts.map({ ($0.owner, $0.aliases) }) {
            try await session.execute(
                "INSERT INTO accounts (owner, first_seen) VALUES (\(owner), \(date)) ON CONFLICT DO NOTHING")
            for name in aliases where name != owner {
                try await session.execute(
                    "INSERT INTO account_aliases (alias, owner, since) VALUES (\(name), \(owner), \(date)) ON CONFLICT DO NOTHING"
                )
            }
        }
    }

    public func account(owner: String) async throws(StoreError) -> AccountRecord? {
        try await read("reading the account \(owner)", bound: .request) { session -> AccountRecord? in
            guard
                let firstSeen = try await session.value(
                    "SELECT first_seen FROM accounts WHERE owner = \(owner)", as: Date.self)
            else { return nil }
            let aliases = try await session.query(
                "SELECT alias FROM account_aliases WHERE owner = \(owner) ORDER BY alias COLLATE \"C\""
            ).map { try $0.decode(String.self) }
            return AccountRecord(owner: owner, aliases: aliases, firstSeen: firstSeen)
        }
    }

    public func aliases(ofAccount owner: String) async throws(StoreError) -> [String]? {
        try await read("reading the aliases of \(owner)", bound: .request) { session -> [String]? in
            guard try await session.value("SELECT 1 FROM accounts WHERE owner = \(owner)", as: Int32.self) != nil
            else { return nil }
            return try await session.query(
                "SELECT alias FROM account_aliases WHERE owner = \(owner) ORDER BY alias COLLATE \"C\""
            ).map { try $0.decode(String.self) }
        }
    }

    public func owners(named identifier: String) async throws(StoreError) -> [String] {
        try await read("looking up \(identifier)") { session in
            try await session.query(
                """
                SELECT owner FROM (
                    SELECT owner FROM accounts WHERE owner = \(identifier)
                    UNION SELECT owner FROM account_aliases WHERE alias = \(identifier)
                    UNION SELECT owner FROM account_keys WHERE owner = \(identifier)
                    UNION SELECT scope FROM secrets WHERE scope = \(identifier)
                    UNION SELECT account FROM check_ins WHERE account = \(identifier)
                ) AS named (owner) ORDER BY owner COLLATE "C"
                """
            ).map { try $0.decode(String.self) }
        }
    }

    public func accountsFirstSeen() async throws(StoreError) -> [String: Date] {
        let rows = try await read("reading accounts") { session in
            try await session.query("SELECT owner, first_seen FROM accounts").map { try $0.decode((String, Date).self) }
        }
        return Dictionary(rows, uniquingKeysWith: { first, _ in first })
    }

    @discardableResult
    public func wipe(identifiers: [String], account: String, reason: String, events: [EventRecord], at date: Date)
        async throws(StoreError) -> WipeCounts
    {
        try await write("wiping \(account)") { session -> WipeCounts in
            var keyVersions: [String: Int] = [:]
            var secrets = 0
            var checkIns = 0
            for identifier in identifiers {
                let keys = try await session.execute("DELETE FROM account_keys WHERE owner = \(identifier)")
                if keys > 0 { keyVersions[identifier] = keys }
                await secrets += try session.execute("DELETE FROM secrets WHERE scope = \(identifier)")
                await checkIns += try session.execute("DELETE FROM check_ins WHERE account = \(identifier)")
                try await session.execute("DELETE FROM launch_facts WHERE account = \(identifier)")
                try await session.execute(
                    """
                    INSERT INTO wiped_identifiers (identifier, account, at) VALUES (\(identifier), \(account), \(date))
                    ON CONFLICT (identifier) DO UPDATE SET account = excluded.account, at = excluded.at
                    """)
            }
            try await Self.audit(
                .wipe, account: account, action: "wipe",
                detail: AuditRecord.wipeDetail(
                    identifiers: identifiers, keyVersions: keyVersions, secrets: secrets, reason: reason), at: date,
                in: session)
            try await self.recordChange(.wipe, identifiers, at: date, in: session)
            return await WipeCounts(
                keyVersions: keyVersions, secrets: secrets, checkIns: checkIns,
                eventIDs: try Self.appendEvents(events, at: date, in: session))
        }
    }

    public func wipeRecord(of identifier: String) async throws(StoreError) -> WipeRecord? {
        try await read("reading the wipe record of \(identifier)", bound: .request) { session in
            try await session.query("SELECT account, at FROM wiped_identifiers WHERE identifier = \(identifier)").first
                .map {
                    let (account, at) = try $0.decode((String, Date).self)
                    return WipeRecord(account: account, at: at)
                }
        }
    }

    // MARK: Account keys and the master key record

    public func accountKeys(owner: String) async throws(StoreError) -> [WrappedAccountKey] {
        let rows = try await read("reading the keys of \(owner)", bound: .request) { session in
            try await session.query(
                "SELECT owner, version, created, nonce, ciphertext FROM account_keys WHERE owner = \(owner) ORDER BY version"
            )
            .map { try $0.decode((String, Int64, Date, Data, Data).self) }
        }
        var keys: [WrappedAccountKey] = []
        for row in rows {
            guard let owner = OwnerIdentifier(rawValue: row.0) else {
                throw corrupt("an account key has no valid owner")
            }
            guard
                let key = WrappedAccountKey(
                    stored: owner, version: row.1, created: row.2, nonce: row.3, ciphertext: row.4)
            else {
                throw corrupt("a key of \(owner) is damaged")
            }
            keys.append(key)
        }
        return keys
    }

    public func addAccountKey(_ key: WrappedAccountKey) async throws(StoreError) {
        try await write("adding key version \(key.version) of \(key.owner)", bound: .request) { session in
            try await session.execute(
                """
                INSERT INTO account_keys (owner, version, created, nonce, ciphertext)
                VALUES (\(key.owner.rawValue), \(Int64(key.version)), \(key.created), \(Data(key.nonce)), \(Data(key.ciphertext)))
                """)
            try await self.recordChange(.key, [key.owner.rawValue], at: key.created, in: session)
        }
    }

    @discardableResult
    public func removeAccountKeys(owner: String) async throws(StoreError) -> Int {
        try await write("deleting the keys of \(owner)") { session in
            let count = try await session.execute("DELETE FROM account_keys WHERE owner = \(owner)")
            if count > 0 { try await self.recordChange(.key, [owner], at: Date(), in: session) }
            return count
        }
    }

    public func accountKeyOwners() async throws(StoreError) -> [String] {
        try await read("listing key owners") { session in
            try await session.query("SELECT owner FROM account_keys GROUP BY owner ORDER BY owner COLLATE \"C\"").map {
                try $0.decode(String.self)
            }
        }
    }

    public func masterKeyRecord() async throws(StoreError) -> MasterKeyRecord? {
        let row = try await read("reading the master key record") { session in
            try await session.query(
                "SELECT kind, salt, ops_limit, mem_limit, check_nonce, check_ciphertext FROM master_key WHERE id = 1"
            ).first
                .map { try $0.decode((String, Data?, Int64?, Int64?, Data?, Data?).self) }
        }
        guard let row else { return nil }
        guard
            let record = MasterKeyRecord(
                stored: row.0, salt: row.1, opsLimit: row.2, memLimit: row.3, checkNonce: row.4, checkCiphertext: row.5)
        else {
            throw corrupt("the master key record is damaged (an unknown kind, or no check value)")
        }
        return record
    }

    public func saveMasterKeyRecord(_ record: MasterKeyRecord) async throws(StoreError) {
        try await write("saving the master key record") { session in
            try await session.execute(
                """
                INSERT INTO master_key (id, kind, salt, ops_limit, mem_limit, check_nonce, check_ciphertext)
                VALUES (1, \(record.kind.rawValue), \(record.salt.map { Data($0) }), \(record.opsLimit.map { Int64($0) }),
                        \(record.memLimit.map { Int64($0) }), \(Data(record.checkNonce)), \(Data(record.checkCiphertext)))
                """)
        }
    }

    public func keyGeneration() async throws(StoreError) -> Int64 {
        try await read("reading the key generation", bound: .request) { session in
            try await session.value("SELECT value FROM key_generation WHERE id = 1", as: Int64.self) ?? 0
        }
    }

    // MARK: Secrets

    public func saveSecret(_ secret: SealedSecret) async throws(StoreError) {
        try await write("saving the secret \(secret.identifier)") { session in
            try await session.execute(
                """
                INSERT INTO secrets (scope, identifier, kind, sealed, updated)
                VALUES (\(secret.scope), \(secret.identifier), \(secret.kind), \(Data(secret.sealed)), \(secret.updated))
                ON CONFLICT (scope, identifier) DO UPDATE SET kind = excluded.kind, sealed = excluded.sealed, updated = excluded.updated
                """)
            try await self.recordChange(.secret, [secret.scope], at: secret.updated, in: session)
        }
    }

    public func secret(scope: String, identifier: String) async throws(StoreError) -> SealedSecret? {
        try await read("reading secrets", bound: .request) { session in
            try await session.query(
                "SELECT scope, identifier, kind, sealed, updated FROM secrets WHERE scope = \(scope) AND identifier = \(identifier)"
            )
            .map(Self.secret).first
        }
    }

    public func secrets(scope: String) async throws(StoreError) -> [SealedSecret] {
        try await read("reading secrets") { session in
            try await session.query(
                "SELECT scope, identifier, kind, sealed, updated FROM secrets WHERE scope = \(scope) ORDER BY identifier COLLATE \"C\""
            )
            .map(Self.secret)
        }
    }

    private static func secret(_ row: PostgresRow) throws -> SealedSecret {
        let (scope, identifier, kind, sealed, updated) = try row.decode((String, String, String, Data, Date).self)
        return SealedSecret(scope: scope, identifier: identifier, kind: kind, sealed: [UInt8](sealed), updated: updated)
    }

    @discardableResult
    public func removeSecret(scope: String, identifier: String) async throws(StoreError) -> Bool {
        try await write("removing the secret \(identifier)") { session in
            guard
                try await session.execute("DELETE FROM secrets WHERE scope = \(scope) AND identifier = \(identifier)")
                    > 0
            else { return false }
            try await self.recordChange(.secret, [scope], at: Date(), in: session)
            return true
        }
    }

    @discardableResult
    public func removeSecrets(scope: String) async throws(StoreError) -> Int {
        try await write("removing the secrets of \(scope)") { session in
            let count = try await session.execute("DELETE FROM secrets WHERE scope = \(scope)")
            if count > 0 { try await self.recordChange(.secret, [scope], at: Date(), in: session) }
            return count
        }
    }

    // MARK: Check-ins

    public func checkIn(account: String, at date: Date) async throws(StoreError) {
        try await write("recording a check-in of \(account)", bound: .request) { session in
            try await session.execute(
                """
                INSERT INTO check_ins (account, at) VALUES (\(account), \(date))
                ON CONFLICT (account) DO UPDATE SET at = excluded.at WHERE excluded.at > check_ins.at
                """)
        }
    }

    public func lastCheckIn(account: String) async throws(StoreError) -> Date? {
        try await read("reading the check-in of \(account)", bound: .request) { session in
            try await session.value("SELECT at FROM check_ins WHERE account = \(account)", as: Date.self)
        }
    }

    public func checkIns() async throws(StoreError) -> [String: Date] {
        let rows = try await read("reading check-ins") { session in
            try await session.query("SELECT account, at FROM check_ins").map { try $0.decode((String, Date).self) }
        }
        return Dictionary(rows, uniquingKeysWith: { first, _ in first })
    }

    public func removeCheckIn(account: String) async throws(StoreError) {
        try await write("removing the check-in of \(account)") { session in
            try await session.execute("DELETE FROM check_ins WHERE account = \(account)")
        }
    }

    public func recordLaunchFacts(account: String, facts: String, at date: Date) async throws(StoreError) {
        try await write("recording the launch facts of \(account)", bound: .request) { session in
            try await session.execute(
                """
                INSERT INTO launch_facts (account, facts, at) VALUES (\(account), \(facts), \(date))
                ON CONFLICT (account) DO UPDATE SET facts = excluded.facts, at = excluded.at
                """)
        }
    }

    public func launchFacts(account: String) async throws(StoreError) -> StoredLaunchFacts? {
        let rows = try await read("reading the launch facts of \(account)", bound: .request) { session in
            try await session.query("SELECT facts, at FROM launch_facts WHERE account = \(account)").map {
                try $0.decode((String, Date).self)
            }
        }
        return rows.first.map { StoredLaunchFacts(facts: $0.0, at: $0.1) }
    }

    public func isActingOnLaunch() async throws(StoreError) -> Bool {
        try await read("reading whether launch outcomes are acted on") { session in
            try await Self.setting("act_on_launch", in: session) == "true"
        }
    }

    public func setActingOnLaunch(_ acting: Bool) async throws(StoreError) {
        try await write("recording whether launch outcomes are acted on") { session in
            try await self.setSetting("act_on_launch", acting ? "true" : "false", in: session)
        }
    }

    // MARK: Bundle history

    @discardableResult
    public func recordBundle(
        contentHash: String, source: String, result: BundleRecord.Result, message: String?,
        files: [StoredFile]?, provenance: BundleProvenance,
        accounts: [SeenAccount], reach: [PolicyReach],
        events: [EventRecord],
        retaining: Int, inForceFrom expected: String?, at date: Date
    ) async throws(StoreError) -> RecordedBundle {
        let (id, eventIDs, existing) = try await write("recording a bundle") {
            session -> (Int64, [Int64], BundleRecord?) in
            // What needs no rule and no order first, outside the change counter's lock, so that
            // a slow writer holds the lock every replica's writes wait for as briefly as it can:
            // accounts seen and policy reach are idempotent first-seen records, written in one
            // order (sorted) by every writer so that two cannot deadlock on them.
            try await Self.recordAccounts(accounts.sorted { $0.owner < $1.owner }, at: date, in: session)
            for (account, policies) in reach.map({ ($0.account, $0.policies.sorted()) }).sorted(by: { $0.0 < $1.0 }) {
                for policy in policies {
                    try await session.execute(
                        "INSERT INTO policy_reach (account, policy, first_reached) VALUES (\(account), \(policy), \(date)) ON CONFLICT DO NOTHING"
                    )
                }
            }
            // Then the change counter's lock: bundles are numbered in history in the order they
            // commit, so the last applied by id is the last applied by change revision,
            // whichever replicas write at once. The same lock makes the state's rules below
            // (freeze, sequence, trust) hold against every other writer.
            try await session.execute("SELECT value FROM counters WHERE name = 'change' FOR UPDATE")
            if result == .applied, files != nil {
                let last = try await session.query(
                    "SELECT \(unescaped: Self.historyColumns) FROM bundle_history WHERE result <> 'rejected' ORDER BY id DESC LIMIT 1"
                ).first.map({ row throws in try self.bundleRecord(row) })
                // The same files under the same signature in force already: another writer
                // applied them first. Nothing is written twice; the caller is told, and
                // announces nothing.
                if let last, last.contentHash == contentHash, last.provenance.signature == provenance.signature {
                    return (last.id, [], last)
                }
                if let expected, let superseded = BundleRecord.supersession(of: last, expecting: expected) {
                    throw superseded
                }
            }
            let highest = try await self.highestSequence(in: session)
            // Only a bundle that becomes the installation's policy (one with its files) answers
            // to the state's rules; an in-memory one is this process's alone.
            if result == .applied, files != nil {
                let trusted = try await session.query("SELECT key_id, revoked_at IS NOT NULL FROM trusted_keys").map {
                    row throws in
                    let (id, revoked) = try row.decode((String, Bool).self)
                    return (id: id, revoked: revoked)
                }
                // A freeze that cannot be read refuses the bundle: it is never taken for none.
                var frozen: BundleFreeze?
                if let text = try await Self.setting(Self.freezeSetting, in: session), !text.isEmpty {
                    do {
                        frozen = try BundleFreeze.decode(text)
                    } catch {
                        throw self.corrupt(
                            "the bundle freeze setting is not readable, so no bundle is applied: \(error)")
                    }
                }
                if let refusal = BundleAdmission.refusal(
                    of: provenance, frozen: frozen, highestSequence: highest, trusted: trusted)
                {
                    throw StoreError(.refused, refusal)
                }
            }
            guard
                let id = try await session.value(
                    """
                    INSERT INTO bundle_history (content_hash, applied_at, source, result, message, sequence, signers, signature, applied_by, reason, rollback)
                    VALUES (\(contentHash), \(date), \(source), \(result.rawValue), \(message), \(provenance.sequence),
                        \(StateChange.encode(provenance.signers)), \(provenance.signature.map { Data($0) }), \(provenance.appliedBy),
                        \(provenance.reason), \(provenance.isRollback))
                    RETURNING id
                    """, as: Int64.self)
            else { throw self.corrupt("recording a bundle returned no id") }
            if result == .applied, let sequence = provenance.sequence, !provenance.isRollback, sequence > highest {
                try await session.execute(
                    "INSERT INTO settings (name, value) VALUES (\(Self.sequenceSetting), \(String(sequence))) ON CONFLICT (name) DO UPDATE SET value = excluded.value"
                )
            }
            if result == .applied, let files,
                try await session.value(
                    "INSERT INTO bundle_revisions (content_hash, stored_at) VALUES (\(contentHash), \(date)) ON CONFLICT DO NOTHING RETURNING content_hash",
                    as: String.self) != nil
            {
                for file in files {
                    try await session.execute(
                        "INSERT INTO bundle_revision_files (content_hash, name, bytes) VALUES (\(contentHash), \(file.name), \(Data(file.bytes)))"
                    )
                }
            }
            if result == .applied, files != nil {
                // The shadow's files are in force now: it has nothing left to compare.
                _ = try await self.endShadow(how: "promoted", revision: contentHash, at: date, in: session)
            }
            try await Self.audit(
                .bundle, account: nil,
                action: result == .rejected ? "reject" : provenance.isRollback ? "rollback" : "apply",
                detail: AuditRecord.bundleDetail(
                    contentHash: contentHash, source: source, message: message, provenance: provenance),
                at: date, in: session)
            if result == .applied, files != nil {
                try await self.recordChange(.bundle, [contentHash], at: date, in: session)
            }
            let eventIDs = try await Self.appendEvents(events, at: date, in: session)
            try await Self.pruneBundleHistory(retaining: max(retaining, 1), in: session)
            return (id, eventIDs, nil)
        }
        if let existing { return RecordedBundle(record: existing, eventIDs: [], alreadyApplied: true) }
        return RecordedBundle(
            record: BundleRecord(
                id: id, contentHash: contentHash, appliedAt: date, source: source, result: result, message: message,
                provenance: provenance),
            eventIDs: eventIDs)
    }

    static let sequenceSetting = "bundle-sequence"
    /// The last history id a sequence reset put behind it (see `CustodyDatabase`).
    static let sequenceResetSetting = "bundle-sequence-reset-after"
    static let freezeSetting = "bundle-freeze"
    static let historyColumns =
        "id, content_hash, applied_at, source, result, message, sequence, signers, signature, applied_by, reason, rollback"

    /// Deletes applied rows past the newest `retaining` applied ones (never the row of the
    /// bundle in force) and refused rows past the newest `retaining` refused ones, then every
    /// stored revision no applied row names.
    private static func pruneBundleHistory(retaining: Int, in session: PostgresSession) async throws {
        let count =
            try await session.value(
                "SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM bundle_history GROUP BY result) c",
                as: Int64.self) ?? 0
        guard count > retaining else { return }
        try await session.execute(
            """
            DELETE FROM bundle_history WHERE id NOT IN (
                SELECT id FROM (SELECT id, row_number() OVER (PARTITION BY result ORDER BY id DESC) AS rank FROM bundle_history) r
                WHERE rank <= \(retaining))
            AND id IS DISTINCT FROM (
                SELECT max(id) FROM bundle_history WHERE result = 'applied' AND content_hash IN (SELECT content_hash FROM bundle_revisions))
            """)
        try await session.execute(
            "DELETE FROM bundle_revisions WHERE content_hash NOT IN (SELECT content_hash FROM bundle_history WHERE result = 'applied')"
        )
    }

    public func policyReach() async throws(StoreError) -> [String: [String: Date]] {
        try await read("reading when policies reached accounts") { session in
            var reach: [String: [String: Date]] = [:]
            for row in try await session.query("SELECT account, policy, first_reached FROM policy_reach") {
                let (account, policy, at) = try row.decode((String, String, Date).self)
                reach[account, default: [:]][policy] = at
            }
            return reach
        }
    }

    public func bundleHistory(limit: Int) async throws(StoreError) -> [BundleRecord] {
        try await read("reading the bundle history") { session in
            try await session.query(
                "SELECT \(unescaped: Self.historyColumns) FROM bundle_history ORDER BY id DESC LIMIT \(limit)"
            )
            .map { row throws in try self.bundleRecord(row) }
        }
    }

    private func bundleRecord(_ row: PostgresRow) throws -> BundleRecord {
        let (id, hash, at, source, result, message, sequence, signers, signature, appliedBy, reason, rollback) =
            try row.decode(
                (Int64, String, Date, String, String, String?, Int64?, String, Data?, String?, String?, Bool).self)
        guard let result = BundleRecord.Result(rawValue: result) else {
            throw corrupt("a bundle history row is damaged")
        }
        return BundleRecord(
            id: id, contentHash: hash, appliedAt: at, source: source, result: result, message: message,
            provenance: BundleProvenance(
                sequence: sequence, signers: StateChange.decode(signers), signature: signature.map { [UInt8]($0) },
                appliedBy: appliedBy, reason: reason, isRollback: rollback))
    }

    public func storedBundle(revision contentHash: String) async throws(StoreError) -> StoredBundle? {
        try await read("reading a kept bundle") { session -> StoredBundle? in
            guard
                let row = try await session.query(
                    """
                    SELECT \(unescaped: Self.historyColumns) FROM bundle_history
                    WHERE result <> 'rejected' AND content_hash = \(contentHash)
                    AND content_hash IN (SELECT content_hash FROM bundle_revisions) ORDER BY id DESC LIMIT 1
                    """
                ).first
            else { return nil }
            return await StoredBundle(
                record: try self.bundleRecord(row), files: try Self.files(ofRevision: contentHash, in: session))
        }
    }

    /// A stored revision's files, in byte order of their names.
    private static func files(ofRevision contentHash: String, in session: PostgresSession) async throws -> [StoredFile]
    {
        try await session.query(
            "SELECT name, bytes FROM bundle_revision_files WHERE content_hash = \(contentHash) ORDER BY name COLLATE \"C\""
        ).map { row in
            let (name, bytes) = try row.decode((String, Data).self)
            return StoredFile(name: name, bytes: [UInt8](bytes))
        }
    }

    public func bundleSequence() async throws(StoreError) -> Int64 {
        try await read("reading the highest bundle sequence") { session in
            try await self.highestSequence(in: session)
        }
    }

    /// The highest sequence ever applied: the setting that keeps it (at least 1, no setting is 0;
    /// anything else is damage) and the history's own record of it since the last reset,
    /// whichever is higher.
    private func highestSequence(in session: PostgresSession) async throws -> Int64 {
        let kept = try await StoredNumber.integer(
            Self.setting(Self.sequenceSetting, in: session), setting: Self.sequenceSetting, minimum: 1, path: path)
        let resetAfter = try await StoredNumber.integer(
            Self.setting(Self.sequenceResetSetting, in: session), setting: Self.sequenceResetSetting, minimum: 0,
            path: path)
        let recorded =
            try await session.value(
                "SELECT max(sequence) FROM bundle_history WHERE result = 'applied' AND NOT rollback AND id > \(resetAfter)",
                as: Int64.self)
            ?? 0
        return max(kept, recorded)
    }

    public func resetBundleSequence(
        to sequence: Int64, reason: String, by who: String?, at date: Date
    ) async throws(StoreError) -> Int64 {
        try await write("resetting the bundle sequence") { session in
            // Serialized with every bundle recorded (which takes the same row lock first).
            try await session.execute("SELECT value FROM counters WHERE name = 'change' FOR UPDATE")
            let before = try await self.highestSequence(in: session)
            let lastRow = try await session.value("SELECT max(id) FROM bundle_history", as: Int64.self) ?? 0
            if sequence > 0 {
                try await self.setSetting(Self.sequenceSetting, String(sequence), in: session)
            } else {
                try await session.execute("DELETE FROM settings WHERE name = \(Self.sequenceSetting)")
            }
            try await self.setSetting(Self.sequenceResetSetting, String(lastRow), in: session)
            try await Self.audit(
                .bundle, account: nil, action: "reset-sequence",
                detail: "from \(before) to \(sequence): \(reason)" + (who.map { " (by \($0))" } ?? ""), at: date,
                in: session)
            return before
        }
    }

    public func lastAppliedBundleFiles() async throws(StoreError) -> StoredBundle? {
        try await read("reading the last applied bundle") { session -> StoredBundle? in
            guard
                let row = try await session.query(
                    """
                    SELECT \(unescaped: Self.historyColumns) FROM bundle_history
                    WHERE result <> 'rejected' AND content_hash IN (SELECT content_hash FROM bundle_revisions) ORDER BY id DESC LIMIT 1
                    """
                ).first
            else { return nil }
            let record = try self.bundleRecord(row)
            return await StoredBundle(
                record: record, files: try Self.files(ofRevision: record.contentHash, in: session))
        }
    }

    public func lastApplication(ofRevision contentHash: String) async throws(StoreError) -> Int64? {
        try await read("reading the bundle history") { session in
            try await session.value(
                "SELECT max(id) FROM bundle_history WHERE content_hash = \(contentHash) AND result = 'applied'",
                as: Int64.self)
        }
    }

    public func storedBundleRevisions() async throws(StoreError) -> [String: Int] {
        try await read("reading the stored bundle revisions") { session in
            var revisions: [String: Int] = [:]
            for row in try await session.query(
                """
                SELECT r.content_hash, coalesce(sum(octet_length(f.bytes)), 0)::bigint FROM bundle_revisions r
                LEFT JOIN bundle_revision_files f ON f.content_hash = r.content_hash GROUP BY r.content_hash
                """)
            {
                let (hash, bytes) = try row.decode((String, Int64).self)
                revisions[hash] = Int(bytes)
            }
            return revisions
        }
    }

    public func lastAppliedBundle() async throws(StoreError) -> BundleRecord? {
        try await read("reading the bundle history") { session in
            try await session.query(
                "SELECT \(unescaped: Self.historyColumns) FROM bundle_history WHERE result <> 'rejected' ORDER BY id DESC LIMIT 1"
            ).first.map { row throws in try self.bundleRecord(row) }
        }
    }

    // MARK: Audit and settings

    static func setting(_ name: String, in session: PostgresSession) async throws -> String? {
        try await session.value("SELECT value FROM settings WHERE name = \(name)", as: String.self)
    }

    func setSetting(_ name: String, _ value: String, in session: PostgresSession) async throws {
        try await session.execute(
            "INSERT INTO settings (name, value) VALUES (\(name), \(value)) ON CONFLICT (name) DO UPDATE SET value = excluded.value"
        )
        try await recordChange(.setting, [name], at: Date(), in: session)
    }

    public func isAuditEnabled() async throws(StoreError) -> Bool {
        try await read("reading the audit setting") { session in
            try await StoredSwitch.isOn(
                Self.setting("audit", in: session), setting: "audit", absent: true, path: self.path)
        }
    }

    public func setAuditEnabled(_ enabled: Bool) async throws(StoreError) {
        try await write("changing the audit setting") { session in
            guard await (try Self.setting("audit", in: session) != "off") != enabled else { return }
            let entry = AuditRecord.switched(.log, on: enabled, at: Date())
            if !enabled { try await Self.audit(entry, in: session) }
            try await self.setSetting("audit", enabled ? "on" : "off", in: session)
            if enabled { try await Self.audit(entry, in: session) }
        }
    }

    public func isDecisionAuditEnabled() async throws(StoreError) -> Bool {
        try await read("reading the decision audit setting") { session in
            let audit = try await Self.setting("audit", in: session)
            let decisions = try await Self.setting("audit_decisions", in: session)
            return try StoredSwitch.isOn(audit, setting: "audit", absent: true, path: self.path)
                && StoredSwitch.isOn(decisions, setting: "audit_decisions", absent: false, path: self.path)
        }
    }

    public func setDecisionAuditEnabled(_ enabled: Bool) async throws(StoreError) {
        try await write("changing the decision audit setting") { session in
            guard await (try Self.setting("audit_decisions", in: session) == "on") != enabled else { return }
            try await self.setSetting("audit_decisions", enabled ? "on" : "off", in: session)
            try await Self.audit(AuditRecord.switched(.decisions, on: enabled, at: Date()), in: session)
        }
    }

    @discardableResult
    public func audit(_ records: [AuditRecord]) async throws(StoreError) -> Int {
        guard !records.isEmpty else { return 0 }
        return try await write("writing the audit log", bound: .request) { session in
            guard try await Self.setting("audit", in: session) != "off" else { return 0 }
            for record in records {
                try await session.execute(
                    """
                    INSERT INTO audit_log (at, kind, account, action, allowed, detail, decision_id, query, context, facts, outcome)
                    VALUES (\(record.at), \(record.kind.rawValue), \(record.account), \(record.action), \(record.allowed), \(record.detail), \(record.decisionID), \(record.asked?.line), \(record.asked?.context), \(record.asked?.recordedFacts), \(record.asked?.outcome))
                    """)
            }
            return records.count
        }
    }

    public func pruneAudit(before date: Date, limit: Int, at now: Date) async throws(StoreError) -> Int {
        try await write("pruning the audit log") { session in
            let deleted = try await session.execute(
                "DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE at < \(date) ORDER BY at LIMIT \(limit))"
            )
            if deleted > 0 {
                try await Self.audit(
                    .audit, account: nil, action: "prune",
                    detail: "\(deleted) entries from before \(date.formatted(Date.ISO8601FormatStyle(timeZone: .gmt)))",
                    at: now, in: session)
            }
            return deleted
        }
    }

    static func audit(
        _ kind: AuditEntry.Kind, account: String?, action: String, detail: String?, at date: Date,
        in session: PostgresSession
    ) async throws {
        // The texts as `AuditRecord` keeps them (escaped: PostgreSQL refuses a NUL in text).
        try await audit(AuditRecord(kind, account: account, action: action, detail: detail, at: date), in: session)
    }

    static func audit(_ record: AuditRecord, in session: PostgresSession) async throws {
        guard try await setting("audit", in: session) != "off" else { return }
        try await session.execute(
            "INSERT INTO audit_log (at, kind, account, action, detail) VALUES (\(record.at), \(record.kind.rawValue), \(record.account), \(record.action), \(record.detail))"
        )
    }

    public func auditEntries(since: Date?, after id: Int64, limit: Int) async throws(StoreError) -> [AuditEntry] {
        let since = since ?? Date(timeIntervalSince1970: -62_135_596_800)
        return try await auditEntries("WHERE at >= \(since) AND id > \(id) ORDER BY id LIMIT \(limit)")
    }

    public func auditDecisions(from: Date, to: Date, action: String?, after id: Int64, limit: Int)
        async throws(StoreError) -> [AuditEntry]
    {
        try await auditEntries(
            """
            WHERE kind = 'decision' AND at >= \(from) AND at < \(to) AND (\(action)::text IS NULL OR action = \(action))
                AND id > \(id) ORDER BY id LIMIT \(limit)
            """)
    }

    public func auditDecisionCount(from: Date, to: Date, action: String?) async throws(StoreError) -> Int {
        try await read("counting the audit log's decisions") { session in
            let rows = try await session.query(
                """
                SELECT count(*) FROM audit_log
                WHERE kind = 'decision' AND at >= \(from) AND at < \(to) AND (\(action)::text IS NULL OR action = \(action))
                """)
            return Int(try rows.first?.decode(Int64.self) ?? 0)
        }
    }

    /// The entries `condition` (a `WHERE` clause with its order and limit) selects.
    private func auditEntries(_ condition: PostgresQuery) async throws(StoreError) -> [AuditEntry] {
        var query: PostgresQuery =
            "SELECT id, at, kind, account, action, allowed, detail, decision_id, query, context, facts, outcome FROM audit_log "
        query.sql += condition.sql
        query.binds = condition.binds
        let rows = try await read("reading the audit log") { [query] session in
            try await session.query(query).map {
                try $0.decode(
                    (Int64, Date, String, String?, String, Bool?, String?, String?, String?, String?, String?, String?)
                        .self)
            }
        }
        var entries: [AuditEntry] = []
        for row in rows {
            guard let kind = AuditEntry.Kind(rawValue: row.2) else { throw corrupt("an audit row is damaged") }
            var asked: AuditedQuery?
            if let line = row.8 {
                guard let context = row.9 else {
                    throw corrupt("audit entry \(row.0) names a query without the context it was decided in")
                }
                asked = AuditedQuery(line: line, context: context, recordedFacts: row.10, outcome: row.11)
            }
            entries.append(
                AuditEntry(
                    id: row.0, at: row.1, kind: kind, account: row.3, action: row.4, allowed: row.5, detail: row.6,
                    decisionID: row.7, asked: asked))
        }
        return entries
    }

    public func installationContext() async throws(StoreError) -> InstallationContext {
        try await read("reading the installation's context") { session in
            await InstallationContext(
                platform: try Self.setting("context_platform", in: session),
                appID: try Self.setting("context_app", in: session),
                managementLevel: try Self.setting("context_management_level", in: session),
                precedence: try Self.setting("precedence", in: session))
        }
    }

    public func recordInstallationContext(
        platform: String?, appID: String?, managementLevel: String?, precedence: String?
    ) async throws(StoreError) {
        try await write("recording the installation's context") { session in
            for (name, value) in [
                ("context_platform", platform), ("context_app", appID), ("context_management_level", managementLevel),
                ("precedence", precedence),
            ] {
                guard let value else { continue }
                try await self.setSetting(name, value, in: session)
            }
        }
    }

    // MARK: The event log

    @discardableResult
    public func appendEvents(_ records: [EventRecord], at date: Date) async throws(StoreError) -> [Int64] {
        guard !records.isEmpty else { return [] }
        return try await write("appending to the event log") { session in
            try await Self.appendEvents(records, at: date, in: session)
        }
    }

    /// Numbers events under the 'event' counter's row lock (so ids are in commit order) and
    /// prunes the log past its retention.
    static func appendEvents(_ records: [EventRecord], at date: Date, in session: PostgresSession) async throws
        -> [Int64]
    {
        guard !records.isEmpty,
            let last = try await session.value(
                "UPDATE counters SET value = value + \(Int64(records.count)) WHERE name = 'event' RETURNING value",
                as: Int64.self)
        else { return [] }
        var ids: [Int64] = []
        for (offset, record) in records.enumerated() {
            let id = last - Int64(records.count) + 1 + Int64(offset)
            try await session.execute(
                "INSERT INTO events (id, at, name, body) VALUES (\(id), \(date), \(record.name), \(Data(record.body)))")
            ids.append(id)
        }
        let retention =
            await Int64(try setting("event_retention", in: session) ?? "") ?? CustodyDatabase.defaultEventRetention
        try await session.execute("DELETE FROM events WHERE id <= \(last - retention)")
        return ids
    }

    public func events(after id: Int64, limit: Int) async throws(StoreError) -> [StoredEvent] {
        try await read("reading the event log") { session in
            try await session.query("SELECT id, at, name, body FROM events WHERE id > \(id) ORDER BY id LIMIT \(limit)")
                .map {
                    row in
                    let (id, at, name, body) = try row.decode((Int64, Date, String, Data).self)
                    return StoredEvent(id: id, at: at, name: name, body: [UInt8](body))
                }
        }
    }

    public func eventBounds() async throws(StoreError) -> LogBounds {
        try await read("reading the event log") { session in
            await LogBounds(
                oldest: try session.value("SELECT min(id) FROM events", as: Int64.self),
                newest: try session.value("SELECT value FROM counters WHERE name = 'event'", as: Int64.self) ?? 0
            )
        }
    }

    public func setEventRetention(_ count: Int64) async throws(StoreError) {
        try await write("changing the event retention") { session in
            try await session.execute(
                "INSERT INTO settings (name, value) VALUES ('event_retention', \(String(max(1, count)))) ON CONFLICT (name) DO UPDATE SET value = excluded.value"
            )
        }
    }

    // MARK: Tokens

    public func addToken(_ token: TokenRecord) async throws(StoreError) {
        try await write("storing a token") { session in
            try await session.execute(
                """
                INSERT INTO tokens (id, name, scopes, hash, created, expires)
                VALUES (\(token.id), \(token.name), \(token.scopes.joined(separator: " ")), \(Data(token.hash)), \(token.created), \(token.expires))
                """)
            try await Self.bumpTokenGeneration(session)
            try await self.recordChange(.token, [token.id], at: token.created, in: session)
            try await Self.audit(
                .token, account: nil, action: "create", detail: "\(token.id) (\(token.scopes.joined(separator: " ")))",
                at: token.created, in: session)
        }
    }

    @discardableResult
    public func revokeToken(id: String, at date: Date) async throws(StoreError) -> Bool {
        try await write("revoking a token") { session in
            guard
                try await session.execute("UPDATE tokens SET revoked = \(date) WHERE id = \(id) AND revoked IS NULL")
                    > 0
            else { return false }
            try await Self.bumpTokenGeneration(session)
            try await self.recordChange(.token, [id], at: date, in: session)
            try await Self.audit(.token, account: nil, action: "revoke", detail: id, at: date, in: session)
            return true
        }
    }

    public func rotateToken(id: String, successor: TokenRecord, expires: Date) async throws(StoreError) -> Bool {
        try await write("rotating a token") { session in
            guard
                try await session.execute(
                    """
                    UPDATE tokens SET expires = CASE WHEN expires IS NULL OR expires > \(expires) THEN \(expires) ELSE expires END,
                        rotated_to = \(successor.id)
                    WHERE id = \(id) AND revoked IS NULL AND rotated_to IS NULL AND (expires IS NULL OR expires > \(successor.created))
                    """) > 0
            else { return false }
            try await session.execute(
                """
                INSERT INTO tokens (id, name, scopes, hash, created, expires)
                VALUES (\(successor.id), \(successor.name), \(successor.scopes.joined(separator: " ")), \(Data(successor.hash)), \(successor.created), \(successor.expires))
                """)
            try await Self.bumpTokenGeneration(session)
            try await self.recordChange(.token, [id, successor.id], at: successor.created, in: session)
            try await Self.audit(
                .token, account: nil, action: "rotate",
                detail:
                    "\(id) -> \(successor.id) (\(successor.scopes.joined(separator: " "))); \(id) valid until \(expires.formatted(.iso8601))",
                at: successor.created, in: session)
            return true
        }
    }

    public func recordTokenUse(id: String, at date: Date) async throws(StoreError) {
        try await write("recording a token's use") { session in
            try await session.execute(
                "UPDATE tokens SET last_used = \(date) WHERE id = \(id) AND (last_used IS NULL OR last_used < \(date))")
        }
    }

    private static let tokenColumns = "id, name, scopes, hash, created, revoked, expires, last_used"

    public func token(id: String) async throws(StoreError) -> TokenRecord? {
        try await read("reading tokens", bound: .request) { session in
            try await session.query("SELECT \(unescaped: Self.tokenColumns) FROM tokens WHERE id = \(id)").map(
                Self.token
            ).first
        }
    }

    public func tokens() async throws(StoreError) -> [TokenRecord] {
        try await read("reading tokens") { session in
            try await session.query(
                "SELECT \(unescaped: Self.tokenColumns) FROM tokens ORDER BY created, id COLLATE \"C\""
            ).map(Self.token)
        }
    }

    private static func token(_ row: PostgresRow) throws -> TokenRecord {
        let (id, name, scopes, hash, created, revoked, expires, lastUsed) = try row.decode(
            (String, String?, String, Data, Date, Date?, Date?, Date?).self)
        return TokenRecord(
            id: id, name: name, scopes: scopes.split(separator: " ").map(String.init), hash: [UInt8](hash),
            created: created, revoked: revoked, expires: expires, lastUsed: lastUsed)
    }

    public func tokenGeneration() async throws(StoreError) -> Int64 {
        try await read("reading the token generation") { session in
            await Int64(try Self.setting("token_generation", in: session) ?? "0") ?? 0
        }
    }

    private static func bumpTokenGeneration(_ session: PostgresSession) async throws {
        try await session.execute(
            """
            INSERT INTO settings (name, value) VALUES ('token_generation', '1')
            ON CONFLICT (name) DO UPDATE SET value = (settings.value::bigint + 1)::text
            """)
    }
}
