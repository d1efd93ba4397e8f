/// A strictly parsed JSON text (RFC 8259): its UTF-8 source and a flat tape of its values.
///
/// The tape keeps one entry per value (object keys included) in document order, each with the
/// byte offset where the value starts. Strings and numbers stay undecoded until read, so reading
/// a document costs little more than scanning it, and every value can say where it came from.
/// Containers record where they end, so a reader skips a whole subtree in one step.
///
/// Custody parses JSON itself rather than through `JSONDecoder` for two reasons: errors must
/// name `file:line:column`, and `custody decide` must parse hundreds of thousands of lines a
/// second without allocating per value.
package struct JSONDocument: Sendable {
    /// The source and tape, shared by the document and every `JSONValue` read from it, so a
    /// value costs one reference count. Mutated only by `reparse` and only when uniquely
    /// referenced (copy-on-write), which is what makes the unchecked `Sendable` sound.
    final class Storage: @unchecked Sendable {
        var source: [UInt8]
        var tape: [JSONTapeEntry]

        init(source: [UInt8], tape: [JSONTapeEntry]) {
            self.source = source
            self.tape = tape
        }
    }

    private(set) var storage: Storage

    /// The UTF-8 text the document was parsed from.
    package var source: [UInt8] { storage.source }
    package var tape: [JSONTapeEntry] { storage.tape }

    /// Parses `source`, which must hold exactly one JSON value (surrounding whitespace allowed).
    /// - Throws: `JSONSyntaxError` naming the byte offset of the first problem.
    package init(parsing source: [UInt8]) throws(JSONSyntaxError) {
        storage = Storage(source: source, tape: [])
        try Self.parse(storage)
    }

    /// Replaces the document with `bytes`, reusing its storage when no value still refers to it:
    /// the hot path of line-by-line readers such as `custody decide`.
    package mutating func reparse(_ bytes: UnsafeRawBufferPointer) throws(JSONSyntaxError) {
        if !isKnownUniquelyReferenced(&storage) {
            storage = Storage(source: [], tape: [])
        }
        storage.source.removeAll(keepingCapacity: true)
        storage.source.append(contentsOf: bytes)
        try Self.parse(storage)
    }

    private static func parse(_ storage: Storage) throws(JSONSyntaxError) {
        var tape = storage.tape
        storage.tape = []
        tape.removeAll(keepingCapacity: true)
        defer { storage.tape = tape }
        let result: Result<Void, JSONSyntaxError> = storage.source.withUnsafeBufferPointer { bytes in
            var parser = JSONParser(bytes: bytes, tape: tape)
            tape = []
            defer { tape = parser.tape }
            do throws(JSONSyntaxError) {
                try parser.parseDocument()
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try result.get()
    }

    /// The top-level value.
    package var root: JSONValue { JSONValue(storage: storage, index: 0) }
}

/// The kind of a JSON value.
package enum JSONKind: UInt8, Sendable {
    case null, `false`, `true`, number, string, array, object

    /// How the kind is named in error messages.
    package var article: String {
        switch self {
        case .null: "null"
        case .false: "false"
        case .true: "true"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// One value on a `JSONDocument` tape.
package struct JSONTapeEntry: Sendable {
    package var kind: JSONKind
    /// For strings: the raw text contains at least one backslash escape.
    package var hasEscapes: Bool
    /// Byte offset of the value's first byte (the opening quote of a string).
    package var start: UInt32
    /// Strings: byte length of the raw contents between the quotes. Numbers: byte length.
    /// Arrays and objects: the tape index just past the container's last descendant.
    package var extent: UInt32
}

/// Why a text is not valid JSON, and the byte offset where that became clear.
package struct JSONSyntaxError: Error, Sendable, Equatable {
    package var offset: Int
    package var message: String

    package init(offset: Int, message: String) {
        self.offset = offset
        self.message = message
    }
}
