@testable import CustodyPolicy
import Foundation
import GRDB
import GRDBSQLite
import Testing

@testable import CustodyStore

@Suite("Dates read from the SQLite state without Foundation's calendar")
struct StoredDateTests {
    /// Texts of every form GRDB reads as a date, and a few it does not.
    static let texts = [
        "2026-11-26 10:41:07.123", "2026-11-26 10:41:07.999", "2026-11-26 10:41:07.000", "2026-11-26 10:41:07",
        "2026-11-26 10:41", "2026-11-26", "2026-11-26T10:41:07.123", "1970-01-01 00:00:00.000",
        "1969-12-31 23:59:59.999", "2000-02-29 12:00:00.500", "2024-02-29 23:59:59.001", "2100-03-01 00:00:00.000",
        "1900-01-01 00:00:00.000", "1583-01-01 00:00:00.000", "1582-10-15 00:00:00.000", "0001-01-01 00:00:00.000",
        "9999-12-31 23:59:59.999", "2026-11-26 10:41:07.1",
        "2026-11-26 10:41:07.123456", "10:41:07", "10:41", "not a date", "",
    ]

    @Test(
        "each form reads as the very Date GRDB makes of it (to the last bit), or as nothing when GRDB says none",
        arguments: texts)
    func sameAsGRDB(text: String) {
        let value = text.databaseValue
        let ours = StoredDate.date(value)
        let grdb = Date.fromDatabaseValue(value)
        #expect(
            ours?.timeIntervalSinceReferenceDate.bitPattern == grdb?.timeIntervalSinceReferenceDate.bitPattern,
            "\(text): \(String(describing: ours)) against GRDB's \(String(describing: grdb))")
    }

    @Test(
        "read from a row's bytes (a replay's reader), each form and each out-of-range text gives what date(_:) gives, to the last bit",
        arguments: texts + outOfRange + [
            "2026-11-26 10:41:07.12x", "2026-11-26X10:41:07.123", "2026-02-30 00:00:00.000",
        ])
    func fromRowBytes(text: String) throws {
        let expected = StoredDate.date(text.databaseValue)
        let read = try DatabaseQueue().read { db -> Date? in
            let statement = try db.makeStatement(sql: "SELECT ?")
            try statement.setArguments([text])
            guard sqlite3_step(statement.sqliteStatement) == SQLITE_ROW else { return nil }
            return StoredDate.date(statement.sqliteStatement, column: 0)
        }
        #expect(
            read?.timeIntervalSinceReferenceDate.bitPattern == expected?.timeIntervalSinceReferenceDate.bitPattern,
            "\(text): \(String(describing: read)) against \(String(describing: expected))")
    }

    /// Texts whose fields are out of range, which GRDB's calendar rolls over into another date
    /// (hour 45 as the next day's 21:00): no date here, so a damaged check-in is an error
    /// rather than a recent check-in.
    static let outOfRange = [
        "2026-13-01 00:00:00", "2026-11-28 45:00:00", "2026-02-30 00:00:00", "2026-11-26 10:61:00",
        "2026-11-26 10:41:75", "2026-00-10", "2026-11-00",
    ]

    @Test(
        "a text whose month, day, hour, minute or second is out of range is no date, never rolled over",
        arguments: outOfRange)
    func outOfRangeFields(text: String) {
        #expect(StoredDate.date(text.databaseValue) == nil, "\(text)")
    }

    /// Unix times whose text is easy to get wrong: millisecond edges either side of a second,
    /// a day, 1970 and 2001, leap days, the ends of the range written by hand, and beyond it.
    static let unixTimes: [Double] = [
        0, -0.0005, -0.001, -0.0015, 0.0005, 0.001, 0.9995, 0.9999999, 1_764_153_667.123, 1_764_153_667.9995,
        1_764_153_667.999_999_9, 978_307_200, 978_307_199.999, 951_825_600.5, 1_709_251_199.001, 4_107_542_400,
        -2_208_988_800, -12_212_553_600, -12_212_553_600.0005, -12_219_292_800, 253_402_300_799.999,
        253_402_300_800, -62_135_596_800, 1e12, -6_624_538_899.1685, -6_256_296_496.0425, 1_764_153_667.0005,
    ]

    @Test("dates are written as the very text GRDB's formatter writes", arguments: unixTimes)
    func writtenAsGRDB(unixTime: Double) {
        let date = Date(timeIntervalSince1970: unixTime)
        #expect(StoredDate.databaseValue(date) == date.databaseValue, "\(unixTime)")
    }

    @Test("random dates from 1583 to 9999, to the microsecond, are written as GRDB writes them")
    func randomDatesWrittenAsGRDB() {
        var generator = SystemRandomNumberGenerator()
        var mismatches: [Double] = []
        for _ in 0..<20_000 {
            let unixTime = Double.random(in: -12_212_553_600...253_402_300_799, using: &generator)
            let date = Date(timeIntervalSince1970: unixTime)
            if StoredDate.databaseValue(date) != date.databaseValue { mismatches.append(unixTime) }
        }
        let count = mismatches.count
        let first = Array(mismatches.prefix(5))
        #expect(count == 0, "\(count) differ, the first: \(first)")
    }

    @Test(
        "numbers are Unix times and NULL is no date, as GRDB reads them",
        arguments: [
            (DatabaseValue.null, nil), (1_700_000_000.databaseValue, 1_700_000_000.0), (0.5.databaseValue, 0.5),
        ] as [(DatabaseValue, Double?)])
    func numbers(value: DatabaseValue, unixTime: Double?) {
        #expect(StoredDate.date(value)?.timeIntervalSince1970 == unixTime)
    }

    @Test("every day from 1600 to 2400 counts as Foundation counts it")
    func civilDays() {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        var day = calendar.date(from: DateComponents(year: 1600, month: 1, day: 1))!
        let end = calendar.date(from: DateComponents(year: 2400, month: 12, day: 31))!
        while day <= end {
            let parts = calendar.dateComponents([.year, .month, .day], from: day)
            #expect(
                RFC3339.daysFromCivil(year: parts.year!, month: parts.month!, day: parts.day!) * 86_400
                    == Int(day.timeIntervalSince1970))
            day += 86_400 * 7
        }
    }
}
