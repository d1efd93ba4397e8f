/// Turns the bytes of a JSON file as exported into UTF-8, and offsets in it into line and column.
///
/// Windows PowerShell 5.1 writes UTF-16LE with a byte-order mark; other tools write UTF-8 with
/// or without one. The encoding is sniffed from the BOM, or failing that from where the zero
/// bytes fall in the first two bytes (RFC 4627 §3), and everything becomes UTF-8. Line breaks
/// are kept, so lines number the same in the original file.
package enum JSONText {
    /// The encodings a policy document may arrive in.
    package enum Encoding: String, Sendable {
        case utf8 = "UTF-8"
        case utf8WithBOM = "UTF-8 with BOM"
        case utf16LittleEndian = "UTF-16LE"
        case utf16BigEndian = "UTF-16BE"
    }

    /// Why bytes could not be decoded as text.
    package struct DecodingError: Error, Sendable {
        /// Byte offset in the decoded UTF-8 text reached before the problem (for line and column).
        package var utf8Offset: Int
        package var message: String
    }

    /// Decodes `bytes` to UTF-8, removing any byte-order mark.
    package static func utf8(from bytes: [UInt8]) throws(DecodingError) -> (text: [UInt8], encoding: Encoding) {
        if bytes.starts(with: [0x00, 0x00, 0xFE, 0xFF]) || bytes.starts(with: [0xFF, 0xFE, 0x00, 0x00]) {
            throw DecodingError(utf8Offset: 0, message: "UTF-32 text is not supported: save the file as UTF-8")
        }
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            return (Array(bytes.dropFirst(3)), .utf8WithBOM)
        }
        if bytes.starts(with: [0xFF, 0xFE]) {
            return (try transcodeUTF16(bytes.dropFirst(2), bigEndian: false), .utf16LittleEndian)
        }
        if bytes.starts(with: [0xFE, 0xFF]) {
            return (try transcodeUTF16(bytes.dropFirst(2), bigEndian: true), .utf16BigEndian)
        }
        if bytes.count >= 2 {
            if bytes[0] == 0, bytes[1] != 0 {
                return (try transcodeUTF16(bytes[...], bigEndian: true), .utf16BigEndian)
            }
            if bytes[0] != 0, bytes[1] == 0 {
                return (try transcodeUTF16(bytes[...], bigEndian: false), .utf16LittleEndian)
            }
        }
        return (bytes, .utf8)
    }

    private static func transcodeUTF16(_ bytes: ArraySlice<UInt8>, bigEndian: Bool) throws(DecodingError) -> [UInt8] {
        guard bytes.count % 2 == 0 else {
            throw DecodingError(
                utf8Offset: 0, message: "UTF-16 text has an odd number of bytes: the file is cut off or not UTF-16")
        }
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count / 2)
        var position = bytes.startIndex
        func unit(at index: Int) -> UInt16 {
            bigEndian
                ? UInt16(bytes[index]) << 8 | UInt16(bytes[index + 1])
                : UInt16(bytes[index + 1]) << 8 | UInt16(bytes[index])
        }
        while position < bytes.endIndex {
            let first = unit(at: position)
            position += 2
            var scalarValue = UInt32(first)
            switch first {
            case 0xD800...0xDBFF:
                guard position < bytes.endIndex, case let second = unit(at: position),
                    (0xDC00...0xDFFF).contains(second)
                else {
                    throw DecodingError(
                        utf8Offset: output.count,
                        message: "invalid UTF-16: a high surrogate is not followed by a low surrogate")
                }
                position += 2
                scalarValue = 0x10000 + ((UInt32(first) - 0xD800) << 10) + (UInt32(second) - 0xDC00)
            case 0xDC00...0xDFFF:
                throw DecodingError(
                    utf8Offset: output.count, message: "invalid UTF-16: a low surrogate without a high surrogate")
            default:
                break
            }
            guard let scalar = Unicode.Scalar(scalarValue) else {
                throw DecodingError(utf8Offset: output.count, message: "invalid UTF-16 code point")
            }
            UTF8.encode(scalar) { output.append($0) }
        }
        return output
    }

    /// The 1-based line and column of a byte offset in UTF-8 text. Columns count Unicode
    /// scalars, so a column is right however many bytes the characters before it take.
    package static func lineAndColumn(ofOffset offset: Int, in text: [UInt8]) -> (line: Int, column: Int) {
        let end = min(max(offset, 0), text.count)
        var line = 1
        var lineStart = 0
        for index in 0..<end where text[index] == UInt8(ascii: "\n") {
            line += 1
            lineStart = index + 1
        }
        var column = 1
        for index in lineStart..<end where text[index] & 0xC0 != 0x80 {
            column += 1
        }
        return (line, column)
    }
}

/// Line and column of many offsets of one text, each in logarithmic time: the line starts are
/// found once, on first use. (A matrix of 100,000 table cells locates every cell.)
final class LineIndex {
    private let text: [UInt8]
    private var starts: [Int]?

    init(_ text: [UInt8]) {
        self.text = text
    }

    /// As `JSONText.lineAndColumn(ofOffset:in:)`.
    func lineAndColumn(ofOffset offset: Int) -> (line: Int, column: Int) {
        let starts =
            self.starts
            ?? {
                var found = [0]
                for index in text.indices where text[index] == UInt8(ascii: "\n") { found.append(index + 1) }
                self.starts = found
                return found
            }()
        let end = min(max(offset, 0), text.count)
        // The last line start at or before `end`.
        var low = 0
        var high = starts.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if starts[middle] <= end { low = middle } else { high = middle - 1 }
        }
        var column = 1
        for index in starts[low]..<end where text[index] & 0xC0 != 0x80 {
            column += 1
        }
        return (low + 1, column)
    }
}
