import CustodyPolicy
import Foundation
import GRDB

/// Custody's state in one SQLite database: account keys, sealed secrets, check-ins, bundle
/// history and the audit log.
///
/// On disk the database runs in WAL mode (a `DatabasePool`: readers never wait for the
/// writer); tests use an in-memory database. Deleted rows are overwritten (`secure_delete`),
/// and wiping keys also checkpoints and truncates the WAL, so a wiped key leaves no copy in the
/// file. Thread-safe: share one instance; several processes may open the same file.
public final class CustodyDatabase: StateStore {
    /// The database file; nil when in memory.
    public let path: String?
    /// Opened by `init(readingOnly:)`: every write fails.
    public let isReadOnly: Bool
    private let connections: Connections
    /// Leases taken on a database in memory (see `lease(_:)`).
    let memoryLeases = MemoryLeases()
    /// The ids of audit details (reasons, contexts) this instance has committed (`AuditInsert`).
    let auditDetailIDs = AuditDetailIDs()

    /// The file name inside a state directory.
    public static let fileName = "state.sqlite"

    /// Opens (creating when missing, with its directory, mode 0700) and migrates the database
    /// at `path`.
    /// - Parameter deferringWrites: open an existing, up-to-date database read-only, and for
    ///   writing (a `DatabasePool`) only on the first write: a command refused before it
    ///   writes leaves the file byte for byte as it was (opening a pool writes to it). For
    ///   short-lived commands; a long-running service opens for writing at once.
    /// - Throws: `.open` when the file cannot be opened or created; `.migration` when it was
    ///   written by a newer Custody or a migration fails.
    public init(path: String, deferringWrites: Bool = false) throws(StoreError) {
        self.path = path
        isReadOnly = false
        if deferringWrites, FileManager.default.fileExists(atPath: path),
            let reader = try? Self.openReadOnly(path, immutableFallback: false),
            try Self.checkMigrations(of: reader, path: path)
        {
            connections = Connections(reader: reader) { () throws(StoreError) in try Self.openPool(path) }
            return
        }
        let pool = try Self.openPool(path)
        try Self.migrate(pool, path: path)
        connections = Connections(pool)
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
        let reader = try Self.openReadOnly(path, immutableFallback: true)
        guard try Self.checkMigrations(of: reader, path: path) else {
            throw StoreError(
                .migration,
                "the database was written by an older Custody and must be brought up to date by a command that writes to it (custody apply, say) first",
                path: path)
        }
        connections = Connections(reader)
    }

    /// A fresh database in memory: for tests and throwaway state.
    public init() throws(StoreError) {
        path = nil
        isReadOnly = false
        let queue: DatabaseQueue
        do {
            queue = try DatabaseQueue(configuration: Self.configuration())
        } catch {
            throw StoreError(.open, "cannot open an in-memory database: \(Self.describe(error))")
        }
        try Self.migrate(queue, path: nil)
        connections = Connections(queue)
    }

    /// A pool on `path` (created when missing, mode 0600, in a directory created 0700).
    private static func openPool(_ path: String) throws(StoreError) -> DatabasePool {
        let directory = PathName.directory(of: path)
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
            return try DatabasePool(path: path, configuration: Self.configuration())
        } catch {
            throw StoreError(.open, "cannot open the database: \(Self.describe(error))", path: path)
        }
    }

    /// A read-only connection to the existing database at `path`.
    /// - Parameter immutableFallback: on read-only storage (or a directory this user cannot
    ///   write) SQLite cannot make the -shm file a WAL database needs; with no -wal file
    ///   holding commits the database file alone is the whole state, so it is then read as
    ///   immutable.
    private static func openReadOnly(_ path: String, immutableFallback: Bool) throws(StoreError) -> DatabaseQueue {
        var configuration = Self.configuration()
        configuration.readonly = true
        do {
            return try DatabaseQueue(path: path, configuration: configuration)
        } catch {
            let log = (try? FileManager.default.attributesOfItem(atPath: path + "-wal"))?[.size] as? Int ?? 0
            guard immutableFallback, log == 0,
                let fallback = try? DatabaseQueue(path: Self.immutableURI(path), configuration: configuration)
            else {
                throw StoreError(.open, "cannot open the database for reading: \(Self.describe(error))", path: path)
            }
            return fallback
        }
    }

    /// Whether every migration this Custody knows was applied; an error when the database
    /// carries migrations it does not know (a newer Custody wrote it).
    private static func checkMigrations(of reader: any DatabaseReader, path: String?) throws(StoreError) -> Bool {
        let applied: Set<String>
        do {
            applied = try reader.read { db in try Self.migrator.appliedIdentifiers(db) }
        } catch {
            throw StoreError(.migration, "cannot read the database's migrations: \(Self.describe(error))", path: path)
        }
        let unknown = applied.filter { !Self.migrator.migrations.contains($0) }
        guard unknown.isEmpty else {
            throw StoreError(
                .migration,
                "the database was written by a newer Custody (migrations \(unknown.sorted().joined(separator: ", "))); upgrade to open it",
                path: path)
        }
        return Set(Self.migrator.migrations).isSubset(of: applied)
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

    /// Where the database of a `--state` argument lives: `PATH` itself, or `PATH/state.sqlite`
    /// when `PATH` is a directory (or ends with `/`).
    public static func path(forState state: String) -> String {
        var isDirectory: ObjCBool = false
        if state.hasSuffix("/")
            || (FileManager.default.fileExists(atPath: state, isDirectory: &isDirectory) && isDirectory.boolValue)
        {
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

    private static func migrate(_ writer: any DatabaseWriter, path: String?) throws(StoreError) {
        do {
            try Self.migrator.migrate(writer)
        } catch {
            throw StoreError(.migration, "cannot bring the database up to date: \(Self.describe(error))", path: path)
        }
        _ = try checkMigrations(of: writer, path: path)
    }

    // MARK: Access

    /// Runs `body` in a write transaction, on GRDB's writer queue: the caller is suspended,
    /// never blocked, while it waits for the lock or the disk.
    func write<T: Sendable>(_ what: String, _ body: @escaping @Sendable (Database) throws -> T)
        async throws(StoreError) -> T
    {
        let writer = try connections.writer()
        return try await mapErrors(what) { try await writer.write(body) }
    }

    /// Runs `body` on a consistent snapshot, on one of GRDB's reader queues.
    func read<T: Sendable>(_ what: String, _ body: @escaping @Sendable (Database) throws -> T)
        async throws(StoreError) -> T
    {
        let reader = connections.reader
        return try await mapErrors(what) { try await reader.read(body) }
    }

    /// `body`'s result; its GRDB errors as `StoreError`s that say what failed.
    private func mapErrors<T>(_ what: String, _ body: () async throws -> T) async throws(StoreError) -> T {
        do {
            return try await body()
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError(Self.code(of: error), "\(what) failed: \(Self.describe(error))", path: path)
        }
    }

    /// Copies every committed page into the database file and empties the WAL, so rows just
    /// deleted (and overwritten, `secure_delete`) leave no older copy in the WAL.
    func truncateLog() async throws(StoreError) {
        // No writer opened yet: nothing was written through this instance.
        guard let pool = connections.openedWriter as? DatabasePool else { return }
        do {
            try await pool.barrierWriteWithoutTransaction { db in
                _ = try db.checkpoint(.truncate)
            }
        } catch {
            throw StoreError(.database, "truncating the write-ahead log failed: \(Self.describe(error))", path: path)
        }
    }

    private static func code(of error: any Error) -> StoreError.Code {
        // A row that does not decode as its record (a column null or of another type), or that
        // names what the store does not know, is a damaged state.
        if error is RowDecodingError || error is RecordError { return .corrupt }
        guard let error = error as? DatabaseError else { return .database }
        switch error.resultCode {
        case .SQLITE_CONSTRAINT: return .conflict
        case .SQLITE_CORRUPT, .SQLITE_NOTADB: return .corrupt
        default: return .database
        }
    }

    static func describe(_ error: any Error) -> String {
        if error is CancellationError { return "the task waiting for it was cancelled before it began" }
        if let error = error as? DatabaseError {
            if error.resultCode == .SQLITE_READONLY {
                return "the state is open read-only (the command only reads it, or its file cannot be written)"
            }
            return error.message ?? "\(error.resultCode)"
        }
        return "\(error)"
    }
}

/// The connections a `CustodyDatabase` works through: the one it reads with, and the one it
/// writes with, opened on the first write when the database was opened deferring writes.
private final class Connections: Sendable {
    private struct State: @unchecked Sendable {
        // @unchecked: GRDB's readers and writers are Sendable; the closure is only called
        // under the lock.
        var reader: any DatabaseReader
        var writer: (any DatabaseWriter)?
        let open: (() throws(StoreError) -> any DatabaseWriter)?
    }

    private let state: Locked<State>

    /// One connection for both: a pool, an in-memory queue, or a read-only queue (whose
    /// writes fail as SQLite refuses them).
    init(_ writer: any DatabaseWriter) {
        state = Locked(State(reader: writer, writer: writer, open: nil))
    }

    /// Reads through `reader` until the first write opens the writer with `open`.
    init(reader: DatabaseQueue, open: @escaping () throws(StoreError) -> any DatabaseWriter) {
        state = Locked(State(reader: reader, writer: nil, open: open))
    }

    /// The connection to read with: the writer once opened (it sees its own writes).
    var reader: any DatabaseReader {
        state.withLock { $0.writer ?? $0.reader }
    }

    /// The writer, if one is open.
    var openedWriter: (any DatabaseWriter)? {
        state.withLock { $0.writer }
    }

    /// The writer, opened now if it was deferred.
    func writer() throws(StoreError) -> any DatabaseWriter {
        let result: Result<any DatabaseWriter, StoreError> = state.withLock { state in
            if let writer = state.writer { return .success(writer) }
            do throws(StoreError) {
                let writer = try state.open!()
                state.writer = writer
                state.reader = writer
                return .success(writer)
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }
}
