import CustodyPolicy
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The POSIX file operations this layer relies on, with errors as `ProtectionError`s (the
/// Graph connector writes its bundle directories with them too).
package enum FileSystem {
    /// `errno` in words.
    static func describe(_ code: Int32 = errno) -> String {
        String(cString: strerror(code))
    }

    static func ioError(_ action: String, _ path: String, _ code: Int32 = errno) -> ProtectionError {
        ProtectionError(.io, "\(action) failed: \(describe(code))", path: path)
    }

    /// Opens `path` for reading only if it is a regular file (following symbolic links). The
    /// open never blocks: a FIFO or a device is refused, not waited on.
    static func openRegularFile(_ path: String) throws(ProtectionError) -> Int32 {
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { throw ioError("opening", path) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let code = errno
            close(descriptor)
            throw ioError("reading the status of", path, code)
        }
        guard (status.st_mode & S_IFMT) == S_IFREG else {
            close(descriptor)
            throw ProtectionError(.invalidArguments, "is \(kind(of: status.st_mode)), not a regular file", path: path)
        }
        // Regular files never block; clear the flag so reads behave as usual.
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~O_NONBLOCK)
        return descriptor
    }

    /// What a file of mode `mode` is, in words: "a directory", "a FIFO", …
    static func kind(of mode: mode_t) -> String {
        fileKind(of: mode) ?? "not a regular file"
    }

    /// Refuses a destination Custody would replace by renaming over it unless it is missing or
    /// a regular file: a symbolic link (renaming would replace the link and leave its target as
    /// it was), a FIFO, a device (`/dev/null` would become a file holding the output), a
    /// directory or a socket.
    static func requireReplaceable(_ path: String) throws(ProtectionError) {
        var status = stat()
        guard lstat(path, &status) == 0 else {
            if errno == ENOENT { return }
            throw ioError("reading the status of", path)
        }
        guard (status.st_mode & S_IFMT) == S_IFREG else {
            throw ProtectionError(
                .invalidArguments,
                "the destination is \(kind(of: status.st_mode)); Custody writes only regular files (use - for standard output)",
                path: path)
        }
    }

    /// The whole file, or nil when it does not exist. Only regular files are read.
    static func read(_ path: String) throws(ProtectionError) -> [UInt8]? {
        var attempt = 0
        while true {
            let descriptor: Int32
            do {
                descriptor = try openRegularFile(path)
            } catch {
                guard error.code == .io else { throw error }
                if access(path, F_OK) != 0, errno == ENOENT { return nil }
                // The file is there now: another writer renamed it into place after the open
                // failed for want of it. Opened again, rather than reported as missing.
                attempt += 1
                guard attempt < 3 else { throw error }
                continue
            }
            defer { close(descriptor) }
            switch Descriptor.readToEnd(descriptor) {
            case .success(let bytes): return bytes
            case .failure(let error): throw ioError("reading", path, error.code)
            }
        }
    }

    /// Up to `count` bytes from `descriptor`: fewer only at the end of the input.
    static func read(_ descriptor: Int32, upTo count: Int, path: String) throws(ProtectionError) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let read = buffer.withUnsafeMutableBytes {
                Glibc.read(descriptor, $0.baseAddress! + filled, count - filled)
            }
            if read < 0 {
                guard let code = Descriptor.retryOrFailure(after: errno, on: descriptor, writing: false) else {
                    continue
                }
                throw ioError("reading", path, code)
            }
            if read == 0 { break }
            filled += read
        }
        buffer.removeSubrange(filled...)
        return buffer
    }

    /// Writes all of `bytes` to `descriptor`, retrying short writes and interruptions, and
    /// waiting when a non-blocking descriptor is full.
    static func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws(ProtectionError) {
        if let code = Descriptor.writeAll(descriptor, bytes) { throw ioError("writing", path, code) }
    }

    /// Writes all of `bytes` to `descriptor`.
    static func writeAll(_ descriptor: Int32, _ bytes: [UInt8], path: String) throws(ProtectionError) {
        if let code = bytes.withUnsafeBytes({ Descriptor.writeAll(descriptor, $0) }) {
            throw ioError("writing", path, code)
        }
    }

    /// Replaces `path` with `bytes` atomically: a temporary file in the same directory, written,
    /// fsynced, renamed over `path`, and the directory fsynced. A crash leaves the old file or
    /// the new one, never a mix.
    static func writeAtomically(_ bytes: [UInt8], to path: String, mode: mode_t = 0o600) throws(ProtectionError) {
        try requireReplaceable(path)
        var temporary = try TemporaryFile(besides: path, mode: mode)
        do throws(ProtectionError) {
            try writeAll(temporary.descriptor, bytes, path: temporary.path)
            try temporary.moveIntoPlace(path)
            try syncDirectory(containing: path)
        } catch {
            temporary.discard()
            throw error
        }
    }

    /// `writeAtomically` for other layers (a signature file, say), with the mode as an integer.
    package static func replace(_ path: String, with bytes: [UInt8], mode: Int) throws(ProtectionError) {
        try writeAtomically(bytes, to: path, mode: mode_t(mode))
    }

    /// What follows a file's name in the name of its temporary file.
    static let temporaryMarker = ".custody-tmp-"

    /// A fresh temporary name in the same directory as `path` (so that renaming over it is
    /// atomic): `.NAME.custody-tmp-` and 16 hex digits.
    static func temporaryPath(besides path: String) -> String {
        let random = Sodium.randomBytes(count: 8).map { $0 < 16 ? "0" + String($0, radix: 16) : String($0, radix: 16) }
            .joined()
        return directory(of: path) + "/." + fileName(of: path) + temporaryMarker + random
    }

    /// Creates `path` (which must not exist) holding `bytes`, and syncs it to the disk.
    package static func writeNew(_ bytes: [UInt8], to path: String, mode: Int) throws(ProtectionError) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode_t(mode))
        guard descriptor >= 0 else { throw ioError("creating", path) }
        defer { close(descriptor) }
        try writeAll(descriptor, bytes, path: path)
        guard fsync(descriptor) == 0 else { throw ioError("syncing", path) }
    }

    /// Makes a rename or unlink in the directory of `path` durable.
    package static func syncDirectory(containing path: String) throws(ProtectionError) {
        let directoryPath = directory(of: path)
        let descriptor = open(directoryPath, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw ioError("opening directory", directoryPath) }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 || errno == EINVAL else { throw ioError("syncing directory", directoryPath) }
    }

    /// Overwrites a file's bytes with zeros, syncs, and removes it: best effort against recovery
    /// of the old contents from the disk (file systems that copy on write may still keep them).
    static func shred(_ path: String) throws(ProtectionError) {
        let descriptor = open(path, O_WRONLY | O_CLOEXEC)
        if descriptor < 0 {
            if errno == ENOENT { return }
            throw ioError("opening", path)
        }
        var status = stat()
        if fstat(descriptor, &status) == 0, status.st_size > 0 {
            let zeros = [UInt8](repeating: 0, count: Int(status.st_size))
            try? writeAll(descriptor, zeros, path: path)
            _ = fsync(descriptor)
        }
        close(descriptor)
        guard unlink(path) == 0 || errno == ENOENT else { throw ioError("removing", path) }
        try syncDirectory(containing: path)
    }

    static func createDirectory(_ path: String, mode: mode_t = 0o700) throws(ProtectionError) {
        var components: [Substring] = []
        for component in path.split(separator: "/", omittingEmptySubsequences: false) {
            components.append(component)
            let partial = components.joined(separator: "/")
            if partial.isEmpty { continue }
            if mkdir(partial, mode) != 0, errno != EEXIST { throw ioError("creating directory", partial) }
        }
    }

    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let directory = String(path[..<slash])
        return directory.isEmpty ? "/" : directory
    }

    static func fileName(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }

    /// Holds an exclusive `flock` on `path` (created if needed) while `body` runs: serializes
    /// writers across processes.
    static func withExclusiveLock<Result>(_ path: String, _ body: () throws(ProtectionError) -> Result)
        throws(ProtectionError) -> Result
    {
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw ioError("opening lock", path) }
        defer { close(descriptor) }
        while flock(descriptor, LOCK_EX) != 0 {
            if errno != EINTR { throw ioError("locking", path) }
        }
        defer { flock(descriptor, LOCK_UN) }
        return try body()
    }
}

/// Temporary files left by a Custody process that was killed mid-write (`kill -9` during an
/// in-place protect): removed the next time a process writes into their directory.
enum StrayTemporaries {
    private static let cleaned = Locked<Set<String>>([])

    /// Removes the strays of `directory`, unless this process already did.
    static func removeOnce(in directory: String) {
        let first = cleaned.withLock { $0.insert(directory).inserted }
        if first { _ = remove(in: directory) }
    }

    /// Removes, in `directory`, every regular file named like Custody's temporaries
    /// (`.NAME.custody-tmp-` and hex digits) that no live process holds: its writer's `flock`
    /// is gone with its process. A file just created (empty, less than ten seconds old) is
    /// left, in case its writer has not taken the lock yet. Returns the names removed.
    @discardableResult
    static func remove(in directory: String, now: time_t = time(nil)) -> [String] {
        guard let stream = opendir(directory) else { return [] }
        defer { closedir(stream) }
        var removed: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard isTemporaryName(name) else { continue }
            let path = directory + "/" + name
            let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC)
            guard descriptor >= 0 else { continue }
            defer { close(descriptor) }
            var status = stat()
            guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG, status.st_uid == geteuid()
            else { continue }
            if status.st_size == 0, now - status.st_mtim.tv_sec < 10 { continue }
            guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else { continue }
            if unlink(path) == 0 { removed.append(name) }
        }
        return removed
    }

    /// `.NAME.custody-tmp-` followed by 1 to 16 hex digits, NAME not empty.
    static func isTemporaryName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        let marker = Array(FileSystem.temporaryMarker.utf8)
        guard bytes.first == UInt8(ascii: "."), bytes.count > 1 + 1 + marker.count else { return false }
        var end = bytes.count
        while end > 0, isHexDigit(bytes[end - 1]) { end -= 1 }
        let digits = bytes.count - end
        guard (1...16).contains(digits), end - marker.count >= 2 else { return false }
        return Array(bytes[(end - marker.count)..<end]) == marker
    }
}

private func isHexDigit(_ byte: UInt8) -> Bool {
    (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
        || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
}

/// The file an atomic replace writes before it takes the destination's place, in the same
/// directory. Where the file system allows it (Linux `O_TMPFILE`: ext4, xfs, btrfs, tmpfs) it
/// has no name until it is complete, so a process killed while writing leaves nothing behind.
/// Elsewhere it is `.NAME.custody-tmp-` and 16 hex digits, held under an exclusive `flock`
/// while its writer lives: `StrayTemporaries` removes those a killed writer left.
struct TemporaryFile {
    /// The name it has, or gets just before it is renamed over the destination.
    let path: String
    private(set) var descriptor: Int32
    private(set) var isNamed: Bool

    /// `O_TMPFILE` of Linux (`__O_TMPFILE | O_DIRECTORY`), which Glibc's module does not export.
    private static let unnamedFlag: Int32 = 0o20_000_000 | O_DIRECTORY

    init(besides destination: String, mode: mode_t) throws(ProtectionError) {
        let directory = FileSystem.directory(of: destination)
        StrayTemporaries.removeOnce(in: directory)
        path = FileSystem.temporaryPath(besides: destination)
        #if os(Linux)
            let unnamed = open(directory, O_WRONLY | O_CLOEXEC | Self.unnamedFlag, mode)
            if unnamed >= 0 {
                descriptor = unnamed
                isNamed = false
                _ = fchmod(descriptor, mode)
                return
            }
        // EOPNOTSUPP, EISDIR or EINVAL: no unnamed files here; fall back to a named one.
        #endif
        descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode)
        guard descriptor >= 0 else { throw FileSystem.ioError("creating a temporary file", path) }
        isNamed = true
        _ = flock(descriptor, LOCK_EX | LOCK_NB)
        _ = fchmod(descriptor, mode)
    }

    /// Syncs the file, gives it its name if it has none, and renames it over `destination`.
    mutating func moveIntoPlace(_ destination: String) throws(ProtectionError) {
        guard fsync(descriptor) == 0 else { throw FileSystem.ioError("syncing", path) }
        if !isNamed {
            guard linkat(AT_FDCWD, "/proc/self/fd/\(descriptor)", AT_FDCWD, path, AT_SYMLINK_FOLLOW) == 0 else {
                throw FileSystem.ioError("naming the temporary file", path)
            }
            isNamed = true
        }
        guard rename(path, destination) == 0 else { throw FileSystem.ioError("renaming into place", destination) }
        isNamed = false  // the name is the destination's now
        close(descriptor)
        descriptor = -1
    }

    /// Closes and removes the file; the destination stays as it was.
    mutating func discard() {
        if descriptor >= 0 {
            close(descriptor)
            descriptor = -1
        }
        if isNamed {
            unlink(path)
            isNamed = false
        }
    }
}
