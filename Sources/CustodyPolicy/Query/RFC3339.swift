/// RFC 3339 timestamps (`2026-11-21T08:00:00Z`, `2026-11-21T09:30:00.5+01:30`), read without
/// Foundation so that queries stay cheap to parse.
package enum RFC3339 {
    /// The time since 1970-01-01T00:00:00Z, or nil when `text` is not an RFC 3339 date-time.
    package static func durationSinceEpoch(_ text: String) -> Duration? {
        let bytes = Array(text.utf8)
        var position = 0
        func number(_ digits: Int) -> Int? {
            guard position + digits <= bytes.count else { return nil }
            var value = 0
            for _ in 0..<digits {
                let byte = bytes[position]
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
                position += 1
            }
            return value
        }
        func expect(_ characters: String) -> Bool {
            guard position < bytes.count, characters.utf8.contains(bytes[position]) else { return false }
            position += 1
            return true
        }
        guard let year = number(4), expect("-"), let month = number(2), expect("-"), let day = number(2),
            expect("Tt "), let hour = number(2), expect(":"), let minute = number(2), expect(":"),
            let second = number(2)
        else { return nil }
        guard (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day),
            hour < 24, minute < 60, second <= 60
        else { return nil }
        var attoseconds: Int64 = 0
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            position += 1
            var scale: Int64 = 100_000_000_000_000_000
            let start = position
            while position < bytes.count, bytes[position] >= UInt8(ascii: "0"), bytes[position] <= UInt8(ascii: "9") {
                attoseconds += Int64(bytes[position] - UInt8(ascii: "0")) * scale
                scale /= 10
                position += 1
            }
            guard position > start else { return nil }
        }
        var offsetSeconds = 0
        if expect("Zz") {
            offsetSeconds = 0
        } else if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") {
            let sign = bytes[position] == UInt8(ascii: "-") ? -1 : 1
            position += 1
            guard let offsetHours = number(2), expect(":"), let offsetMinutes = number(2), offsetHours < 24,
                offsetMinutes < 60
            else {
                return nil
            }
            offsetSeconds = sign * (offsetHours * 3_600 + offsetMinutes * 60)
        } else {
            return nil
        }
        guard position == bytes.count else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = Int64(days) * 86_400 + Int64(hour * 3_600 + minute * 60 + second - offsetSeconds)
        return .seconds(seconds) + .nanoseconds(attoseconds / 1_000_000_000)
    }

    /// `duration` since 1970 as an RFC 3339 UTC timestamp to the second, such as
    /// `2026-11-21T08:00:00Z`.
    package static func format(_ duration: Duration) -> String {
        let total = duration.components.seconds
        let days = Int(total >= 0 ? total / 86_400 : (total - 86_399) / 86_400)
        let secondOfDay = Int(total - Int64(days) * 86_400)
        let (year, month, day) = civil(fromDays: days)
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : String(value) }
        let yearText = String(year)
        return String(repeating: "0", count: max(0, 4 - yearText.count)) + yearText + "-" + two(month) + "-"
            + two(day) + "T" + two(secondOfDay / 3_600) + ":" + two(secondOfDay / 60 % 60) + ":"
            + two(secondOfDay % 60) + "Z"
    }

    /// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's algorithm).
    package static func civil(fromDays days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    package static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
