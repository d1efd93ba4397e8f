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
