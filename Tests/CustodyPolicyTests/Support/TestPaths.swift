import Foundation

/// Where the package's fixtures and the shared Graph exports are.
enum TestPaths {
    /// The package root (two levels above this file's folder).
    static let packageRoot: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { url.deleteLastPathComponent() }
        return url.path
    }()

    static func fixture(_ relative: String) -> String {
        (packageRoot as NSString).appendingPathComponent("fixtures/\(relative)")
    }

    static func package(_ relative: String) -> String {
        (packageRoot as NSString).appendingPathComponent(relative)
    }

    /// The shared Microsoft Graph exports (some GPL-licensed: read here, never copied into the
    /// project). `CUSTODY_SHARED_DIR` overrides `<package>/../shared`.
    static var graphExamples: String {
        let shared = ProcessInfo.processInfo.environment["CUSTODY_SHARED_DIR"]
            ?? ((packageRoot as NSString).deletingLastPathComponent as NSString).appendingPathComponent("shared")
        return (shared as NSString).appendingPathComponent("graph-examples")
    }

    static func graphExample(_ name: String) -> String {
        (graphExamples as NSString).appendingPathComponent(name)
    }

    /// The Wycheproof test vectors beside the Graph exports.
    static var wycheproof: String {
        ((graphExamples as NSString).deletingLastPathComponent as NSString).appendingPathComponent("test-vectors/wycheproof")
    }
}
