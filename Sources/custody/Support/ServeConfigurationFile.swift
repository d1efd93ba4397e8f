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

    /// The largest file read: 1 MiB, far more than every option takes.
    static let largest = 1 << 20

    /// Options that are commands, not settings: refused in a file.
    static let commands: Set<String> = ["config", "help", "version", "print-openapi"]

    /// Reads and checks `path`: a regular file of at most 1 MiB, JSON, one object, a known
    /// option per member, each value of the kind its option takes (`true` or `false` for a
    /// flag; a string, a number or a list of them for an option with a value).
    init(path: String, command: ServeCommand.Type = ServeCommand.self) throws(Failure) {
        self.path = path
        let attributes: [FileAttributeKey: Any]
        do {
            attributes = try FileManager.default.attributesOfItem(atPath: path)
        } catch {
            throw Failure(description: "--config \(path): cannot be read: No such file or directory, or not permitted")
        }
        guard attributes[.type] as? FileAttributeType == .typeRegular else {
            throw Failure(description: "--config \(path): not a regular file")
        }
        let size = (attributes[.size] as? NSNumber)?.intValue ?? Int.max
        guard size <= Self.largest else {
            throw Failure(
                description: "--config \(path): \(size) bytes, more than a configuration file holds (1 MiB)")
        }
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
            guard !Self.commands.contains(key) else {
                throw refuse("a command, not a setting: give it on the command line")
            }
            guard !key.isEmpty, !key.hasPrefix("-"),
                key.allSatisfy({ $0.isASCII && !$0.isWhitespace && $0 != "=" }),
                let kind = Self.kind(of: key, in: command)
            else {
                throw refuse(
                    "not an option of custody serve (see custody serve --help; keys are its long options without --)")
            }
            let value = member.value
            let arguments: [String]
            // `--key=value`: a value that starts with `-` is the value, not another option.
            switch (kind, value.kind) {
            case (.flag, .true): arguments = ["--\(key)"]
            case (.flag, .false): arguments = []
            case (.flag, _): throw refuse("a flag: true or false")
            case (.value, .string): arguments = ["--\(key)=\(value.string ?? "")"]
            case (.value, .number): arguments = ["--\(key)=\(value.numberText ?? "")"]
            case (.value, .array):
                var list: [String] = []
                for element in value.elements {
                    guard let text = element.kind == .string ? element.string : element.numberText else {
                        throw refuse("a list takes strings and numbers only")
                    }
                    list.append("--\(key)=\(text)")
                }
                arguments = list
            case (.value, _):
                throw refuse("takes a string, a number or a list of them")
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

    /// What a key stands for: a flag (`--key` alone), or an option with a value.
    enum Kind { case flag, value }

    /// Whether `--key` is one of `command`'s options, and which kind; nil when it is none. Asked
    /// of the parser: `--key` alone parses (or fails for another reason) for a flag, and fails
    /// for its missing value for an option with one.
    static func kind(of key: String, in command: ServeCommand.Type) -> Kind? {
        do {
            _ = try command.parse(["--\(key)"])
            return .flag
        } catch {
            let message = command.message(for: error)
            if message.hasPrefix("Unknown option") { return nil }
            return message.contains("Missing value") ? .value : .flag
        }
    }

    /// The file's line at fault when `error` came from parsing its options with the command
    /// line's: the first member that fails alone.
    func located(_ error: any Error, command: ServeCommand.Type = ServeCommand.self) -> String? {
        for entry in entries where !entry.arguments.isEmpty {
            do {
                _ = try command.parse(entry.arguments)
            } catch {
                return "\(path):\(entry.line): \"\(entry.key)\": \(command.message(for: error))"
            }
        }
        return nil
    }
}
