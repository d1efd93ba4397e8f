/// Why protecting or unprotecting data failed.
///
/// Messages say what to do and name files and accounts, never key material or data.
public struct ProtectionError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, machine-readable kind of failure.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// Encryption was asked for an account the policy does not know.
        public static let notManaged = Code(rawValue: "not-managed")
        /// A caller passed something unusable (an empty owner, a directory where a file belongs).
        public static let invalidArguments = Code(rawValue: "invalid-arguments")
        /// Sealing failed (the key store could not create a key, a chunk counter overflowed).
        public static let encryptFailed = Code(rawValue: "encrypt-failed")
        /// The data did not authenticate: it was changed, truncated or reordered, or the key is
        /// not the one it was sealed with. No plaintext is returned.
        public static let decryptFailed = Code(rawValue: "decrypt-failed")
        /// The owner's key (that version) is not in the key store: wiped, never created here, or
        /// named by a header that was altered (the owner or version of no key there is).
        public static let keyUnavailable = Code(rawValue: "key-unavailable")
        /// There is nothing to protect.
        public static let emptyData = Code(rawValue: "empty-data")
        /// The envelope uses a format version this build does not read.
        public static let unsupportedVersion = Code(rawValue: "unsupported-version")
        /// The bytes start like an envelope but the header is damaged.
        public static let malformedEnvelope = Code(rawValue: "malformed-envelope")
        /// The master key is missing, unreadable, too widely readable, or not the one the state
        /// was created with.
        public static let masterKey = Code(rawValue: "master-key")
        /// Reading or writing a file failed.
        public static let io = Code(rawValue: "io")
        /// A key store already has the key version being added (another process added it first).
        public static let keyVersionExists = Code(rawValue: "key-version-exists")
        /// The key store cannot be reached now (a shared state out of reach), so no key can be
        /// read, nor a cached one trusted: nothing was opened or sealed; the same call may
        /// succeed later.
        public static let keyStoreUnavailable = Code(rawValue: "key-store-unavailable")

        /// Every code above (the decision service answers each as a code of its own).
        public static let all: [Code] = [
            notManaged, invalidArguments, encryptFailed, decryptFailed, keyUnavailable, emptyData, unsupportedVersion,
            malformedEnvelope,
            masterKey, io, keyVersionExists, keyStoreUnavailable,
        ]
    }

    public let code: Code
    /// What went wrong, for a person.
    public let message: String
    /// The file concerned, when there is one.
    public let path: String?

    /// A `decryptFailed` raised by the header's key check (the key version named is not the
    /// key the envelope was sealed with, or the header was changed), before any chunk was
    /// read: what tells a key that is gone from data that was damaged.
    package var isKeyMismatch = false

    public init(_ code: Code, _ message: String, path: String? = nil) {
        self.code = code
        self.message = message
        self.path = path
    }

    /// `path: message` or the message alone.
    public var description: String {
        path.map { "\($0): \(message)" } ?? message
    }

    /// The same error naming `path`.
    func at(_ path: String) -> ProtectionError {
        var error = ProtectionError(code, message, path: self.path ?? path)
        error.isKeyMismatch = isKeyMismatch
        return error
    }
}
