import CustodyPolicy
import Foundation
import GRDB

/// Dates as the SQLite state holds them (GRDB's text form, `YYYY-MM-DD HH:MM:SS.SSS` in UTC),
/// read without Foundation's calendar.
///
/// GRDB turns that text into a `Date` through `Calendar`, which on Linux opens ICU's time-zone
/// data to learn the current zone, for a format that is always UTC: about 4 MiB of every
/// command's memory, `custody protect` and `unprotect` included, for one date. Here the text is
/// split by GRDB's own parser (`DatabaseDateComponents`, so the same forms are accepted) and the
/// days counted by hand; a form this does not count (a time-zone offset, a day before 1583, when Foundation's
/// calendar is Julian) goes to GRDB.
enum StoredDate {
    /// The date `value` holds, as GRDB would read it; nil for NULL or text that is no date.
    static func date(_ value: DatabaseValue) -> Date? {
        guard case .string = value.storage else { return Date.fromDatabaseValue(value) }
        guard let components = DatabaseDateComponents.fromDatabaseValue(value) else { return nil }
        switch components.format {
        case .YMD, .YMD_HM, .YMD_HMS, .YMD_HMSS: break
        case .HM, .HMS, .HMSS: return nil  // hours without a day are no date (as GRDB says)
        }
        let parts = components.dateComponents
        // Before 1583 Foundation's calendar is Julian (the Gregorian reform of October 1582).
        guard parts.timeZone == nil, let year = parts.year, let month = parts.month, let day = parts.day,
            year >= 1583, (1...12).contains(month), (1...31).contains(day)
        else { return Date.fromDatabaseValue(value) }
        let days = RFC3339.daysFromCivil(year: year, month: month, day: day)
        let seconds = days * 86_400 + (parts.hour ?? 0) * 3_600 + (parts.minute ?? 0) * 60 + (parts.second ?? 0)
        // Counted from 2001 as Foundation's calendar counts, so that the same text gives the
        // very same `Date` (to the last bit) either way.
        return Date(
            timeIntervalSinceReferenceDate: Double(seconds - 978_307_200)
                + Double(parts.nanosecond ?? 0) / 1_000_000_000)
    }
}

extension Row {
    /// The date in `column` (see `StoredDate`); nil for NULL or no date.
    func storedDate(_ column: String) -> Date? {
        StoredDate.date(self[column] as DatabaseValue)
    }
}
