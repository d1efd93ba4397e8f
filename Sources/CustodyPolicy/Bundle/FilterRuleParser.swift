/// Reads the rule syntax of Intune's assignment filters ("Advanced rule editing"):
/// `([entity].[property] [operator] [value])` comparisons joined by `and` / `or` (with or
/// without a leading `-`), parentheses nested to any depth, string values in double quotes,
/// version values bare (`14.2.1`), lists as `["a", "b"]`, and `Null` / `$Null`. Properties,
/// operators and values are case-insensitive. `and` binds tighter than `or`.
struct FilterRuleParser {
    /// Why a rule cannot be read, and where (a character offset into the rule).
    struct Failure: Error, Sendable, Hashable, CustomStringConvertible {
        let message: String
        let offset: Int
        var description: String { "\(message) at character \(offset + 1)" }
    }

    private enum Token: Equatable {
        case open, close, openList, closeList, comma
        case word(String)
        case text(String)
    }

    private var tokens: [(token: Token, offset: Int)] = []
    private var position = 0
    private let length: Int
    /// Nesting is bounded so a hostile rule cannot exhaust the stack.
    private static let maximumDepth = 64
    private var depth = 0

    /// Parses `rule`.
    /// - Throws: `Failure` naming the first thing that is not rule syntax.
    static func parse(_ rule: String) throws(Failure) -> FilterRule {
        var parser = try FilterRuleParser(rule)
        guard !parser.tokens.isEmpty else { throw Failure(message: "the rule is empty", offset: 0) }
        let parsed = try parser.disjunction()
        if parser.position < parser.tokens.count {
            throw Failure(
                message: "unexpected \(parser.describe(parser.tokens[parser.position].token))",
                offset: parser.tokens[parser.position].offset)
        }
        return parsed
    }

    private init(_ rule: String) throws(Failure) {
        let characters = Array(rule)
        length = characters.count
        var index = 0
        while index < characters.count {
            let character = characters[index]
            switch character {
            case " ", "\t", "\n", "\r": index += 1
            case "(": tokens.append((.open, index)); index += 1
            case ")": tokens.append((.close, index)); index += 1
            case "[": tokens.append((.openList, index)); index += 1
            case "]": tokens.append((.closeList, index)); index += 1
            case ",": tokens.append((.comma, index)); index += 1
            case "\"", "\u{201C}", "\u{201D}":
                let start = index
                index += 1
                var text = ""
                while index < characters.count, !"\"\u{201C}\u{201D}".contains(characters[index]) {
                    text.append(characters[index])
                    index += 1
                }
                guard index < characters.count else { throw Failure(message: "a string is not closed", offset: start) }
                index += 1
                tokens.append((.text(text), start))
            default:
                let start = index
                var word = ""
                while index < characters.count, !" \t\n\r()[],\"".contains(characters[index]) {
                    word.append(characters[index])
                    index += 1
                }
                tokens.append((.word(word), start))
            }
        }
    }

    private var offset: Int { position < tokens.count ? tokens[position].offset : length }

    private func describe(_ token: Token) -> String {
        switch token {
        case .open: "'('"
        case .close: "')'"
        case .openList: "'['"
        case .closeList: "']'"
        case .comma: "','"
        case .word(let word): "'\(word)'"
        case .text(let text): "\"\(text)\""
        }
    }

    private func isKeyword(_ keyword: String) -> Bool {
        guard position < tokens.count, case .word(let word) = tokens[position].token else { return false }
        let lowered = word.lowercased()
        return lowered == keyword || lowered == "-" + keyword
    }

    private mutating func disjunction() throws(Failure) -> FilterRule {
        var parts = [try conjunction()]
        while isKeyword("or") {
            position += 1
            parts.append(try conjunction())
        }
        return parts.count == 1 ? parts[0] : .or(parts)
    }

    private mutating func conjunction() throws(Failure) -> FilterRule {
        var parts = [try primary()]
        while isKeyword("and") {
            position += 1
            parts.append(try primary())
        }
        return parts.count == 1 ? parts[0] : .and(parts)
    }

    private mutating func primary() throws(Failure) -> FilterRule {
        guard position < tokens.count else {
            throw Failure(message: "the rule ends where a comparison was expected", offset: length)
        }
        if tokens[position].token == .open {
            depth += 1
            guard depth <= Self.maximumDepth else {
                throw Failure(message: "parentheses nest deeper than \(Self.maximumDepth)", offset: offset)
            }
            let start = tokens[position].offset
            position += 1
            let inner = try disjunction()
            guard position < tokens.count, tokens[position].token == .close else {
                throw Failure(message: "'(' is not closed", offset: start)
            }
            position += 1
            depth -= 1
            return inner
        }
        return .comparison(try comparison())
    }

    private mutating func comparison() throws(Failure) -> FilterComparison {
        guard case .word(let name) = tokens[position].token else {
            throw Failure(
                message: "expected a property such as app.appVersion, found \(describe(tokens[position].token))",
                offset: offset)
        }
        let parts = name.split(separator: ".", maxSplits: 1).map(String.init)
        guard parts.count == 2, !parts[1].isEmpty, ["app", "device"].contains(parts[0].lowercased()) else {
            throw Failure(message: "'\(name)' is not a property (app.name or device.name)", offset: offset)
        }
        let property = FilterComparison.Property(entity: parts[0], name: parts[1])
        position += 1
        guard position < tokens.count, case .word(let operatorWord) = tokens[position].token else {
            throw Failure(message: "expected an operator such as -eq after \(name)", offset: offset)
        }
        let bare = operatorWord.hasPrefix("-") ? String(operatorWord.dropFirst()) : operatorWord
        guard
            let op = FilterComparison.Operator.allCases.first(where: { $0.rawValue.lowercased() == bare.lowercased() })
        else {
            let known = FilterComparison.Operator.allCases.map { "-\($0.rawValue)" }.joined(separator: " ")
            throw Failure(message: "'\(operatorWord)' is not an operator (\(known))", offset: offset)
        }
        position += 1
        let values: [FilterComparison.Value]
        if op.takesList {
            values = try list()
        } else {
            values = [try value()]
            if values == [.null], op != .eq, op != .ne {
                throw Failure(message: "Null compares only with -eq and -ne", offset: tokens[position - 1].offset)
            }
        }
        if op.isOrdering, case .text(let text) = values[0], SoftwareVersion(text) == nil {
            throw Failure(
                message: "-\(op.rawValue) compares versions; '\(text)' is not one", offset: tokens[position - 1].offset)
        }
        return FilterComparison(property: property, operator: op, values: values)
    }

    private mutating func value() throws(Failure) -> FilterComparison.Value {
        guard position < tokens.count else {
            throw Failure(message: "the rule ends where a value was expected", offset: length)
        }
        let token = tokens[position].token
        switch token {
        case .text(let text):
            position += 1
            return .text(text)
        case .word(let word) where ["null", "$null"].contains(word.lowercased()):
            position += 1
            return .null
        case .word(let word) where SoftwareVersion(word) != nil:
            position += 1
            return .text(word)
        case .word(let word) where !word.isEmpty && word.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }):
            throw Failure(
                message: "'\(word)' is not a version Custody can compare: a part is empty or too large", offset: offset)
        default:
            throw Failure(message: "expected a value in double quotes, found \(describe(token))", offset: offset)
        }
    }

    private mutating func list() throws(Failure) -> [FilterComparison.Value] {
        guard position < tokens.count, tokens[position].token == .openList else {
            throw Failure(message: "expected a list such as [\"a\", \"b\"]", offset: offset)
        }
        let start = offset
        position += 1
        var values: [FilterComparison.Value] = []
        while true {
            guard position < tokens.count else { throw Failure(message: "'[' is not closed", offset: start) }
            if tokens[position].token == .closeList, values.isEmpty { break }
            let element = try value()
            guard element != .null else {
                throw Failure(message: "a list holds no Null", offset: tokens[position - 1].offset)
            }
            values.append(element)
            guard position < tokens.count else { throw Failure(message: "'[' is not closed", offset: start) }
            if tokens[position].token == .comma {
                position += 1
                continue
            }
            guard tokens[position].token == .closeList else {
                throw Failure(message: "expected ',' or ']' in a list", offset: offset)
            }
            break
        }
        position += 1
        guard !values.isEmpty else { throw Failure(message: "the list is empty", offset: start) }
        return values
    }
}
