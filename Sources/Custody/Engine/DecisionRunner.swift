import Dispatch
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Answers JSON Lines from a file descriptor on several cores, in input order: what
/// `custody decide` runs (`CustodyEngine.decisionRunner`).
///
/// Input is read in batches of whole lines; each batch is split at line breaks into one block
/// per worker, the blocks are answered in parallel (each worker keeps its own
/// `DecisionSession`, with its reason cache), and the answers are written block by block in
/// input order, so output line N still answers input line N. A batch is cut short whenever no
/// more input is ready, so a script that writes one query and waits for its answer gets it at
/// once.
///
/// With decision auditing on, each batch's decisions are committed to the audit log before
/// that batch's answers are written; when the log cannot be written, answering stops.
public struct DecisionRunner {
    /// Totals after the input ends.
    public struct Summary: Sendable {
        /// Lines read.
        public var lines = 0
        /// Lines answered with an error.
        public var errors = 0
        /// Reading the input failed (the lines before were answered).
        public var readFailed = false
        /// The audit log could not be written: answering stopped after `lines` lines.
        public var auditFailure: String?
    }

    private final class Worker: @unchecked Sendable {
        // Touched by one thread at a time: the reader between batches, its worker during one.
        var session: DecisionSession
        var input: ArraySlice<UInt8> = []
        var output: [UInt8] = []

        init(session: DecisionSession) {
            self.session = session
        }

        func run() {
            output.removeAll(keepingCapacity: true)
            input.withUnsafeBytes { session.answer(lines: $0, into: &output) }
        }
    }

    private let workers: [Worker]
    private let batchBytes: Int
    private let maximumLine: Int

    /// The longest line read by default (1 MiB); a query is a few hundred bytes.
    public static let defaultMaximumLineBytes = 1 << 20

    /// - Parameters:
    ///   - sessions: one per worker (at least one).
    ///   - blockBytes: about how much input each worker answers per batch.
    ///   - maximumLineBytes: a longer line is answered with an error in its place, and only its
    ///     first `maximumLineBytes + 1` bytes are kept in memory.
    init(sessions: [DecisionSession], blockBytes: Int = 1 << 20, maximumLineBytes: Int = defaultMaximumLineBytes) {
        workers = sessions.map(Worker.init)
        batchBytes = max(1, sessions.count) * max(1, blockBytes)
        maximumLine = max(1, maximumLineBytes)
        for worker in workers { worker.session.maximumLineBytes = maximumLine }
    }

    /// Reads `descriptor` to its end, handing answers to `write` in input order.
    public func run(descriptor: Int32, write: ([UInt8]) -> Void) -> Summary {
        var reader = BatchReader(descriptor: descriptor, maximumLine: maximumLine)
        var summary = Summary()
        var nextLine = 1
        while let batch = reader.nextBatch(targetBytes: batchBytes) {
            let blocks = split(batch, into: workers.count)
            let firstLine = nextLine
            for (worker, block) in zip(workers, blocks) {
                worker.input = block
                worker.session.lineNumber = nextLine - 1
                nextLine += lineCount(of: block)
            }
            let workers = self.workers
            if blocks.count == 1 {
                workers[0].run()
            } else {
                DispatchQueue.concurrentPerform(iterations: blocks.count) { workers[$0].run() }
            }
            do throws(CustodyError) {
                for worker in workers.prefix(blocks.count) { try worker.session.commit() }
            } catch {
                summary.lines = firstLine - 1
                summary.auditFailure = error.message
                summary.errors = workers.reduce(0) { $0 + $1.session.errorCount }
                return summary
            }
            for worker in workers.prefix(blocks.count) { write(worker.output) }
        }
        summary.lines = nextLine - 1
        summary.errors = workers.reduce(0) { $0 + $1.session.errorCount }
        summary.readFailed = reader.failed
        return summary
    }

    /// Splits whole lines into at most `count` blocks of about equal size, at line breaks.
    private func split(_ batch: [UInt8], into count: Int) -> [ArraySlice<UInt8>] {
        guard count > 1, batch.count >= 2 * count else { return [batch[...]] }
        var blocks: [ArraySlice<UInt8>] = []
        var start = 0
        for index in 1..<count {
            let target = batch.count * index / count
            guard target > start, let newline = batch[target...].firstIndex(of: UInt8(ascii: "\n")) else { continue }
            blocks.append(batch[start...newline])
            start = newline + 1
        }
        if start < batch.count { blocks.append(batch[start...]) }
        return blocks
    }

    private func lineCount(of block: ArraySlice<UInt8>) -> Int {
        let breaks = block.reduce(0) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) }
        return block.last == UInt8(ascii: "\n") ? breaks : breaks + 1
    }
}

/// Reads whole lines in batches: up to a target size while input keeps coming, less as soon as
/// no more is ready (an interactive writer), everything at the end of the input.
///
/// A line longer than `maximumLine` is cut to its first `maximumLine + 1` bytes (the rest is
/// read and dropped up to its line break), so a huge line costs no memory, and the answering
/// session, seeing a line over the limit, answers it with an error in its place.
private struct BatchReader {
    let descriptor: Int32
    let maximumLine: Int
    private var pending: [UInt8] = []
    /// Where the last, incomplete line starts in `pending` (0: no complete line yet).
    private var lineStart = 0
    /// Dropping the rest of a line over the limit, up to its line break.
    private var dropping = false
    private var chunk = [UInt8](repeating: 0, count: readSize)
    private var ended = false
    private(set) var failed = false
    private static let readSize = 1 << 20

    init(descriptor: Int32, maximumLine: Int) {
        self.descriptor = descriptor
        self.maximumLine = maximumLine
    }

    /// The next batch of complete lines (at the end of the input, the rest, with or without a
    /// final line break), or nil when nothing is left.
    mutating func nextBatch(targetBytes: Int) -> [UInt8]? {
        while !ended {
            if lineStart > 0, pending.count >= targetBytes || !inputReady() { break }
            readMore()
        }
        if ended {
            guard !pending.isEmpty else { return nil }
            defer {
                pending.removeAll()
                lineStart = 0
            }
            return pending
        }
        let batch = Array(pending[..<lineStart])
        pending.removeFirst(lineStart)
        lineStart = 0
        return batch
    }

    private mutating func readMore() {
        let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress!, Self.readSize) }
        if count < 0 {
            if errno == EINTR { return }
            failed = true
            ended = true
            return
        }
        if count == 0 {
            ended = true
            return
        }
        append(chunk[..<count])
    }

    /// Appends `bytes`, keeping lines within the limit and `lineStart` up to date. Runs of
    /// whole lines are copied in one piece.
    private mutating func append(_ bytes: ArraySlice<UInt8>) {
        let newline = UInt8(ascii: "\n")
        var index = bytes.startIndex
        var copyFrom = index
        var nextLineStart: Int?
        var lineLength = pending.count - lineStart
        while index < bytes.endIndex {
            if dropping {
                guard let found = bytes[index...].firstIndex(of: newline) else { return }
                dropping = false
                pending.append(newline)
                lineStart = pending.count
                index = found + 1
                copyFrom = index
                lineLength = 0
                continue
            }
            let found = bytes[index...].firstIndex(of: newline)
            if lineLength + ((found ?? bytes.endIndex) - index) > maximumLine {
                let keep = maximumLine + 1 - lineLength
                copy(bytes[copyFrom..<(index + keep)], nextLineStart: nextLineStart)
                nextLineStart = nil
                dropping = true
                index += keep
                copyFrom = index
                continue
            }
            guard let found else { break }
            index = found + 1
            lineLength = 0
            nextLineStart = index
        }
        if !dropping { copy(bytes[copyFrom...], nextLineStart: nextLineStart) }
    }

    /// Appends `run`; `nextLineStart` (an index into it, or its end) is where a line starts.
    private mutating func copy(_ run: ArraySlice<UInt8>, nextLineStart: Int?) {
        let base = pending.count
        pending.append(contentsOf: run)
        if let nextLineStart { lineStart = base + (nextLineStart - run.startIndex) }
    }

    /// Whether a read would return at once (data, or the end of the input).
    private func inputReady() -> Bool {
        var descriptor = pollfd(fd: self.descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, 0) > 0
    }
}
