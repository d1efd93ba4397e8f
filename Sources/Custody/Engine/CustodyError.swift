public import CustodyPolicy
import CustodyProtection
import CustodyStore

/// Why the engine could not do what was asked: a stable code, a message a person can act on,
/// and, for bundles, every located problem.
///
/// Messages name the account, file, bundle or state concerned; they never hold key material,
/// secret values or plaintext.
public struct CustodyError: Error, Sendable, CustomStringConvertible {
    /// A stable, machine-readable kind of failure.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// No bundle is in force and none was given for the call.
        public static let noPolicy = Code(rawValue: "no-policy")
        /// A bundle does not load, or was refused; `diagnostics` says where.
        public static let bundle = Code(rawValue: "bundle")
        /// The bundle holds policies for several platforms and no platform was named.
        public static let platform = Code(rawValue: "platform")
        /// The state database cannot be opened, read or written.
        public static let state = Code(rawValue: "state")
        /// No master key was configured, or it is not the one the state's keys are wrapped with.
        public static let masterKey = Code(rawValue: "master-key")
        /// An account the installation does not know, or whose forms name different accounts.
        public static let account = Code(rawValue: "account")
        /// Protecting or unprotecting failed (a damaged or tampered envelope, a wiped key, I/O).
        public static let protection = Code(rawValue: "protection")
        /// The request contradicts the policy in force (such as tagging data of an account
        /// whose policy requires encryption).
        public static let refused = Code(rawValue: "refused")
        /// A wipe could not be done.
        public static let wipe = Code(rawValue: "wipe")
        /// A change was sent to the state, which did not confirm whether it committed it: it
        /// may be in force. Not a refusal: read the state to know.
        public static let outcomeUnknown = Code(rawValue: "outcome-unknown")
        /// A bundle refused by the state's rules: its signature does not make it trusted, it
        /// replays an older sequence, or the policy in force is frozen; `diagnostics` says which
        /// (`untrusted`, `replayed`, `frozen`).
        public static let untrusted = Code(rawValue: "untrusted")
        /// What was named is not there (a kept revision, a trusted key).
        public static let notFound = Code(rawValue: "not-found")
        /// An argument the operation cannot take (a malformed key, an empty reason).
        public static let invalidArgument = Code(rawValue: "invalid-argument")
        /// The caller cancelled a long operation (a replay) before it finished.
        public static let cancelled = Code(rawValue: "cancelled")
    }

    public let code: Code
    /// What went wrong and, where it helps, what to do.
    public let message: String
    /// A bundle's located problems (`file:line:column`), when the code is `.bundle`.
    public let diagnostics: [Diagnostic]
    /// The error that caused this one, if any.
    public let underlying: (any Error & Sendable)?

    public init(
        _ code: Code, _ message: String, diagnostics: [Diagnostic] = [], underlying: (any Error & Sendable)? = nil
    ) {
        self.code = code
        self.message = message
        self.diagnostics = diagnostics
        self.underlying = underlying
    }

    /// The message, then each diagnostic on its own line.
    public var description: String {
        ([message] + diagnostics.map(\.description)).joined(separator: "\n")
    }
}

/// The one boundary where the engine turns what a lower layer threw into a `CustodyError`.
///
/// Every operation of the engine throws `CustodyError` and nothing else. What the layers below
/// throw maps here, by type: a `CustodyError` stays as it is; the state's `StoreError` is
/// `.state`; a `ProtectionError` is `.protection`, or `.state` when the key store could not be
/// reached (nothing was opened or sealed, and the same call may succeed once the state answers
/// again); an `AccountError` is `.account`, or `.state` when the state could not be asked. An
/// error of any other type takes the code the call names for it. A call site that knows more
/// than the type does (the file it was reading, the revision it was loading) says so itself;
/// every other one goes through `mapping(otherwise:_:)`.
extension CustodyError {
    /// `error` as a `CustodyError` (see the extension's documentation); `code` for an error of
    /// a type the engine does not map.
    init(lower error: any Error, otherwise code: Code) {
        switch error {
        case let error as CustodyError: self = error
        case let error as StoreError: self.init(state: error)
        case let error as ProtectionError: self.init(protection: error)
        case let error as AccountError:
            self.init(error.code == .storage ? .state : .account, error.message, underlying: error)
        default: self.init(code, "\(error)", underlying: error)
        }
    }

    /// Runs `body`: what it throws becomes a `CustodyError` (`init(lower:otherwise:)`).
    static func mapping<Result>(otherwise code: Code, _ body: () throws -> Result) throws(CustodyError) -> Result {
        do {
            return try body()
        } catch {
            throw CustodyError(lower: error, otherwise: code)
        }
    }

    /// Runs `body`: what it throws becomes a `CustodyError` (`init(lower:otherwise:)`).
    static func mapping<Result>(otherwise code: Code, _ body: () async throws -> Result) async throws(CustodyError)
        -> Result
    {
        do {
            return try await body()
        } catch {
            throw CustodyError(lower: error, otherwise: code)
        }
    }

    /// Runs `body`, which only reads or writes the state: `mapping(otherwise: .state)`.
    static func fromState<Result>(_ body: () throws -> Result) throws(CustodyError) -> Result {
        try mapping(otherwise: .state, body)
    }

    /// `fromState` for a body that awaits.
    static func fromState<Result>(_ body: () async throws -> Result) async throws(CustodyError) -> Result {
        try await mapping(otherwise: .state, body)
    }

    /// A failure of the state (unreachable, busy, corrupt): `.state`, carrying it.
    init(state error: any Error) {
        self.init(.state, "\(error)", underlying: error)
    }

    /// A failure to protect or unprotect data: `.protection`, or `.state` when the key store
    /// could not be reached.
    init(protection error: any Error) {
        let unreachable = (error as? ProtectionError)?.code == .keyStoreUnavailable
        self.init(unreachable ? .state : .protection, "\(error)", underlying: error)
    }
}
