import Foundation

/// The outcome of running matrix files: each file's results, or why it did not load.
public struct ScenarioRun: Sendable {
    public struct FileOutcome: Sendable {
        public let file: String
        /// The matrix's cases and what came of them; empty when it did not load.
        public let results: [ScenarioResult]
        /// Why the matrix (or its bundle) did not load; empty when it did.
        public let diagnostics: [Diagnostic]
        /// How long running it took, loading included.
        public let duration: Duration
    }

    public let files: [FileOutcome]

    /// Cases that passed.
    public var passed: Int { files.reduce(0) { $0 + $1.results.filter(\.passed).count } }
    /// Cases that failed, plus one for each file that did not load.
    public var failed: Int {
        files.reduce(0) { $0 + $1.results.filter { !$0.passed }.count + ($1.diagnostics.isEmpty ? 0 : 1) }
    }

    /// Loads and runs every file. Bundles are loaded once per path and context.
    public init(files paths: [String]) {
        var snapshots: [String: Result<PolicySnapshot, BundleError>] = [:]
        let clock = ContinuousClock()
        files = paths.map { path in
            let start = clock.now
            let matrix: ScenarioMatrix
            do throws(ScenarioError) {
                matrix = try ScenarioMatrix.load(path: path)
            } catch {
                return FileOutcome(file: path, results: [], diagnostics: error.diagnostics, duration: clock.now - start)
            }
            let key = "\(matrix.bundlePath)\u{0}\(matrix.context)"
            let snapshot =
                snapshots[key]
                ?? Result { () throws(BundleError) in
                    PolicySnapshot(bundle: try PolicyBundle.load(path: matrix.bundlePath), context: matrix.context)
                }
            snapshots[key] = snapshot
            switch snapshot {
            case .success(let snapshot):
                return FileOutcome(
                    file: path, results: matrix.run(against: snapshot), diagnostics: [], duration: clock.now - start)
            case .failure(let error):
                // Where the matrix names the bundle, then why the bundle does not load.
                let named = Diagnostic(
                    severity: .error, code: .unreadable,
                    message: "the matrix's bundle \(matrix.bundlePath) does not load",
                    location: matrix.bundleLocation, path: "$.bundle")
                return FileOutcome(
                    file: path, results: [], diagnostics: [named] + error.diagnostics, duration: clock.now - start)
            }
        }
    }

    /// The `*.matrix.json` files under `directory`, recursively, sorted.
    public static func matrixFiles(in directory: String) -> [String] {
        let enumerator = FileManager.default.enumerator(atPath: directory)
        var files: [String] = []
        while let relative = enumerator?.nextObject() as? String {
            if relative.hasSuffix(".matrix.json") {
                files.append((directory as NSString).appendingPathComponent(relative))
            }
        }
        return files.sorted()
    }
}
