import CustodyPolicy

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads a protected file without holding it in memory.
///
/// Every byte `read` returns belongs to a chunk that authenticated. A file cut off after a
/// whole chunk is only found out at the end (there is no final chunk): `read` then throws
/// `.decryptFailed`, so a caller writing the plaintext somewhere must not keep it until the
/// last `read` returned an empty array. `DataProtector.unprotect(file:)` does exactly that.
///
/// Not thread-safe: one reader, one task.
public final class ProtectedFileReader {
    /// What the envelope says about itself.
    public let info: ProtectionInfo
    /// Plaintext bytes read so far.
    public private(set) var bytesRead: Int64 = 0

    private let path: String
    private let cipher: ChunkCipher
    private var descriptor: Int32
    private let ownsDescriptor: Bool
    private var sealed: [UInt8]
    private var sealedCount = 0
    private var plaintext: [UInt8]
    private var plaintextStart = 0
    private var plaintextEnd = 0
    private var nextIndex: UInt64 = 0
    private var endOfFile = false
    private var finished = false

    /// Opens `path`, which must be an envelope.
    convenience init(path: String, protector: DataProtector) async throws(ProtectionError) {
        let descriptor = try FileSystem.openRegularFile(path)
        try await self.init(descriptor: descriptor, name: path, owning: true, protector: protector)
    }

    /// Reads an envelope from `descriptor` (standard input, say); `name` is for messages.
    /// - Parameters:
    ///   - owning: close the descriptor when done.
    ///   - prefetched: the bytes already read from the descriptor, when the caller looked at
    ///     them first: exactly what `FileSystem.read(_:upTo: EnvelopeHeader.maximumCount)` gave.
    init(descriptor: Int32, name: String, owning: Bool, protector: DataProtector, prefetched: [UInt8]? = nil)
        async throws(ProtectionError)
    {
        self.path = name
        self.descriptor = descriptor
        self.ownsDescriptor = owning
        do throws(ProtectionError) {
            // Read as much as the largest header could take (a pipe may deliver it in pieces),
            // then decode it.
            let headerBytes: [UInt8]
            if let prefetched {
                headerBytes = prefetched
            } else {
                headerBytes = try FileSystem.read(descriptor, upTo: EnvelopeHeader.maximumCount, path: name)
            }
            let decoded = try headerBytes.withUnsafeBytes { bytes in
                Result { () throws(ProtectionError) in try EnvelopeHeader.decode(bytes) }
            }.get()
            guard let header = decoded else {
                throw ProtectionError(.invalidArguments, "not a protected file (no envelope header)", path: name)
            }
            let length = header.count
            info = ProtectionInfo(header: header)
            cipher = try await protector.makeOpener(header)
            sealed = [UInt8](
                repeating: 0,
                count: ChunkBatch.chunksPerBatch(chunkSize: cipher.chunkSize) * cipher.sealedChunkSize
                    + cipher.sealedChunkSize)
            plaintext = [UInt8](
                repeating: 0,
                count: ChunkBatch.chunksPerBatch(chunkSize: cipher.chunkSize) * cipher.chunkSize + cipher.chunkSize)
            let leftover = headerBytes.count - length
            sealed.withUnsafeMutableBytes { sealed in
                headerBytes.withUnsafeBytes {
                    sealed.baseAddress!.copyMemory(from: $0.baseAddress! + length, byteCount: leftover)
                }
            }
            sealedCount = leftover
        } catch {
            if owning { close(descriptor) }
            self.descriptor = -1
            throw error.at(name)
        }
    }

    deinit {
        if ownsDescriptor, descriptor >= 0 { close(descriptor) }
        plaintext.withUnsafeMutableBytes { Sodium.zero($0) }
    }

    /// Up to `maximum` bytes of verified plaintext; an empty array once the whole file was read
    /// and its final chunk verified.
    /// - Throws: `.decryptFailed` when a chunk does not authenticate or the file is cut off.
    public func read(maximum: Int = 1 << 20) throws(ProtectionError) -> [UInt8] {
        while plaintextStart == plaintextEnd {
            if finished { return [] }
            try decryptBatch()
        }
        let count = min(maximum, plaintextEnd - plaintextStart)
        let chunk = Array(plaintext[plaintextStart..<plaintextStart + count])
        plaintextStart += count
        bytesRead += Int64(count)
        return chunk
    }

    /// Reads the rest, handing each piece to `body`.
    public func forEachBlock(_ body: (UnsafeRawBufferPointer) throws(ProtectionError) -> Void) throws(ProtectionError) {
        while true {
            while plaintextStart == plaintextEnd {
                if finished { return }
                try decryptBatch()
            }
            let block = plaintext.withUnsafeBytes {
                UnsafeRawBufferPointer(rebasing: $0[plaintextStart..<plaintextEnd])
            }
            try body(block)
            bytesRead += Int64(plaintextEnd - plaintextStart)
            plaintextStart = plaintextEnd
        }
    }

    /// Reads sealed chunks and opens them: all full chunks in the buffer, in parallel, and at the
    /// end of the file the short final chunk.
    private func decryptBatch() throws(ProtectionError) {
        let sealedChunk = cipher.sealedChunkSize
        let target = ChunkBatch.chunksPerBatch(chunkSize: cipher.chunkSize) * sealedChunk
        while sealedCount < target, !endOfFile {
            let count = sealed.withUnsafeMutableBytes {
                Glibc.read(descriptor, $0.baseAddress! + sealedCount, target - sealedCount)
            }
            if count < 0 {
                guard let code = Descriptor.retryOrFailure(after: errno, on: descriptor, writing: false) else {
                    continue
                }
                throw FileSystem.ioError("reading", path, code)
            }
            if count == 0 { endOfFile = true }
            sealedCount += count
        }
        // A full-size chunk is never the final one; at the end of the file, what is left after the
        // full chunks is the final chunk.
        let full = sealedCount / sealedChunk
        let fullBytes = full * sealedChunk
        if full > 0 {
            guard nextIndex + UInt64(full) <= ChunkCipher.maximumChunkIndex else {
                throw ProtectionError(.decryptFailed, "the file has more chunks than an envelope can", path: path)
            }
            let failed = sealed.withUnsafeBytes { sealed in
                plaintext.withUnsafeMutableBytes { plaintext in
                    ChunkBatch.openFull(
                        UnsafeRawBufferPointer(rebasing: sealed[..<fullBytes]), chunkCount: full, firstIndex: nextIndex,
                        cipher: cipher, into: plaintext)
                }
            }
            if let failed { throw chunkError(failed) }
        }
        var produced = full * cipher.chunkSize
        if endOfFile {
            let rest = sealedCount - fullBytes
            guard rest >= EnvelopeAlgorithm.tagCount else {
                plaintext.withUnsafeMutableBytes { Sodium.zero($0) }
                throw ProtectionError(
                    .decryptFailed,
                    "the file is cut off after chunk \(nextIndex + UInt64(full)): its final chunk is missing",
                    path: path)
            }
            let index = nextIndex + UInt64(full)
            let opened = sealed.withUnsafeBytes { sealed in
                plaintext.withUnsafeMutableBytes { plaintext in
                    cipher.open(
                        index: index, last: true, UnsafeRawBufferPointer(rebasing: sealed[fullBytes..<sealedCount]),
                        into: UnsafeMutableRawBufferPointer(
                            rebasing: plaintext[produced..<produced + rest - EnvelopeAlgorithm.tagCount]))
                }
            }
            guard opened else { throw chunkError(index) }
            produced += rest - EnvelopeAlgorithm.tagCount
            finished = true
            sealedCount = 0
        } else {
            sealedCount -= fullBytes
            if sealedCount > 0 {
                sealed.withUnsafeMutableBytes {
                    $0.baseAddress!.copyMemory(from: $0.baseAddress! + fullBytes, byteCount: sealedCount)
                }
            }
        }
        nextIndex += UInt64(full)
        plaintextStart = 0
        plaintextEnd = produced
    }

    private func chunkError(_ index: UInt64) -> ProtectionError {
        plaintext.withUnsafeMutableBytes { Sodium.zero($0) }
        return ProtectionError(
            .decryptFailed,
            "chunk \(index) does not authenticate: the file was changed, truncated or reordered, or the key is not the one it was sealed with",
            path: path)
    }
}
