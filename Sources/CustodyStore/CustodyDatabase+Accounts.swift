public import Foundation
import GRDB

/// An account as the state knows it: its canonical identifier and every identifier that names
/// it now or named it once.
public struct AccountRecord: Sendable, Hashable {
    /// The canonical identifier (`oid:...`, or `upn:...` for an account the tenant lists by
    /// UPN only): what keys, secrets and check-ins are kept under.
    public let owner: String
    /// Every other identifier known for it, sorted.
    public let aliases: [String]
    /// When the installation first saw it.
    public let firstSeen: Date

    package init(owner: String, aliases: [String], firstSeen: Date) {
        self.owner = owner
        self.aliases = aliases
        self.firstSeen = firstSeen
    }
}

/// What a wipe deleted, per identifier.
public struct WipeCounts: Sendable, Hashable {
    /// Key versions deleted, by the identifier they were kept under (only identifiers that had
    /// some).
    public let keyVersions: [String: Int]
    /// Secrets deleted.
    public let secrets: Int
    /// Check-ins deleted.
    public let checkIns: Int
    /// The ids of the events appended with the wipe.
    public let eventIDs: [Int64]

    package init(keyVersions: [String: Int], secrets: Int, checkIns: Int, eventIDs: [Int64]) {
        self.keyVersions = keyVersions
        self.secrets = secrets
        self.checkIns = checkIns
        self.eventIDs = eventIDs
    }

    /// Key versions deleted in all.
    public var totalKeyVersions: Int { keyVersions.values.reduce(0, +) }
}

extension CustodyDatabase {
    /// Records that the installation sees these accounts now: each canonical identifier with
    /// the aliases it has. Accounts and aliases already recorded keep their first-seen times.
    public func recordAccounts(_ accounts: [SeenAccount], at date: Date) async throws(StoreError) {
        guard !accounts.isEmpty else { return }
        try await write("recording accounts") { db in try Self.recordAccounts(accounts, at: date, in: db) }
    }

    static func recordAccounts(_ accounts: [SeenAccount], at date: Date, in db: Database) throws {
        // Accounts and aliases already recorded keep their first-seen times.
        for (owner, aliases) in accounts.map({ ($0.owner, $0.aliases) }) {
            try AccountRow(owner: owner, firstSeen: date).insert(db, onConflict: .ignore)
            for name in aliases where name != owner {
                try AccountAliasRow(alias: name, owner: owner, since: date).insert(db, onConflict: .ignore)
            }
        }
    }

    /// The account recorded under `owner`, if any.
    public func account(owner: String) async throws(StoreError) -> AccountRecord? {
        try await read("reading the account \(owner)") { db in
            guard let account = try AccountRow.fetchOne(db, key: owner) else { return nil }
            let aliases = try AccountAliasRow.filter(Column("owner") == owner).order(Column("alias")).fetchAll(db)
            return AccountRecord(owner: owner, aliases: aliases.map(\.alias), firstSeen: account.firstSeen)
        }
    }

    public func aliases(ofAccount owner: String) async throws(StoreError) -> [String]? {
        try await read("reading the aliases of \(owner)") { db in
            guard try AccountRow.filter(Column("owner") == owner).fetchCount(db) > 0 else { return nil }
            return try String.fetchAll(
                db, sql: "SELECT alias FROM account_aliases WHERE owner = ? ORDER BY alias", arguments: [owner])
        }
    }

    /// The canonical identifiers of the accounts `identifier` names: the account recorded under
    /// it, every account it is (or was) an alias of, and the identifier itself when keys,
    /// secrets or a check-in are kept under it (state written before accounts were recorded).
    /// Sorted; empty when none.
    public func owners(named identifier: String) async throws(StoreError) -> [String] {
        try await read("looking up \(identifier)") { db in
            try String.fetchAll(
                db,
                sql: """
                    SELECT owner FROM accounts WHERE owner = :id
                    UNION SELECT owner FROM account_aliases WHERE alias = :id
                    UNION SELECT owner FROM account_keys WHERE owner = :id
                    UNION SELECT scope FROM secrets WHERE scope = :id
                    UNION SELECT account FROM check_ins WHERE account = :id
                    ORDER BY 1
                    """,
                arguments: ["id": identifier])
        }
    }

    /// When each recorded account was first seen, by canonical identifier.
    public func accountsFirstSeen() async throws(StoreError) -> [String: Date] {
        try await read("reading accounts") { db in
            Dictionary(
                try AccountRow.fetchAll(db).map { ($0.owner, $0.firstSeen) }, uniquingKeysWith: { first, _ in first })
        }
    }

    /// Selective wipe of one account kept under several identifiers (its canonical one and its
    /// aliases): every key version, secret and check-in under any of them, in one transaction,
    /// with one audit entry (when auditing is on) naming what was deleted. The identifiers are
    /// recorded as wiped, and `events` appended to the event log. Then the write-ahead log is
    /// truncated, so no copy of the keys stays.
    /// - Parameter account: the canonical identifier, for the audit entry.
    @discardableResult
    public func wipe(identifiers: [String], account: String, reason: String, events: [EventRecord], at date: Date)
        async throws(StoreError) -> WipeCounts
    {
        let counts = try await write("wiping \(account)") { db -> WipeCounts in
            var keyVersions: [String: Int] = [:]
            var secrets = 0
            var checkIns = 0
            for identifier in identifiers {
                try db.execute(sql: "DELETE FROM account_keys WHERE owner = ?", arguments: [identifier])
                if db.changesCount > 0 { keyVersions[identifier] = db.changesCount }
                secrets += try SecretRow.filter(Column("scope") == identifier).deleteAll(db)
                if try CheckInRow.deleteOne(db, key: identifier) { checkIns += 1 }
                try LaunchFactsRow.deleteOne(db, key: identifier)
                try WipedIdentifierRow(identifier: identifier, account: account, at: date).upsert(db)
            }
            try Self.audit(
                .wipe, account: account, action: "wipe",
                detail: AuditRecord.wipeDetail(
                    identifiers: identifiers, keyVersions: keyVersions, secrets: secrets, reason: reason), at: date,
                in: db)
            try Self.recordChange(.wipe, identifiers, at: date, in: db)
            return WipeCounts(
                keyVersions: keyVersions, secrets: secrets, checkIns: checkIns,
                eventIDs: try Self.appendEvents(events, at: date, in: db))
        }
        try await truncateLog()
        return counts
    }

    /// When `identifier`'s keys were wiped, and the account it was wiped as; nil when never.
    public func wipeRecord(of identifier: String) async throws(StoreError) -> WipeRecord? {
        // A row that does not decode (an account or time missing or damaged) is a `.corrupt` state.
        try await read("reading the wipe record of \(identifier)") { db in
            try WipedIdentifierRow.fetchOne(db, key: identifier).map { WipeRecord(account: $0.account, at: $0.at) }
        }
    }
}
