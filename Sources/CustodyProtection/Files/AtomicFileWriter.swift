#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes a file so that it appears whole or not at all: everything goes to a temporary file in
/// the destination's directory, which `commit()` syncs, renames over the destination, and whose
/// directory it syncs. `cancel()`, a failure, or releasing the writer without committing removes
/// the temporary file and leaves the destination as it was.
final class AtomicFileWriter {
    let destination: String
    private let temporary: String
    private var descriptor: Int32
    private var done = false

    /// - Parameter mode: permissions of the new file.
    init(path: String, mode: mode_t) throws(ProtectionError) {
        try FileSystem.requireReplaceable(path)
        destination = path
        temporary = FileSystem.temporaryPath(besides: path)
        descriptor = try FileSystem.createTemporary(temporary, mode: mode)
        _ = fchmod(descriptor, mode)
    }

    deinit {
        cancel()
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws(ProtectionError) {
        try FileSystem.writeAll(descriptor, bytes, path: temporary)
    }

    func write(_ bytes: [UInt8]) throws(ProtectionError) {
        try FileSystem.writeAll(descriptor, bytes, path: temporary)
    }

    /// Syncs the file and puts it in place.
    func commit() throws(ProtectionError) {
        guard !done else { return }
        do throws(ProtectionError) {
            guard fsync(descriptor) == 0 else { throw FileSystem.ioError("syncing", temporary) }
            close(descriptor)
            descriptor = -1
            guard rename(temporary, destination) == 0 else { throw FileSystem.ioError("renaming into place", destination) }
            done = true
            try FileSystem.syncDirectory(containing: destination)
        } catch {
            cancel()
            throw error
        }
    }

    /// Removes the temporary file; the destination stays as it was.
    func cancel() {
        guard !done else { return }
        done = true
        if descriptor >= 0 {
            close(descriptor)
            descriptor = -1
        }
        unlink(temporary)
    }
}
