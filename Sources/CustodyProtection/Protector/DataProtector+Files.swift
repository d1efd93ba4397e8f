public import CustodyPolicy
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

extension DataProtector {
    /// Plaintext bytes per chunk of a file envelope (2^16, 64 KiB).
    static let fileChunkExponent: UInt8 = 16
    /// The file that records a directory's owner, for files created in it later.
    public static let directoryOwnerFileName = ".custody-owner"

    /// Called as a file is processed, with the plaintext bytes done so far.
    public typealias Progress = (Int64) -> Void

    // MARK: Streaming

    /// A writer for a new protected file at `path` (replacing any file there when closed).
    /// - Parameter owner: the data's owner; nil takes the owner recorded for the file's
    ///   directory (or a parent) by `protect(directory:owner:)`.
    /// - Throws: `.invalidArguments` when there is no owner, and the errors of `protect(_:owner:encrypt:)`.
    public func makeWriter(path: String, owner: AccountID?, encrypt: Bool) async throws(ProtectionError)
        -> ProtectedFileWriter
    {
        try await makeWriter(
            path: path, owner: owner, encrypt: encrypt, chunkExponent: Self.fileChunkExponent)
    }

    func makeWriter(path: String, owner: AccountID?, encrypt: Bool, chunkExponent: UInt8)
        async throws(ProtectionError) -> ProtectedFileWriter
    {
        let account: AccountID
        if let owner { account = owner } else { account = try inheritedOwner(of: path) }
        let cipher = try await makeSealer(owner: account, encrypt: encrypt, chunkExponent: chunkExponent)
        return try ProtectedFileWriter(path: path, cipher: cipher, mode: Self.mode(of: path) ?? 0o600)
    }

    /// A reader for the protected file at `path`.
    /// - Throws: `.invalidArguments` when it is not a protected file; key and header errors.
    public func makeReader(path: String) async throws(ProtectionError) -> ProtectedFileReader {
        try await ProtectedFileReader(path: path, protector: self)
    }

    // MARK: Sources and sinks

    /// Where data is read from.
    public enum Source: Sendable {
        case file(String)
        /// A descriptor the caller owns, such as standard input (0); `name` is for messages.
        case stream(Int32, name: String)
    }

    /// Where data is written to. Files are replaced atomically; streams get bytes as they come.
    public enum Sink: Sendable {
        case file(String)
        /// A descriptor the caller owns, such as standard output (1); `name` is for messages.
        case stream(Int32, name: String)
    }

    /// Protects the data of `source` into `sink` for `owner`. A file source that is already
    /// protected is opened and sealed again; a stream source is read as plaintext. A file sink
    /// is written atomically (the same path as the source protects in place).
    public func protect(
        from source: Source, to sink: Sink, owner: AccountID, encrypt: Bool, progress: Progress? = nil
    ) async throws(ProtectionError) {
        try Self.checkFiles(source: source, sink: sink, protecting: true)
        try await protect(checked: source, to: sink, owner: owner, encrypt: encrypt, progress: progress)
    }

    /// `protect(from:to:owner:encrypt:progress:)` for a source and sink the caller checked
    /// already (`checkFiles(source:sink:protecting:)`): the engine checks them once, before
    /// it plans.
    package func protect(
        checked source: Source, to sink: Sink, owner: AccountID, encrypt: Bool, progress: Progress?
    ) async throws(ProtectionError) {
        let cipher = try await makeSealer(owner: owner, encrypt: encrypt, chunkExponent: Self.fileChunkExponent)
        let writer: ProtectedFileWriter
        switch sink {
        case .file(let path):
            writer = try ProtectedFileWriter(
                path: path, cipher: cipher, mode: Self.mode(of: path) ?? Self.sourceMode(source))
        case .stream(let descriptor, let name):
            writer = try ProtectedFileWriter(sink: .stream(descriptor, name: name), cipher: cipher)
        }
        do throws(ProtectionError) {
            try await copyPlaintext(of: source) { block throws(ProtectionError) in
                try writer.write(block)
                progress?(writer.bytesWritten)
            }
            try writer.close()
        } catch {
            writer.cancel()
            throw error
        }
    }

    /// Writes the plaintext of the envelope in `source` to `sink`. Unlike `unprotect(file:)`,
    /// a source that is not an envelope is an error (`.invalidArguments`), never copied as is,
    /// unless `passThrough` asks for exactly that (Intune's behaviour for data that was never
    /// protected). A source that starts like an envelope but whose header is damaged is always
    /// an error.
    ///
    /// A file sink appears only once every chunk authenticated. A stream sink receives plaintext
    /// as chunks authenticate; when the envelope turns out to be cut off, the error comes at the
    /// end, so a consumer must check for it.
    /// - Returns: whether the source was an envelope (false: it was passed through, or, in
    ///   place, left as it was).
    @discardableResult
    public func unprotect(from source: Source, to sink: Sink, passThrough: Bool = false, progress: Progress? = nil)
        async throws(ProtectionError) -> Bool
    {
        try Self.checkFiles(source: source, sink: sink, protecting: false)
        let descriptor: Int32
        let name: String
        switch source {
        case .file(let path):
            descriptor = try FileSystem.openRegularFile(path)
            name = path
        case .stream(let stream, let streamName):
            descriptor = stream
            name = streamName
        }
        // This function alone closes a descriptor it opened, once, however it returns: the
        // reader is handed the descriptor without owning it.
        defer { if case .file = source { close(descriptor) } }
        var reader: ProtectedFileReader?
        let head: [UInt8]
        do throws(ProtectionError) {
            head = try FileSystem.read(descriptor, upTo: EnvelopeHeader.maximumCount, path: name)
            let isEnvelope = try head.withUnsafeBytes { bytes in
                Result { () throws(ProtectionError) in try EnvelopeHeader.decode(bytes) != nil }
            }.get()
            if isEnvelope {
                reader = try await ProtectedFileReader(
                    descriptor: descriptor, name: name, owning: false, protector: self, prefetched: head)
            } else if !passThrough {
                throw ProtectionError(
                    .invalidArguments, "not a protected file (no envelope header); nothing to unprotect", path: name)
            }
        } catch {
            throw error.at(name)
        }
        if reader == nil, case .file(let input) = source, case .file(let output) = sink, input == output {
            return false
        }
        var done: Int64 = 0
        let blocks: ((UnsafeRawBufferPointer) throws(ProtectionError) -> Void) throws(ProtectionError) -> Void
        if let reader {
            blocks = reader.forEachBlock
        } else {
            blocks = { body throws(ProtectionError) in
                try head.withUnsafeBytes { head in Result { () throws(ProtectionError) in try body(head) } }.get()
                try Self.copy(descriptor, name: name, body)
            }
        }
        let emit: (UnsafeRawBufferPointer) throws(ProtectionError) -> Void
        var writer: AtomicFileWriter?
        switch sink {
        case .file(let path):
            let fileWriter = try AtomicFileWriter(path: path, mode: Self.mode(of: path) ?? Self.sourceMode(source))
            writer = fileWriter
            emit = { block throws(ProtectionError) in try fileWriter.write(block) }
        case .stream(let output, let outputName):
            emit = { block throws(ProtectionError) in try FileSystem.writeAll(output, block, path: outputName) }
        }
        do throws(ProtectionError) {
            try blocks { block throws(ProtectionError) in
                try emit(block)
                done += Int64(block.count)
                progress?(done)
            }
            try writer?.commit()
        } catch {
            writer?.cancel()
            if case .file(let path) = sink { throw error.at(path) }
            throw error
        }
        return reader != nil
    }

    // MARK: Files

    /// Protects the file at `path` in place for `owner` (an already protected file is opened
    /// and sealed again for `owner`). The file is replaced atomically; on any failure it stays
    /// as it was.
    public func protect(file path: String, owner: AccountID, encrypt: Bool, progress: Progress? = nil)
        async throws(ProtectionError)
    {
        try await protect(
            file: path, owner: owner, encrypt: encrypt, progress: progress, failAfterChunks: nil)
    }

    func protect(
        file path: String, owner: AccountID, encrypt: Bool, progress: Progress?, failAfterChunks: UInt64?
    ) async throws(ProtectionError) {
        try Self.requireReplaceableInPlace(path, protecting: true)
        let writer = try await makeWriter(path: path, owner: owner, encrypt: encrypt)
        writer.failAfterChunks = failAfterChunks
        do throws(ProtectionError) {
            try await copyPlaintext(of: .file(path)) { block throws(ProtectionError) in
                try writer.write(block)
                progress?(writer.bytesWritten)
            }
            try writer.close()
        } catch {
            writer.cancel()
            throw error.at(path)
        }
    }

    /// Replaces the protected file at `path` with its plaintext, atomically. A file that is not
    /// protected is left alone (as Intune does; `custody unprotect` refuses it instead).
    /// - Throws: `.decryptFailed`, `.keyUnavailable` and header errors; the file is then
    ///   unchanged and no plaintext is left behind.
    public func unprotect(file path: String, progress: Progress? = nil) async throws(ProtectionError) {
        // In place and passing through: a file that is not an envelope is left as it is.
        try await unprotect(from: .file(path), to: .file(path), passThrough: true, progress: progress)
    }

    /// What the file's envelope says, without any key; nil when it is not a protected file.
    public func protectionInfo(file path: String) throws(ProtectionError) -> ProtectionInfo? {
        try Self.protectionInfo(file: path)
    }

    /// What a file's envelope says (see `protectionInfo(file:)`), needing no protector.
    public static func protectionInfo(file path: String) throws(ProtectionError) -> ProtectionInfo? {
        let descriptor = try FileSystem.openRegularFile(path)
        defer { close(descriptor) }
        var head = [UInt8](repeating: 0, count: 2_048)
        let count = head.withUnsafeMutableBytes { read(descriptor, $0.baseAddress!, $0.count) }
        guard count >= 0 else { throw FileSystem.ioError("reading", path) }
        do throws(ProtectionError) {
            return try protectionInfo(Array(head[0..<count]))
        } catch {
            throw error.at(path)
        }
    }

    /// What the envelope at the start of `source` says (see `protectionInfo(file:)`); nil when
    /// it is not an envelope. Reads no more than a header can take from a stream.
    public static func protectionInfo(from source: Source) throws(ProtectionError) -> ProtectionInfo? {
        switch source {
        case .file(let path):
            return try protectionInfo(file: path)
        case .stream(let descriptor, let name):
            let head = try FileSystem.read(descriptor, upTo: EnvelopeHeader.maximumCount, path: name)
            do throws(ProtectionError) {
                return try protectionInfo(head)
            } catch {
                throw error.at(name)
            }
        }
    }

    /// Protects the file for `owner` unless it already is protected for that owner (Intune's
    /// `verifyAndProtect`): an envelope for the same owner identifier, encrypted, or tagged
    /// only when the owner's data need not be encrypted.
    /// - Parameter owner: nil takes the owner recorded for the file's directory.
    /// - Returns: whether the file was (re)written.
    @discardableResult
    public func verifyAndProtect(
        file path: String, owner: AccountID? = nil, encrypt: Bool, progress: Progress? = nil
    ) async throws(ProtectionError) -> Bool {
        let account: AccountID
        if let owner { account = owner } else { account = try inheritedOwner(of: path) }
        if try alreadyProtected(file: path, for: account, encrypt: encrypt) != nil { return false }
        try await protect(file: path, owner: account, encrypt: encrypt, progress: progress)
        return true
    }

    /// Why the file at `path` needs no protecting for `account` (in words), or nil when it does:
    /// it is not an envelope, names another owner, or is tagged only while `account`'s data must
    /// be encrypted.
    public func alreadyProtected(file path: String, for account: AccountID, encrypt: Bool)
        throws(ProtectionError) -> String?
    {
        guard let info = try protectionInfo(file: path), info.owner == ownerIdentifier(for: account) else { return nil }
        if info.isEncrypted {
            return "already protected for \(info.owner) (encrypted, key version \(info.keyVersion ?? 0))"
        }
        guard !encrypt else { return nil }
        return "already tagged for \(info.owner), whose data need not be encrypted"
    }

    /// Re-seals an encrypted file under its owner's newest key version, if it uses an older one
    /// (after `KeyRing.rotate`). Returns whether the file was rewritten.
    @discardableResult
    public func rewrap(file path: String) async throws(ProtectionError) -> Bool {
        guard let info = try protectionInfo(file: path), info.isEncrypted, let version = info.keyVersion else {
            return false
        }
        let current = try await keyRing.currentKey(for: info.owner, creating: false)
        guard current.version > version else { return false }
        let reader = try await makeReader(path: path)
        let writer = try ProtectedFileWriter(
            path: path, cipher: sealer(current, chunkExponent: Self.fileChunkExponent),
            mode: Self.mode(of: path) ?? 0o600)
        do throws(ProtectionError) {
            try reader.forEachBlock { block throws(ProtectionError) in try writer.write(block) }
            try writer.close()
        } catch {
            writer.cancel()
            throw error.at(path)
        }
        return true
    }

    /// Re-seals an encrypted buffer under its owner's newest key version when it uses an older
    /// one; other bytes come back unchanged.
    public func rewrap(_ data: [UInt8]) async throws(ProtectionError) -> [UInt8] {
        guard let info = try protectionInfo(data), info.isEncrypted, let version = info.keyVersion else { return data }
        let current = try await keyRing.currentKey(for: info.owner, creating: false)
        guard current.version > version else { return data }
        let plaintext = try await unprotect(data)
        let cipher = sealer(current, chunkExponent: Self.bufferChunkExponent)
        return plaintext.withUnsafeBytes { Self.seal($0, with: cipher) }
    }

    /// The owner recorded above `path`, as an account; an error when there is none.
    private func inheritedOwner(of path: String) throws(ProtectionError) -> AccountID {
        guard let owner = try directoryOwner(forNewFileAt: path) else {
            throw ProtectionError(
                .invalidArguments, "no owner given, and no directory above the file records one", path: path)
        }
        return owner.account
    }

    /// The owner recorded for the nearest directory above `path`, or nil.
    public func directoryOwner(forNewFileAt path: String) throws(ProtectionError) -> OwnerIdentifier? {
        var directory = URL(fileURLWithPath: path).deletingLastPathComponent().standardizedFileURL
        while true {
            let marker = directory.appendingPathComponent(Self.directoryOwnerFileName).path
            if let bytes = try FileSystem.read(marker) {
                guard
                    let owner = (try? JSONDocument(parsing: bytes))?.root["owner"]?.string.flatMap(
                        OwnerIdentifier.init(rawValue:))
                else {
                    throw ProtectionError(.invalidArguments, "the directory owner record is damaged", path: marker)
                }
                return owner
            }
            if directory.path == "/" { return nil }
            directory.deleteLastPathComponent()
        }
    }

    // MARK: Checks

    /// Checks, before anything is read, sealed or stored, that protecting (or unprotecting)
    /// `source` into `sink` can write only what it should: a file source must be a regular
    /// file (a FIFO or device is refused, not waited on); a file sink must be missing or a
    /// regular file; the same path for both (in place) must be the file itself, not a link to
    /// it, and when protecting not one of several hard links.
    public static func checkFiles(source: Source, sink: Sink, protecting: Bool) throws(ProtectionError) {
        if case .file(let output) = sink {
            if case .file(let input) = source, input == output {
                try requireReplaceableInPlace(output, protecting: protecting)
                return
            }
            try FileSystem.requireReplaceable(output)
        }
        if case .file(let input) = source { try requireRegularFile(input) }
    }

    /// The first `count` bytes (or fewer) of the regular file at `path`.
    public static func head(ofFile path: String, count: Int) throws(ProtectionError) -> [UInt8] {
        let descriptor = try FileSystem.openRegularFile(path)
        defer { close(descriptor) }
        return try FileSystem.read(descriptor, upTo: count, path: path)
    }

    // MARK: Helpers

    /// Hands the plaintext of `source` to `body` in blocks: a protected file's contents, or the
    /// bytes of a plain file or a stream.
    private func copyPlaintext(of source: Source, _ body: (UnsafeRawBufferPointer) throws(ProtectionError) -> Void)
        async throws(ProtectionError)
    {
        let descriptor: Int32
        let name: String
        switch source {
        case .file(let path):
            if try protectionInfo(file: path) != nil {
                try await makeReader(path: path).forEachBlock(body)
                return
            }
            descriptor = try FileSystem.openRegularFile(path)
            name = path
        case .stream(let stream, let streamName):
            descriptor = stream
            name = streamName
        }
        defer { if case .file = source { close(descriptor) } }
        try Self.copy(descriptor, name: name, body)
    }

    /// Hands the rest of `descriptor` to `body` in blocks of up to 1 MiB (wiped afterwards).
    private static func copy(
        _ descriptor: Int32, name: String, _ body: (UnsafeRawBufferPointer) throws(ProtectionError) -> Void
    ) throws(ProtectionError) {
        var block = [UInt8](repeating: 0, count: 1 << 20)
        defer { block.withUnsafeMutableBytes { Sodium.zero($0) } }
        while true {
            let count = block.withUnsafeMutableBytes { read(descriptor, $0.baseAddress!, $0.count) }
            if count < 0 {
                guard let code = Descriptor.retryOrFailure(after: errno, on: descriptor, writing: false) else {
                    continue
                }
                throw FileSystem.ioError("reading", name, code)
            }
            if count == 0 { break }
            let result = block.withUnsafeBytes { block in
                Result { () throws(ProtectionError) in try body(UnsafeRawBufferPointer(rebasing: block[..<count])) }
            }
            try result.get()
        }
    }

    private static func sourceMode(_ source: Source) -> mode_t {
        if case .file(let path) = source, let mode = mode(of: path) { return mode }
        return 0o600
    }

    static func mode(of path: String) -> mode_t? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return status.st_mode & 0o7777
    }

    /// Refuses to replace `path` in place unless it is itself a regular file: a symbolic link
    /// would be replaced while its target kept the old bytes. When protecting, a file with
    /// other hard links is refused too: renaming over one name leaves the plaintext readable
    /// under the others.
    static func requireReplaceableInPlace(_ path: String, protecting: Bool) throws(ProtectionError) {
        var status = stat()
        guard lstat(path, &status) == 0 else { throw FileSystem.ioError("opening", path) }
        if (status.st_mode & S_IFMT) == S_IFLNK {
            let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: path)) ?? "its target"
            throw ProtectionError(
                .invalidArguments,
                "is a symbolic link (to \(target)); give the file itself, so the link and its target do not part ways",
                path: path)
        }
        guard (status.st_mode & S_IFMT) == S_IFREG else {
            throw ProtectionError(
                .invalidArguments, "is \(FileSystem.kind(of: status.st_mode)), not a regular file", path: path)
        }
        if protecting, status.st_nlink > 1 {
            throw ProtectionError(
                .invalidArguments,
                "has \(status.st_nlink) hard links; protecting it in place would leave the plaintext readable under the other names (protect to a new file, or remove the other links)",
                path: path)
        }
    }

    static func requireRegularFile(_ path: String) throws(ProtectionError) {
        var status = stat()
        guard stat(path, &status) == 0 else { throw FileSystem.ioError("opening", path) }
        guard (status.st_mode & S_IFMT) == S_IFREG else {
            throw ProtectionError(
                .invalidArguments, "is \(FileSystem.kind(of: status.st_mode)), not a regular file", path: path)
        }
    }
}
