/// A length of time as Graph exports it: an ISO 8601 day-time duration such as `PT12H`,
/// `P90D` or `PT3M9.8396734S` (`Edm.Duration`).
public struct PolicyDuration: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The length of time.
    public let duration: Duration

    /// Creates a duration from a Swift `Duration`.
    public init(_ duration: Duration) {
        self.duration = duration
    }

    /// Creates a duration of whole seconds.
    public init(seconds: Int64) {
        self.duration = .seconds(seconds)
    }

    /// Parses an ISO 8601 day-time duration: `P[nW][nD][T[nH][nM][n[.f]S]]`.
    ///
    /// Years and months are refused (their length depends on the calendar), and so are
    /// negative durations, which no policy setting can mean.
    /// - Throws: `PolicyDuration.ParseError` saying what is wrong with the text.
    public init(iso8601 text: String) throws(ParseError) {
        var scanner = Array(text.utf8)[...]
        guard !scanner.isEmpty else { throw ParseError("an empty string is not a duration") }
        if scanner.first == UInt8(ascii: "-") {
            throw ParseError("'\(text)' is negative; policy durations must be zero or more")
        }
        if scanner.first == UInt8(ascii: "+") { scanner.removeFirst() }
        guard scanner.first == UInt8(ascii: "P") else {
            throw ParseError(
                "'\(text)' is not an ISO 8601 duration: it must start with 'P' (for example PT12H or P90D)")
        }
        scanner.removeFirst()
        var total: Duration = .zero
        var inTime = false
        var sawComponent = false
        var sawFraction = false
        // Each designator may appear once and in order; this tracks the last one seen.
        var lastRank = -1
        while let first = scanner.first {
            if first == UInt8(ascii: "T") {
                guard !inTime else { throw ParseError("'\(text)' has more than one 'T'") }
                inTime = true
                scanner.removeFirst()
                guard !scanner.isEmpty else {
                    throw ParseError("'\(text)' has a 'T' with no hours, minutes or seconds after it")
                }
                continue
            }
            guard !sawFraction else { throw ParseError("'\(text)': only the last component may have a fraction") }
            let digits = scanner.prefix { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
            guard !digits.isEmpty else { throw ParseError("'\(text)' has a designator without a number before it") }
            scanner.removeFirst(digits.count)
            var fraction: ArraySlice<UInt8> = []
            if scanner.first == UInt8(ascii: ".") || scanner.first == UInt8(ascii: ",") {
                scanner.removeFirst()
                fraction = scanner.prefix { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
                guard !fraction.isEmpty else {
                    throw ParseError("'\(text)' has a decimal point without digits after it")
                }
                scanner.removeFirst(fraction.count)
                sawFraction = true
            }
            guard let designator = scanner.popFirst() else {
                throw ParseError("'\(text)' ends with a number but no designator (D, H, M or S)")
            }
            guard let whole = Int64(String(decoding: digits, as: UTF8.self)) else {
                throw ParseError("'\(text)' has a number too large for a duration")
            }
            let (rank, unitSeconds): (Int, Int64)
            switch (inTime, designator) {
            case (false, UInt8(ascii: "W")): (rank, unitSeconds) = (0, 604_800)
            case (false, UInt8(ascii: "D")): (rank, unitSeconds) = (1, 86_400)
            case (true, UInt8(ascii: "H")): (rank, unitSeconds) = (2, 3_600)
            case (true, UInt8(ascii: "M")): (rank, unitSeconds) = (3, 60)
            case (true, UInt8(ascii: "S")): (rank, unitSeconds) = (4, 1)
            case (false, UInt8(ascii: "Y")), (false, UInt8(ascii: "M")):
                throw ParseError(
                    "'\(text)' uses years or months, whose length depends on the calendar; use days (for example P90D)")
            default:
                throw ParseError(
                    "'\(text)' has the designator '\(Character(Unicode.Scalar(designator)))' where it is not allowed")
            }
            guard rank > lastRank else { throw ParseError("'\(text)' repeats a designator or has them out of order") }
            lastRank = rank
            let (wholeSeconds, overflow) = whole.multipliedReportingOverflow(by: unitSeconds)
            guard !overflow else { throw ParseError("'\(text)' is too long a duration") }
            total += .seconds(wholeSeconds)
            if !fraction.isEmpty {
                let fractionValue = Double("0." + String(decoding: fraction, as: UTF8.self)) ?? 0
                total += .seconds(fractionValue * Double(unitSeconds))
            }
            sawComponent = true
        }
        guard sawComponent else { throw ParseError("'\(text)' has no components (for example PT12H or P90D)") }
        self.duration = total
    }

    /// Why a text is not a duration.
    public struct ParseError: Error, Sendable, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    public static func < (lhs: PolicyDuration, rhs: PolicyDuration) -> Bool {
        lhs.duration < rhs.duration
    }

    /// In words, for people: its two largest units that are not zero, to the second ("90 days",
    /// "12 hours", "1 day 2 hours", "1 day 5 seconds", "8 seconds", "no time").
    public var spoken: String {
        let seconds = duration.components.seconds
        let units: [(Int64, String)] = [(86_400, "day"), (3_600, "hour"), (60, "minute"), (1, "second")]
        var rest = seconds
        var parts: [String] = []
        for (size, name) in units where parts.count < 2 {
            let count = rest / size
            rest %= size
            if count > 0 { parts.append("\(count) \(name)\(count == 1 ? "" : "s")") }
        }
        return parts.isEmpty ? "no time" : parts.joined(separator: " ")
    }

    /// The canonical ISO 8601 form: `P90D`, `PT12H`, `P1DT2H30M`, `PT0S`.
    public var description: String {
        let (seconds, attoseconds) = duration.components
        var text = "P"
        let days = seconds / 86_400
        var rest = seconds % 86_400
        if days > 0 { text += "\(days)D" }
        let hours = rest / 3_600
        rest %= 3_600
        let minutes = rest / 60
        rest %= 60
        if hours > 0 || minutes > 0 || rest > 0 || attoseconds > 0 || days == 0 {
            text += "T"
            if hours > 0 { text += "\(hours)H" }
            if minutes > 0 { text += "\(minutes)M" }
            if rest > 0 || attoseconds > 0 {
                if attoseconds > 0 {
                    var fraction = String(attoseconds)
                    fraction = String(repeating: "0", count: 18 - fraction.count) + fraction
                    while fraction.hasSuffix("0") { fraction.removeLast() }
                    text += "\(rest).\(fraction)S"
                } else {
                    text += "\(rest)S"
                }
            } else if hours == 0, minutes == 0 {
                text += "0S"
            }
        }
        return text
    }
}
