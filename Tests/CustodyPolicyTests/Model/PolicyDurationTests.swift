import CustodyPolicy
import Testing

@Suite("ISO 8601 durations")
struct PolicyDurationTests {
    @Test(
        "parses day-time durations and prints them canonically",
        arguments: [
            ("PT12H", 43_200.0, "PT12H"),
            ("PT30M", 1_800, "PT30M"),
            ("P90D", 7_776_000, "P90D"),
            ("PT0S", 0, "PT0S"),
            ("P0D", 0, "PT0S"),
            ("P1DT2H3M4S", 93_784, "P1DT2H3M4S"),
            ("P2W", 1_209_600, "P14D"),
            ("PT720M", 43_200, "PT12H"),
            ("PT1.5S", 1.5, "PT1.5S"),
            ("PT3M9.8396734S", 189.8396734, "PT3M9.8396734S"),
            ("+PT1H", 3_600, "PT1H"),
        ])
    func parses(text: String, seconds: Double, canonical: String) throws {
        let duration = try PolicyDuration(iso8601: text)
        let (whole, attoseconds) = duration.duration.components
        #expect(abs(Double(whole) + Double(attoseconds) / 1e18 - seconds) < 1e-6)
        #expect(duration.description == canonical)
    }

    @Test(
        "rejects what is not a usable duration",
        arguments: [
            ("", "empty"),
            ("12H", "must start with 'P'"),
            ("P", "no components"),
            ("PT", "no hours, minutes or seconds"),
            ("-PT3M9.8396734S", "negative"),
            ("P1M", "years or months"),
            ("P1Y", "years or months"),
            ("PT1D", "not allowed"),
            ("P1H", "not allowed"),
            ("PT1H1H", "repeats a designator"),
            ("PT1M1H", "out of order"),
            ("PT1.5M30S", "only the last component"),
            ("PT5", "no designator"),
            ("PTH", "without a number"),
            ("P99999999999999999999D", "too large"),
            ("P999999999999999D", "too long"),
        ])
    func rejects(text: String, message: String) {
        #expect {
            try PolicyDuration(iso8601: text)
        } throws: { error in
            "\(error)".contains(message)
        }
    }

    /// Issue 47, item 26: the console said "offline for PT8S"; people read durations in words.
    @Test(
        "in words: the two largest units that are not zero, to the second",
        arguments: [
            ("PT8S", "8 seconds"), ("PT1S", "1 second"), ("PT0S", "no time"), ("PT12H", "12 hours"),
            ("PT720M", "12 hours"), ("P90D", "90 days"), ("P1DT2H30M", "1 day 2 hours"), ("P1DT5S", "1 day 5 seconds"),
            ("PT1M1S", "1 minute 1 second"), ("P2W", "14 days"), ("PT3M9.8396734S", "3 minutes 9 seconds"),
        ])
    func spoken(text: String, words: String) throws {
        #expect(try PolicyDuration(iso8601: text).spoken == words)
    }
}
