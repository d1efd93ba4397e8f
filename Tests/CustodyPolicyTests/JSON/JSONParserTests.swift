import CustodyPolicy
import Testing

@Suite("JSON parser (RFC 8259, strict)")
struct JSONParserTests {
    private func parse(_ text: String) throws(JSONSyntaxError) -> JSONDocument {
        try JSONDocument(parsing: Array(text.utf8))
    }

    @Test("reads scalars, containers and their offsets")
    func readsValues() throws {
        let document = try parse(#" {"a": [1, -2.5e3, true, false, null], "b": {"c": "d"}, "e": ""} "#)
        let root = document.root
        #expect(root.kind == .object)
        #expect(root.offset == 1)
        #expect(root.members.map(\.key) == ["a", "b", "e"])
        let array = try #require(root["a"])
        #expect(array.elements.map(\.kind) == [.number, .number, .true, .false, .null])
        #expect(array.elements.map(\.offset) == [8, 11, 19, 25, 32])
        #expect(Array(array.elements)[0].int == 1)
        #expect(Array(array.elements)[1].int == nil)
        #expect(Array(array.elements)[1].double == -2500)
        #expect(root["b"]?["c"]?.string == "d")
        #expect(root["e"]?.string == "")
        #expect(root["missing"] == nil)
    }

    @Test(
        "decodes escapes",
        arguments: [
            (#""plain""#, "plain"),
            (#""a\"b\\c\/d""#, "a\"b\\c/d"),
            (#""\b\f\n\r\t""#, "\u{8}\u{C}\n\r\t"),
            (#""\u00e9\u00E9""#, "éé"),
            (#""\ud83d\ude00""#, "😀"),
            (#""naïve — ok""#, "naïve — ok"),
        ])
    func decodesEscapes(text: String, expected: String) throws {
        #expect(try parse(text).root.string == expected)
    }

    @Test(
        "integers keep exactness and report overflow",
        arguments: [
            ("0", 0 as Int?), ("-0", 0), ("9223372036854775807", Int.max), ("-9223372036854775808", Int.min),
            ("9223372036854775808", nil), ("1.0", nil), ("1e3", nil),
        ])
    func integers(text: String, expected: Int?) throws {
        #expect(try parse(text).root.int == expected)
    }

    struct Invalid: CustomTestStringConvertible, Sendable {
        let text: String
        let offset: Int
        let message: String
        var testDescription: String { text.debugDescription }
    }

    @Test(
        "rejects invalid JSON at the right offset",
        arguments: [
            Invalid(text: "", offset: 0, message: "found the end of the input"),
            Invalid(text: "  ", offset: 2, message: "found the end of the input"),
            Invalid(text: "{}`", offset: 2, message: "unexpected '`' after the end of the JSON value"),
            Invalid(text: "{} {}", offset: 3, message: "after the end of the JSON value"),
            Invalid(text: #"{"a": 1,}"#, offset: 8, message: "trailing comma before '}'"),
            Invalid(text: "[1, 2,]", offset: 6, message: "trailing comma before ']'"),
            Invalid(text: #"{"a" 1}"#, offset: 5, message: "expected ':'"),
            Invalid(text: #"{"a": 1 "b": 2}"#, offset: 8, message: "expected ',' or '}'"),
            Invalid(text: "{a: 1}", offset: 1, message: "member name in double quotes"),
            Invalid(text: "[1 2]", offset: 3, message: "expected ',' or ']'"),
            Invalid(text: #"{"a": 1"#, offset: 0, message: "object is not closed"),
            Invalid(text: "[1, 2", offset: 0, message: "array is not closed"),
            Invalid(text: #""abc"#, offset: 0, message: "string is not terminated"),
            Invalid(text: "\"a\nb\"", offset: 2, message: "control character U+000A"),
            Invalid(text: #""\x""#, offset: 1, message: #"invalid escape \x"#),
            Invalid(text: #""\u12""#, offset: 1, message: "four hexadecimal digits"),
            Invalid(text: #""\ud83d""#, offset: 1, message: "high surrogate without its low surrogate"),
            Invalid(text: #""\ude00""#, offset: 1, message: "low surrogate without a high surrogate"),
            Invalid(text: "tru", offset: 0, message: "unquoted word"),
            Invalid(text: "True", offset: 0, message: "expected a value, found 'T'"),
            Invalid(text: "nulls", offset: 0, message: "unquoted word"),
            Invalid(text: "01", offset: 0, message: "leading zeros"),
            Invalid(text: "-", offset: 0, message: "'-' must be followed by a digit"),
            Invalid(text: "1.", offset: 0, message: "decimal point must be followed by a digit"),
            Invalid(text: "1e", offset: 0, message: "exponent must have at least one digit"),
            Invalid(text: "1x", offset: 0, message: "number is followed by 'x'"),
            Invalid(text: "NaN", offset: 0, message: "expected a value, found 'N'"),
            Invalid(text: "// comment\n{}", offset: 0, message: "expected a value, found '/'"),
        ])
    func rejects(invalid: Invalid) {
        #expect {
            try parse(invalid.text)
        } throws: { error in
            guard let error = error as? JSONSyntaxError else { return false }
            return error.offset == invalid.offset && error.message.contains(invalid.message)
        }
    }

    @Test(
        "rejects invalid UTF-8 inside strings",
        arguments: [
            [0x22, 0xFF, 0x22] as [UInt8],  // not a UTF-8 byte
            [0x22, 0xC3, 0x22],  // cut-off sequence
            [0x22, 0xC0, 0xAF, 0x22],  // overlong '/'
            [0x22, 0xED, 0xA0, 0x80, 0x22],  // encoded surrogate
            [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22],  // above U+10FFFF
        ])
    func rejectsInvalidUTF8(bytes: [UInt8]) {
        #expect(throws: JSONSyntaxError.self) { try JSONDocument(parsing: bytes) }
    }

    @Test("refuses nesting deeper than its limit instead of exhausting the stack")
    func nestingLimit() throws {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect {
            try parse(deep)
        } throws: { error in
            (error as? JSONSyntaxError)?.message.contains("deeper than 512") == true
        }
        let fine = String(repeating: "[", count: 512) + String(repeating: "]", count: 512)
        #expect(try parse(fine).root.kind == .array)
    }

    @Test("reparsing reuses the document for the next line")
    func reparse() throws {
        var document = try parse("null")
        for line in [#"{"a":1}"#, "[true]", #""x""#] {
            try Array(line.utf8).withUnsafeBytes { try document.reparse($0) }
            #expect(document.source == Array(line.utf8))
        }
        #expect(document.root.string == "x")
    }
}
