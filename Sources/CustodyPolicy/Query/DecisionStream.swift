/// Answers JSON Lines queries: one answer line per query line, in order.
///
/// A line that cannot be read gets `{"error": "...", "line": N}` on its own line and the
/// lines after it are still answered, so output line N always answers input line N.
/// Rendered reasons are cached (bounded), since a stream asks the same few questions of the
/// same few effective policies over and over.
public struct DecisionStream {
    /// How answers are written.
    public enum Format: String, Sendable, CaseIterable {
        /// One JSON object per line (the stable contract).
        case json
        /// One line per answer for people: `ALLOW`/`BLOCK`/`ERROR`, the query, the reason.
        case text
    }

    /// What the stream does with accounts and time.
    public struct Options: Sendable {
        /// Answer queries naming an account the tenant does not know with an error instead of
        /// treating the account as unmanaged.
        public var strictAccounts: Bool
        public var format: Format
        /// The current time since the Unix epoch, for `offlineAccess` queries without `now`.
        public var currentTime: @Sendable () -> Duration

        /// Creates options.
        public init(strictAccounts: Bool = false, format: Format = .json, currentTime: @escaping @Sendable () -> Duration) {
            self.strictAccounts = strictAccounts
            self.format = format
            self.currentTime = currentTime
        }
    }

    public let snapshot: PolicySnapshot
    public let options: Options
    /// Lines read so far.
    public private(set) var lineNumber = 0
    /// Lines answered with an error so far.
    public private(set) var errorCount = 0

    private var document: JSONDocument
    private var writer = JSONWriter(reservingCapacity: 512)
    private let cache = ExplanationCache()

    /// Creates a stream answering from `snapshot`.
    public init(snapshot: PolicySnapshot, options: Options) {
        self.snapshot = snapshot
        self.options = options
        self.document = try! JSONDocument(parsing: Array("null".utf8))
    }

    /// Answers one line (without its line break; a trailing carriage return is ignored) and
    /// appends the answer and a line break to `output`.
    public mutating func answer(line: UnsafeRawBufferPointer, into output: inout [UInt8]) {
        lineNumber += 1
        var line = line
        if let last = line.last, last == UInt8(ascii: "\r") {
            line = UnsafeRawBufferPointer(rebasing: line.dropLast())
        }
        writer.clear()
        do throws(QueryError) {
            let query = try readQuery(line)
            let answer = snapshot.answer(query)
            write(answer, query: query)
        } catch {
            errorCount += 1
            writeError(error)
        }
        output.append(contentsOf: writer.bytes)
        output.append(UInt8(ascii: "\n"))
    }

    /// Answers every line of `input` (a whole JSON Lines text) and returns the answers.
    public mutating func answer(lines input: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        input.withUnsafeBytes { bytes in
            var start = 0
            while start < bytes.count {
                let end = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.count
                answer(line: UnsafeRawBufferPointer(rebasing: bytes[start..<end]), into: &output)
                start = end + 1
            }
        }
        return output
    }

    private mutating func readQuery(_ line: UnsafeRawBufferPointer) throws(QueryError) -> DecisionQuery {
        if line.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }) {
            throw QueryError(message: "empty line: expected a JSON query object", column: 1)
        }
        do {
            try document.reparse(line)
        } catch {
            throw QueryError(message: error.message, column: JSONText.lineAndColumn(ofOffset: error.offset, in: document.source).column)
        }
        let query = try DecisionQuery(json: document.root, currentTime: options.currentTime)
        if options.strictAccounts {
            for (role, account) in query.accounts where snapshot.tenantAccount(for: account) == nil {
                throw QueryError(
                    message: "unknown account '\(account)' (\(role.phrase)): not in the tenant; without --strict-accounts it counts as unmanaged",
                    column: 1)
            }
        }
        return query
    }

    private mutating func write(_ answer: DecisionAnswer, query: DecisionQuery) {
        switch options.format {
        case .json:
            let cache = self.cache
            DecisionEncoding.write(answer, to: &writer) { decision, writer in cache.writeExplanation(of: decision, to: &writer) }
        case .text:
            let verdict = answer.isAllowed ? (query.action == .encryptionRequired ? "REQUIRED" : "ALLOW") : (query.action == .encryptionRequired ? "OPTIONAL" : "BLOCK")
            writer.rawText("\(verdict.padding(toLength: 9))\(query) — \(answer.reason)")
        }
    }

    private mutating func writeError(_ error: QueryError) {
        switch options.format {
        case .json: DecisionEncoding.writeError(error.description, line: lineNumber, to: &writer)
        case .text: writer.rawText("\("ERROR".padding(toLength: 9))line \(lineNumber), \(error)")
        }
    }
}

/// Rendered `reason`, `setting` and `policies` members by the findings that produced them.
private final class ExplanationCache {
    private struct Key: Hashable {
        let primary: Finding
        let secondary: Finding?
    }

    private static let capacity = 4_096
    private var fragments: [Key: [UInt8]] = [:]

    func writeExplanation(of decision: Decision, to writer: inout JSONWriter) {
        let key = Key(primary: decision.primary, secondary: decision.secondary)
        if let fragment = fragments[key] {
            writer.rawMembers(fragment)
            return
        }
        var scratch = JSONWriter()
        scratch.beginObject()
        DecisionEncoding.writeExplanation(decision, to: &scratch)
        scratch.endObject()
        let fragment = Array(scratch.bytes.dropFirst().dropLast())
        if fragments.count >= Self.capacity { fragments.removeAll(keepingCapacity: true) }
        fragments[key] = fragment
        writer.rawMembers(fragment)
    }
}

extension String {
    func padding(toLength length: Int) -> String {
        count >= length ? self + " " : self + String(repeating: " ", count: length - count)
    }
}
