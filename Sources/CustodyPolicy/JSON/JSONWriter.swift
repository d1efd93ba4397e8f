/// Appends JSON to a byte buffer: compact for JSON Lines, indented for people.
///
/// The decision stream writes through this type directly, so it is small and allocation-free
/// beyond the buffer it grows.
package struct JSONWriter {
    package private(set) var bytes: [UInt8]
    private let indentation: Int?
    private var depth = 0
    /// Whether the container being written already has an element (so the next needs a comma).
    private var hasElement: [Bool] = []

    /// - Parameter pretty: indent nested values by two spaces, one member per line.
    package init(pretty: Bool = false, reservingCapacity capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
        indentation = pretty ? 2 : nil
    }

    package mutating func clear() {
        bytes.removeAll(keepingCapacity: true)
        startOver()
    }

    /// Forgets the containers and member being written: the next value starts a new document.
    private mutating func startOver() {
        hasElement.removeAll(keepingCapacity: true)
        depth = 0
        pendingValueAfterKey = false
    }

    package var string: String { String(decoding: bytes, as: UTF8.self) }

    /// Writes onto the end of `buffer` from now on (the writer's own buffer goes to `buffer`
    /// meanwhile), so that an answer goes straight into its output instead of through a copy;
    /// `handBack(_:)` returns it with what was written appended.
    package mutating func takeOver(_ buffer: inout [UInt8]) {
        swap(&bytes, &buffer)
        startOver()
    }

    /// Returns the buffer `takeOver(_:)` took, and takes the writer's own back.
    package mutating func handBack(_ buffer: inout [UInt8]) {
        swap(&bytes, &buffer)
    }

    /// Drops what was written past the first `count` bytes, to write something else there.
    package mutating func truncate(to count: Int) {
        bytes.removeSubrange(min(count, bytes.count)...)
        startOver()
    }

    // MARK: Containers

    package mutating func beginObject() { beginValue(); open(UInt8(ascii: "{")) }
    package mutating func endObject() { close(UInt8(ascii: "}")) }
    package mutating func beginArray() { beginValue(); open(UInt8(ascii: "[")) }
    package mutating func endArray() { close(UInt8(ascii: "]")) }

    /// Writes a member name; the next value written is its value.
    package mutating func key(_ name: StaticString) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
        bytes.append(contentsOf: indentation == nil ? [UInt8(ascii: "\""), UInt8(ascii: ":")] : Array("\": ".utf8))
        pendingValueAfterKey = true
    }

    /// Writes a member name that is not known at compile time.
    package mutating func key(_ name: String) {
        separate()
        appendQuoted(name)
        bytes.append(contentsOf: indentation == nil ? [UInt8(ascii: ":")] : [UInt8(ascii: ":"), UInt8(ascii: " ")])
        pendingValueAfterKey = true
    }

    // MARK: Scalars

    package mutating func value(_ string: String) { beginValue(); appendQuoted(string) }
    package mutating func value(_ string: String?) {
        if let string { value(string) } else { null() }
    }
    package mutating func value(_ bool: Bool) {
        beginValue(); bytes.append(contentsOf: bool ? Self.trueBytes : Self.falseBytes)
    }
    package mutating func value(_ int: Int) { beginValue(); bytes.append(contentsOf: String(int).utf8) }
    package mutating func null() { beginValue(); bytes.append(contentsOf: Self.nullBytes) }

    /// Appends members already rendered as compact JSON (`"a":1,"b":2`, no braces) to the
    /// object being written: how cached fragments are reused.
    package mutating func rawMembers(_ json: [UInt8]) {
        separate()
        bytes.append(contentsOf: json)
    }

    /// Writes a string value whose contents are already JSON-escaped (a cached fragment).
    package mutating func rawString(_ escaped: [UInt8]) {
        beginValue()
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: escaped)
        bytes.append(UInt8(ascii: "\""))
    }

    /// Writes a string value from three already-escaped parts.
    package mutating func rawString(_ first: [UInt8], _ second: [UInt8], _ third: [UInt8]) {
        beginValue()
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: first)
        bytes.append(contentsOf: second)
        bytes.append(contentsOf: third)
        bytes.append(UInt8(ascii: "\""))
    }

    /// Appends plain text, unquoted: for output formats beside JSON that share the buffer.
    package mutating func rawText(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    /// Writes a line break: the record separator of JSON Lines.
    package mutating func newline() { bytes.append(UInt8(ascii: "\n")) }

    // MARK: Internals

    private static let trueBytes = Array("true".utf8)
    private static let falseBytes = Array("false".utf8)
    private static let nullBytes = Array("null".utf8)
    private var pendingValueAfterKey = false

    private mutating func beginValue() {
        if pendingValueAfterKey {
            pendingValueAfterKey = false
            return
        }
        separate()
    }

    private mutating func separate() {
        guard !hasElement.isEmpty else { return }
        if hasElement[hasElement.count - 1] { bytes.append(UInt8(ascii: ",")) }
        hasElement[hasElement.count - 1] = true
        if let indentation {
            bytes.append(UInt8(ascii: "\n"))
            bytes.append(contentsOf: repeatElement(UInt8(ascii: " "), count: indentation * depth))
        }
    }

    private mutating func open(_ bracket: UInt8) {
        bytes.append(bracket)
        depth += 1
        hasElement.append(false)
    }

    private mutating func close(_ bracket: UInt8) {
        depth -= 1
        let hadElements = hasElement.removeLast()
        if let indentation, hadElements {
            bytes.append(UInt8(ascii: "\n"))
            bytes.append(contentsOf: repeatElement(UInt8(ascii: " "), count: indentation * depth))
        }
        bytes.append(bracket)
    }

    private mutating func appendQuoted(_ string: String) {
        bytes.append(UInt8(ascii: "\""))
        var string = string
        string.withUTF8 { utf8 in
            var runStart = 0
            for (index, byte) in utf8.enumerated()
            where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
                runStart = index + 1
                switch byte {
                case UInt8(ascii: "\""): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
                case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
                case UInt8(ascii: "\n"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
                case UInt8(ascii: "\r"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
                case UInt8(ascii: "\t"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
                default: bytes.append(contentsOf: Array("\\u\(hex(byte, width: 4))".utf8))
                }
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
