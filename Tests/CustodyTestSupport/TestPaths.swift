import Foundation

/// Where the package's fixtures and the shared Graph exports are.
public enum TestPaths {
    /// The package root (two levels above this file's folder).
    public static let packageRoot: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    public static func fixture(_ relative: String) -> String {
        (packageRoot as NSString).appendingPathComponent("fixtures/\(relative)")
    }

    public static func package(_ relative: String) -> String {
        (packageRoot as NSString).appendingPathComponent(relative)
    }

    /// The shared Microsoft Graph exports (some GPL-licensed: read in place, never copied into
    /// the project): `$CUSTODY_SHARED_DIR/graph-examples`, else the first `shared/graph-examples`
    /// beside the package or one of its ancestors. Tests that need them are skipped when there
    /// is none (see `sharedAvailable`).
    public static let graphExamples: String = {
        if let shared = ProcessInfo.processInfo.environment["CUSTODY_SHARED_DIR"] {
            return (shared as NSString).appendingPathComponent("graph-examples")
        }
        var directory = URL(fileURLWithPath: packageRoot)
        while directory.path != "/" {
            directory.deleteLastPathComponent()
            let candidate = directory.appendingPathComponent("shared/graph-examples").path
            if FileManager.default.fileExists(atPath: candidate) { return candidate }
        }
        return "(no shared/graph-examples found above \(packageRoot); set CUSTODY_SHARED_DIR)"
    }()

    /// Whether the shared corpora (Graph exports, test vectors) are there. Under CI
    /// (`CI=true`) this is always true, so the tests that need them run, and fail loudly when
    /// the corpora are missing; on a user's clone without them they are skipped.
    public static let sharedAvailable: Bool = {
        ProcessInfo.processInfo.environment["CI"] == "true" || FileManager.default.fileExists(atPath: graphExamples)
    }()

    /// Why tests that need the shared corpora are skipped.
    public static let sharedMissingReason =
        "the shared Graph exports and test vectors (../shared) are not beside this clone; set CUSTODY_SHARED_DIR to run them (under CI=true their absence fails)"

    public static func graphExample(_ name: String) -> String {
        (graphExamples as NSString).appendingPathComponent(name)
    }

    /// The JSONTestSuite parsing cases (`y_`, `n_`, `i_` files) beside the Graph exports.
    public static var jsonTestSuite: String {
        ((graphExamples as NSString).deletingLastPathComponent as NSString).appendingPathComponent(
            "test-vectors/JSONTestSuite/test_parsing")
    }

    /// The Wycheproof test vectors beside the Graph exports.
    public static var wycheproof: String {
        ((graphExamples as NSString).deletingLastPathComponent as NSString).appendingPathComponent(
            "test-vectors/wycheproof")
    }
}
