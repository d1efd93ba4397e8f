import Foundation

/// A temporary directory for one test, optionally a copy of a package directory (a bundle),
/// removed when the test's scope ends.
public final class TemporaryDirectory: @unchecked Sendable {
    public let path = NSTemporaryDirectory() + "custody-test-" + UUID().uuidString

    /// An empty directory, or a copy of `source` (relative to the package root).
    public init(copying source: String? = nil) throws {
        if let source {
            try FileManager.default.copyItem(atPath: TestPaths.package(source), toPath: path)
        } else {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        }
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }

    /// The path of `name` inside the directory.
    public func file(_ name: String) -> String { path + "/" + name }

    /// Writes `text` to `name`; returns its path.
    @discardableResult
    public func write(_ name: String, _ text: String) throws -> String {
        try Data(text.utf8).write(to: URL(fileURLWithPath: file(name)))
        return file(name)
    }

    /// The text of `name`.
    public func read(_ name: String) throws -> String {
        String(decoding: try Data(contentsOf: URL(fileURLWithPath: file(name))), as: UTF8.self)
    }

    /// Rewrites the text of `name` with `change`.
    public func edit(_ name: String, _ change: (String) -> String) throws {
        try write(name, change(try read(name)))
    }
}
