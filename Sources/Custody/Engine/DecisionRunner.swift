import CustodyPolicy
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
/// per worker, the blocks are answered in parallel, each worker on its own thread with its own
/// `DecisionSession` (and its reason cache), and the answers are written block by block in
/// input order, so output line N still answers input line N. The calling thread reads the next
/// batch and writes the answers of the one before while the workers answer, so that reading
/// and writing do not leave the workers' cores idle. A batch is cut short whenever no more
/// input is ready, and the next batch is read ahead only when it is already there: a script
/// that writes one query and waits for its answer gets it at once.
///
/// With decision auditing on, each batch's decisions are committed to the audit log before
/// that batch's answers are written (while the workers answer the next batch); when the log
/// cannot be written, answering stops, and neither that batch's answers nor any after them are
/// given.
public struct DecisionRunner {
    /// Totals after the input ends.
    public struct Summary: Sendable {
        /// Lines read.
        public var lines = 0
        /// Lines answered with an error.
        public var errors = 0
        /// Reading the input failed (the lines before were answered).
        public var readFailed: Bool { readFailure != nil }
        /// Why reading the input failed, as the system says it (`Is a directory`), when it did.
        public var readFailure: String?
        /// The audit log could not be written: answering stopped after `lines` lines.
        public var auditFailure: String?
    }

    /// One worker: a thread, started when it is first handed a block, that answers the blocks
    /// it is handed.
    private final class Worker: @unchecked Sendable {
        // @unchecked: `session`, `input` and `output` are touched by the reading thread only
        // while the worker is idle, and by the worker's thread only while it is working;
        // `finished` by the reading thread only. `condition` orders the hand-overs.
        var session: DecisionSession
        var input: ArraySlice<UInt8> = []
        var output: [UInt8] = []
        /// The answers of the block before, written while the next block is answered.
        var finished: [UInt8] = []
        private let condition = NSCondition()
        private var state = State.idle
        /// Whether its thread runs (touched by the reading thread only).
        private var launched = false

        private enum State {
            case idle, working, stopping
        }

        init(session: DecisionSession) {
            self.session = session
        }

        /// Hands the worker its `input` to answer into `output`, starting its thread (which then
        /// waits for blocks until `stop()`) the first time.
        func begin() {
            if !launched {
                launched = true
                let thread = Thread { [self] in serve() }
                thread.name = "custody decide"
                thread.stackSize = 8 << 20
                thread.start()
            }
            condition.lock()
            state = .working
            condition.broadcast()
            condition.unlock()
        }

        /// Waits until the block handed over is answered.
        func wait() {
            condition.lock()
            while state == .working { condition.wait() }
            condition.unlock()
        }

        /// Ends the worker's thread (after the block it is answering, if any).
        func stop() {
            guard launched else { return }
            wait()
            condition.lock()
            state = .stopping
            condition.broadcast()
            condition.unlock()
        }

        /// Moves the answers to `finished`, for writing, and keeps the older buffer for the next.
        func takeAnswers() {
            swap(&output, &finished)
        }

        private func serve() {
            condition.lock()
            while true {
                while state == .idle { condition.wait() }
                if state == .stopping { break }
                condition.unlock()
                output.removeAll(keepingCapacity: true)
                input.withUnsafeBytes { session.answer(lines: $0, into: &output) }
                condition.lock()
                state = .idle
                condition.broadcast()
            }
            condition.unlock()
        }
    }

    /// The blocks of one batch, being answered.
    private struct Batch {
        let workers: ArraySlice<Worker>
        /// The number of the batch's first line.
        let firstLine: Int
        /// The number of the line after its last.
        let nextLine: Int
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
        // Saturated: a block size near Int.max reads as "the whole input at once".
        let (product, overflow) = max(1, sessions.count).multipliedReportingOverflow(by: max(1, blockBytes))
        batchBytes = overflow ? Int.max : product
        maximumLine = max(1, maximumLineBytes)
        for worker in workers { worker.session.maximumLineBytes = maximumLine }
    }

    /// Reads `descriptor` to its end, handing answers to `write` in input order.
    public func run(descriptor: Int32, write: ([UInt8]) -> Void) async -> Summary {
        defer { for worker in workers { worker.stop() } }
        var reader = BatchReader(descriptor: descriptor, maximumLine: maximumLine, batchBytes: batchBytes)
        var summary = Summary()
        var nextLine = 1
        var answering: Batch?
        var ended = false
        while !ended || answering != nil {
            // Read ahead while the workers answer, but never wait for input then: a writer may
            // be holding the next line back until it has the answers before.
            var next: [UInt8]?
            if !ended, answering == nil || reader.hasBatchReady() {
                next = reader.nextBatch()
                ended = next == nil
            }
            var finished: Batch?
            var pending: PendingAudit?
            var errorsSoFar = 0
            if let batch = answering {
                for worker in batch.workers { worker.wait() }
                // The batch's audit entries are taken out of the sessions and stored while the
                // workers answer the next batch; its answers are written only once they are.
                pending = DecisionSession.takePending(batch.workers.map(\.session))
                errorsSoFar = workers.reduce(0) { $0 + $1.session.errorCount }
                for worker in batch.workers { worker.takeAnswers() }
                finished = batch
                answering = nil
            }
            if let next {
                let batch = begin(next, firstLine: nextLine)
                nextLine = batch.nextLine
                answering = batch
            }
            if let finished {
                do throws(CustodyError) {
                    try await pending?.commit()
                } catch {
                    // The batch being answered is dropped with this one: nothing after the
                    // last batch stored is given.
                    summary.lines = finished.firstLine - 1
                    summary.auditFailure = error.message
                    summary.errors = errorsSoFar
                    return summary
                }
                for worker in finished.workers { write(worker.finished) }
            }
        }
        summary.lines = nextLine - 1
        summary.errors = workers.reduce(0) { $0 + $1.session.errorCount }
        summary.readFailure = reader.failure
        return summary
    }

    /// Splits `batch` into blocks and hands one to each worker.
    private func begin(_ batch: [UInt8], firstLine: Int) -> Batch {
        let blocks = split(batch, into: workers.count)
        var line = firstLine
        for (worker, block) in zip(workers, blocks) {
            worker.input = block
            worker.session.lineNumber = line - 1
            line += lineCount(of: block)
            worker.begin()
        }
        return Batch(workers: workers.prefix(blocks.count), firstLine: firstLine, nextLine: line)
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
        block.withUnsafeBytes { bytes in
            var count = 0
            var start = 0
            while start < bytes.count {
                start = DecisionStream.lineEnd(in: bytes, from: start) + 1
                count += 1
            }
            return count
        }
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
    /// About how much a batch holds: reads are no larger, so batches keep to it.
    let batchBytes: Int
    private var chunk: [UInt8]
    private var ended = false
    /// Why a read failed, when one did.
    private(set) var failure: String?
    /// The most one read asks for.
    private static let readSize = 1 << 20

    init(descriptor: Int32, maximumLine: Int, batchBytes: Int) {
        self.descriptor = descriptor
        self.maximumLine = maximumLine
        self.batchBytes = batchBytes
        chunk = [UInt8](repeating: 0, count: min(Self.readSize, max(1, batchBytes)))
    }

    /// The next batch of complete lines (at the end of the input, the rest, with or without a
    /// final line break), or nil when nothing is left.
    mutating func nextBatch() -> [UInt8]? {
        while !ended {
            if lineStart > 0, pending.count >= batchBytes || !inputReady() { break }
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
        let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress!, $0.count) }
        if count < 0 {
            guard let error = Descriptor.retryOrFailure(after: errno, on: descriptor, writing: false) else { return }
            failure = String(cString: strerror(error))
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

    /// Whether `nextBatch` would return without waiting for input: whole lines are pending (or
    /// the input ended) once what is ready has been read.
    mutating func hasBatchReady() -> Bool {
        while !ended, lineStart == 0, inputReady() { readMore() }
        return lineStart > 0 || ended
    }

    /// Whether a read would return at once (data, or the end of the input).
    private func inputReady() -> Bool {
        var descriptor = pollfd(fd: self.descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, 0) > 0
    }
}
