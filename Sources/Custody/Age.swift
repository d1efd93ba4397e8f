/// An age as the command line and the service take it: a whole number and a unit, `90m`, `12h`,
/// `30d`, `2w`.
public enum Age {
    /// The age `text` gives, from a minute to 36,600 days (100 years); nil for anything else.
    public static func parse(_ text: String) -> Duration? {
        let units: [Character: Int64] = ["m": 60, "h": 3_600, "d": 86_400, "w": 604_800]
        guard let unit = text.last.flatMap({ units[$0] }), text.dropLast().allSatisfy({ $0.isASCII && $0.isNumber }),
            let count = Int64(text.dropLast()), count > 0, count <= 36_600 * 86_400 / unit
        else { return nil }
        return .seconds(count * unit)
    }
}
