/// A view of one value in a `JSONDocument`.
package struct JSONValue: Sendable {
    let storage: JSONDocument.Storage
    package let index: Int

    /// The UTF-8 text of the document the value belongs to.
    package var source: [UInt8] { storage.source }

    private var entry: JSONTapeEntry { storage.tape[index] }

    /// What kind of value this is.
    package var kind: JSONKind { entry.kind }

    /// Byte offset of the value's first character in the document's source.
    package var offset: Int { Int(entry.start) }

    /// The tape index just past this value and everything inside it.
    var next: Int {
        let entry = entry
        switch entry.kind {
        case .array, .object: return Int(entry.extent)
        default: return index + 1
        }
    }

    package var isNull: Bool { kind == .null }

    /// The value as a Boolean, or nil when it is not `true` or `false`.
    package var bool: Bool? {
        switch kind {
        case .true: true
        case .false: false
        default: nil
        }
    }

    /// The decoded string, or nil when the value is not a string.
    package var string: String? {
        let entry = entry
        guard entry.kind == .string else { return nil }
        return storage.source.withUnsafeBufferPointer { bytes in
            let contents = UnsafeBufferPointer(
                rebasing: bytes[Int(entry.start) + 1..<Int(entry.start + 1 + entry.extent)])
            return entry.hasEscapes ? unescape(contents) : String(decoding: contents, as: UTF8.self)
        }
    }

    /// Whether the value is a string without escapes whose bytes equal `literal`.
    package func stringEquals(_ literal: StaticString) -> Bool {
        let entry = entry
        guard entry.kind == .string, !entry.hasEscapes, Int(entry.extent) == literal.utf8CodeUnitCount else {
            return false
        }
        return storage.source.withUnsafeBufferPointer { bytes in
            let base = bytes.baseAddress! + Int(entry.start) + 1
            return memoryEqual(base, literal.utf8Start, count: literal.utf8CodeUnitCount)
        }
    }

    /// The number's source text, or nil when the value is not a number.
    package var numberText: String? {
        let entry = entry
        guard entry.kind == .number else { return nil }
        return String(decoding: storage.source[Int(entry.start)..<Int(entry.start + entry.extent)], as: UTF8.self)
    }

    /// The number as an exact `Int`, or nil when it is not a number, has a fraction or
    /// exponent, or does not fit.
    package var int: Int? {
        let entry = entry
        guard entry.kind == .number else { return nil }
        var value = 0
        var negative = false
        for position in Int(entry.start)..<Int(entry.start + entry.extent) {
            let byte = storage.source[position]
            if byte == UInt8(ascii: "-") {
                negative = true
                continue
            }
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let digit = Int(byte - UInt8(ascii: "0"))
            let (shifted, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (added, overflow2) =
                negative ? shifted.subtractingReportingOverflow(digit) : shifted.addingReportingOverflow(digit)
            if overflow1 || overflow2 { return nil }
            value = added
        }
        return value
    }

    /// The number as a `Double`, or nil when the value is not a number.
    package var double: Double? {
        numberText.flatMap(Double.init)
    }

    /// The elements of an array; empty for any other kind.
    package var elements: JSONElements { JSONElements(container: self) }

    /// The members of an object in document order; empty for any other kind.
    package var members: JSONMembers { JSONMembers(container: self) }

    /// The value of the first member named `key`, if this is an object that has one.
    package subscript(key: String) -> JSONValue? {
        members.first { $0.key == key }?.value
    }

    /// The value of the first member whose name is exactly `key` (unescaped), walking the tape
    /// without building a value per member: the hot path of query reading.
    package func member(named key: StaticString) -> JSONValue? {
        let tape = storage.tape
        guard tape[index].kind == .object else { return nil }
        var position = index + 1
        let end = Int(tape[index].extent)
        while position < end {
            if JSONValue(storage: storage, index: position).stringEquals(key) {
                return JSONValue(storage: storage, index: position + 1)
            }
            let value = tape[position + 1]
            position = value.kind == .array || value.kind == .object ? Int(value.extent) : position + 2
        }
        return nil
    }
}

/// The elements of a JSON array.
package struct JSONElements: Sequence, Sendable {
    let container: JSONValue

    package struct Iterator: IteratorProtocol {
        let storage: JSONDocument.Storage
        var index: Int
        let end: Int

        package mutating func next() -> JSONValue? {
            guard index < end else { return nil }
            let value = JSONValue(storage: storage, index: index)
            index = value.next
            return value
        }
    }

    package func makeIterator() -> Iterator {
        guard container.kind == .array else {
            return Iterator(storage: container.storage, index: 0, end: 0)
        }
        return Iterator(storage: container.storage, index: container.index + 1, end: container.next)
    }

}

/// The members of a JSON object, as name and value pairs.
package struct JSONMembers: Sequence, Sendable {
    let container: JSONValue

    package struct Member: Sendable {
        let storage: JSONDocument.Storage
        let nameIndex: Int

        /// The member name's own value (a string), for its position and raw bytes.
        package var name: JSONValue { JSONValue(storage: storage, index: nameIndex) }
        package var value: JSONValue { JSONValue(storage: storage, index: nameIndex + 1) }
        /// The decoded member name.
        package var key: String { name.string ?? "" }
    }

    package struct Iterator: IteratorProtocol {
        let storage: JSONDocument.Storage
        var index: Int
        let end: Int

        package mutating func next() -> Member? {
            guard index < end else { return nil }
            let member = Member(storage: storage, nameIndex: index)
            let value = storage.tape[index + 1]
            index = value.kind == .array || value.kind == .object ? Int(value.extent) : index + 2
            return member
        }
    }

    package func makeIterator() -> Iterator {
        guard container.kind == .object else {
            return Iterator(storage: container.storage, index: 0, end: 0)
        }
        return Iterator(storage: container.storage, index: container.index + 1, end: container.next)
    }
}

func memoryEqual(_ lhs: UnsafePointer<UInt8>, _ rhs: UnsafePointer<UInt8>, count: Int) -> Bool {
    for offset in 0..<count where lhs[offset] != rhs[offset] {
        return false
    }
    return true
}

/// Decodes the escapes of a string the parser already validated.
private func unescape(_ raw: UnsafeBufferPointer<UInt8>) -> String {
    var output: [UInt8] = []
    output.reserveCapacity(raw.count)
    var position = 0
    func quad(at start: Int) -> UInt32 {
        (start..<start + 4).reduce(0) { $0 << 4 | UInt32(hexValue(raw[$1]) ?? 0) }
    }
    while position < raw.count {
        let byte = raw[position]
        guard byte == UInt8(ascii: "\\") else {
            output.append(byte)
            position += 1
            continue
        }
        let escaped = raw[position + 1]
        position += 2
        switch escaped {
        case UInt8(ascii: "b"): output.append(0x08)
        case UInt8(ascii: "f"): output.append(0x0C)
        case UInt8(ascii: "n"): output.append(0x0A)
        case UInt8(ascii: "r"): output.append(0x0D)
        case UInt8(ascii: "t"): output.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = quad(at: position)
            position += 4
            if (0xD800...0xDBFF).contains(scalar) {
                let low = quad(at: position + 2)
                position += 6
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            }
            // The parser rejected lone surrogates, so this is always a valid scalar.
            output.append(contentsOf: String(Character(Unicode.Scalar(scalar) ?? "\u{FFFD}")).utf8)
        default: output.append(escaped)
        }
    }
    return String(decoding: output, as: UTF8.self)
}
