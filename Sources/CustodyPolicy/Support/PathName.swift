import SystemPackage

/// Paths taken apart as text, with swift-system's `FilePath`.
///
/// Foundation's `NSString.deletingLastPathComponent` (swift-corelibs-foundation, Swift 6.3 on
/// Linux) traps on a relative path of one character, such as `--state b`: a user's argument must
/// never crash a command, so the directory part of a path is taken here instead.
package enum PathName {
    /// The directory part of `path`: what is left once its last component is removed, "" for a
    /// bare name ("b", "state.sqlite"), "/" for a name at the root ("/b"). Trailing slashes and
    /// a lone "." component are read as `FilePath` reads them.
    package static func directory(of path: String) -> String {
        FilePath(path).removingLastComponent().string
    }
}

extension PathName {
    /// Writes `bytes` to the file at `path`, created (mode 0644 before the umask) or truncated.
    /// - Throws: the system's error (`Errno`), whose description says why in the system's words
    ///   ("Is a directory", "Permission denied"), where Foundation's says "error 512".
    package static func write(_ bytes: [UInt8], toFile path: String) throws {
        let descriptor = try FileDescriptor.open(
            FilePath(path), .writeOnly, options: [.create, .truncate],
            permissions: [.ownerReadWrite, .groupRead, .otherRead])
        try descriptor.closeAfter { _ = try descriptor.writeAll(bytes) }
    }
}
