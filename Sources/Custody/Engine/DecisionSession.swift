import Atomics
public import CustodyPolicy
import CustodyStore
import Foundation

/// Answers the JSON Lines queries of one caller (a `custody decide` worker, one request of the
/// decision service) with one policy snapshot, and audits them when decision auditing is on.
///
/// Every answer of a session is decided at one revision and event id. With auditing on, each
/// decision's answer carries a `decisionId` that its audit entry holds, and `commit()` must
/// store the entries before the answers written since the last commit leave the process: an
/// answer is never given without its audit entry.
public struct DecisionSession {
    /// The revision (bundle content hash) the answers are decided at.
    public let revision: String
    /// The newest event id the engine knew when the session began.
    public let eventID: Int64
    var stream: DecisionStream
    private let audit: AuditBuffer?

    /// - Parameter shadow: where live decisions go to be decided under the shadow bundle too.
    init(
        stream: DecisionStream, revision: String, eventID: Int64, stamped: Bool, audit: AuditBuffer?,
        shadow: ShadowTap? = nil
    ) {
        self.revision = revision
        self.eventID = eventID
        self.stream = stream
        self.audit = audit
        if stamped {
            var writer = JSONWriter()
            writer.beginObject()
            writer.key("revision")
            writer.value(revision)
            writer.key("eventId")
            writer.value(Int(eventID))
            writer.endObject()
            self.stream.trailer = Array(writer.bytes.dropFirst().dropLast())
        }
        switch (audit, shadow) {
        case (let audit?, let shadow?):
            self.stream.annotate = { query, answer, reason, asked, writer in
                shadow.capture(query, answer, asked)
                return audit.record(query, answer, reason: reason(), asked: asked, into: &writer)
            }
        case (let audit?, nil):
            self.stream.annotate = { query, answer, reason, asked, writer in
                audit.record(query, answer, reason: reason(), asked: asked, into: &writer)
            }
        case (nil, let shadow?):
            self.stream.annotate = { query, answer, _, asked, _ in
                shadow.capture(query, answer, asked)
                return nil
            }
        case (nil, nil): break
        }
    }

    /// The number of the last line answered (0 before the first); set it to number lines from
    /// elsewhere.
    public var lineNumber: Int {
        get { stream.lineNumber }
        set { stream.lineNumber = newValue }
    }

    /// Lines answered with an error so far.
    public var errorCount: Int { stream.errorCount }

    /// The error of the last line answered, when it was one.
    public var lastError: QueryError? { stream.lastError }

    /// Decisions answered so far by action and outcome; reset them after reading.
    public var tallies: DecisionTallies {
        get { stream.tallies }
        set { stream.tallies = newValue }
    }

    /// Whether decisions are audited.
    public var isAuditing: Bool { audit != nil }

    /// Answers one line (without its line break) and appends the answer and a line break.
    public mutating func answer(line: UnsafeRawBufferPointer, into output: inout [UInt8]) {
        stream.answer(line: line, into: &output)
    }

    /// Answers the next line, which was not read, with an error saying why (see
    /// `DecisionStream.refuseLine`).
    public mutating func refuseLine(_ message: String, into output: inout [UInt8]) {
        stream.refuseLine(message, into: &output)
    }

    /// Answers every line of `input` and appends the answers.
    /// A longer line is answered with an error in its place, not parsed.
    public var maximumLineBytes: Int {
        get { stream.maximumLineBytes }
        set { stream.maximumLineBytes = newValue }
    }

    public mutating func answer(lines input: UnsafeRawBufferPointer, into output: inout [UInt8]) {
        stream.answer(lines: input, into: &output)
    }

    /// Stores the audit entries of the answers written since the last commit; returns how many.
    /// - Throws: `CustodyError` `.state` when the audit log cannot be written, or was switched
    ///   off since the session began: the caller must then not send those answers (their
    ///   entries are dropped, never stored by a later commit).
    @discardableResult
    public mutating func commit() async throws(CustodyError) -> Int {
        try await Self.commit([self])
    }

    /// Stores the audit entries of several sessions' answers (blocks of one input, answered in
    /// parallel) in one transaction, in the order of `sessions`: all of them are in the log, or
    /// none is and none of the answers may be sent. Returns how many.
    @discardableResult
    public static func commit(_ sessions: [DecisionSession]) async throws(CustodyError) -> Int {
        try await takePending(sessions)?.commit() ?? 0
    }

    /// Takes the audit entries of several sessions' answers out of them, in the order of
    /// `sessions`, to be stored (while the sessions answer on, if the caller likes): the answers
    /// written since the last commit may be sent once `PendingAudit.commit()` has stored them.
    /// Taken out whether or not they are then stored: when they are not, their answers are not
    /// given, and a later commit must not store them after all. Nil when no session audits.
    static func takePending(_ sessions: [DecisionSession]) -> PendingAudit? {
        let buffers = sessions.compactMap(\.audit)
        guard let first = buffers.first else { return nil }
        return PendingAudit(database: first.database, records: buffers.flatMap { $0.take() })
    }
}

/// Audit entries taken out of their sessions (`DecisionSession.takePending`), not yet stored.
struct PendingAudit {
    let database: any StateStore
    let records: [AuditRecord]

    /// Stores the entries in one transaction; returns how many.
    /// - Throws: `CustodyError` `.state` when the audit log cannot be written: the answers they
    ///   audit must then not be sent.
    @discardableResult
    func commit() async throws(CustodyError) -> Int {
        try await AuditBuffer.store(records, in: database)
    }
}

/// Decisions answered but not yet in the audit log, and the ids their answers carry.
final class AuditBuffer: @unchecked Sendable {
    // @unchecked: used by one session, on one thread at a time.
    let database: any StateStore
    private let now: @Sendable () -> Date
    /// The session's revision and context (`DecisionContext`), one text for all its entries.
    private let context: String
    private var records: [AuditRecord] = []

    init(database: any StateStore, context: DecisionContext, now: @escaping @Sendable () -> Date) {
        self.database = database
        self.context = context.json
        self.now = now
    }

    /// - Parameters:
    ///   - reason: `answer.reason` (the stream has it rendered). It may quote the query (a share
    ///     target's id); `AuditRecord` keeps it with control characters escaped.
    ///   - asked: what the query was asked with, kept to decide it again.
    @discardableResult
    func record(
        _ query: DecisionQuery, _ answer: DecisionAnswer, reason: String, asked: AskedQuery,
        into writer: inout JSONWriter
    ) -> String {
        let id = DecisionIDs.next()
        records.append(
            AuditRecord(
                .decision, account: query.firstAccount?.description, action: query.action.rawValue,
                allowed: answer.isAllowed, detail: reason, decisionID: id,
                asked: AuditedQuery(
                    line: String(decoding: asked.line, as: UTF8.self), context: context,
                    recordedFacts: asked.recordedFacts?.jsonObject, outcome: answer.launchOutcome?.rawValue),
                at: now()))
        writer.key("decisionId")
        writer.value(id)
        return id
    }

    /// The entries recorded since the last commit, taken out (the buffer is left empty).
    func take() -> [AuditRecord] {
        defer { records.removeAll(keepingCapacity: true) }
        return records
    }

    /// Stores `records` in one transaction; returns how many.
    @discardableResult
    static func store(_ records: [AuditRecord], in database: any StateStore) async throws(CustodyError) -> Int {
        guard !records.isEmpty else { return 0 }
        let stored: Int
        do {
            stored = try await database.audit(records)
        } catch {
            throw CustodyError(
                .state, "the audit log cannot be written, so the decisions are not given: \(error)", underlying: error)
        }
        // The log stores nothing while it is switched off: answers already carrying decision
        // ids would name entries it does not hold.
        guard stored == records.count else {
            throw CustodyError(
                .state,
                "the audit log was switched off while these decisions were made, so they are not given (decide again)")
        }
        return records.count
    }
}

/// Decision ids: unique across processes (a random prefix per process) and drawn in increasing
/// order within one, such as `5f1c0e7a93b2d4e8-1a`. Sessions answering in parallel draw from the
/// one counter, so the audit log (in input order) need not hold them in increasing order.
enum DecisionIDs {
    private static let prefix: String = {
        var random = SystemRandomNumberGenerator()
        return String(random.next(), radix: 16).leftPadded(to: 16)
    }()
    private static let counter = ManagedAtomic<UInt64>(0)

    static func next() -> String {
        format(prefix: prefix, counter: counter.wrappingIncrementThenLoad(ordering: .relaxed))
    }

    /// `prefix-counter`, the counter in lower-case hexadecimal without leading zeros: one
    /// allocation, as an audited decision makes one id.
    static func format(prefix: String, counter: UInt64) -> String {
        let digits = max(1, (UInt64.bitWidth - counter.leadingZeroBitCount + 3) / 4)
        return String(unsafeUninitializedCapacity: prefix.utf8.count + 1 + digits) { buffer in
            let start = buffer.initialize(fromContentsOf: prefix.utf8)
            buffer[start] = UInt8(ascii: "-")
            var value = counter
            for index in stride(from: start + digits, to: start, by: -1) {
                let nibble = UInt8(truncatingIfNeeded: value & 0xF)
                buffer[index] = nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") - 10 + nibble
                value >>= 4
            }
            return start + 1 + digits
        }
    }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        count >= length ? self : String(repeating: "0", count: length - count) + self
    }
}
