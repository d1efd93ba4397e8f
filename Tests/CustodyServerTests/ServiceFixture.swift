import Custody
import CustodyPolicy
import CustodyProtection
import CustodyTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Prometheus
import Testing

@testable import CustodyServer

/// An installation with the example bundle in force, a token per scope, and the service over it.
struct ServiceFixture: Sendable {
    let directory: TemporaryDirectory
    let engine: CustodyEngine
    let bundle: String
    let tokens: [TokenScope: String]
    let logs = LogCapture()
    var configuration: CustodyServerConfiguration

    /// - Parameter applying: make the example bundle the policy in force (a copy the test may edit).
    static func make(
        applying: Bool = true, auditing: Bool = false, context: EvaluationContext = EvaluationContext(platform: .ios),
        configure: (inout CustodyServerConfiguration) -> Void = { _ in }
    ) async throws -> ServiceFixture {
        let directory = try TemporaryDirectory()
        try FileManager.default.copyItem(atPath: TestPaths.package("policies"), toPath: directory.file("bundle"))
        let engine = try await CustodyEngine.open(
            CustodyConfiguration(
                state: .path(directory.file("state.sqlite")), masterKey: .keyFile(path: directory.file("master.key")),
                context: context))
        if applying { try await engine.apply(bundleDirectory: directory.file("bundle")) }
        if auditing { try await engine.setAuditing(decisions: true) }
        var tokens: [TokenScope: String] = [:]
        for scope in TokenScope.allCases {
            tokens[scope] = try await engine.createToken(scopes: [scope], name: "test \(scope.rawValue)").bearer
        }
        var configuration = CustodyServerConfiguration(
            bundleDirectory: applying ? directory.file("bundle") : nil, watchInterval: .milliseconds(20))
        // Staleness is not what these tests are about (FleetStreamTests and OutageTests test it):
        // on a loaded 2-core machine, other tests' work can keep the state's threads from the
        // follower's polls for longer than the 3 s a service allows, and key operations are then
        // refused as from a stale replica.
        configuration.staleAfter = .seconds(120)
        configure(&configuration)
        return ServiceFixture(
            directory: directory, engine: engine, bundle: directory.file("bundle"), tokens: tokens,
            configuration: configuration)
    }

    func application() throws -> some ApplicationProtocol {
        try buildApplication(configuration: configuration, engine: engine, logger: logs.logger(label: "custody.server"))
    }

    /// Authorization for a scope.
    func auth(_ scope: TokenScope, _ more: HTTPFields = [:]) -> HTTPFields {
        var headers = more
        headers[.authorization] = "Bearer \(tokens[scope]!)"
        return headers
    }
}

extension ByteBuffer {
    init(text: String) {
        self.init(string: text)
    }

    var text: String { String(buffer: self) }
}

/// A response body as JSON.
func object(_ response: TestResponse) throws -> [String: Any] {
    try #require(
        try JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: Any],
        "not a JSON object: \(response.body.text)")
}
