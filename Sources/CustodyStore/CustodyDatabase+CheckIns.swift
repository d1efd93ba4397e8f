public import Foundation
import GRDB

extension CustodyDatabase {
    /// Records `account`'s last successful policy sync (a later date replaces an earlier one;
    /// an earlier one is ignored).
    public func checkIn(account: String, at date: Date) throws(StoreError) {
        try write("recording a check-in of \(account)") { db in
            try db.execute(
                sql: """
                    INSERT INTO check_ins (account, at) VALUES (?, ?)
                    ON CONFLICT(account) DO UPDATE SET at = excluded.at WHERE excluded.at > check_ins.at
                    """,
                arguments: [account, date])
        }
    }

    /// `account`'s last check-in, if any.
    public func lastCheckIn(account: String) throws(StoreError) -> Date? {
        try read("reading the check-in of \(account)") { db in
            try Date.fetchOne(db, sql: "SELECT at FROM check_ins WHERE account = ?", arguments: [account])
        }
    }

    /// Every account's last check-in.
    public func checkIns() throws(StoreError) -> [String: Date] {
        try read("reading check-ins") { db in
            Dictionary(
                try CheckInRow.fetchAll(db, sql: "SELECT account, at FROM check_ins").map { ($0.account, $0.at) },
                uniquingKeysWith: { first, _ in first })
        }
    }

    /// Forgets `account`'s check-in (after a wipe).
    public func removeCheckIn(account: String) throws(StoreError) {
        try write("removing the check-in of \(account)") { db in
            try db.execute(sql: "DELETE FROM check_ins WHERE account = ?", arguments: [account])
        }
    }
}
