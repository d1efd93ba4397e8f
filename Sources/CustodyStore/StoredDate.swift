import CustodyPolicy
import Foundation
import GRDB
import GRDBSQLite

/// Dates as the SQLite state holds them (GRDB's text form, `YYYY-MM-DD HH:MM:SS.SSS` in UTC),
/// read without Foundation's calendar and written without its `DateFormatter`.
///
/// GRDB turns that text into a `Date` through `Calendar`, which on Linux opens ICU's time-zone
/// data to learn the current zone, for a format that is always UTC: about 4 MiB of every
/// command's memory, `custody protect` and `unprotect` included, for one date. Here the text is
/// split by GRDB's own parser (`DatabaseDateComponents`, so the same forms are accepted) and the
/// days counted by hand; a form this does not count (a time-zone offset, a day before 1583, when Foundation's
/// calendar is Julian) goes to GRDB.
enum StoredDate {
    /// The earliest and the latest time a stored date may hold: GRDB's text form spans the
    /// years 1 (`Date.distantPast`, as Foundation's calendar counts it) to 9999. A number
    /// outside them (a row written by hand, or damaged) is no date: arithmetic on it (seconds
    /// since 1970 as a whole number) would trap.
    static let range = Date.distantPast..<Date(timeIntervalSince1970: 253_402_300_800)

    /// The date `value` holds, as GRDB would read it; nil for NULL, text that is no date, or a
    /// time outside `range`.
    static func date(_ value: DatabaseValue) -> Date? {
        guard let date = parsed(value), range.contains(date) else { return nil }
        return date
    }

    private static func parsed(_ value: DatabaseValue) -> Date? {
        guard case .string = value.storage else { return Date.fromDatabaseValue(value) }
        guard let components = DatabaseDateComponents.fromDatabaseValue(value) else { return nil }
        switch components.format {
        case .YMD, .YMD_HM, .YMD_HMS, .YMD_HMSS: break
        case .HM, .HMS, .HMSS: return nil  // hours without a day are no date (as GRDB says)
        }
        let parts = components.dateComponents
        // A time of day or a day of the month out of its range is no date, never rolled over
        // into another one (GRDB's calendar reads hour 45 as the next day's 21:00).
        guard (0...23).contains(parts.hour ?? 0), (0...59).contains(parts.minute ?? 0),
            (0...59).contains(parts.second ?? 0), let month = parts.month, (1...12).contains(month),
            let day = parts.day, (1...31).contains(day)
        else { return nil }
        if let year = parts.year, year >= 1583,
            RFC3339.civil(fromDays: RFC3339.daysFromCivil(year: year, month: month, day: day)) != (year, month, day)
        {
            return nil  // the 30th of February
        }
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

    /// The date in column `column` of the row `statement` is on, as `date(_:)` reads it; the
    /// text `text(_:)` writes is read straight from its bytes, with no `String` made (a replay
    /// reads a million).
    static func date(_ statement: SQLiteStatement, column: Int32) -> Date? {
        if sqlite3_column_type(statement, column) == SQLITE_TEXT, sqlite3_column_bytes(statement, column) == 23,
            let bytes = sqlite3_column_text(statement, column),
            let date = ownText(UnsafeBufferPointer(start: bytes, count: 23))
        {
            return date
        }
        return date(DatabaseValue(sqliteStatement: statement, index: column))
    }

    /// `YYYY-MM-DD HH:MM:SS.SSS` as `text(_:)` writes it, read as `date(_:)` reads it (the same
    /// `Date`, to the last bit); nil for any other text, which `date(_:)` then reads.
    private static func ownText(_ bytes: UnsafeBufferPointer<UInt8>) -> Date? {
        var value = 0
        func digits(_ range: Range<Int>) -> Int? {
            value = 0
            for index in range {
                let digit = Int(bytes[index]) - 48
                guard (0...9).contains(digit) else { return nil }
                value = value * 10 + digit
            }
            return value
        }
        guard bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"), bytes[10] == UInt8(ascii: " "),
            bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"), bytes[19] == UInt8(ascii: "."),
            let year = digits(0..<4), year >= 1583, let month = digits(5..<7), (1...12).contains(month),
            let day = digits(8..<10), (1...31).contains(day), let hour = digits(11..<13), hour <= 23,
            let minute = digits(14..<16), minute <= 59, let second = digits(17..<19), second <= 59,
            let millisecond = digits(20..<23)
        else { return nil }
        let days = RFC3339.daysFromCivil(year: year, month: month, day: day)
        guard RFC3339.civil(fromDays: days) == (year, month, day) else { return nil }
        let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second
        return Date(
            timeIntervalSinceReferenceDate: Double(seconds - 978_307_200)
                + Double(millisecond * 1_000_000) / 1_000_000_000)
    }

    /// `date` as GRDB stores it: the very text its `DateFormatter` writes (to the nearest
    /// millisecond, halves rounded up, as ICU rounds them), made by hand. GRDB formats every
    /// `Date` it binds through ICU; an audited decision binds one per row. Dates outside the
    /// years 1583 to 9999 go to GRDB.
    static func databaseValue(_ date: Date) -> DatabaseValue {
        text(date).databaseValue
    }

    /// The text of `databaseValue(_:)`.
    static func text(_ date: Date) -> String {
        let milliseconds = (date.timeIntervalSince1970 * 1_000 + 0.5).rounded(.down)
        // 1583-01-01 to 10000-01-01, in milliseconds since 1970.
        guard milliseconds >= -12_212_553_600_000, milliseconds < 253_402_300_800_000 else {
            // GRDB binds every `Date` as text.
            return String.fromDatabaseValue(date.databaseValue) ?? ""
        }
        let total = Int64(milliseconds)
        let days = Int(total >= 0 ? total / 86_400_000 : (total - 86_399_999) / 86_400_000)
        let millisecondOfDay = Int(total - Int64(days) * 86_400_000)
        let (year, month, day) = RFC3339.civil(fromDays: days)
        return String(unsafeUninitializedCapacity: 23) { buffer in
            func put(_ value: Int, digits: Int, at offset: Int) {
                var value = value
                for index in stride(from: offset + digits - 1, through: offset, by: -1) {
                    buffer[index] = UInt8(ascii: "0") + UInt8(value % 10)
                    value /= 10
                }
            }
            put(year, digits: 4, at: 0)
            buffer[4] = UInt8(ascii: "-")
            put(month, digits: 2, at: 5)
            buffer[7] = UInt8(ascii: "-")
            put(day, digits: 2, at: 8)
            buffer[10] = UInt8(ascii: " ")
            put(millisecondOfDay / 3_600_000, digits: 2, at: 11)
            buffer[13] = UInt8(ascii: ":")
            put(millisecondOfDay / 60_000 % 60, digits: 2, at: 14)
            buffer[16] = UInt8(ascii: ":")
            put(millisecondOfDay / 1_000 % 60, digits: 2, at: 17)
            buffer[19] = UInt8(ascii: ".")
            put(millisecondOfDay % 1_000, digits: 3, at: 20)
            return 23
        }
    }
}
