#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes a protected file without holding it in memory.
///
/// Everything goes to a temporary file beside the destination; `close()` seals the last chunk,
/// syncs the file, renames it over the destination and syncs the directory. Until then the
/// destination is untouched, and a writer that is cancelled, fails, or is released without
/// `close()` removes its temporary file: an interrupted protect never leaves a half-written file
/// in place of a whole one.
///
/// Not thread-safe: one writer, one task.
public final class ProtectedFileWriter {
    /// What the finished file's envelope will say.
    public var info: ProtectionInfo { ProtectionInfo(header: cipher.header, length: cipher.headerBytes.count) }
    /// Plaintext bytes written so far.
    public private(set) var bytesWritten: Int64 = 0

    private let cipher: ChunkCipher
    private let destination: String
    private let temporary: String
    private var descriptor: Int32
    private var pending: [UInt8]
    private var pendingCount = 0
    private var sealed: [UInt8]
    private var nextIndex: UInt64 = 0
    private var finished = false

    /// Fails the writer after this many chunks were sealed: how tests interrupt a protect.
    var failAfterChunks: UInt64?

    /// - Parameter mode: permissions of the new file (those of the file it replaces, usually).
    init(path: String, cipher: ChunkCipher, mode: mode_t) throws(ProtectionError) {
        self.cipher = cipher
        self.destination = path
        self.temporary = FileSystem.temporaryPath(besides: path)
        descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard descriptor >= 0 else { throw FileSystem.ioError("creating a temporary file", temporary) }
        _ = fchmod(descriptor, mode)
        let batchPlaintext = ChunkBatch.chunksPerBatch * cipher.chunkSize
        pending = [UInt8](repeating: 0, count: batchPlaintext)
        sealed = [UInt8](repeating: 0, count: ChunkBatch.chunksPerBatch * cipher.sealedChunkSize)
        do throws(ProtectionError) {
            try FileSystem.writeAll(descriptor, cipher.headerBytes, path: temporary)
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
        guard !finished else { throw ProtectionError(.invalidArguments, "the writer is already closed", path: destination) }
        var offset = 0
        while offset < bytes.count {
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
                last.withUnsafeMutableBytes { cipher.seal(index: nextIndex, last: true, UnsafeRawBufferPointer(rebasing: pending[..<count]), into: $0) }
            }
            try FileSystem.writeAll(descriptor, last, path: temporary)
            guard fsync(descriptor) == 0 else { throw FileSystem.ioError("syncing", temporary) }
            Glibc.close(descriptor)
            descriptor = -1
            guard rename(temporary, destination) == 0 else { throw FileSystem.ioError("renaming into place", destination) }
            finished = true
            wipePending()
            try FileSystem.syncDirectory(containing: destination)
        } catch {
            cancel()
            throw error
        }
    }

    /// Abandons the file: removes the temporary file and leaves the destination as it was.
    public func cancel() {
        guard !finished else { return }
        finished = true
        if descriptor >= 0 {
            Glibc.close(descriptor)
            descriptor = -1
        }
        unlink(temporary)
        wipePending()
    }

    /// Seals and writes every full chunk in `pending`, in parallel.
    private func flushFullChunks() throws(ProtectionError) {
        let chunkSize = cipher.chunkSize
        let full = pendingCount / chunkSize
        guard full > 0 else { return }
        guard nextIndex + UInt64(full) <= ChunkCipher.maximumChunkIndex else {
            throw ProtectionError(.encryptFailed, "the file is too large for one envelope (2^32 chunks)", path: destination)
        }
        if let failAfterChunks, nextIndex + UInt64(full) > failAfterChunks {
            throw ProtectionError(.io, "injected failure after \(failAfterChunks) chunks", path: destination)
        }
        let sealedCount = full * cipher.sealedChunkSize
        pending.withUnsafeBytes { pending in
            sealed.withUnsafeMutableBytes { sealed in
                ChunkBatch.sealFull(pending, chunkCount: full, firstIndex: nextIndex, cipher: cipher, into: sealed)
            }
        }
        let failure: ProtectionError? = sealed.withUnsafeBytes { sealed in
            do {
                try FileSystem.writeAll(descriptor, UnsafeRawBufferPointer(rebasing: sealed[..<sealedCount]), path: temporary)
                return nil
            } catch let error as ProtectionError {
                return error
            } catch {
                return ProtectionError(.io, "\(error)", path: temporary)
            }
        }
        if let failure { throw failure }
        nextIndex += UInt64(full)
        // Move the partial chunk, if any, to the front.
        let rest = pendingCount - full * chunkSize
        if rest > 0 {
            pending.withUnsafeMutableBytes { pending in
                pending.baseAddress!.copyMemory(from: pending.baseAddress! + full * chunkSize, byteCount: rest)
            }
        }
        pendingCount = rest
    }

    private func checkFault() throws(ProtectionError) {
        if let failAfterChunks, nextIndex >= failAfterChunks {
            throw ProtectionError(.io, "injected failure after \(failAfterChunks) chunks", path: destination)
        }
    }

    private func wipePending() {
        pending.withUnsafeMutableBytes { Sodium.zero($0) }
    }
}
