import CustodyPolicy
import Testing

@Suite("Text encodings and positions")
struct JSONTextTests {
    private static let sample = "{\"a\": \"é\"}"

    private static func utf16(_ text: String, bigEndian: Bool, bom: Bool) -> [UInt8] {
        var bytes: [UInt8] = bom ? (bigEndian ? [0xFE, 0xFF] : [0xFF, 0xFE]) : []
        for unit in text.utf16 {
            bytes += bigEndian ? [UInt8(unit >> 8), UInt8(unit & 0xFF)] : [UInt8(unit & 0xFF), UInt8(unit >> 8)]
        }
        return bytes
    }

    @Test(
        "sniffs the encoding from the byte-order mark or the zero bytes",
        arguments: [
            (Array(sample.utf8), JSONText.Encoding.utf8),
            ([0xEF, 0xBB, 0xBF] + Array(sample.utf8), .utf8WithBOM),
            (utf16(sample, bigEndian: false, bom: true), .utf16LittleEndian),
            (utf16(sample, bigEndian: true, bom: true), .utf16BigEndian),
            (utf16(sample, bigEndian: false, bom: false), .utf16LittleEndian),
            (utf16(sample, bigEndian: true, bom: false), .utf16BigEndian),
        ])
    func sniffs(bytes: [UInt8], encoding: JSONText.Encoding) throws {
        let (text, detected) = try JSONText.utf8(from: bytes)
        #expect(detected == encoding)
        #expect(text == Array(Self.sample.utf8))
    }

    @Test("decodes surrogate pairs from UTF-16")
    func surrogatePairs() throws {
        let (text, _) = try JSONText.utf8(from: Self.utf16("\"😀\"", bigEndian: false, bom: true))
        #expect(String(decoding: text, as: UTF8.self) == "\"😀\"")
    }

    @Test(
        "rejects text that is not valid UTF-16 or is UTF-32",
        arguments: [
            ([0xFF, 0xFE, 0x7B, 0x00, 0x7D] as [UInt8], "odd number of bytes"),
            ([0xFF, 0xFE, 0x3D, 0xD8, 0x22, 0x00], "high surrogate is not followed"),
            ([0xFF, 0xFE, 0x00, 0xDE], "low surrogate without a high surrogate"),
            ([0xFF, 0xFE, 0x00, 0x00, 0x7B, 0x00, 0x00, 0x00], "UTF-32"),
        ])
    func rejectsBadUTF16(bytes: [UInt8], message: String) {
        #expect {
            try JSONText.utf8(from: bytes)
        } throws: { error in
            (error as? JSONText.DecodingError)?.message.contains(message) == true
        }
    }

    @Test(
        "converts offsets to 1-based lines and columns in scalars",
        arguments: [
            ("abc", 0, 1, 1),
            ("abc", 2, 1, 3),
            ("a\nbc", 3, 2, 2),
            ("a\r\nbc", 4, 2, 2),
            ("é\nxé`", 6, 2, 3),
            ("😀`", 4, 1, 2),
        ])
    func positions(text: String, offset: Int, line: Int, column: Int) {
        let position = JSONText.lineAndColumn(ofOffset: offset, in: Array(text.utf8))
        #expect(position.line == line)
        #expect(position.column == column)
    }
}
