import ArgumentParser
import CustodyPolicy
import Foundation

/// `custody serve --config FILE`: the service's options as one JSON object, each member named
/// as the option's long flag without its dashes (`"listen": "0.0.0.0:8080"`,
/// `"max-body": 1048576`, `"allowed-host": ["custody.example.com"]`, `"without-keys": true`).
///
/// The file stands for the arguments it names, read before those of the command line: an
/// option given on the command line wins over the file's, whole (a list given there replaces
/// the file's list). A member no option has is refused, naming its line, as is a value of the
/// wrong kind; every other check is the option's own, as if it had been typed.
struct ServeConfigurationFile {
    /// One member: the option it sets, its arguments, and where it is.
    struct Entry {
        let key: String
        let line: Int
        /// `--key value`, `--key v1 --key v2`, `--key` (true), nothing (false).
        let arguments: [String]
    }

    let path: String
    let entries: [Entry]

    /// Why the file cannot be used: the file, the line where it can be told, and what is wrong.
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Reads and checks `path`: JSON, one object, a known option per member, each value of a
    /// kind an option takes.
    init(path: String, command: ServeCommand.Type = ServeCommand.self) throws(Failure) {
        self.path = path
        let bytes: [UInt8]
        do {
            bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw Failure(description: "--config \(path): cannot be read: \(error.localizedDescription)")
        }
        func line(_ offset: Int) -> Int { JSONText.lineAndColumn(ofOffset: offset, in: bytes).line }
        let document: JSONDocument
        do {
            document = try JSONDocument(parsing: bytes)
        } catch {
            throw Failure(description: "\(path):\(line(error.offset)): not JSON: \(error.message)")
        }
        let root = document.root
        guard root.kind == .object else {
            throw Failure(description: "\(path):\(line(root.offset)): the file must be one JSON object of options")
        }
        var entries: [Entry] = []
        var seen: [String: Int] = [:]
        for member in root.members {
            let key = member.key
            let at = line(member.name.offset)
            func refuse(_ why: String) -> Failure { Failure(description: "\(path):\(at): \"\(key)\": \(why)") }
            if let first = seen[key] { throw refuse("given twice (first on line \(first))") }
            seen[key] = at
            guard key != "config" else { throw refuse("a configuration file cannot name another") }
            guard !key.isEmpty, !key.hasPrefix("-"), Self.isOption(key, of: command) else {
                throw refuse(
                    "not an option of custody serve (see custody serve --help; keys are its long options without --)")
            }
            let value = member.value
            let arguments: [String]
            switch value.kind {
            case .true: arguments = ["--\(key)"]
            case .false: arguments = []
            case .string: arguments = ["--\(key)", value.string ?? ""]
            case .number: arguments = ["--\(key)", value.numberText ?? ""]
            case .array:
                var list: [String] = []
                for element in value.elements {
                    guard let text = element.kind == .string ? element.string : element.numberText else {
                        throw refuse("a list takes strings and numbers only")
                    }
                    list += ["--\(key)", text]
                }
                arguments = list
            default:
                throw refuse("takes a string, a number, true or false, or a list of strings")
            }
            entries.append(Entry(key: key, line: at, arguments: arguments))
        }
        self.entries = entries
    }

    /// The arguments to parse: the file's, less every option `commandLine` gives, then
    /// `commandLine` less `--config` and its value.
    func arguments(before commandLine: [String]) -> [String] {
        var given = Set<String>()
        var rest: [String] = []
        var index = commandLine.startIndex
        while index < commandLine.endIndex {
            let argument = commandLine[index]
            if argument == "--" {
                rest += commandLine[index...]
                break
            }
            if argument == "--config" {
                index += 2
                continue
            }
            if argument.hasPrefix("--config=") {
                index += 1
                continue
            }
            if argument.hasPrefix("--") { given.insert(String(argument.dropFirst(2).prefix { $0 != "=" })) }
            rest.append(argument)
            index += 1
        }
        return entries.filter { !given.contains($0.key) }.flatMap(\.arguments) + rest
    }

    /// Whether `--key` is one of `command`'s options: parsing it alone does not fail for being
    /// unknown (its value, or what it needs beside it, is checked with the rest).
    static func isOption(_ key: String, of command: ServeCommand.Type) -> Bool {
        for attempt in [["--\(key)"], ["--\(key)", "0"]] {
            do {
                _ = try command.parse(attempt)
                return true
            } catch {
                let message = command.message(for: error)
                if message.hasPrefix("Unknown option") { return false }
                if !message.contains("Missing value") { return true }
            }
        }
        return true
    }
}
