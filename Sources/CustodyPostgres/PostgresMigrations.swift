import CustodyStore
import PostgresNIO

/// The schema on PostgreSQL: the same named, append-only migrations as the SQLite state
/// (`CustodyDatabase.migrator`), each written for PostgreSQL. Append new ones; never edit one
/// that has shipped. Applied in one transaction under an advisory lock, so replicas starting
/// together migrate once.
enum PostgresMigrations {
    static let all: [(identifier: String, statements: [String])] = [
        (
            "v1: keys, secrets, check-ins, bundle history, audit",
            [
                """
                CREATE TABLE master_key (
                    id integer PRIMARY KEY CHECK (id = 1), kind text NOT NULL, salt bytea, ops_limit bigint, mem_limit bigint,
                    check_nonce bytea NOT NULL, check_ciphertext bytea NOT NULL)
                """,
                """
                CREATE TABLE account_keys (
                    owner text NOT NULL, version bigint NOT NULL CHECK (version >= 1), created timestamptz NOT NULL,
                    nonce bytea NOT NULL, ciphertext bytea NOT NULL, PRIMARY KEY (owner, version))
                """,
                "CREATE TABLE key_generation (id integer PRIMARY KEY CHECK (id = 1), value bigint NOT NULL)",
                "INSERT INTO key_generation (id, value) VALUES (1, 0)",
                """
                CREATE FUNCTION custody_bump_key_generation() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN UPDATE key_generation SET value = value + 1 WHERE id = 1; RETURN NULL; END $$
                """,
                "CREATE TRIGGER account_keys_changed AFTER INSERT OR DELETE ON account_keys FOR EACH ROW EXECUTE FUNCTION custody_bump_key_generation()",
                """
                CREATE TABLE secrets (
                    scope text NOT NULL, identifier text NOT NULL, kind text NOT NULL, sealed bytea NOT NULL, updated timestamptz NOT NULL,
                    PRIMARY KEY (scope, identifier))
                """,
                "CREATE TABLE check_ins (account text PRIMARY KEY, at timestamptz NOT NULL)",
                """
                CREATE TABLE bundle_history (
                    id bigserial PRIMARY KEY, content_hash text NOT NULL, applied_at timestamptz NOT NULL, source text NOT NULL,
                    result text NOT NULL, message text)
                """,
                "CREATE INDEX bundle_history_by_time ON bundle_history (applied_at)",
                """
                CREATE TABLE audit_log (
                    id bigserial PRIMARY KEY, at timestamptz NOT NULL, kind text NOT NULL, account text, action text NOT NULL,
                    allowed boolean, detail text)
                """,
                "CREATE INDEX audit_log_by_time ON audit_log (at)",
                "CREATE TABLE settings (name text PRIMARY KEY, value text NOT NULL)",
            ]
        ),
        (
            "v2: the files of applied bundles",
            [
                """
                CREATE TABLE bundle_files (
                    bundle_id bigint NOT NULL REFERENCES bundle_history ON DELETE CASCADE, name text NOT NULL, bytes bytea NOT NULL,
                    PRIMARY KEY (bundle_id, name))
                """
            ]
        ),
        (
            "v3: accounts, their aliases, wiped identifiers",
            [
                "CREATE TABLE accounts (owner text PRIMARY KEY, first_seen timestamptz NOT NULL)",
                "CREATE TABLE account_aliases (alias text NOT NULL, owner text NOT NULL, since timestamptz NOT NULL, PRIMARY KEY (alias, owner))",
                "CREATE INDEX account_aliases_by_owner ON account_aliases (owner)",
                "CREATE TABLE wiped_identifiers (identifier text PRIMARY KEY, account text NOT NULL, at timestamptz NOT NULL)",
            ]
        ),
        (
            "v4: event log, decision ids, service tokens",
            [
                // Ids come from the `counters` row 'event' (v6), taken under its row lock, so
                // they are in commit order.
                "CREATE TABLE events (id bigint PRIMARY KEY, at timestamptz NOT NULL, name text NOT NULL, body bytea NOT NULL)",
                "ALTER TABLE audit_log ADD COLUMN decision_id text",
                """
                CREATE TABLE tokens (
                    id text PRIMARY KEY, name text, scopes text NOT NULL, hash bytea NOT NULL, created timestamptz NOT NULL, revoked timestamptz)
                """,
                "INSERT INTO settings (name, value) VALUES ('token_generation', '0') ON CONFLICT (name) DO NOTHING",
            ]
        ),
        (
            "v5: when each policy first reached each account",
            [
                """
                CREATE TABLE policy_reach (
                    account text NOT NULL, policy text NOT NULL, first_reached timestamptz NOT NULL, PRIMARY KEY (account, policy))
                """
            ]
        ),
        (
            "v6: the change log replicas follow",
            [
                "CREATE TABLE changes (revision bigint PRIMARY KEY, at timestamptz NOT NULL, kind text NOT NULL, subjects text NOT NULL)",
                // The newest change revision and event id. Writers take the row's lock to
                // number theirs, so numbers are handed out in commit order: a reader that has
                // seen N never later finds a smaller number committed.
                "CREATE TABLE counters (name text PRIMARY KEY, value bigint NOT NULL)",
                "INSERT INTO counters (name, value) VALUES ('change', 0), ('event', 0)",
            ]
        ),
        (
            "v7: each bundle revision's files stored once",
            [
                "CREATE TABLE bundle_revisions (content_hash text PRIMARY KEY, stored_at timestamptz NOT NULL)",
                """
                CREATE TABLE bundle_revision_files (
                    content_hash text NOT NULL REFERENCES bundle_revisions ON DELETE CASCADE, name text NOT NULL, bytes bytea NOT NULL,
                    PRIMARY KEY (content_hash, name))
                """,
                """
                INSERT INTO bundle_revisions (content_hash, stored_at)
                SELECT h.content_hash, min(h.applied_at) FROM bundle_history h WHERE h.id IN (SELECT bundle_id FROM bundle_files)
                GROUP BY h.content_hash ON CONFLICT DO NOTHING
                """,
                """
                INSERT INTO bundle_revision_files (content_hash, name, bytes)
                SELECT DISTINCT ON (h.content_hash, f.name) h.content_hash, f.name, f.bytes
                FROM bundle_files f JOIN bundle_history h ON h.id = f.bundle_id ORDER BY h.content_hash, f.name, f.bundle_id DESC
                """,
                "DROP TABLE bundle_files",
                "CREATE INDEX bundle_history_by_revision ON bundle_history (content_hash)",
            ]
        ),
        (
            "v8: signed bundles, trusted keys, replicas",
            [
                """
                ALTER TABLE bundle_history ADD COLUMN sequence bigint, ADD COLUMN signers text NOT NULL DEFAULT '',
                    ADD COLUMN signature bytea, ADD COLUMN applied_by text, ADD COLUMN reason text,
                    ADD COLUMN rollback boolean NOT NULL DEFAULT false
                """,
                """
                CREATE TABLE trusted_keys (
                    key_id text PRIMARY KEY, public_key text NOT NULL, name text, added_at timestamptz NOT NULL,
                    revoked_at timestamptz)
                """,
                """
                CREATE TABLE replicas (
                    id text PRIMARY KEY, host text NOT NULL, pid bigint NOT NULL, started_at timestamptz NOT NULL,
                    version text NOT NULL, revision text, change bigint NOT NULL, last_contact timestamptz NOT NULL,
                    last_error text)
                """,
            ]
        ),
        (
            "v9: the launch facts each account last reported",
            [
                "CREATE TABLE launch_facts (account text PRIMARY KEY, facts text NOT NULL, at timestamptz NOT NULL)"
            ]
        ),
        (
            "v11: tokens that expire, their last use; keys trusted for an audience",
            [
                """
                ALTER TABLE tokens ADD COLUMN expires timestamptz, ADD COLUMN last_used timestamptz,
                    ADD COLUMN rotated_to text
                """,
                "ALTER TABLE trusted_keys ADD COLUMN audience text",
            ]
        ),
        (
            "v12: what an audited decision was asked, to decide it again",
            [
                // Kept in the row: a fleet's replicas share no cache of ids to name shared
                // texts by, as a SQLite state's one writer does.
                "ALTER TABLE audit_log ADD COLUMN query text, ADD COLUMN context text, ADD COLUMN facts text, ADD COLUMN outcome text"
            ]
        ),
        (
            "v13: a shadow bundle and what each replica counted of it",
            [
                "CREATE TABLE shadow_files (name text PRIMARY KEY, bytes bytea NOT NULL)",
                """
                CREATE TABLE shadow_tallies (
                    replica text PRIMARY KEY, shadow text NOT NULL, tally text NOT NULL, updated_at timestamptz NOT NULL)
                """,
            ]
        ),
    ]

    /// Creates the schema when missing and applies the migrations not applied yet.
    /// - Throws: `.migration` when the schema carries migrations this Custody does not know.
    static func migrate(_ sessions: PostgresSessions) async throws(StoreError) {
        let schema = sessions.settings.schema
        let pending: [String] = try await sessions.run("bringing the state up to date", transaction: true) { session in
            // One replica at a time; the lock ends with the transaction.
            try await session.execute("SELECT pg_advisory_xact_lock(hashtext(\(schema)))")
            try await session.execute(PostgresQuery(unsafeSQL: "CREATE SCHEMA IF NOT EXISTS \(schema)"))
            try await session.execute(
                PostgresQuery(
                    unsafeSQL:
                        "CREATE TABLE IF NOT EXISTS \(schema).custody_migrations (identifier text PRIMARY KEY, applied_at timestamptz NOT NULL)"
                ))
            var applied = Set<String>()
            for row in try await session.query("SELECT identifier FROM custody_migrations") {
                applied.insert(try row.decode(String.self))
            }
            let known = Set(all.map(\.identifier))
            let unknown = applied.subtracting(known)
            guard unknown.isEmpty else {
                throw StoreError(
                    .migration,
                    "the state was written by a newer Custody (migrations \(unknown.sorted().joined(separator: ", "))); upgrade to open it",
                    path: sessions.settings.redacted)
            }
            var done: [String] = []
            for migration in all where !applied.contains(migration.identifier) {
                for statement in migration.statements { try await session.execute(PostgresQuery(unsafeSQL: statement)) }
                try await session.execute(
                    "INSERT INTO custody_migrations (identifier, applied_at) VALUES (\(migration.identifier), now())")
                done.append(migration.identifier)
            }
            return done
        }
        if !pending.isEmpty {
            sessions.logger.info("state migrated", metadata: ["migrations": "\(pending.joined(separator: "; "))"])
        }
    }
}
