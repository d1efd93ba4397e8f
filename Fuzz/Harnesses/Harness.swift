import CustodyPolicy
import CustodyProtection
import Foundation

/// One fuzzing target: given any bytes, it must return (never crash, hang or leak) whatever
/// the bytes are. Each harness drives one of Custody's readers of untrusted input.
struct Harness: Sendable {
    let name: String
    let summary: String
    let run: @Sendable ([UInt8]) -> Void

    static let all: [Harness] = [
        Harness(name: "json", summary: "the JSON parser (every document Custody reads)") { bytes in
            if let document = try? JSONDocument(parsing: bytes) {
                _ = document.root.kind
            }
        },
        Harness(name: "query", summary: "decide's query lines, answered against the example bundle") { bytes in
            var stream = Fixtures.makeStream()
            _ = stream.answer(lines: bytes)
        },
        Harness(name: "bundle", summary: "the bundle loader: a policy document (first byte even) or a tenant (odd) beside the example's other files") { bytes in
            let asTenant = bytes.first.map { $0 & 1 == 1 } ?? false
            let file = PolicyBundle.File(name: asTenant ? "tenant.json" : "fuzzed.json", bytes: Array(bytes.dropFirst()))
            let bundle: PolicyBundle?
            if asTenant {
                bundle = try? PolicyBundle.load(tenant: file, documents: Fixtures.documents)
            } else {
                bundle = try? PolicyBundle.load(tenant: Fixtures.tenant, documents: Fixtures.documents + [file])
            }
            if let bundle {
                let snapshot = PolicySnapshot(bundle: bundle, context: EvaluationContext(platform: .ios), logger: Fixtures.quiet)
                _ = snapshot.resolveAccount(Fixtures.alice)
            }
        },
        Harness(name: "envelope", summary: "envelope headers and chunks, as a buffer and as a file, under a fixed key ring") { bytes in
            _ = try? DataProtector.protectionInfo(bytes)
            Fixtures.blocking {
                _ = try? await Fixtures.protector.unprotect(bytes)
                await Fixtures.unprotectFile(bytes)
            }
        },
        Harness(name: "matrix", summary: "the scenario matrix loader, and the run of what loads against the example bundle") { bytes in
            if let matrix = try? ScenarioMatrix.parse(bytes, file: "fuzzed.matrix.json"), matrix.cases.count <= 10_000 {
                _ = matrix.run(against: Fixtures.snapshot)
            }
        },
        Harness(name: "configuration", summary: "the app configuration decoder: lines of key=value into a nested Decodable") { bytes in
            var settings: [String: String] = [:]
            for line in bytes.split(separator: UInt8(ascii: "\n")) {
                let text = String(decoding: line, as: UTF8.self)
                guard let equals = text.firstIndex(of: "=") else { continue }
                settings[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            _ = try? ConfigurationDecoder().decode(FuzzedConfiguration.self, from: settings)
        },
        Harness(name: "spec", summary: "the app spec loader, and the validation of the example bundle against what loads") { bytes in
            if let spec = try? AppSpec.parse(bytes, file: "fuzzed.spec.json") {
                _ = spec.validate(Fixtures.bundle, platform: .ios)
            }
        },
    ]

    static func named(_ name: String) -> Harness? {
        all.first { $0.name == name }
    }
}

/// A configuration type with every shape the decoder supports.
struct FuzzedConfiguration: Decodable {
    enum Mode: String, Decodable { case strict, relaxed }
    struct Server: Decodable {
        var host: String
        var port: Int
        var secure: Bool?
        var weights: [Double]?
    }
    var name: String?
    var count: Int?
    var ratio: Double?
    var enabled: Bool?
    var mode: Mode?
    var servers: [Server]?
    var primary: Server?
    var tags: [String]?
    var limit: UInt8?
}
