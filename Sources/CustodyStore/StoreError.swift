/// Why reading or writing Custody's state failed.
///
/// Messages name the database file and what was being done; they never hold key material,
/// secret values or plaintext.
public struct StoreError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, machine-readable kind of failure.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The database could not be opened or created (permissions, a directory in the way).
        public static let open = Code(rawValue: "open")
        /// The database was written by a newer Custody, or a migration failed.
        public static let migration = Code(rawValue: "migration")
        /// A read or write failed (disk full, I/O error, database locked for too long).
        public static let database = Code(rawValue: "database")
        /// The database holds something this code cannot read (a damaged row).
        public static let corrupt = Code(rawValue: "corrupt")
        /// What was asked for is not there.
        public static let notFound = Code(rawValue: "not-found")
        /// The write conflicts with what is stored (a key version that already exists).
        public static let conflict = Code(rawValue: "conflict")
        /// The state cannot be reached now (a shared PostgreSQL state whose server refuses
        /// connections or does not answer in time): nothing was read or written, and the
        /// same call may succeed later.
        public static let unavailable = Code(rawValue: "unavailable")
        /// A write whose commit was sent but never confirmed (the connection was lost, or the
        /// answer did not come in time): it may have been committed or not. Read the state
        /// back to know; never take it as a refusal.
        public static let outcomeUnknown = Code(rawValue: "outcome-unknown")
        /// A bundle the state's rules refuse, checked in the transaction that would have
        /// recorded it (so two writers cannot both pass): the policy in force is frozen, its
        /// sequence is not above the highest applied (a replay), or its signers are not keys
        /// the state trusts. The message names which.
        public static let refused = Code(rawValue: "refused")
    }

    public let code: Code
    /// What went wrong, for a person.
    public let message: String
    /// The database file; nil for an in-memory database.
    public let path: String?

    public init(_ code: Code, _ message: String, path: String? = nil) {
        self.code = code
        self.message = message
        self.path = path
    }

    /// `path: message`, or the message alone.
    public var description: String {
        path.map { "\($0): \(message)" } ?? message
    }
}
