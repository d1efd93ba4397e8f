@testable import CustodyPolicy
import CustodyTestSupport
import Foundation
import Testing

/// Custody's JSON parser against every parsing case of the public JSONTestSuite
/// (github.com/nst/JSONTestSuite, in ../shared/test-vectors): every `y_` document is accepted,
/// every `n_` document refused with a located error, and every `i_` document (where RFC 8259
/// lets a parser choose) gets the answer documented in docs/hardening.md and in `isAccepted(_:)`.
@Suite("JSONTestSuite", .needsSharedCorpora)
struct JSONTestSuiteTests {
    static func cases(_ prefix: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: TestPaths.jsonTestSuite)
            .filter { $0.hasPrefix(prefix) && $0.hasSuffix(".json") }.sorted()
    }

    static func bytes(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: URL(fileURLWithPath: TestPaths.jsonTestSuite + "/" + name)))
    }

    @Test("accepts every y_ document")
    func accepted() throws {
        let names = try Self.cases("y_")
        #expect(names.count == 95)
        for name in names {
            #expect(throws: Never.self, "\(name)") { try JSONDocument(parsing: try Self.bytes(name)) }
        }
    }

    @Test("refuses every n_ document with an error located inside it")
    func refused() throws {
        let names = try Self.cases("n_")
        #expect(names.count == 188)
        for name in names {
            let bytes = try Self.bytes(name)
            do {
                _ = try JSONDocument(parsing: bytes)
                Issue.record("\(name) was accepted")
            } catch {
                #expect(
                    error.offset >= 0 && error.offset <= bytes.count,
                    "\(name): offset \(error.offset) of \(bytes.count)")
                #expect(!error.message.isEmpty, "\(name)")
            }
        }
    }

    /// What Custody does with each document RFC 8259 leaves to the parser (docs/hardening.md):
    /// numbers of any size or precision are accepted (kept as written; a setting that needs a
    /// number checks its range where it is read); 500 levels of nesting are accepted (the limit
    /// is 512); everything that is not valid Unicode in UTF-8 is refused: invalid or overlong
    /// UTF-8, escaped lone or inverted surrogates, UTF-16 and byte order marks.
    static func isAccepted(_ name: String) -> Bool {
        name.hasPrefix("i_number_") || name == "i_structure_500_nested_arrays.json"
    }

    @Test("answers every i_ document as documented")
    func implementationDefined() throws {
        let names = try Self.cases("i_")
        #expect(names.count == 35)
        #expect(names.filter(Self.isAccepted).count == 11)
        for name in names {
            let bytes = try Self.bytes(name)
            if Self.isAccepted(name) {
                #expect(throws: Never.self, "\(name)") { try JSONDocument(parsing: bytes) }
            } else {
                #expect(throws: JSONSyntaxError.self, "\(name)") { try JSONDocument(parsing: bytes) }
            }
        }
    }
}
