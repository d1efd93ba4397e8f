import Foundation

/// How Custody writes an `Encodable` answer off the decision path, from either front end: one
/// line of compact JSON, keys sorted (Foundation's encoder on Linux does not keep the order
/// they were encoded in, and an answer must not change from run to run), slashes unescaped.
package enum JSONLine {
    package static func encode(_ value: some Encodable, pretty: Bool = false) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting =
            pretty ? [.sortedKeys, .withoutEscapingSlashes, .prettyPrinted] : [.sortedKeys, .withoutEscapingSlashes]
        var bytes = [UInt8](try encoder.encode(value))
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }
}
