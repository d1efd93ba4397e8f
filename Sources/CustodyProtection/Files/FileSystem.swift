#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The POSIX file operations this layer relies on, with errors as `ProtectionError`s.
enum FileSystem {
    /// `errno` in words.
    static func describe(_ code: Int32 = errno) -> String {
        String(cString: strerror(code))
    }

    static func ioError(_ action: String, _ path: String, _ code: Int32 = errno) -> ProtectionError {
        ProtectionError(.io, "\(action) failed: \(describe(code))", path: path)
    }

    /// The whole file, or nil when it does not exist.
    static func read(_ path: String) throws(ProtectionError) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        if descriptor < 0 {
            if errno == ENOENT { return nil }
            throw ioError("opening", path)
        }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var block = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = block.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw ioError("reading", path)
            }
            if count == 0 { return bytes }
            bytes += block[0..<count]
        }
    }

    /// Writes all of `bytes` to `descriptor`, retrying short writes and interruptions.
    static func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws(ProtectionError) {
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                throw ioError("writing", path)
            }
            offset += written
        }
    }

    /// Writes all of `bytes` to `descriptor`.
    static func writeAll(_ descriptor: Int32, _ bytes: [UInt8], path: String) throws(ProtectionError) {
        let failure: Int32? = bytes.withUnsafeBytes { bytes in
            do {
                try writeAll(descriptor, bytes, path: path)
                return nil
            } catch {
                return errno
            }
        }
        if let failure { throw ioError("writing", path, failure) }
    }

    /// Replaces `path` with `bytes` atomically: a temporary file in the same directory, written,
    /// fsynced, renamed over `path`, and the directory fsynced. A crash leaves the old file or
    /// the new one, never a mix.
    static func writeAtomically(_ bytes: [UInt8], to path: String, mode: mode_t = 0o600) throws(ProtectionError) {
        let temporary = temporaryPath(besides: path)
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard descriptor >= 0 else { throw ioError("creating", temporary) }
        do throws(ProtectionError) {
            try writeAll(descriptor, bytes, path: temporary)
            guard fsync(descriptor) == 0 else { throw ioError("syncing", temporary) }
            close(descriptor)
            guard rename(temporary, path) == 0 else { throw ioError("renaming into place", path) }
            try syncDirectory(containing: path)
        } catch {
            close(descriptor)
            unlink(temporary)
            throw error
        }
    }

    /// A fresh temporary name in the same directory as `path` (so that renaming over it is atomic).
    static func temporaryPath(besides path: String) -> String {
        let random = Sodium.randomBytes(count: 8).map { String($0, radix: 16) }.joined()
        return directory(of: path) + "/." + fileName(of: path) + ".custody-tmp-" + random
    }

    /// Makes a rename or unlink in the directory of `path` durable.
    static func syncDirectory(containing path: String) throws(ProtectionError) {
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
    static func withExclusiveLock<Result>(_ path: String, _ body: () throws(ProtectionError) -> Result) throws(ProtectionError) -> Result {
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
