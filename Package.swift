// swift-tools-version: 6.1
//
// Custody: a multi-identity data-protection policy engine for Swift on Linux.
// Layers (each depends only on those above it): CSodium, CLibcrypto → CustodyPolicy → CustodyProtection
// → CustodyStore → CustodyPostgres → Custody → CustodyGraph → CustodyServer → custody. See docs/architecture.md.

import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "Custody",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "CustodyPolicy", targets: ["CustodyPolicy"]),
        .library(name: "CustodyProtection", targets: ["CustodyProtection"]),
        .library(name: "CustodyStore", targets: ["CustodyStore"]),
        .library(name: "CustodyPostgres", targets: ["CustodyPostgres"]),
        .library(name: "Custody", targets: ["Custody"]),
        .library(name: "CustodyServer", targets: ["CustodyServer"]),
        .library(name: "CustodyGraph", targets: ["CustodyGraph"]),
        .executable(name: "custody", targets: ["custody"]),
    ],
    // `custody serve --otel-endpoint`'s exporter (swift-otel), on by default. The sanitizer
    // builds of `make check` leave it out (`--disable-default-traits`): none of their tests
    // runs the executable, and swift-otel 1.6 does not compile under -sanitize=thread
    // (a region-isolation error, "sending 'logger' risks causing data races", in its batch
    // span processor). Built without it, `--otel-endpoint` says so and exits.
    traits: [
        .trait(
            name: "OpenTelemetry",
            description: "custody serve --otel-endpoint: the OTLP/HTTP trace exporter (swift-otel)"),
        .default(enabledTraits: ["OpenTelemetry"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/swift-mustache", from: "2.1.1"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-atomics.git", from: "1.3.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth.git", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-async-algorithms.git", from: "1.1.4"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.7.1"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.5.0"),
        // Spans (the API): requests, decisions, state calls; async-http-client's Graph requests
        // use the same tracer. Hummingbird depends on it already.
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.3.0"),
        // The OpenTelemetry exporter `custody serve --otel-endpoint` sets up: OTLP/HTTP only
        // (the gRPC exporter's trait would build grpc-swift for nothing); see docs/decisions.md.
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
        // `swift package generate-documentation` (make docs): the DocC catalogs of the libraries an
        // app embeds, with the README's examples compiled as snippets (Snippets/).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // libsodium, wrapped once. Only CustodyProtection may import it.
        .systemLibrary(
            name: "CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"])]
        ),

        // OpenSSL 3's libcrypto, wrapped once, for AES-256-GCM and ChaCha20-Poly1305 at the
        // machine's speed. Only CustodyProtection may import it.
        .systemLibrary(
            name: "CLibcrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),

        // Graph policy bundles in, explained decisions out. No C of its own (swift-crypto for the
        // bundle's content hash), no I/O beyond reading the documents it is handed.
        .target(
            name: "CustodyPolicy",
            dependencies: [
                .product(name: "Logging", package: "swift-log"),
                // SHA-256 of a bundle's files: its revision.
                .product(name: "Crypto", package: "swift-crypto"),
                // Paths taken apart (Foundation's `deletingLastPathComponent` traps on "b").
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: swiftSettings
        ),

        // Per-account keys and envelopes for buffers and files: libcrypto seals and opens chunks,
        // libsodium does the rest (randomness, key wrapping, BLAKE2b, Argon2id). No C type or raw
        // pointer escapes its public API. swift-crypto decodes the earlier AES-256-GCM envelopes
        // on CPUs where libsodium's AES-GCM (which needs AES-NI) is unavailable.
        .target(
            name: "CustodyProtection",
            dependencies: [
                "CSodium",
                "CLibcrypto",
                "CustodyPolicy",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),

        // Custody's state in one SQLite database (GRDB over Debian's libsqlite3): account keys,
        // sealed secrets, check-ins, bundle history, the audit log. WAL, named migrations.
        .target(
            name: "CustodyStore",
            dependencies: [
                "CustodyProtection",
                "CustodyPolicy",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),

        // The same state on PostgreSQL (postgres-nio), for a fleet of replicas: the same tables
        // and migrations, a change log announced with LISTEN/NOTIFY.
        .target(
            name: "CustodyPostgres",
            dependencies: [
                "CustodyStore",
                "CustodyProtection",
                "CustodyPolicy",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),

        // The runtime an app or service embeds: PolicyManager (snapshots swapped atomically,
        // decisions without awaiting), change notifications as AsyncStream, task-scoped
        // identity, selective wipe, app configuration and secrets providers (certificates
        // parsed and validated by swift-certificates).
        .target(
            name: "Custody",
            dependencies: [
                "CustodyPolicy",
                "CustodyProtection",
                "CustodyStore",
                "CustodyPostgres",
                "CSystemCalls",
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Atomics", package: "swift-atomics"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),

        // The decision service: a Hummingbird 2 application over one engine. Routes parse
        // requests, call the engine and render; auth, limits, metrics and shutdown live here.
        .target(
            name: "CustodyServer",
            dependencies: [
                "Custody",
                "CustodyGraph",
                "CustodyPolicy",
                "CustodyProtection",
                "CustodyStore",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "NIOExtras", package: "swift-nio-extras"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "HummingbirdAuth", package: "hummingbird-auth"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Mustache", package: "swift-mustache"),
            ],
            // The service's contract, edited by hand (docs/openapi.json links to it), compiled
            // into the binary byte for byte: `GET /openapi.json` and `serve --print-openapi`
            // serve it, with no file to lose beside a copied executable.
            // The console's page, script, style and templates, likewise.
            resources: [
                .embedInCode("Resources/openapi.json"), .embedInCode("Resources/console/shell.html"),
                .embedInCode("Resources/console/console.js"), .embedInCode("Resources/console/console.css"),
                .embedInCode("Resources/console/overview.mustache"),
                .embedInCode("Resources/console/accounts.mustache"),
                .embedInCode("Resources/console/account.mustache"),
                .embedInCode("Resources/console/whatif.mustache"),
                .embedInCode("Resources/console/grid.mustache"),
                .embedInCode("Resources/console/diff.mustache"),
                .embedInCode("Resources/console/events.mustache"),
                .embedInCode("Resources/console/shadow.mustache"),
                .embedInCode("Resources/console/groupgrid.mustache"),
            ],
            swiftSettings: swiftSettings
        ),

        // renameat2(RENAME_EXCHANGE), which Glibc's Swift module leaves out: a bundle directory
        // replaced by a new one in one step; and a thread's scheduling class (background work).
        .systemLibrary(name: "CSystemCalls"),

        // The Microsoft Graph connector: reads a tenant's app protection policies and the
        // members of the groups they target (async-http-client; certificate logins signed by
        // jwt-kit), and builds a bundle from them: written atomically, or applied to a state.
        .target(
            name: "CustodyGraph",
            dependencies: [
                "Custody",
                "CustodyPolicy",
                "CustodyProtection",
                "CustodyStore",
                "CSystemCalls",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),

        // The command-line front end: parses arguments, calls the libraries, sets exit codes.
        .executableTarget(
            name: "custody",
            dependencies: [
                "CustodyPolicy",
                "CustodyProtection",
                "CustodyStore",
                "Custody",
                "CustodyServer",
                "CustodyGraph",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "OTel", package: "swift-otel", condition: .when(traits: ["OpenTelemetry"])),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),

        // Fuzzing harnesses for every reader of untrusted input (see Fuzz/README.md). Built
        // normally it replays a corpus through a harness (a regression test); `make fuzz`
        // builds it with libFuzzer and AddressSanitizer (-sanitize=fuzzer,address).
        .executableTarget(
            name: "CustodyFuzz",
            dependencies: ["CustodyPolicy", "CustodyProtection", .product(name: "Logging", package: "swift-log")],
            path: "Fuzz/Harnesses",
            swiftSettings: swiftSettings
        ),

        // Where tests find the package's fixtures and the shared Graph exports and vectors.
        .target(
            name: "CustodyTestSupport",
            dependencies: [
                .product(name: "Logging", package: "swift-log"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Tests/CustodyTestSupport",
            swiftSettings: swiftSettings),
        .testTarget(
            name: "CustodyPolicyTests",
            dependencies: [
                "CustodyPolicy",
                "CustodyTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "CustodyProtectionTests",
            dependencies: [
                "CustodyProtection",
                "CustodyTestSupport",
                "CustodyPolicy",
                .product(name: "Logging", package: "swift-log"),
                // An independent AES-GCM and ChaCha20-Poly1305 for the known-answer envelopes.
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "CustodyStoreTests",
            dependencies: [
                "CustodyStore", "CustodyPostgres", "CustodyProtection", "CustodyPolicy", "CustodyTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "CustodyTests",
            dependencies: [
                "Custody", "CustodyPolicy", "CustodyProtection", "CustodyStore", "CustodyPostgres",
                "CustodyTestSupport",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "CustodyServerTests",
            dependencies: [
                "CustodyServer", "Custody", "CustodyPolicy", "CustodyProtection", "CustodyStore", "CustodyTestSupport",
                "CustodyPostgres",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // The Graph connector against a Graph-shaped server the tests start (Hummingbird, on
        // loopback): paging, throttling, logins, and the bundle it builds deciding as the
        // tenant says.
        .testTarget(
            name: "CustodyGraphTests",
            dependencies: [
                "CustodyGraph", "Custody", "CustodyPolicy", "CustodyServer", "CustodyStore", "CustodyTestSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // Runs the built `custody` binary: exit codes, stdout and stderr are the contract.
        .testTarget(
            name: "CustodyCLITests",
            dependencies: [
                "custody", "CustodyFuzz", "CustodyPolicy", "CustodyPostgres", "CustodyProtection", "CustodyStore",
                "CustodyTestSupport",
            ],
            swiftSettings: swiftSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)

// `make check`'s sanitizer stages each run one or two test targets, and build only those:
// CUSTODY_TEST_TARGETS="CustodyProtectionTests,CustodyStoreTests" leaves every other test target
// out, so the modules no test there runs (the service, the Graph connector, the executable) are
// not compiled a second and third time under a sanitizer. Unset, as in every other build, the
// package declares every test target.
if let kept = Context.environment["CUSTODY_TEST_TARGETS"] {
    let names = Set(kept.split(separator: ",").map(String.init))
    let testTargets = Set(package.targets.filter { $0.type == .test }.map(\.name))
    let unknown = names.subtracting(testTargets)
    guard unknown.isEmpty else {
        fatalError("CUSTODY_TEST_TARGETS names no test target of this package: \(unknown.sorted())")
    }
    package.targets.removeAll { $0.type == .test && !names.contains($0.name) }
}
