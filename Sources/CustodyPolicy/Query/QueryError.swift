/// Why a query could not be read, and where in its text.
public struct QueryError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong, and what would be right.
    public var message: String
    /// The 1-based column in the query's text where the problem is.
    public var column: Int

    /// Byte offset of the problem in the text the query was read from, when known.
    package var offset: Int?

    /// Creates an error.
    public init(message: String, column: Int) {
        self.message = message
        self.column = column
    }

    package init(message: String, column: Int, offset: Int) {
        self.init(message: message, column: column)
        self.offset = offset
    }

    /// `column N: message`.
    public var description: String { "column \(column): \(message)" }
}
