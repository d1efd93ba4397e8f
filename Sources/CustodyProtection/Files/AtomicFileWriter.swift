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
    private var temporary: TemporaryFile
    private var done = false

    /// - Parameter mode: permissions of the new file.
    init(path: String, mode: mode_t) throws(ProtectionError) {
        try FileSystem.requireReplaceable(path)
        destination = path
        temporary = try TemporaryFile(besides: path, mode: mode)
    }

    deinit {
        cancel()
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws(ProtectionError) {
        try FileSystem.writeAll(temporary.descriptor, bytes, path: temporary.path)
    }

    func write(_ bytes: [UInt8]) throws(ProtectionError) {
        try FileSystem.writeAll(temporary.descriptor, bytes, path: temporary.path)
    }

    /// Syncs the file and puts it in place.
    func commit() throws(ProtectionError) {
        guard !done else { return }
        do throws(ProtectionError) {
            try temporary.moveIntoPlace(destination)
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
        temporary.discard()
    }
}
