public import Foundation
import GRDB

extension CustodyDatabase {
    /// Records `account`'s last successful policy sync (a later date replaces an earlier one;
    /// an earlier one is ignored).
    public func checkIn(account: String, at date: Date) async throws(StoreError) {
        try await write("recording a check-in of \(account)") { db in
            try db.execute(
                sql: """
                    INSERT INTO check_ins (account, at) VALUES (?, ?)
                    ON CONFLICT(account) DO UPDATE SET at = excluded.at WHERE excluded.at > check_ins.at
                    """,
                arguments: [account, date])
        }
    }

    /// `account`'s last check-in, if any.
    public func lastCheckIn(account: String) async throws(StoreError) -> Date? {
        try await read("reading the check-in of \(account)") { db in
            try CheckInRow.fetchOne(db, key: account)?.at
        }
    }

    /// Every account's last check-in.
    public func checkIns() async throws(StoreError) -> [String: Date] {
        try await read("reading check-ins") { db in
            Dictionary(
                try CheckInRow.fetchAll(db).map { ($0.account, $0.at) },
                uniquingKeysWith: { first, _ in first })
        }
    }

    /// Forgets `account`'s check-in (after a wipe).
    public func removeCheckIn(account: String) async throws(StoreError) {
        try await write("removing the check-in of \(account)") { db in
            _ = try CheckInRow.deleteOne(db, key: account)
        }
    }

    public func recordLaunchFacts(account: String, facts: String, at date: Date) async throws(StoreError) {
        try await write("recording the launch facts of \(account)") { db in
            try LaunchFactsRow(account: account, facts: facts, at: date).upsert(db)
        }
    }

    public func launchFacts(account: String) async throws(StoreError) -> StoredLaunchFacts? {
        try await read("reading the launch facts of \(account)") { db in
            try LaunchFactsRow.fetchOne(db, key: account).map { StoredLaunchFacts(facts: $0.facts, at: $0.at) }
        }
    }

    public func isActingOnLaunch() async throws(StoreError) -> Bool {
        try await read("reading whether launch outcomes are acted on") { db in
            try SettingRow.value("act_on_launch", in: db) == "true"
        }
    }

    public func setActingOnLaunch(_ acting: Bool) async throws(StoreError) {
        try await write("recording whether launch outcomes are acted on") { db in
            try SettingRow.save("act_on_launch", acting ? "true" : "false", in: db)
        }
    }
}
