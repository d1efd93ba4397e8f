import Custody
import CustodyPolicy
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Foundation
import Logging
import NIOCore

/// A session and the request body it answers, handed to a response body's writer (which runs
/// once, after the handler returns).
final class SessionBox: @unchecked Sendable {
    // @unchecked: the handler creates it, then only the response writer touches it.
    var session: DecisionSession
    private var body: RequestBody.AsyncIterator
    private var first: ByteBuffer?

    init(_ session: DecisionSession, body: RequestBody.AsyncIterator, first: ByteBuffer?) {
        self.session = session
        self.body = body
        self.first = first
    }

    /// The next part of the body: the one read before the answer started, then the rest.
    private func next() async throws -> ByteBuffer? {
        if let first {
            self.first = nil
            return first
        }
        return try await body.next()
    }

    /// Answers every line of the body, writing answers as they are committed. A body whose
    /// framing breaks after the answer started gets one last error line saying so (the status
    /// is sent already), then the answer ends.
    func answer(
        limits: CustodyServerConfiguration.Limits, metrics: ServerMetrics, logger: Logger,
        writer: inout any ResponseBodyWriter
    ) async throws {
        var splitter = LineSplitter(maximumLine: limits.lineBytes)
        let blockBytes = session.isAuditing ? Self.auditedBlockBytes : Self.blockBytes
        var output: [UInt8] = []
        // Grown as answers come: a small audited batch does not take a block's worth at once.
        output.reserveCapacity(1 << 16)
        var queries = 0
        var received = 0
        var stopped = false

        /// Answers one line; false when the batch must stop.
        func answer(_ line: LineSplitter.Line) -> Bool {
            queries += 1
            guard queries <= limits.batchQueries else {
                session.refuseLine(
                    "the batch holds more than \(limits.batchQueries) queries; this line and those after it are not answered",
                    into: &output)
                return false
            }
            switch line {
            case .complete(let bytes): session.answer(line: bytes, into: &output)
            case .tooLong(let length):
                session.refuseLine(
                    "the line is longer than \(limits.lineBytes) bytes (at least \(length)); not read", into: &output)
            }
            return true
        }

        /// Commits the audit entries of the answers in `output`; on failure, replaces them with
        /// one error line and returns false. After a failure nothing is committed again: the
        /// entries of answers not given are never stored.
        var commitFailed = false
        func commit() async -> Bool {
            guard !commitFailed else { return false }
            do throws(CustodyError) {
                metrics.audited(try await session.commit())
                return true
            } catch {
                // As a 503 says it: without the database it names, which the log gets.
                logger.warning("batch stopped", metadata: ["error": "\(error.message)", "code": "\(error.code)"])
                var writer = JSONWriter()
                DecisionEncoding.writeError(
                    ServiceError.withoutLocation(error), line: nil, code: ServiceError(error).code.rawValue, to: &writer
                )
                writer.newline()
                output = writer.bytes
                commitFailed = true
                return false
            }
        }

        while true {
            let buffer: ByteBuffer
            do {
                guard let next = try await next() else { break }
                buffer = next
            } catch let error where TransportFailure(error) != nil {
                _ = await commit()
                let failure = TransportFailure(error)!.serviceError
                var line = JSONWriter()
                DecisionEncoding.writeError(failure.message, line: nil, code: failure.code.rawValue, to: &line)
                line.newline()
                try await writer.write(ByteBuffer(bytes: output + line.bytes))
                metrics.decided(session.tallies)
                return
            }
            received += buffer.readableBytes
            guard received <= limits.bodyBytes else {
                session.refuseLine(
                    "the batch is larger than \(limits.bodyBytes) bytes; this line and those after it are not answered",
                    into: &output)
                stopped = true
                break
            }
            let more = buffer.withUnsafeReadableBytes { splitter.feed($0, line: answer) }
            if !more { stopped = true }
            if stopped || output.count >= blockBytes {
                if await !commit() { stopped = true }
                try await writer.write(ByteBuffer(bytes: output))
                output.removeAll(keepingCapacity: true)
            }
            if stopped { break }
        }
        if !stopped { _ = splitter.finish(line: answer) }
        _ = await commit()
        if !output.isEmpty { try await writer.write(ByteBuffer(bytes: output)) }
        metrics.batch(queries: min(queries, limits.batchQueries))
        metrics.decided(session.tallies)
    }

    /// How many bytes of answers are sent at a time.
    static let blockBytes = 1 << 15
    /// How many bytes of audited answers are stored and sent at a time: larger, since each block
    /// is one transaction of the audit log, with a cost of its own whatever its size.
    static let auditedBlockBytes = 1 << 20
}
