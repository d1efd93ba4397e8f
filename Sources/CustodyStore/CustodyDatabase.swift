import GRDB
import Foundation

/// Custody's state in one SQLite database: account keys, sealed secrets, check-ins, bundle
/// history and the audit log.
///
/// On disk the database runs in WAL mode (a `DatabasePool`: readers never wait for the
/// writer); tests use an in-memory database. Deleted rows are overwritten (`secure_delete`),
/// and wiping keys also checkpoints and truncates the WAL, so a wiped key leaves no copy in the
/// file. Thread-safe: share one instance; several processes may open the same file.
public final class CustodyDatabase: Sendable {
    /// The database file; nil when in memory.
    public let path: String?
    /// Opened by `init(readingOnly:)`: every write fails.
    public let isReadOnly: Bool
    let writer: any DatabaseWriter

    /// The file name inside a state directory.
    public static let fileName = "state.sqlite"

    /// Opens (creating when missing, with its directory, mode 0700) and migrates the database
    /// at `path`.
    /// - Throws: `.open` when the file cannot be opened or created; `.migration` when it was
    ///   written by a newer Custody or a migration fails.
    public init(path: String) throws(StoreError) {
        self.path = path
        isReadOnly = false
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty, !FileManager.default.fileExists(atPath: directory) {
            do {
                try FileManager.default.createDirectory(
                    atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                throw StoreError(.open, "cannot create the state directory: \(error.localizedDescription)", path: path)
            }
        }
        // A new database file is created here, mode 0600 (SQLite would make it 0644 less the
        // umask); its -wal and -shm files take the same mode from it.
        let created = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        if created >= 0 {
            _ = fchmod(created, 0o600)
            close(created)
        }
        do {
            writer = try DatabasePool(path: path, configuration: Self.configuration())
        } catch {
            throw StoreError(.open, "cannot open the database: \(Self.describe(error))", path: path)
        }
        try migrate()
    }

    /// Opens the existing database at `path` for reading only: nothing is created, migrated or
    /// written, so a command that only reads leaves the file exactly as it was, and a state
    /// on a read-only file system or owned by another user still serves it. A write through
    /// this instance fails with an error that says the state is open read-only.
    /// - Throws: `.open` when there is no database at `path` or it cannot be opened;
    ///   `.migration` when it needs migrating (by a command that writes) or was written by a
    ///   newer Custody.
    public init(readingOnly path: String) throws(StoreError) {
        self.path = path
        isReadOnly = true
        guard FileManager.default.fileExists(atPath: path) else {
            throw StoreError(.open, "there is no state here (nothing has ever been stored in it)", path: path)
        }
        var configuration = Self.configuration()
        configuration.readonly = true
        do {
            writer = try DatabaseQueue(path: path, configuration: configuration)
        } catch {
            // On read-only storage (or a directory this user cannot write) SQLite cannot make
            // the -shm file a WAL database needs. With no -wal file holding commits, the
            // database file alone is the whole state, so it is read as immutable.
            let log = (try? FileManager.default.attributesOfItem(atPath: path + "-wal"))?[.size] as? Int ?? 0
            guard log == 0, let fallback = try? DatabaseQueue(path: Self.immutableURI(path), configuration: configuration) else {
                throw StoreError(.open, "cannot open the database for reading: \(Self.describe(error))", path: path)
            }
            writer = fallback
        }
        let applied: Set<String>
        do {
            applied = try writer.read { db in try Self.migrator.appliedIdentifiers(db) }
        } catch {
            throw StoreError(.migration, "cannot read the database's migrations: \(Self.describe(error))", path: path)
        }
        let unknown = applied.filter { !Self.migrator.migrations.contains($0) }
        guard unknown.isEmpty else {
            throw StoreError(
                .migration, "the database was written by a newer Custody (migrations \(unknown.sorted().joined(separator: ", "))); upgrade to open it",
                path: path)
        }
        guard Set(Self.migrator.migrations).isSubset(of: applied) else {
            throw StoreError(
                .migration, "the database was written by an older Custody and must be brought up to date by a command that writes to it (custody apply, say) first",
                path: path)
        }
    }

    /// `file:` URI of `path`, read-only and immutable (Debian's SQLite takes URIs as paths).
    private static func immutableURI(_ path: String) -> String {
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        var encoded = ""
        for byte in absolute.utf8 {
            switch byte {
            case UInt8(ascii: "?"), UInt8(ascii: "#"), UInt8(ascii: "%"), 0..<0x21, 0x7F...0xFF:
                encoded += "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
            default:
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            }
        }
        return "file:" + encoded + "?mode=ro&immutable=1"
    }

    /// A fresh database in memory: for tests and throwaway state.
    public init() throws(StoreError) {
        path = nil
        isReadOnly = false
        do {
            writer = try DatabaseQueue(configuration: Self.configuration())
        } catch {
            throw StoreError(.open, "cannot open an in-memory database: \(Self.describe(error))")
        }
        try migrate()
    }

    /// Where the database of a `--state` argument lives: `PATH` itself, or `PATH/state.sqlite`
    /// when `PATH` is a directory (or ends with `/`).
    public static func path(forState state: String) -> String {
        var isDirectory: ObjCBool = false
        if state.hasSuffix("/") || (FileManager.default.fileExists(atPath: state, isDirectory: &isDirectory) && isDirectory.boolValue) {
            return (state as NSString).appendingPathComponent(fileName)
        }
        return state
    }

    private static func configuration() -> Configuration {
        var configuration = Configuration()
        configuration.foreignKeysEnabled = true
        // Another process writing: wait rather than fail at once.
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA secure_delete = ON")
        }
        return configuration
    }

    private func migrate() throws(StoreError) {
        do {
            try Self.migrator.migrate(writer)
        } catch {
            throw StoreError(.migration, "cannot bring the database up to date: \(Self.describe(error))", path: path)
        }
        let unknown: [String]
        do {
            unknown = try writer.read { db in try Self.migrator.appliedIdentifiers(db) }.filter { !Self.migrator.migrations.contains($0) }
        } catch {
            throw StoreError(.migration, "cannot read the database's migrations: \(Self.describe(error))", path: path)
        }
        guard unknown.isEmpty else {
            throw StoreError(
                .migration, "the database was written by a newer Custody (migrations \(unknown.joined(separator: ", "))); upgrade to open it",
                path: path)
        }
    }

    // MARK: Access

    /// Runs `body` in a write transaction.
    func write<T>(_ what: String, _ body: (Database) throws -> T) throws(StoreError) -> T {
        try mapErrors(what) { try writer.write(body) }
    }

    /// Runs `body` on a consistent snapshot.
    func read<T>(_ what: String, _ body: (Database) throws -> T) throws(StoreError) -> T {
        try mapErrors(what) { try writer.read(body) }
    }

    /// `body`'s result; its GRDB errors as `StoreError`s that say what failed.
    private func mapErrors<T>(_ what: String, _ body: () throws -> T) throws(StoreError) -> T {
        do {
            return try body()
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError(Self.code(of: error), "\(what) failed: \(Self.describe(error))", path: path)
        }
    }

    /// Copies every committed page into the database file and empties the WAL, so rows just
    /// deleted (and overwritten, `secure_delete`) leave no older copy in the WAL.
    func truncateLog() throws(StoreError) {
        guard let pool = writer as? DatabasePool else { return }
        do {
            try pool.barrierWriteWithoutTransaction { db in
                _ = try db.checkpoint(.truncate)
            }
        } catch {
            throw StoreError(.database, "truncating the write-ahead log failed: \(Self.describe(error))", path: path)
        }
    }

    private static func code(of error: any Error) -> StoreError.Code {
        guard let error = error as? DatabaseError else { return .database }
        switch error.resultCode {
        case .SQLITE_CONSTRAINT: return .conflict
        case .SQLITE_CORRUPT, .SQLITE_NOTADB: return .corrupt
        default: return .database
        }
    }

    static func describe(_ error: any Error) -> String {
        if let error = error as? DatabaseError {
            if error.resultCode == .SQLITE_READONLY {
                return "the state is open read-only (the command only reads it, or its file cannot be written)"
            }
            return error.message ?? "\(error.resultCode)"
        }
        return "\(error)"
    }
}
