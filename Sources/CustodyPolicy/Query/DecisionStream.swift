#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What a decision was asked with, as an audit entry keeps it so that it can be decided again
/// (a replay): the query line as it came, and the facts recorded for its account that a
/// launch query's missing facts were taken from.
package struct AskedQuery {
    /// The query line, without its line break: valid JSON (it was read).
    package let line: [UInt8]
    /// The recorded facts the answer used (`DecisionStream.Options.recordedFacts`); nil when
    /// the query was decided on its own facts.
    package let recordedFacts: LaunchFacts?
}

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
        /// Write each decision's `reason` (true), or only its `setting` and `policies`, for
        /// callers that need the verdict alone and not the words.
        public var reasons: Bool
        /// Add the rule behind each decision: `"rule"` (its name), `"basis"` (`documented` or
        /// `inferred`) and `"source"` (the Microsoft source, or why Custody infers it).
        public var explain: Bool
        /// The current time since the Unix epoch, for `offlineAccess` queries without `now`.
        public var currentTime: @Sendable () -> Duration
        /// The facts an installation recorded for an account (`custody checkin --facts`, and its
        /// last check-in): a launch query's missing facts are taken from them. Nil (the default):
        /// a launch decides on the facts its query gives.
        /// When the state cannot be read it throws (`QueryError.isStateFailure`): the line is an
        /// error, never decided without them.
        public var recordedFacts: (@Sendable (AccountID) throws(QueryError) -> LaunchFacts?)?

        /// Creates options.
        public init(
            strictAccounts: Bool = false, format: Format = .json, reasons: Bool = true, explain: Bool = false,
            currentTime: @escaping @Sendable () -> Duration
        ) {
            self.strictAccounts = strictAccounts
            self.format = format
            self.reasons = reasons
            self.explain = explain
            self.currentTime = currentTime
        }
    }

    public let snapshot: PolicySnapshot
    /// How answers are written; a pooled stream takes the options of its next user.
    public package(set) var options: Options
    /// The number of the last line read (0 before the first). Set it to continue numbering from
    /// elsewhere, as when blocks of one input are answered by several streams in parallel.
    public var lineNumber = 0
    /// Lines answered with an error so far.
    public private(set) var errorCount = 0
    /// Called with each query answered (lines that are errors excluded) as its JSON answer is
    /// written, to record it (an audit log, a shadow) and add members at the end of the object
    /// (the decision id an audit entry holds), with `answer.reason` (made when called: a hook
    /// that needs no reason pays for none) and what the query was asked with. Returns the
    /// decision id, which a text answer ends with.
    package var annotate:
        (
            (
                _ query: DecisionQuery, _ answer: DecisionAnswer, _ reason: () -> String, _ asked: AskedQuery,
                inout JSONWriter
            ) -> String?
        )?
    /// JSON members (already encoded, without braces) added at the end of every answer object,
    /// such as the revision a service decided at.
    package var trailer: [UInt8] = []
    /// The error of the last line, when it was one.
    public private(set) var lastError: QueryError?
    /// Decisions answered so far, by action and outcome.
    public var tallies = DecisionTallies()

    /// A longer line is answered with an error in its place, not parsed (a reader that cuts
    /// long lines to `maximumLineBytes + 1` bytes keeps a huge one out of memory).
    public var maximumLineBytes = Int.max

    private var document: JSONDocument
    private var writer = JSONWriter(reservingCapacity: 512)
    private let cache: ExplanationCache

    /// Creates a stream answering from `snapshot`.
    public init(snapshot: PolicySnapshot, options: Options) {
        self.snapshot = snapshot
        self.options = options
        self.document = try! JSONDocument(parsing: Array("null".utf8))
        self.cache = ExplanationCache(shared: snapshot.explanations)
    }

    /// Forgets the counts, the hooks and the line numbers of its last user (a pooled stream
    /// keeps only its parse buffer and its reason cache).
    package mutating func reset() {
        lineNumber = 0
        errorCount = 0
        lastError = nil
        tallies = DecisionTallies()
        annotate = nil
        trailer = []
    }

    /// Answers one line (without its line break; a trailing carriage return is ignored) and
    /// appends the answer and a line break to `output`.
    public mutating func answer(line: UnsafeRawBufferPointer, into output: inout [UInt8]) {
        if line.count > maximumLineBytes {
            refuseLine(
                "the line is longer than \(maximumLineBytes) bytes; not read (raise the limit with --max-line-bytes)",
                into: &output)
            return
        }
        lineNumber += 1
        var line = line
        if let last = line.last, last == UInt8(ascii: "\r") {
            line = UnsafeRawBufferPointer(rebasing: line.dropLast())
        }
        // The answer is written straight onto the end of the output.
        let start = output.count
        writer.takeOver(&output)
        defer {
            writer.newline()
            writer.handBack(&output)
        }
        lastError = nil
        do throws(QueryError) {
            let asked = try readQuery(line)
            let (query, answer, recorded) = try snapshot.answer(asked, recordedFacts: options.recordedFacts)
            // A contradictory account, or a bundle of several platforms with none named, is a
            // line error, located (rare: checked only when a decision was refused, so the
            // common line pays nothing for it).
            if answer.isRefusal {
                try snapshot.checkAccounts(of: query, strict: false)
                try snapshot.checkPlatform()
            }
            tallies.count(query.action, allowed: answer.isAllowed)
            write(answer, query: query, recorded: recorded)
        } catch {
            errorCount += 1
            tallies.countError()
            lastError = error
            writer.truncate(to: start)
            writeError(error)
        }
    }

    /// Answers the next line, which was not read (too long, say), with an error saying why, in
    /// its place: `{"error": "line N, ...", "line": N}`.
    public mutating func refuseLine(_ message: String, into output: inout [UInt8]) {
        lineNumber += 1
        errorCount += 1
        tallies.countError()
        let error = QueryError(message: message, column: 1)
        lastError = error
        writer.clear()
        writeError(error)
        output.append(contentsOf: writer.bytes)
        output.append(UInt8(ascii: "\n"))
    }

    /// Answers every line of `input` (a whole JSON Lines text) and returns the answers.
    public mutating func answer(lines input: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(input.count * 2)
        input.withUnsafeBytes { answer(lines: $0, into: &output) }
        return output
    }

    /// Answers every line of `input` (lines end with a line break; the last need not) and
    /// appends the answers to `output`.
    public mutating func answer(lines input: UnsafeRawBufferPointer, into output: inout [UInt8]) {
        var start = 0
        while start < input.count {
            let end = Self.lineEnd(in: input, from: start)
            answer(line: UnsafeRawBufferPointer(rebasing: input[start..<end]), into: &output)
            start = end + 1
        }
    }

    /// Answers every line of `input`, handing the answers to `write` in blocks of about
    /// `blockSize` bytes (the last block may be smaller), as a command writing to a pipe does.
    public mutating func answer(lines input: UnsafeRawBufferPointer, blockSize: Int = 1 << 18, write: ([UInt8]) -> Void)
    {
        var output: [UInt8] = []
        output.reserveCapacity(min(blockSize, 1 << 20) + 4_096)
        var start = 0
        while start < input.count {
            let end = Self.lineEnd(in: input, from: start)
            answer(line: UnsafeRawBufferPointer(rebasing: input[start..<end]), into: &output)
            if output.count >= blockSize {
                write(output)
                output.removeAll(keepingCapacity: true)
            }
            start = end + 1
        }
        if !output.isEmpty { write(output) }
    }

    /// Where the line starting at `start` ends: the offset of its line break, or the end of
    /// `input` (found with `memchr`, which reads many bytes at a time).
    package static func lineEnd(in input: UnsafeRawBufferPointer, from start: Int) -> Int {
        guard start < input.count, let base = input.baseAddress,
            let found = memchr(base + start, Int32(UInt8(ascii: "\n")), input.count - start)
        else { return input.count }
        return base.distance(to: UnsafeRawPointer(found))
    }

    private mutating func readQuery(_ line: UnsafeRawBufferPointer) throws(QueryError) -> DecisionQuery {
        if line.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }) {
            throw QueryError(message: "empty line: expected a JSON query object", column: 1)
        }
        do {
            try document.reparse(line)
        } catch {
            throw QueryError(
                message: error.message,
                column: JSONText.lineAndColumn(ofOffset: error.offset, in: document.source).column, offset: error.offset
            )
        }
        let query = try DecisionQuery(json: document.root, currentTime: options.currentTime)
        if options.strictAccounts { try snapshot.checkAccounts(of: query, strict: true) }
        return query
    }

    private mutating func write(_ answer: DecisionAnswer, query: DecisionQuery, recorded: LaunchFacts?) {
        // The line's bytes only for the audit hook: the common answer takes no reference.
        let source = annotate == nil ? [] : document.source
        func asked() -> AskedQuery { AskedQuery(line: source, recordedFacts: recorded) }
        switch options.format {
        case .json:
            let cache = self.cache
            let reasons = options.reasons
            let explain = options.explain
            if annotate != nil || !trailer.isEmpty || explain {
                let annotate = self.annotate
                let trailer = self.trailer
                // One decision's reason comes from the findings its answer just rendered.
                var written: (RenderedExplanation, RenderedExplanation?)?
                DecisionEncoding.write(
                    answer, to: &writer,
                    explanation: { decision, writer in
                        written = cache.writeExplanation(of: decision, reason: reasons, rule: explain, to: &writer)
                    },
                    trailer: { writer in
                        if let annotate {
                            let written = written
                            _ = annotate(
                                query, answer,
                                {
                                    if case .single = answer, let (primary, secondary) = written {
                                        ExplanationCache.reason(primary, secondary)
                                    } else {
                                        cache.reason(of: answer)
                                    }
                                }, asked(), &writer)
                        }
                        if !trailer.isEmpty { writer.rawMembers(trailer) }
                    })
            } else {
                DecisionEncoding.write(answer, to: &writer) { decision, writer in
                    cache.writeExplanation(of: decision, reason: reasons, rule: false, to: &writer)
                }
            }
        case .text:
            var decisionID: String?
            if let annotate {
                var ignored = JSONWriter()
                decisionID = annotate(query, answer, { cache.reason(of: answer) }, asked(), &ignored)
            }
            let verdict: String
            switch answer {
            case .launch(let launch):
                verdict = launch.outcome.rawValue.uppercased()
            case .single(let decision) where decision.urlOutcome == .redirect: verdict = "REDIRECT"
            default:
                verdict =
                    answer.isAllowed
                    ? (query.action == .encryptionRequired ? "REQUIRED" : "ALLOW")
                    : (query.action == .encryptionRequired ? "OPTIONAL" : "BLOCK")
            }
            var line = "\(verdict.padding(toLength: 9))\(query) — \(answer.reason)"
            if options.explain, let rule = answer.decidingRule {
                line += " [\(rule.id), \(rule.basis.rawValue): \(rule.source)]"
            }
            // An audited answer names its entry, as the JSON answer's `decisionId` does.
            if let decisionID { line += " (decision \(decisionID))" }
            // The query's text (app ids, targets, paths) came from input: escaped, so a line
            // cannot rewrite the terminal or forge another answer.
            writer.rawText(line.escapingControlCharacters)
        }
    }

    private mutating func writeError(_ error: QueryError) {
        switch options.format {
        case .json:
            // The code a single query's error has over HTTP (400 `invalid-query`, or 422
            // `ambiguous-account`).
            DecisionEncoding.writeError(error.description, line: lineNumber, code: error.code, to: &writer)
        case .text:
            writer.rawText("\("ERROR".padding(toLength: 9))line \(lineNumber), \(error)".escapingControlCharacters)
        }
    }
}

/// Rendered explanations by finding. A decision's reason is its findings' explanations joined,
/// so caching per finding (not per decision) keeps the cache small when two accounts' policies
/// combine: n effective policies give about n × rules entries, not n² pairs.
private final class ExplanationCache {
    private static let capacity = 1 << 16
    private var rendered: [Finding: RenderedExplanation] = [:]
    private let shared: RenderedExplanations

    init(shared: RenderedExplanations) {
        self.shared = shared
    }

    /// Writes a decision's reason and deciding members; returns the findings it rendered.
    @discardableResult
    func writeExplanation(of decision: Decision, reason: Bool, rule: Bool, to writer: inout JSONWriter) -> (
        RenderedExplanation, RenderedExplanation?
    ) {
        let primary = render(decision.primary)
        let secondary = decision.secondary.map(render)
        if reason {
            writer.key("reason")
            if let secondary {
                writer.rawString(primary.explanation, Self.separator, secondary.explanation)
            } else {
                writer.rawString(primary.explanation)
            }
        }
        let deciding = decision.decidingFinding == decision.primary ? primary : secondary ?? primary
        writer.rawMembers(deciding.members)
        if rule { writer.rawMembers(deciding.ruleMembers) }
        return (primary, secondary)
    }

    private static let separator = Array("; ".utf8)

    /// `answer.reason`, from the rendered findings when the answer is one decision (the
    /// common case: the same few reasons over and over), not rendered afresh.
    func reason(of answer: DecisionAnswer) -> String {
        guard case .single(let decision) = answer else { return answer.reason }
        return Self.reason(render(decision.primary), decision.secondary.map(render))
    }

    /// A decision's reason from its rendered findings.
    static func reason(_ primary: RenderedExplanation, _ secondary: RenderedExplanation?) -> String {
        guard let secondary else { return primary.text }
        return primary.text + "; " + secondary.text
    }

    private func render(_ finding: Finding) -> RenderedExplanation {
        if let cached = rendered[finding] { return cached }
        let entry = shared.rendered(finding, make: Self.make)
        if rendered.count >= Self.capacity { rendered.removeAll(keepingCapacity: true) }
        rendered[finding] = entry
        return entry
    }

    private static func make(_ finding: Finding) -> RenderedExplanation {
        let text = finding.explanation
        var scratch = JSONWriter()
        scratch.value(text)
        let explanation = Array(scratch.bytes.dropFirst().dropLast())
        scratch.clear()
        scratch.beginObject()
        scratch.key("setting")
        scratch.value(finding.settingName)
        scratch.key("policies")
        scratch.beginArray()
        for policy in finding.sources { scratch.value(policy.name) }
        scratch.endArray()
        scratch.endObject()
        let members = Array(scratch.bytes.dropFirst().dropLast())
        scratch.clear()
        let rule = finding.rule
        scratch.beginObject()
        scratch.key("rule")
        scratch.value(rule.id)
        scratch.key("basis")
        scratch.value(rule.basis.rawValue)
        scratch.key("source")
        scratch.value(rule.source)
        scratch.endObject()
        return RenderedExplanation(
            text: text, explanation: explanation, members: members,
            ruleMembers: Array(scratch.bytes.dropFirst().dropLast()))
    }
}

extension String {
    func padding(toLength length: Int) -> String {
        count >= length ? self + " " : self + String(repeating: " ", count: length - count)
    }
}

/// How many decisions a stream answered, by action and outcome, and how many lines were errors.
public struct DecisionTallies: Sendable {
    private var allowed = [Int](repeating: 0, count: DecisionAction.allCases.count)
    private var blocked = [Int](repeating: 0, count: DecisionAction.allCases.count)
    /// Lines that were errors.
    public private(set) var errors = 0

    public init() {}

    mutating func count(_ action: DecisionAction, allowed isAllowed: Bool) {
        if isAllowed { allowed[action.ordinal] += 1 } else { blocked[action.ordinal] += 1 }
    }

    mutating func countError() {
        errors += 1
    }

    /// Each action with its allowed and blocked counts.
    public var counts: [(action: DecisionAction, allowed: Int, blocked: Int)] {
        DecisionAction.allCases.map { ($0, allowed[$0.ordinal], blocked[$0.ordinal]) }
    }
}

extension DecisionAction {
    /// The action's position in `allCases`.
    var ordinal: Int {
        switch self {
        case .saveTo: 0
        case .openFrom: 1
        case .share: 2
        case .receive: 3
        case .copyOut: 4
        case .pasteIn: 5
        case .print: 6
        case .backup: 7
        case .screenCapture: 8
        case .encryptionRequired: 9
        case .notifications: 10
        case .accountAllowed: 11
        case .offlineAccess: 12
        case .appSharing: 13
        case .appIntents: 14
        case .contactSync: 15
        case .writingTools: 16
        case .genmoji: 17
        case .thirdPartyKeyboard: 18
        case .widgetContentSync: 19
        case .openURL: 20
        case .launch: 21
        }
    }
}

/// A finding's explanation and deciding members, rendered as JSON fragments. A class: a cache
/// hit hands out one reference, not four.
final class RenderedExplanation: Sendable {
    /// The explanation as text.
    let text: String
    /// The explanation, JSON-escaped, without quotes.
    let explanation: [UInt8]
    /// `"setting":...,"policies":[...]` for when the finding decides.
    let members: [UInt8]
    /// `"rule":...,"basis":...,"source":...` for `--explain`.
    let ruleMembers: [UInt8]

    init(text: String, explanation: [UInt8], members: [UInt8], ruleMembers: [UInt8]) {
        self.text = text
        self.explanation = explanation
        self.members = members
        self.ruleMembers = ruleMembers
    }
}

/// Explanations rendered for one snapshot, shared by every stream deciding with it: a stream
/// made for one request starts with the reasons others already rendered. Bounded.
final class RenderedExplanations: Sendable {
    private static let capacity = 1 << 16
    private let rendered = Locked<[Finding: RenderedExplanation]>([:])

    func rendered(_ finding: Finding, make: (Finding) -> RenderedExplanation) -> RenderedExplanation {
        if let cached = rendered.withLock({ $0[finding] }) { return cached }
        let entry = make(finding)
        rendered.withLock { rendered in
            if rendered.count >= Self.capacity { rendered.removeAll(keepingCapacity: true) }
            rendered[finding] = entry
        }
        return entry
    }
}
