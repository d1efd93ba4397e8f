import Foundation
public import Testing

/// The PostgreSQL server the tests use: `CUSTODY_TEST_POSTGRES_URL`, which `make test` sets to
/// a throwaway cluster it starts (scripts/test-postgres.sh). Each test takes a schema of its
/// own, so tests run in parallel without seeing each other.
public enum TestPostgres {
    public static var url: String? {
        ProcessInfo.processInfo.environment["CUSTODY_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Whether the PostgreSQL tests run: always under CI (`CI=true`), so that a missing server
    /// fails them loudly; elsewhere when a server is named.
    public static var available: Bool { ProcessInfo.processInfo.environment["CI"] == "true" || url != nil }

    public static let missingReason =
        "no PostgreSQL server for the tests: CUSTODY_TEST_POSTGRES_URL is not set (make test starts a throwaway cluster and sets it; under CI=true its absence fails)"

    /// Skips a suite or test without a server, saying why.
    public static var enabled: ConditionTrait { .enabled(if: available, Comment(rawValue: missingReason)) }

    /// The test server's port.
    public static var port: Int? { url.flatMap { URLComponents(string: $0)?.port } }

    /// `url` with its port replaced by `port`: the same server, reached through a `NetworkProxy`.
    public static func url(_ url: String, throughPort port: Int) -> String {
        guard var components = URLComponents(string: url) else { return url }
        components.port = port
        return components.string ?? url
    }

    /// A proxy to the test server (see `NetworkProxy`).
    public static func proxy() throws -> NetworkProxy {
        try NetworkProxy(port: port ?? 1)
    }

    /// The server's URL with a schema no other test uses (and `extra` query parameters).
    public static func freshURL(_ label: String = "t", extra: String = "") -> String {
        let base = url ?? "postgres://custody@127.0.0.1:1/missing?sslmode=disable"
        let schema = "\(label)_\(UInt64.random(in: 0..<UInt64.max) % 1_000_000_000_000)"
        return base + (base.contains("?") ? "&" : "?") + "schema=\(schema)" + extra
    }
}
