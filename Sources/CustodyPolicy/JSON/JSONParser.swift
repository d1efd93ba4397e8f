/// The RFC 8259 grammar, strictly: no comments, no trailing commas, no bare words, no bytes after
/// the value, no control characters or invalid UTF-8 inside strings, no lone surrogate escapes.
struct JSONParser {
    /// Deeper nesting than this is refused rather than risking the stack on hostile input.
    static let maximumDepth = 512

    let bytes: UnsafeBufferPointer<UInt8>
    var tape: [JSONTapeEntry]
    private var position = 0
    private var depth = 0

    init(bytes: UnsafeBufferPointer<UInt8>, tape: [JSONTapeEntry]) {
        self.bytes = bytes
        self.tape = tape
    }

    mutating func parseDocument() throws(JSONSyntaxError) {
        guard bytes.count <= Int(UInt32.max) else {
            throw JSONSyntaxError(offset: 0, message: "document is larger than 4 GiB")
        }
        skipWhitespace()
        guard position < bytes.count else {
            throw JSONSyntaxError(offset: position, message: "expected a JSON value, found the end of the input")
        }
        try parseValue()
        skipWhitespace()
        if position < bytes.count {
            throw JSONSyntaxError(
                offset: position,
                message: "unexpected \(describe(bytes[position])) after the end of the JSON value"
            )
        }
    }

    // MARK: Values

    private mutating func parseValue() throws(JSONSyntaxError) {
        guard position < bytes.count else {
            throw JSONSyntaxError(offset: position, message: "expected a value, found the end of the input")
        }
        switch bytes[position] {
        case UInt8(ascii: "{"): try parseObject()
        case UInt8(ascii: "["): try parseArray()
        case UInt8(ascii: "\""): try parseString()
        case UInt8(ascii: "t"): try parseLiteral("true", kind: .true)
        case UInt8(ascii: "f"): try parseLiteral("false", kind: .false)
        case UInt8(ascii: "n"): try parseLiteral("null", kind: .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try parseNumber()
        case let byte:
            throw JSONSyntaxError(offset: position, message: "expected a value, found \(describe(byte))")
        }
    }

    private mutating func parseLiteral(_ word: StaticString, kind: JSONKind) throws(JSONSyntaxError) {
        let start = position
        let length = word.utf8CodeUnitCount
        guard bytes.count - position >= length,
            (0..<length).allSatisfy({ bytes[start + $0] == word.utf8Start[$0] })
        else {
            throw JSONSyntaxError(
                offset: start, message: "expected a value, found an unquoted word (strings need double quotes)")
        }
        position += length
        if position < bytes.count, isWordByte(bytes[position]) {
            throw JSONSyntaxError(
                offset: start, message: "expected a value, found an unquoted word (strings need double quotes)")
        }
        tape.append(JSONTapeEntry(kind: kind, hasEscapes: false, start: UInt32(start), extent: UInt32(length)))
    }

    private mutating func parseObject() throws(JSONSyntaxError) {
        let start = position
        let index = try openContainer(.object)
        skipWhitespace()
        if peek() == UInt8(ascii: "}") {
            position += 1
            closeContainer(at: index)
            return
        }
        while true {
            skipWhitespace()
            guard peek() == UInt8(ascii: "\"") else {
                if peek() == UInt8(ascii: "}") {
                    throw JSONSyntaxError(offset: position, message: "trailing comma before '}'")
                }
                throw JSONSyntaxError(
                    offset: position, message: "expected a member name in double quotes, found \(describeNext())")
            }
            try parseString()
            skipWhitespace()
            guard peek() == UInt8(ascii: ":") else {
                throw JSONSyntaxError(
                    offset: position, message: "expected ':' after the member name, found \(describeNext())")
            }
            position += 1
            skipWhitespace()
            try parseValue()
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","):
                position += 1
            case UInt8(ascii: "}"):
                position += 1
                closeContainer(at: index)
                return
            case nil:
                throw JSONSyntaxError(
                    offset: start, message: "object is not closed: expected '}' before the end of the input")
            default:
                throw JSONSyntaxError(
                    offset: position, message: "expected ',' or '}' after an object member, found \(describeNext())")
            }
        }
    }

    private mutating func parseArray() throws(JSONSyntaxError) {
        let start = position
        let index = try openContainer(.array)
        skipWhitespace()
        if peek() == UInt8(ascii: "]") {
            position += 1
            closeContainer(at: index)
            return
        }
        while true {
            skipWhitespace()
            if peek() == UInt8(ascii: "]") {
                throw JSONSyntaxError(offset: position, message: "trailing comma before ']'")
            }
            try parseValue()
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","):
                position += 1
            case UInt8(ascii: "]"):
                position += 1
                closeContainer(at: index)
                return
            case nil:
                throw JSONSyntaxError(
                    offset: start, message: "array is not closed: expected ']' before the end of the input")
            default:
                throw JSONSyntaxError(
                    offset: position, message: "expected ',' or ']' after an array element, found \(describeNext())")
            }
        }
    }

    private mutating func openContainer(_ kind: JSONKind) throws(JSONSyntaxError) -> Int {
        depth += 1
        guard depth <= Self.maximumDepth else {
            throw JSONSyntaxError(offset: position, message: "nesting is deeper than \(Self.maximumDepth) levels")
        }
        let index = tape.count
        tape.append(JSONTapeEntry(kind: kind, hasEscapes: false, start: UInt32(position), extent: 0))
        position += 1
        return index
    }

    private mutating func closeContainer(at index: Int) {
        depth -= 1
        tape[index].extent = UInt32(tape.count)
    }

    // MARK: Strings

    private mutating func parseString() throws(JSONSyntaxError) {
        let start = position
        position += 1
        var hasEscapes = false
        while true {
            guard position < bytes.count else {
                throw JSONSyntaxError(
                    offset: start, message: "string is not terminated: expected '\"' before the end of the input")
            }
            let byte = bytes[position]
            switch byte {
            case UInt8(ascii: "\""):
                let length = position - start - 1
                position += 1
                tape.append(
                    JSONTapeEntry(kind: .string, hasEscapes: hasEscapes, start: UInt32(start), extent: UInt32(length)))
                return
            case UInt8(ascii: "\\"):
                hasEscapes = true
                try skipEscape()
            case 0..<0x20:
                throw JSONSyntaxError(
                    offset: position,
                    message: "control character U+\(hex(byte, width: 4)) inside a string must be escaped"
                )
            case 0x80...:
                try skipUTF8Sequence()
            default:
                position += 1
            }
        }
    }

    private mutating func skipEscape() throws(JSONSyntaxError) {
        let escapeStart = position
        position += 1
        guard position < bytes.count else {
            throw JSONSyntaxError(offset: escapeStart, message: "escape sequence is cut off by the end of the input")
        }
        switch bytes[position] {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
            UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            position += 1
        case UInt8(ascii: "u"):
            position += 1
            let unit = try readHexQuad(escapeStart: escapeStart)
            switch unit {
            case 0xD800...0xDBFF:
                guard bytes.count - position >= 6, bytes[position] == UInt8(ascii: "\\"),
                    bytes[position + 1] == UInt8(ascii: "u")
                else {
                    throw JSONSyntaxError(
                        offset: escapeStart, message: "\\u escape is a high surrogate without its low surrogate")
                }
                position += 2
                let low = try readHexQuad(escapeStart: position - 2)
                guard (0xDC00...0xDFFF).contains(low) else {
                    throw JSONSyntaxError(
                        offset: escapeStart, message: "\\u escape is a high surrogate without its low surrogate")
                }
            case 0xDC00...0xDFFF:
                throw JSONSyntaxError(
                    offset: escapeStart, message: "\\u escape is a low surrogate without a high surrogate before it")
            default:
                break
            }
        default:
            throw JSONSyntaxError(
                offset: escapeStart, message: "invalid escape \\\(describeCharacter(bytes[position])) in a string")
        }
    }

    private mutating func readHexQuad(escapeStart: Int) throws(JSONSyntaxError) -> UInt16 {
        guard bytes.count - position >= 4 else {
            throw JSONSyntaxError(offset: escapeStart, message: "\\u escape needs four hexadecimal digits")
        }
        var value: UInt16 = 0
        for _ in 0..<4 {
            guard let digit = hexValue(bytes[position]) else {
                throw JSONSyntaxError(offset: escapeStart, message: "\\u escape needs four hexadecimal digits")
            }
            value = value << 4 | UInt16(digit)
            position += 1
        }
        return value
    }

    /// Validates one multi-byte UTF-8 sequence (RFC 3629: no overlongs, no surrogates, ≤ U+10FFFF).
    private mutating func skipUTF8Sequence() throws(JSONSyntaxError) {
        let lead = bytes[position]
        let length: Int
        var lowerBound: UInt8 = 0x80
        var upperBound: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; lowerBound = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; upperBound = 0x9F
        case 0xF0: length = 4; lowerBound = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; upperBound = 0x8F
        default:
            throw JSONSyntaxError(offset: position, message: "invalid UTF-8 byte 0x\(hex(lead, width: 2))")
        }
        guard bytes.count - position >= length else {
            throw JSONSyntaxError(offset: position, message: "UTF-8 sequence is cut off by the end of the input")
        }
        for continuation in 1..<length {
            let byte = bytes[position + continuation]
            let range = continuation == 1 ? lowerBound...upperBound : 0x80...0xBF
            guard range.contains(byte) else {
                throw JSONSyntaxError(
                    offset: position, message: "invalid UTF-8 sequence starting with byte 0x\(hex(lead, width: 2))")
            }
        }
        position += length
    }

    // MARK: Numbers

    private mutating func parseNumber() throws(JSONSyntaxError) {
        let start = position
        if peek() == UInt8(ascii: "-") { position += 1 }
        guard let first = peek(), isDigit(first) else {
            throw JSONSyntaxError(offset: start, message: "'-' must be followed by a digit")
        }
        position += 1
        if first == UInt8(ascii: "0"), let next = peek(), isDigit(next) {
            throw JSONSyntaxError(offset: start, message: "numbers must not have leading zeros")
        }
        skipDigits()
        if peek() == UInt8(ascii: ".") {
            position += 1
            guard let digit = peek(), isDigit(digit) else {
                throw JSONSyntaxError(offset: start, message: "a decimal point must be followed by a digit")
            }
            skipDigits()
        }
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            position += 1
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { position += 1 }
            guard let digit = peek(), isDigit(digit) else {
                throw JSONSyntaxError(offset: start, message: "an exponent must have at least one digit")
            }
            skipDigits()
        }
        if let next = peek(), isWordByte(next) {
            throw JSONSyntaxError(offset: start, message: "number is followed by \(describe(next))")
        }
        tape.append(
            JSONTapeEntry(kind: .number, hasEscapes: false, start: UInt32(start), extent: UInt32(position - start)))
    }

    private mutating func skipDigits() {
        while let byte = peek(), isDigit(byte) { position += 1 }
    }

    // MARK: Helpers

    private mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"): position += 1
            default: return
            }
        }
    }

    private func peek() -> UInt8? {
        position < bytes.count ? bytes[position] : nil
    }

    private func describeNext() -> String {
        guard let byte = peek() else { return "the end of the input" }
        return describe(byte)
    }
}

private func isDigit(_ byte: UInt8) -> Bool {
    byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
}

private func isWordByte(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
        UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "-"),
        UInt8(ascii: "+"):
        true
    default:
        false
    }
}

func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    default: nil
    }
}

func hex(_ value: some BinaryInteger, width: Int) -> String {
    let digits = String(value, radix: 16, uppercase: true)
    return String(repeating: "0", count: max(0, width - digits.count)) + digits
}

/// A byte as a person reads it in an error message: `'x'` for printable ASCII, else its code.
func describe(_ byte: UInt8) -> String {
    switch byte {
    case 0x21...0x7E: "'\(Character(Unicode.Scalar(byte)))'"
    case UInt8(ascii: " "): "a space"
    case UInt8(ascii: "\n"): "a line break"
    case 0x80...: "the non-ASCII byte 0x\(hex(byte, width: 2))"
    default: "the control character U+\(hex(byte, width: 4))"
    }
}

private func describeCharacter(_ byte: UInt8) -> String {
    (0x21...0x7E).contains(byte) ? String(Character(Unicode.Scalar(byte))) : "(byte 0x\(hex(byte, width: 2)))"
}
