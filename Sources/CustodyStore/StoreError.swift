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

/// Numbers kept as text in the state's settings (the highest bundle sequence, retentions,
/// counters).
package enum StoredNumber {
    /// The number `text` holds; `absent` when there is no text. Text that is no whole number is
    /// a damaged state, never taken for `absent`: the highest sequence read as 0 would let a
    /// replayed bundle in.
    package static func integer(
        _ text: String?, setting name: String, absent: Int64 = 0, minimum: Int64 = .min, path: String?
    ) throws(StoreError) -> Int64 {
        guard let text else { return absent }
        guard let value = Int64(text), value >= minimum else {
            throw StoreError(
                .corrupt,
                "the setting \(name) holds \"\(text.prefix(40))\", which is no whole number of at least \(minimum)",
                path: path)
        }
        return value
    }
}

/// Switches kept as text in the state's settings (`on` or `off`).
package enum StoredSwitch {
    /// Whether `text` says on; `absent` when there is no text. Any other text is a damaged
    /// state: decision auditing read as off from a damaged setting would drop audit entries.
    package static func isOn(_ text: String?, setting name: String, absent: Bool, path: String?) throws(StoreError)
        -> Bool
    {
        switch text {
        case nil: return absent
        case "on": return true
        case "off": return false
        case let text?:
            throw StoreError(
                .corrupt, "the setting \(name) holds \"\(text.prefix(40))\", which is neither on nor off", path: path)
        }
    }
}
