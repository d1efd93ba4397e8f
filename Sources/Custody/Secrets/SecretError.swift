/// Why a secret could not be stored or given out. Messages name the secret's identifier and
/// never its value.
public struct SecretError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable, CaseIterable {
        /// No secret with this identifier, for the account or app-wide.
        case notFound = "not-found"
        /// The certificate's validity ended.
        case expired
        /// The certificate's validity has not begun.
        case notYetValid = "not-yet-valid"
        /// The sealed secret cannot be opened: its account was wiped, it was tampered with, or
        /// it is sealed for another owner.
        case unreadable
        /// The identifier holds a secret of another kind.
        case wrongKind = "wrong-kind"
        /// What was given to store is not a valid secret (not a certificate, a key that does not
        /// match its certificate, a bad identifier).
        case invalid
        /// The state database failed.
        case storage
    }

    public let code: Code
    public let identifier: String
    public let message: String

    public init(_ code: Code, identifier: String, _ message: String) {
        self.code = code
        self.identifier = identifier
        self.message = message
    }

    public var description: String { "secret '\(identifier)': \(message)" }
}
