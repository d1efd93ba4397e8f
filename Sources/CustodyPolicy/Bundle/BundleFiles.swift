import Crypto
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The files of a bundle, read once: each document's name and bytes, and the bundle's content
/// hash. Everything that needs a bundle's bytes (loading it, applying it, storing it, hashing
/// it, watching it) works from one `BundleFiles`, so a change is read once and every step sees
/// the same bytes.
///
/// Which entries of a directory count (`entryNames(among:)`): names ending in `.json` (any
/// case), not hidden, directly in the directory. Each must be readable as a regular file (a
/// symbolic link to one is followed): a dangling or looping link, a directory, a FIFO or a
/// device named `*.json` is an error, never skipped, because a policy file skipped in silence
/// leaves its accounts unmanaged.
public struct BundleFiles: Sendable, Hashable {
    /// One file: its name in the bundle (no directory) and its bytes as stored.
    public struct Entry: Sendable, Hashable {
        public let name: String
        public let bytes: [UInt8]

        /// Creates an entry.
        public init(name: String, bytes: [UInt8]) {
            self.name = name
            self.bytes = bytes
        }
    }

    /// The files, in UTF-8 order of their names (the order they load in).
    public let entries: [Entry]
    /// The directory they were read from, used to name them in diagnostics; nil for files
    /// that came from elsewhere (the state database, a request).
    public let directory: String?
    /// SHA-256 (lower-case hex) over each file's name, a zero byte, its length (8 bytes, big
    /// endian) and its bytes, in name order: the same files give the same hash wherever they
    /// are. This is the bundle's revision.
    public let contentHash: String
    /// The bytes of the bundle's signature file (`.custody-signature.json`), when it has one:
    /// not an entry, and not part of the revision (signing the same files again does not make
    /// another revision).
    public let signature: [UInt8]?

    /// The name of the tenant file.
    public static let tenantName = "tenant.json"
    /// The name of the signature file beside the entries (hidden, so never an entry itself).
    public static let signatureName = ".custody-signature.json"
    /// The most bytes a signature file may hold.
    public static let maximumSignatureBytes = 1 << 20

    /// Files from anywhere (sorted by name here).
    /// - Throws: a `BundleError` when a name is not a bundle entry name or appears twice.
    public init(entries: [Entry], directory: String? = nil, signature: [UInt8]? = nil) throws(BundleError) {
        var seen = Set<String>()
        for entry in entries {
            guard Self.isEntryName(entry.name), !entry.name.contains("/"), entry.name.utf8.count <= 255 else {
                throw BundleError(diagnostics: [
                    Self.problem(
                        entry.name.escapingControlCharacters,
                        "'\(entry.name.escapingControlCharacters)' is not a bundle file name (a *.json name of at most 255 bytes, without a directory, not hidden)"
                    )
                ])
            }
            if let scalar = entry.name.unicodeScalars.first(where: isUnprintable) {
                throw BundleError(diagnostics: [
                    Self.problem(
                        entry.name.escapingControlCharacters,
                        "'\(entry.name.escapingControlCharacters)' is not a bundle file name: it holds \(escapedScalar(scalar)), a control or bidirectional-formatting character"
                    )
                ])
            }
            guard seen.insert(entry.name).inserted else {
                throw BundleError(diagnostics: [Self.problem(entry.name, "the bundle names '\(entry.name)' twice")])
            }
        }
        if let signature, signature.count > Self.maximumSignatureBytes {
            throw BundleError(diagnostics: [
                Self.problem(
                    Self.signatureName, "the signature file is larger than \(Self.maximumSignatureBytes) bytes")
            ])
        }
        self.init(
            sorted: entries.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }, directory: directory,
            signature: signature)
    }

    /// A bundle as the state keeps it: its files (named and checked when it was applied), which
    /// must hash to the revision recorded for them then. Nil when they do not: a file the state
    /// lost or holds damaged would otherwise be a different policy under the same revision.
    package init?(stored entries: [Entry], contentHash: String, signature: [UInt8]? = nil) {
        self.init(
            sorted: entries.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }, directory: nil,
            signature: signature)
        guard self.contentHash == contentHash else { return nil }
    }

    /// The same files with this signature file (nil: none).
    public func signed(_ signature: [UInt8]?) -> BundleFiles { BundleFiles(copying: self, signature: signature) }

    private init(copying other: BundleFiles, signature: [UInt8]?) {
        entries = other.entries
        directory = other.directory
        contentHash = other.contentHash
        self.signature = signature
    }

    private init(sorted entries: [Entry], directory: String?, signature: [UInt8]?) {
        self.entries = entries
        self.directory = directory
        self.signature = signature
        var hasher = SHA256()
        for entry in entries {
            hasher.update(data: Array(entry.name.utf8) + [0])
            withUnsafeBytes(of: UInt64(entry.bytes.count).bigEndian) { hasher.update(bufferPointer: $0) }
            hasher.update(data: entry.bytes)
        }
        contentHash = hasher.finalize().map { byte in
            let digits = Array("0123456789abcdef".utf8)
            return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]], as: UTF8.self)
        }.joined()
    }

    /// The tenant file, if the bundle has one.
    public var tenant: Entry? { entries.first { $0.name == Self.tenantName } }

    /// What a watcher has dealt with when it has offered these files: their content and their
    /// signature. Signing a bundle again (the documented edit-then-sign flow) changes it, so
    /// the signed files are offered even though their content was refused unsigned a moment
    /// before.
    public var offerKey: String {
        guard let signature else { return contentHash }
        let digest = SHA256.hash(data: signature).map { byte in
            (byte < 16 ? "0" : "") + String(byte, radix: 16)
        }.joined()
        return contentHash + "+signature:" + digest
    }

    /// Whether a directory entry's name makes it part of a bundle: `*.json`, not hidden.
    public static func isEntryName(_ name: String) -> Bool {
        !name.hasPrefix(".") && name.lowercased().hasSuffix(".json")
    }

    /// The names among `names` that belong to a bundle, in the order they load.
    public static func entryNames(among names: [String]) -> [String] {
        names.filter(isEntryName).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    /// Reads every bundle entry of `directory`.
    /// - Throws: `BundleError` naming each entry that cannot be read as a regular file (with
    ///   the diagnostics of the readable ones, so that one run reports every problem), or the
    ///   directory itself when it cannot be listed.
    /// The most bytes a bundle directory may hold in its entries, together: 256 MiB unless
    /// `CUSTODY_MAX_BUNDLE_BYTES` says otherwise (a tenant of 100,000 accounts takes about 15 MB).
    /// A bundle over the limit is refused, naming the file that crossed it, before that file is
    /// read to its end.
    public static let maximumBytes: Int = {
        if let text = ProcessInfo.processInfo.environment["CUSTODY_MAX_BUNDLE_BYTES"], let value = Int(text), value > 0
        {
            return value
        }
        return 256 << 20
    }()

    public static func read(directory: String) throws(BundleError) -> BundleFiles {
        try read(directory: directory, maximumBytes: maximumBytes)
    }

    /// Reads every bundle entry of `directory`, refusing more than `maximumBytes` in all.
    public static func read(directory: String, maximumBytes: Int) throws(BundleError) -> BundleFiles {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            let reason =
                FileManager.default.fileExists(atPath: directory) ? "cannot list the directory" : "no such directory"
            throw BundleError(diagnostics: [problem(directory, reason)])
        }
        var entries: [Entry] = []
        var problems: [Diagnostic] = []
        var total = 0
        for name in entryNames(among: names) {
            let path = (directory as NSString).appendingPathComponent(name)
            // As a request's names are checked: a control or bidirectional-formatting
            // character in a name would reach terminals, logs and answers as it is.
            if let scalar = name.unicodeScalars.first(where: isUnprintable) {
                problems.append(
                    problem(
                        (directory as NSString).appendingPathComponent(name.escapingControlCharacters),
                        "'\(name.escapingControlCharacters)' is not a bundle file name: it holds \(escapedScalar(scalar)), a control or bidirectional-formatting character"
                    ))
                continue
            }
            switch readRegularFile(path, maximumBytes: maximumBytes - total) {
            case .success(let bytes):
                entries.append(Entry(name: name, bytes: bytes))
                total += bytes.count
            case .failure(let reason) where reason.isTooLarge:
                throw BundleError(diagnostics: [
                    problem(
                        path,
                        "the bundle is larger than \(maximumBytes) bytes with this file; raise CUSTODY_MAX_BUNDLE_BYTES if it is meant to be"
                    )
                ])
            case .failure(let reason):
                problems.append(problem(path, reason.message))
            }
        }
        var signature: [UInt8]?
        if names.contains(signatureName) {
            let path = (directory as NSString).appendingPathComponent(signatureName)
            switch readRegularFile(path, maximumBytes: maximumSignatureBytes) {
            case .success(let bytes): signature = bytes
            case .failure(let reason) where reason.isTooLarge:
                problems.append(problem(path, "the signature file is larger than \(maximumSignatureBytes) bytes"))
            case .failure(let reason): problems.append(problem(path, reason.message))
            }
        }
        let files = BundleFiles(sorted: entries, directory: directory, signature: signature)
        guard problems.isEmpty else {
            let others: [Diagnostic]
            do {
                others = try files.load(allowingEmpty: true).warnings
            } catch {
                others = error.diagnostics
            }
            throw BundleError(diagnostics: problems + others)
        }
        return files
    }

    /// Loads the files as a bundle. A bundle without `tenant.json` loads with a warning: it
    /// knows no accounts, so every account is unmanaged.
    /// - Parameter allowingEmpty: accept a bundle under which no account is reached by an app
    ///   protection policy (no `tenant.json`, no policy, an empty tenant, or only policies that
    ///   reach no one). Every decision under such a bundle allows: it is refused
    ///   (`emptyBundle`) unless asked for on purpose.
    /// - Throws: `BundleError` with every problem of every file; a file named `tenant.json`
    ///   in another case (`Tenant.json`) is an error, never a policy document.
    public func load(allowingEmpty: Bool = false) throws(BundleError) -> PolicyBundle {
        let misnamed = entries.filter { $0.name != Self.tenantName && $0.name.lowercased() == Self.tenantName }
        guard misnamed.isEmpty else {
            throw BundleError(
                diagnostics: misnamed.map { entry in
                    Diagnostic(
                        severity: .error, code: .tenant,
                        message:
                            "'\(entry.name)' is not tenant.json: the tenant file must be named tenant.json exactly (names are case-sensitive), or the bundle would know no accounts",
                        location: DocumentLocation(file: path(of: entry.name), line: 1, column: 1))
                })
        }
        let tenant = self.tenant.map(file)
        let documents = entries.filter { $0.name != Self.tenantName }.map(file)
        var leading: [Diagnostic] = []
        if tenant == nil {
            leading.append(
                Diagnostic(
                    severity: .warning, code: .noTenant,
                    message:
                        "the bundle has no tenant.json, so it knows no accounts and treats every account as unmanaged",
                    location: DocumentLocation(file: path(of: Self.tenantName), line: 1, column: 1)))
        }
        var bundle: PolicyBundle
        do {
            bundle = try PolicyBundle.load(tenant: tenant, documents: documents)
        } catch {
            throw BundleError(diagnostics: leading + error.diagnostics)
        }
        bundle.warnings = leading + bundle.warnings
        if !allowingEmpty, !bundle.managesSomeAccount {
            throw BundleError(
                diagnostics: [Self.emptyBundleDiagnostic(bundle, at: directory ?? "the bundle")] + bundle.warnings)
        }
        return bundle
    }

    /// Why a bundle that manages no account is refused, and how to apply it anyway.
    static func emptyBundleDiagnostic(_ bundle: PolicyBundle, at place: String) -> Diagnostic {
        let why =
            switch (bundle.tenant.accounts.isEmpty, bundle.protectionPolicies.isEmpty) {
            case (true, true): "it lists no account and has no app protection policy"
            case (true, false): "it lists no account (no tenant.json, or one without accounts)"
            case (false, true): "it has no app protection policy"
            case (false, false):
                "none of its \(bundle.protectionPolicies.count) app protection polic\(bundle.protectionPolicies.count == 1 ? "y reaches" : "ies reach") any of its \(bundle.tenant.accounts.count) account\(bundle.tenant.accounts.count == 1 ? "" : "s")"
            }
        return .emptyBundle(": \(why)", at: place)
    }

    private func path(of name: String) -> String {
        directory.map { ($0 as NSString).appendingPathComponent(name) } ?? name
    }

    private func file(_ entry: Entry) -> PolicyBundle.File {
        PolicyBundle.File(name: path(of: entry.name), bytes: entry.bytes)
    }

    static func problem(_ path: String, _ message: String) -> Diagnostic {
        Diagnostic(
            severity: .error, code: .unreadable, message: message,
            location: DocumentLocation(file: path, line: 1, column: 1))
    }

    struct ReadFailure: Error {
        let message: String
        var isTooLarge = false
    }

    /// The bytes of the regular file at `path` (a symbolic link to one is followed), without
    /// ever blocking: a FIFO or a device is refused by its type before anything is read.
    static func readRegularFile(_ path: String, maximumBytes: Int = .max) -> Result<[UInt8], ReadFailure> {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard descriptor >= 0 else {
            let code = errno
            var link = stat()
            if code == ENOENT, lstat(path, &link) == 0, (link.st_mode & S_IFMT) == S_IFLNK {
                return .failure(ReadFailure(message: "a symbolic link to nothing: the file it names does not exist"))
            }
            switch code {
            case ELOOP: return .failure(ReadFailure(message: "a symbolic link loop"))
            case ENOENT: return .failure(ReadFailure(message: "the file vanished while the bundle was read"))
            default: return .failure(ReadFailure(message: "cannot open the file: \(String(cString: strerror(code)))"))
            }
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            return .failure(ReadFailure(message: "cannot read the file's status: \(String(cString: strerror(errno)))"))
        }
        guard (status.st_mode & S_IFMT) == S_IFREG else {
            return .failure(
                ReadFailure(
                    message:
                        "\(kind(of: status.st_mode)) named like a policy file; a bundle's *.json entries must be regular files"
                ))
        }
        guard status.st_size <= maximumBytes else {
            return .failure(ReadFailure(message: "too large", isTooLarge: true))
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Int(status.st_size))
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = buffer.withUnsafeMutableBytes { systemRead(descriptor, $0.baseAddress!, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return .failure(ReadFailure(message: "reading the file failed: \(String(cString: strerror(errno)))"))
            }
            if count == 0 { break }
            // The file may grow while it is read: the limit holds for what is read.
            guard bytes.count + count <= maximumBytes else {
                return .failure(ReadFailure(message: "too large", isTooLarge: true))
            }
            bytes.append(contentsOf: buffer[..<count])
        }
        return .success(bytes)
    }

    private static func systemRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
        #if canImport(Glibc)
            Glibc.read(descriptor, buffer, count)
        #else
            Darwin.read(descriptor, buffer, count)
        #endif
    }

    private static func kind(of mode: mode_t) -> String {
        fileKind(of: mode) ?? "not a regular file but something"
    }
}

/// What `stat` says of a bundle directory's entries: enough to tell that a file may have
/// changed without reading it. Watching compares probes and reads the files only when the
/// probe changed.
public struct BundleProbe: Sendable, Hashable {
    struct EntryStatus: Sendable, Hashable {
        let name: String
        let device: UInt64
        let inode: UInt64
        let mode: UInt32
        let size: Int64
        let modified: Int64
        let changed: Int64
        /// The `errno` of a failed `stat` (a dangling link), else 0.
        let failure: Int32
    }

    private let entries: [EntryStatus]

    /// The probe of `directory`; nil when it cannot be listed.
    public static func take(directory: String) -> BundleProbe? {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return nil }
        var entries: [EntryStatus] = []
        // The signature file too: signing a bundle again is a change to read.
        let signature = names.contains(BundleFiles.signatureName) ? [BundleFiles.signatureName] : []
        for name in BundleFiles.entryNames(among: names) + signature {
            var status = stat()
            let path = (directory as NSString).appendingPathComponent(name)
            guard stat(path, &status) == 0 else {
                entries.append(
                    EntryStatus(
                        name: name, device: 0, inode: 0, mode: 0, size: 0, modified: 0, changed: 0, failure: errno))
                continue
            }
            entries.append(
                EntryStatus(
                    name: name, device: UInt64(status.st_dev), inode: UInt64(status.st_ino),
                    mode: UInt32(status.st_mode),
                    size: Int64(status.st_size),
                    modified: Int64(status.st_mtim.tv_sec) * 1_000_000_000 + Int64(status.st_mtim.tv_nsec),
                    changed: Int64(status.st_ctim.tv_sec) * 1_000_000_000 + Int64(status.st_ctim.tv_nsec), failure: 0))
        }
        return BundleProbe(entries: entries)
    }
}

/// What a file of mode `mode` is, in words ("a directory", "a FIFO", …); nil for a type with
/// no name here. Shared by every layer that refuses a file for its type.
package func fileKind<Mode: BinaryInteger>(of mode: Mode) -> String? {
    switch mode_t(truncatingIfNeeded: mode) & S_IFMT {
    case S_IFREG: "a regular file"
    case S_IFDIR: "a directory"
    case S_IFLNK: "a symbolic link"
    case S_IFIFO: "a FIFO"
    case S_IFCHR: "a character device"
    case S_IFBLK: "a block device"
    case S_IFSOCK: "a socket"
    default: nil
    }
}
