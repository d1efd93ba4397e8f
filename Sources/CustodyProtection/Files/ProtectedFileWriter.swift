#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Writes a protected file (or stream) without holding it in memory.
///
/// For a file, everything goes to a temporary file beside the destination; `close()` seals the
/// last chunk, syncs the file, renames it over the destination and syncs the directory. Until
/// then the destination is untouched, and a writer that is cancelled, fails, or is released
/// without `close()` removes its temporary file: an interrupted protect never leaves a
/// half-written file in place of a whole one. Written to a stream (standard output), the
/// envelope goes out chunk by chunk and a reader finds an interrupted one cut off.
///
/// Not thread-safe: one writer, one task.
public final class ProtectedFileWriter {
    /// What the finished file's envelope will say.
    public var info: ProtectionInfo { ProtectionInfo(header: cipher.header) }
    /// Plaintext bytes written so far.
    public private(set) var bytesWritten: Int64 = 0

    private let cipher: ChunkCipher
    private let sink: Sink
    private var pending: [UInt8]
    private var pendingCount = 0
    private var sealed: [UInt8]
    private var nextIndex: UInt64 = 0
    private var finished = false

    /// Fails the writer after this many chunks were sealed: how tests interrupt a protect.
    var failAfterChunks: UInt64?

    /// Where the envelope goes.
    enum Sink {
        case file(AtomicFileWriter)
        /// A descriptor the caller owns (not closed, not synced).
        case stream(Int32, name: String)

        var name: String {
            switch self {
            case .file(let writer): writer.destination
            case .stream(_, let name): name
            }
        }

        func write(_ bytes: UnsafeRawBufferPointer) throws(ProtectionError) {
            switch self {
            case .file(let writer): try writer.write(bytes)
            case .stream(let descriptor, let name): try FileSystem.writeAll(descriptor, bytes, path: name)
            }
        }
    }

    /// - Parameter mode: permissions of the new file (those of the file it replaces, usually).
    convenience init(path: String, cipher: ChunkCipher, mode: mode_t) throws(ProtectionError) {
        try self.init(sink: .file(AtomicFileWriter(path: path, mode: mode)), cipher: cipher)
    }

    init(sink: Sink, cipher: ChunkCipher) throws(ProtectionError) {
        self.cipher = cipher
        self.sink = sink
        pending = [UInt8](
            repeating: 0, count: ChunkBatch.chunksPerBatch(chunkSize: cipher.chunkSize) * cipher.chunkSize)
        sealed = [UInt8](
            repeating: 0, count: ChunkBatch.chunksPerBatch(chunkSize: cipher.chunkSize) * cipher.sealedChunkSize)
        do throws(ProtectionError) {
            try cipher.headerBytes.withUnsafeBytes { bytes in
                Result { () throws(ProtectionError) in try sink.write(bytes) }
            }.get()
        } catch {
            cancel()
            throw error
        }
    }

    deinit {
        if !finished { cancel() }
    }

    /// Appends plaintext.
    public func write(_ bytes: UnsafeRawBufferPointer) throws(ProtectionError) {
        guard !finished else {
            throw ProtectionError(.invalidArguments, "the writer is already closed", path: sink.name)
        }
        var offset = 0
        while offset < bytes.count {
            // A whole batch with nothing pending is sealed where it lies, not copied first.
            if pendingCount == 0, bytes.count - offset >= pending.count {
                try sealAndWrite(
                    UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + pending.count]),
                    chunks: pending.count / cipher.chunkSize)
                offset += pending.count
                continue
            }
            let count = min(bytes.count - offset, pending.count - pendingCount)
            pending.withUnsafeMutableBytes { pending in
                UnsafeMutableRawBufferPointer(rebasing: pending[pendingCount..<pendingCount + count])
                    .copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count]))
            }
            pendingCount += count
            offset += count
            if pendingCount == pending.count {
                try flushFullChunks()
            }
        }
        bytesWritten += Int64(bytes.count)
    }

    /// Appends plaintext.
    public func write(_ bytes: [UInt8]) throws(ProtectionError) {
        let result = bytes.withUnsafeBytes { bytes in Result { () throws(ProtectionError) in try write(bytes) } }
        try result.get()
    }

    /// Seals the rest, syncs, and puts the file in place.
    public func close() throws(ProtectionError) {
        guard !finished else { return }
        do throws(ProtectionError) {
            try flushFullChunks()
            // The final chunk is whatever is left: fewer than chunkSize bytes, possibly none.
            try checkFault()
            let count = pendingCount
            var last = [UInt8](repeating: 0, count: count + EnvelopeAlgorithm.tagCount)
            pending.withUnsafeBytes { pending in
                last.withUnsafeMutableBytes {
                    cipher.seal(
                        index: nextIndex, last: true, UnsafeRawBufferPointer(rebasing: pending[..<count]), into: $0)
                }
            }
            try last.withUnsafeBytes { bytes in Result { () throws(ProtectionError) in try sink.write(bytes) } }.get()
            if case .file(let writer) = sink { try writer.commit() }
            finished = true
            wipePending()
        } catch {
            cancel()
            throw error
        }
    }

    /// Abandons the file: removes the temporary file and leaves the destination as it was.
    public func cancel() {
        guard !finished else { return }
        finished = true
        if case .file(let writer) = sink { writer.cancel() }
        wipePending()
    }

    /// Seals and writes every full chunk in `pending`, in parallel.
    private func flushFullChunks() throws(ProtectionError) {
        let chunkSize = cipher.chunkSize
        let full = pendingCount / chunkSize
        guard full > 0 else { return }
        try pending.withUnsafeBytes { pending in
            Result { () throws(ProtectionError) in
                try sealAndWrite(UnsafeRawBufferPointer(rebasing: pending[..<(full * chunkSize)]), chunks: full)
            }
        }.get()
        // Move the partial chunk, if any, to the front.
        let rest = pendingCount - full * chunkSize
        if rest > 0 {
            pending.withUnsafeMutableBytes { pending in
                pending.baseAddress!.copyMemory(from: pending.baseAddress! + full * chunkSize, byteCount: rest)
            }
        }
        pendingCount = rest
    }

    /// Seals `chunks` full chunks of `plaintext` (never the last chunk: that is sealed by
    /// `close()`), in parallel, and writes them.
    private func sealAndWrite(_ plaintext: UnsafeRawBufferPointer, chunks full: Int) throws(ProtectionError) {
        guard nextIndex + UInt64(full) <= ChunkCipher.maximumChunkIndex else {
            throw ProtectionError(
                .encryptFailed, "the file is too large for one envelope (2^32 chunks)", path: sink.name)
        }
        if let failAfterChunks, nextIndex + UInt64(full) > failAfterChunks {
            throw ProtectionError(.io, "injected failure after \(failAfterChunks) chunks", path: sink.name)
        }
        let sealedCount = full * cipher.sealedChunkSize
        sealed.withUnsafeMutableBytes { sealed in
            ChunkBatch.sealFull(plaintext, chunkCount: full, firstIndex: nextIndex, cipher: cipher, into: sealed)
        }
        try sealed.withUnsafeBytes { sealed in
            Result { () throws(ProtectionError) in
                try sink.write(UnsafeRawBufferPointer(rebasing: sealed[..<sealedCount]))
            }
        }.get()
        nextIndex += UInt64(full)
    }

    private func checkFault() throws(ProtectionError) {
        if let failAfterChunks, nextIndex >= failAfterChunks {
            throw ProtectionError(.io, "injected failure after \(failAfterChunks) chunks", path: sink.name)
        }
    }

    private func wipePending() {
        pending.withUnsafeMutableBytes { Sodium.zero($0) }
    }
}
