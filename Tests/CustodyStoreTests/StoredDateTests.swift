@testable import CustodyPolicy
import Foundation
import GRDB
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
        "2026-11-26 10:41:07.123456", "10:41:07", "10:41", "not a date", "", "2026-13-01 00:00:00",
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
