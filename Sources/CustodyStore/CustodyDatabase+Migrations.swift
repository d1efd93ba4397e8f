import GRDB

extension CustodyDatabase {
    /// The schema, as named migrations applied in order. Append new ones; never edit one that
    /// has shipped.
    static let migrator: DatabaseMigrator = {
        var migrator = DatabaseMigrator()

        migrator.registerMigration("v1: keys, secrets, check-ins, bundle history, audit") { db in
            // One row: how the master key is derived, and the check value that proves it.
            try db.create(table: "master_key") { table in
                table.column("id", .integer).primaryKey().check { $0 == 1 }
                table.column("kind", .text).notNull()
                table.column("salt", .blob)
                table.column("ops_limit", .integer)
                table.column("mem_limit", .integer)
                table.column("check_nonce", .blob).notNull()
                table.column("check_ciphertext", .blob).notNull()
            }
            // Account keys, wrapped by the master key: one row per owner and version.
            try db.create(table: "account_keys") { table in
                table.column("owner", .text).notNull()
                table.column("version", .integer).notNull().check { $0 >= 1 }
                table.column("created", .datetime).notNull()
                table.column("nonce", .blob).notNull()
                table.column("ciphertext", .blob).notNull()
                table.primaryKey(["owner", "version"])
            }
            // A counter that moves on every key added or removed, by any process: key rings
            // compare it to notice rotations and wipes made elsewhere.
            try db.create(table: "key_generation") { table in
                table.column("id", .integer).primaryKey().check { $0 == 1 }
                table.column("value", .integer).notNull()
            }
            try db.execute(sql: "INSERT INTO key_generation (id, value) VALUES (1, 0)")
            for event in ["INSERT", "DELETE"] {
                try db.execute(
                    sql: """
                        CREATE TRIGGER account_keys_\(event.lowercased()) AFTER \(event) ON account_keys
                        BEGIN UPDATE key_generation SET value = value + 1 WHERE id = 1; END
                        """)
            }
            // Secrets sealed with the protection layer: per account (scope = owner) or app-wide
            // (scope = '').
            try db.create(table: "secrets") { table in
                table.column("scope", .text).notNull()
                table.column("identifier", .text).notNull()
                table.column("kind", .text).notNull()
                table.column("sealed", .blob).notNull()
                table.column("updated", .datetime).notNull()
                table.primaryKey(["scope", "identifier"])
            }
            // The last successful policy sync per account.
            try db.create(table: "check_ins") { table in
                table.column("account", .text).primaryKey()
                table.column("at", .datetime).notNull()
            }
            // Every bundle offered: applied or rejected.
            try db.create(table: "bundle_history") { table in
                table.autoIncrementedPrimaryKey("id")
                table.column("content_hash", .text).notNull()
                table.column("applied_at", .datetime).notNull()
                table.column("source", .text).notNull()
                table.column("result", .text).notNull()
                table.column("message", .text)
            }
            try db.create(index: "bundle_history_by_time", on: "bundle_history", columns: ["applied_at"])
            // Decisions and wipes, when auditing is on.
            try db.create(table: "audit_log") { table in
                table.autoIncrementedPrimaryKey("id")
                table.column("at", .datetime).notNull()
                table.column("kind", .text).notNull()
                table.column("account", .text)
                table.column("action", .text).notNull()
                table.column("allowed", .boolean)
                table.column("detail", .text)
            }
            try db.create(index: "audit_log_by_time", on: "audit_log", columns: ["at"])
            // Small settings: whether auditing is on.
            try db.create(table: "settings") { table in
                table.column("name", .text).primaryKey()
                table.column("value", .text).notNull()
            }
        }
        migrator.registerMigration("v2: the files of applied bundles") { db in
            // What was applied, so a restarted manager resumes the same policy even if the
            // bundle directory changed or vanished meanwhile.
            try db.create(table: "bundle_files") { table in
                table.column("bundle_id", .integer).notNull().references("bundle_history", onDelete: .cascade)
                table.column("name", .text).notNull()
                table.column("bytes", .blob).notNull()
                table.primaryKey(["bundle_id", "name"])
            }
        }
        migrator.registerMigration("v3: accounts, their aliases, wiped identifiers") { db in
            // Every account the installation has seen, by its canonical identifier (the tenant's
            // OID, else its UPN), and when it was first seen: offline grace counts from then
            // for an account that never checked in.
            try db.create(table: "accounts") { table in
                table.column("owner", .text).primaryKey()
                table.column("first_seen", .datetime).notNull()
            }
            // Every identifier that names an account now or named it once (an earlier UPN):
            // a wipe deletes the keys kept under any of them.
            try db.create(table: "account_aliases") { table in
                table.column("alias", .text).notNull()
                table.column("owner", .text).notNull()
                table.column("since", .datetime).notNull()
                table.primaryKey(["alias", "owner"])
            }
            try db.create(index: "account_aliases_by_owner", on: "account_aliases", columns: ["owner"])
            // Identifiers whose keys a wipe deleted: an envelope sealed for one is reported as
            // wiped, not merely undecryptable.
            try db.create(table: "wiped_identifiers") { table in
                table.column("identifier", .text).primaryKey()
                table.column("account", .text).notNull()
                table.column("at", .datetime).notNull()
            }
        }
        migrator.registerMigration("v4: event log, decision ids, service tokens") { db in
            // Every event an engine published, in order: what Server-Sent Events resume from.
            // Bounded: the oldest rows are pruned past the retention.
            try db.create(table: "events") { table in
                table.autoIncrementedPrimaryKey("id")
                table.column("at", .datetime).notNull()
                table.column("name", .text).notNull()
                table.column("body", .blob).notNull()
            }
            // The id an audited decision's answer carries.
            try db.alter(table: "audit_log") { table in
                table.add(column: "decision_id", .text)
            }
            // Bearer tokens of the decision service: the secret part is kept as its SHA-256 only.
            try db.create(table: "tokens") { table in
                table.column("id", .text).primaryKey()
                table.column("name", .text)
                table.column("scopes", .text).notNull()
                table.column("hash", .blob).notNull()
                table.column("created", .datetime).notNull()
                table.column("revoked", .datetime)
            }
            // A counter that moves on every token created or revoked, by any process.
            try db.execute(
                sql: "INSERT INTO settings (name, value) VALUES ('token_generation', '0') ON CONFLICT(name) DO NOTHING")
        }
        migrator.registerMigration("v5: when each policy first reached each account") { db in
            // For incumbent precedence: the first policy to reach an account stays applied.
            try db.create(table: "policy_reach", options: .withoutRowID) { table in
                table.column("account", .text).notNull()
                table.column("policy", .text).notNull()
                table.column("first_reached", .datetime).notNull()
                table.primaryKey(["account", "policy"])
            }
        }
        migrator.registerMigration("v6: the change log replicas follow") { db in
            // Every bundle applied, wipe, key added or deleted, token and secret change and
            // setting change, in commit order: what replicas of a fleet apply, and what a
            // replica that was away catches up from. Bounded: the oldest rows are pruned past
            // the retention.
            try db.create(table: "changes") { table in
                table.autoIncrementedPrimaryKey("revision")
                table.column("at", .datetime).notNull()
                table.column("kind", .text).notNull()
                table.column("subjects", .text).notNull()
            }
        }
        migrator.registerMigration("v7: each bundle revision's files stored once") { db in
            // A revision's files are stored once, however often it is applied (v2 kept a copy
            // per application), and an applied bundle with no files (an empty bundle applied
            // on purpose) is a revision like any other: restorable, and a change.
            try db.create(table: "bundle_revisions") { table in
                table.column("content_hash", .text).primaryKey()
                table.column("stored_at", .datetime).notNull()
            }
            try db.create(table: "bundle_revision_files", options: .withoutRowID) { table in
                table.column("content_hash", .text).notNull().references("bundle_revisions", onDelete: .cascade)
                table.column("name", .text).notNull()
                table.column("bytes", .blob).notNull()
                table.primaryKey(["content_hash", "name"])
            }
            try db.execute(
                sql: """
                    INSERT OR IGNORE INTO bundle_revisions (content_hash, stored_at)
                    SELECT h.content_hash, min(h.applied_at) FROM bundle_history h WHERE h.id IN (SELECT bundle_id FROM bundle_files) GROUP BY h.content_hash;
                    INSERT OR IGNORE INTO bundle_revision_files (content_hash, name, bytes)
                    SELECT h.content_hash, f.name, f.bytes FROM bundle_files f JOIN bundle_history h ON h.id = f.bundle_id ORDER BY f.bundle_id DESC;
                    DROP TABLE bundle_files;
                    CREATE INDEX bundle_history_by_revision ON bundle_history (content_hash);
                    """)
        }
        migrator.registerMigration("v8: signed bundles, trusted keys, replicas") { db in
            // Each history row says where its bundle came from: the signed sequence, the keys
            // whose signatures were verified, the signature file, who applied it and why.
            try db.execute(
                sql: """
                    ALTER TABLE bundle_history ADD COLUMN sequence INTEGER;
                    ALTER TABLE bundle_history ADD COLUMN signers TEXT NOT NULL DEFAULT '';
                    ALTER TABLE bundle_history ADD COLUMN signature BLOB;
                    ALTER TABLE bundle_history ADD COLUMN applied_by TEXT;
                    ALTER TABLE bundle_history ADD COLUMN reason TEXT;
                    ALTER TABLE bundle_history ADD COLUMN rollback BOOLEAN NOT NULL DEFAULT 0;
                    """)
            // The public keys bundles must be signed with, once there is one.
            try db.create(table: "trusted_keys") { table in
                table.column("key_id", .text).primaryKey()
                table.column("public_key", .text).notNull()
                table.column("name", .text)
                table.column("added_at", .datetime).notNull()
                table.column("revoked_at", .datetime)
            }
            // What each serving process last said about itself.
            try db.create(table: "replicas") { table in
                table.column("id", .text).primaryKey()
                table.column("host", .text).notNull()
                table.column("pid", .integer).notNull()
                table.column("started_at", .datetime).notNull()
                table.column("version", .text).notNull()
                table.column("revision", .text)
                table.column("change", .integer).notNull()
                table.column("last_contact", .datetime).notNull()
                table.column("last_error", .text)
            }
        }
        migrator.registerMigration("v9: the launch facts each account last reported") { db in
            try db.create(table: "launch_facts") { table in
                table.column("account", .text).primaryKey()
                table.column("facts", .text).notNull()
                table.column("at", .datetime).notNull()
            }
        }
        migrator.registerMigration("v10: audit details stored once") { db in
            // An audited decision's reason (about 200 bytes, most of its row) is one of the few
            // the policy in force can give: each distinct detail is kept once (by each writer
            // that remembers it: `AuditInsert`; no index, so new details append) and an entry
            // names it by `detail_id`. Entries written before, and those written inside another
            // change (a wipe's, a bundle's), keep theirs in `detail`; an entry has one or the
            // other (`AuditRead.entries(_:)`).
            try db.execute(
                sql: """
                    CREATE TABLE audit_details (id INTEGER PRIMARY KEY, text TEXT NOT NULL);
                    ALTER TABLE audit_log ADD COLUMN detail_id INTEGER;
                    """)
        }
        migrator.registerMigration("v11: tokens that expire, their last use; keys trusted for an audience") { db in
            try db.execute(
                sql: """
                    ALTER TABLE tokens ADD COLUMN expires DATETIME;
                    ALTER TABLE tokens ADD COLUMN last_used DATETIME;
                    ALTER TABLE tokens ADD COLUMN rotated_to TEXT;
                    ALTER TABLE trusted_keys ADD COLUMN audience TEXT;
                    """)
        }
        migrator.registerMigration("v12: what an audited decision was asked, to decide it again") { db in
            // The query line and the recorded launch facts are kept in the row: most are asked
            // once (interned in `audit_details` as reasons are, they cost a row there and a hash
            // each, and the audited batch ran at 0.72 of its rate: Benchmarks/README.md,
            // "Replay"). The revision and context, one per session, are a text in
            // `audit_details` named by id. A launch's outcome, which `allowed` does not tell, is
            // kept too.
            try db.execute(
                sql: """
                    ALTER TABLE audit_log ADD COLUMN query TEXT;
                    ALTER TABLE audit_log ADD COLUMN context_id INTEGER;
                    ALTER TABLE audit_log ADD COLUMN facts TEXT;
                    ALTER TABLE audit_log ADD COLUMN outcome TEXT;
                    """)
        }
        migrator.registerMigration("v13: a shadow bundle and what each replica counted of it") { db in
            // The shadow's record is a setting (`shadow`); its files, while it runs, and the
            // replicas' counts are tables of their own.
            try db.execute(
                sql: """
                    CREATE TABLE shadow_files (name TEXT PRIMARY KEY NOT NULL, bytes BLOB NOT NULL);
                    CREATE TABLE shadow_tallies (
                        replica TEXT PRIMARY KEY NOT NULL, shadow TEXT NOT NULL, tally TEXT NOT NULL,
                        updated_at DATETIME NOT NULL);
                    """)
        }
        return migrator
    }()
}
