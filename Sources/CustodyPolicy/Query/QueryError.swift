/// Why a query could not be read, and where in its text.
public struct QueryError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong, and what would be right.
    public var message: String
    /// The 1-based column in the query's text where the problem is.
    public var column: Int

    /// Byte offset of the problem in the text the query was read from, when known.
    package var offset: Int?
    /// Whether the query names an account by forms that name different accounts: the query
    /// can be read, but not decided (the service answers 422 `ambiguous-account`).
    public var isAmbiguousAccount = false
    /// Whether the query could not be decided because what it needs from the installation's
    /// state (its recorded launch facts and check-in) could not be read: not the query's fault,
    /// and never decided without it (the service answers 503 `state`).
    public var isStateFailure = false

    /// The code an error line carries, as the service's single-query answer has it.
    public var code: String {
        isStateFailure ? "state" : isAmbiguousAccount ? "ambiguous-account" : "invalid-query"
    }

    /// Creates an error.
    public init(message: String, column: Int) {
        self.message = message
        self.column = column
    }

    package init(message: String, column: Int, offset: Int) {
        self.init(message: message, column: column)
        self.offset = offset
    }

    /// `column N: message`; the message alone for a state failure, which no column of the
    /// query caused.
    public var description: String { isStateFailure ? message : "column \(column): \(message)" }
}
