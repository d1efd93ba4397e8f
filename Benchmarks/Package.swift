// swift-tools-version: 6.1
//
// Custody's benchmarks, in their own package so the main dependency graph stays light.
// Run from the repository root with `make bench`, or here with
// `swift package --disable-sandbox benchmark`. See README.md.

import PackageDescription

// The regression gate (scripts/bench-gate.sh) sets CUSTODY_BENCH_GATE=1 and builds in a scratch
// path of its own: Custody is then built without its default trait, the OpenTelemetry exporter,
// which neither of its figures uses (`custody decide` never starts it; `serve` only with
// `--otel-endpoint`) and which brings swift-otel and swift-protobuf into a release build that CI
// makes from nothing. Every other build here, `make bench` and the scripts, has the exporter.
let gate = Context.environment["CUSTODY_BENCH_GATE"] == "1"

let package = Package(
    name: "CustodyBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Custody", path: "..", traits: gate ? [] : [.defaults]),
        .package(url: "https://github.com/ordo-one/benchmark.git", from: "1.38.0", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
    ],
    targets: [
        // libsodium directly: BLAKE2b and randomness for the protection benchmarks' baseline.
        .systemLibrary(name: "CLibsodium", path: "Sources/CLibsodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        // OpenSSL's libcrypto directly: the AEAD baseline of the protection benchmarks.
        .systemLibrary(name: "COpenSSLBaseline", path: "Sources/COpenSSLBaseline", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        // Deterministic synthetic tenants, policies and query streams.
        .target(
            name: "BenchmarkData",
            dependencies: [.product(name: "CustodyPolicy", package: "Custody")],
            path: "Sources/BenchmarkData"
        ),
        // Writes a generated bundle and query file to disk, for timing the real `custody` binary.
        .executableTarget(
            name: "custody-benchgen",
            dependencies: ["BenchmarkData", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Sources/custody-benchgen"
        ),
        // Loops one workload for sampling profilers (perf record, valgrind --tool=callgrind).
        .executableTarget(
            name: "custody-profile",
            dependencies: [
                "BenchmarkData", .product(name: "CustodyProtection", package: "Custody"), .product(name: "Custody", package: "Custody"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/custody-profile"
        ),
        // Change propagation across replicas on one PostgreSQL state (scripts/bench-fleet.sh).
        .executableTarget(
            name: "custody-fleet-propagation",
            dependencies: [
                .product(name: "Custody", package: "Custody"), .product(name: "CustodyPolicy", package: "Custody"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // A bare Hummingbird server answering every POST with a constant body: the baseline the
        // decision service's HTTP throughput is compared with (scripts/bench-service.sh).
        .executableTarget(
            name: "custody-http-baseline",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/custody-http-baseline"
        ),
        // Holds many Server-Sent Events streams of the decision service open, changes the bundle,
        // and reports how long each change took to reach every stream.
        .executableTarget(
            name: "custody-sse-fanout",
            dependencies: [
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/custody-sse-fanout"
        ),
        .executableTarget(
            name: "CustodyBenchmarks",
            dependencies: [
                "BenchmarkData",
                "CLibsodium",
                "COpenSSLBaseline",
                .product(name: "CustodyPolicy", package: "Custody"),
                .product(name: "CustodyProtection", package: "Custody"),
                .product(name: "Custody", package: "Custody"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/CustodyBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
