public import CustodyPolicy
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// What protecting or unprotecting a directory tree did, file by file.
public struct DirectoryReport: Sendable {
    /// A file left as it was, and why.
    public struct Skipped: Sendable, Hashable {
        public let path: String
        public let reason: String
    }

    /// A file that could not be done; it is as it was before (every file is replaced
    /// atomically or not at all).
    public struct Failure: Sendable {
        public let path: String
        public let error: ProtectionError
        /// What to tell a person: the error's own words, or a caller's fuller explanation.
        public var message: String

        init(path: String, error: ProtectionError) {
            self.path = path
            self.error = error
            message = "\(error)"
        }
    }

    /// Files written (protected, or replaced by their plaintext), in the order they were done.
    public var written: [String] = []
    public var skipped: [Skipped] = []
    public var failed: [Failure] = []
    /// Bytes of the files written, as they were before (what the progress counts).
    public var bytes: Int64 = 0
}

extension DataProtector {
    /// Called as a tree is processed: bytes done so far, and of the whole tree (the sizes of
    /// the files to do, as they were before).
    public typealias TreeProgress = (_ done: Int64, _ total: Int64) -> Void

    // MARK: Directories

    /// Records `owner` as the owner of `directory` (files created in it later inherit it) and
    /// protects every regular file in it and below it that is not already protected for
    /// `owner` (`verifyAndProtect` on each). Files already protected for `owner`, symbolic
    /// links, and files that are not regular are skipped, with the reason in the report. A file
    /// that fails is reported and left as it was; the others are still done.
    /// - Throws: `.invalidArguments` when `directory` is not a directory; I/O errors listing it
    ///   or recording its owner (then no file was touched).
    public func protect(
        directory: String, owner: AccountID, encrypt: Bool, progress: TreeProgress? = nil
    ) async throws(ProtectionError) -> DirectoryReport {
        let entries = try Self.tree(directory)
        let owned = ownerIdentifier(for: owner)
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("owner")
        writer.value(owned.rawValue)
        writer.endObject()
        writer.newline()
        try FileSystem.writeAtomically(writer.bytes, to: directory + "/" + Self.directoryOwnerFileName, mode: 0o644)

        var report = DirectoryReport()
        report.skipped = entries.skipped
        var pending: [(path: String, size: Int64)] = []
        for file in entries.files {
            do throws(ProtectionError) {
                if let reason = try alreadyProtected(file: file.path, for: owner, encrypt: encrypt) {
                    report.skipped.append(.init(path: file.path, reason: reason))
                } else {
                    pending.append(file)
                }
            } catch {
                report.failed.append(.init(path: file.path, error: error.at(file.path)))
            }
        }
        await run(pending, into: &report, progress: progress) { path, fileProgress throws(ProtectionError) in
            try await protect(file: path, owner: owner, encrypt: encrypt, progress: fileProgress)
        }
        return report
    }

    /// Replaces every protected file in `directory` and below it with its plaintext, and
    /// removes the directory's owner record (so new files no longer inherit an owner). Files
    /// that are not protected are skipped; a file that fails (its owner's key was wiped, it was
    /// changed) is reported and left as it was, and the owner record then stays.
    /// - Throws: `.invalidArguments` when `directory` is not a directory; I/O errors listing it.
    public func unprotect(directory: String, progress: TreeProgress? = nil) async throws(ProtectionError)
        -> DirectoryReport
    {
        let entries = try Self.tree(directory)
        var report = DirectoryReport()
        report.skipped = entries.skipped
        var pending: [(path: String, size: Int64)] = []
        for file in entries.files {
            do throws(ProtectionError) {
                if try protectionInfo(file: file.path) == nil {
                    report.skipped.append(.init(path: file.path, reason: "not protected"))
                } else {
                    pending.append(file)
                }
            } catch {
                report.failed.append(.init(path: file.path, error: error.at(file.path)))
            }
        }
        await run(pending, into: &report, progress: progress) { path, fileProgress throws(ProtectionError) in
            try await unprotect(from: .file(path), to: .file(path), progress: fileProgress)
        }
        if report.failed.isEmpty {
            let marker = directory + "/" + Self.directoryOwnerFileName
            if unlink(marker) != 0 && errno != ENOENT { throw FileSystem.ioError("removing", marker) }
        }
        return report
    }

    /// Does `body` for each file in order, adding to the report and reporting progress over
    /// the whole list.
    private func run(
        _ files: [(path: String, size: Int64)], into report: inout DirectoryReport, progress: TreeProgress?,
        _ body: (_ path: String, _ progress: Progress?) async throws(ProtectionError) -> Void
    ) async {
        let total = files.reduce(Int64(0)) { $0 + $1.size }
        var done: Int64 = 0
        progress?(0, total)
        for file in files {
            do throws(ProtectionError) {
                try await body(file.path, progress.map { progress in { progress(done + min($0, file.size), total) } })
                report.written.append(file.path)
                report.bytes += file.size
            } catch {
                report.failed.append(.init(path: file.path, error: error.at(file.path)))
            }
            done += file.size
            progress?(done, total)
        }
    }

    /// The regular files under `directory` with their sizes, by path, and what is skipped:
    /// symbolic links, other kinds of file, Custody's own owner records and temporary files.
    static func tree(_ directory: String) throws(ProtectionError) -> (
        files: [(path: String, size: Int64)], skipped: [DirectoryReport.Skipped]
    ) {
        var status = stat()
        guard lstat(directory, &status) == 0 else { throw FileSystem.ioError("opening", directory) }
        guard (status.st_mode & S_IFMT) == S_IFDIR else {
            throw ProtectionError(
                .invalidArguments, "is \(FileSystem.kind(of: status.st_mode)), not a directory", path: directory)
        }
        guard let enumerator = FileManager.default.enumerator(atPath: directory) else {
            throw ProtectionError(.io, "cannot list the directory", path: directory)
        }
        var files: [(path: String, size: Int64)] = []
        var skipped: [DirectoryReport.Skipped] = []
        while let relative = enumerator.nextObject() as? String {
            let name = (relative as NSString).lastPathComponent
            let path = directory.hasSuffix("/") ? directory + relative : directory + "/" + relative
            guard name != directoryOwnerFileName, !name.contains(".custody-tmp-") else { continue }
            guard lstat(path, &status) == 0 else {
                skipped.append(.init(path: path, reason: "cannot be read (\(String(cString: strerror(errno))))"))
                continue
            }
            switch status.st_mode & S_IFMT {
            case S_IFREG:
                files.append((path, Int64(status.st_size)))
            case S_IFDIR:
                continue
            case S_IFLNK:
                skipped.append(.init(path: path, reason: "a symbolic link: its target is not protected through it"))
            default:
                skipped.append(.init(path: path, reason: "\(FileSystem.kind(of: status.st_mode)), not a regular file"))
            }
        }
        files.sort { $0.path < $1.path }
        return (files, skipped.sorted { $0.path < $1.path })
    }
}
