import CustodyTestSupport
import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import Testing

/// The command line and the decision service ask the engine the same questions: for every
/// account form, the same report, or the same refusal with the same words.
@Suite("The command line and the service answer alike", .serialized, .timeLimit(.minutes(2)))
struct FrontEndAgreementTests {
    typealias Scratch = ProtectionCLITests.Scratch

    /// An account as given, and whether the tenant of the example bundle lists it.
    static let accounts: [(account: String, known: Bool)] = [
        ("alice@contoso.com", true),
        ("ALICE@Contoso.com", true),
        ("a1f0c7d2-5b1e-4c3a-9e8f-000000000002", true),
        ("{a1f0c7d2-5b1e-4c3a-9e8f-000000000002}", true),
        ("erin@fabrikam.com", false),
        ("a1f0c7d2-5b1e-4c3a-9e8f-0000000000ff", false),
    ]

    @Test("policy show and config show on the command line, and GET .../policy and .../configuration on the service")
    func reportsAgree() async throws {
        let scratch = try Scratch()
        try await scratch.applyExampleBundle()
        let token = try #require(try await scratch.run(["tokens", "create", "--scope", "read"]).stdoutLines.last)
        let server = try await ServeProcess(
            ["--state", scratch.file("state"), "--platform", "ios", "--without-keys"], log: scratch.file("serve.log"))
        defer { server.stop() }
        for (account, known) in Self.accounts {
            let encoded = try #require(account.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed))
            for (command, route) in [("policy", "policy"), ("config", "configuration")] {
                let cli = try await scratch.run([command, "show", "--account", account, "--platform", "ios"])
                var request = URLRequest(url: URL(string: "\(server.address)/v1/accounts/\(encoded)/\(route)")!)
                request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
                let (data, response) = try await URLSession.shared.data(for: request)
                let status = (response as? HTTPURLResponse)?.statusCode
                let served = try JSONSerialization.jsonObject(with: data, options: .fragmentsAllowed) as? NSObject
                if known || route == "configuration" {
                    // An unknown account has no policy to report, and receives no configuration.
                    let stderr: String = cli.stderr
                    #expect(cli.status == 0, "\(command) show \(account): \(stderr)")
                    #expect(status == 200, "GET \(route) \(account): \(String(decoding: data, as: UTF8.self))")
                    let printed =
                        try JSONSerialization.jsonObject(with: Data(cli.stdout.utf8), options: .fragmentsAllowed)
                        as? NSObject
                    #expect(printed != nil && printed == served, "\(command) show \(account) and GET \(route) differ")
                } else {
                    #expect(cli.status == 1)
                    #expect(status == 404)
                    let message = try #require((served as? NSDictionary)?["error"] as? String)
                    #expect(message.hasPrefix("\(account) is not in the tenant of the policy in force"), "\(message)")
                    let printed: String = cli.stderr
                    #expect(printed == "error: \(message)\n", "the same words from both")
                }
            }
        }
    }
}
