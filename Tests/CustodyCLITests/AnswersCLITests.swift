import CustodyTestSupport
import Foundation
import Testing

/// `--json` on the commands that change something: the engine's answer, in the members the
/// service's answer to the same operation has (docs/openapi.json).
@Suite("Commands answer in JSON as the service does")
struct AnswersCLITests {
    typealias Scratch = TemporaryDirectory

    /// The members of a JSON object, and the object.
    private func object(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "\(text)")
    }

    @Test(
        "keys rotate --json and wipe --json print the service's rotate-key and wipe answers; tokens create --json its record and the bearer token"
    )
    func answers() async throws {
        let scratch = try Scratch()
        try await scratch.applyExampleBundle()
        let alice = ProtectionCLITests.alice

        let text = try await scratch.run(["keys", "rotate", "--account", "alice@contoso.com"])
        #expect(text.status == 0, "\(text.stderr)")
        let json = try await scratch.run(["keys", "rotate", "--account", "alice@contoso.com", "--json"])
        #expect(json.status == 0, "\(json.stderr)")
        let rotation = try object(json.stdout)
        #expect(Set(rotation.keys) == ["owner", "version"], "\(json.stdout)")
        #expect(rotation["owner"] as? String == alice)
        let version = try #require(rotation["version"] as? Int)
        #expect(text.stdout == "\(alice): key version \(version - 1)\n", "one version before: \(text.stdout)")

        let wipe = try await scratch.run(["wipe", "--account", "alice@contoso.com", "--json"])
        #expect(wipe.status == 0, "\(wipe.stderr)")
        let wiped = try object(wipe.stdout)
        #expect(
            Set(wiped.keys) == ["account", "owner", "identifiers", "keyVersions", "secrets", "eventId"],
            "\(wipe.stdout)")
        #expect(wiped["account"] as? String == "alice@contoso.com")
        #expect(wiped["owner"] as? String == alice)
        #expect(wiped["keyVersions"] as? Int == version, "every version rotated to is deleted")
        #expect((wiped["identifiers"] as? [String])?.contains(alice) == true)
        #expect((wiped["eventId"] as? Int ?? 0) > 0)

        let token = try await scratch.run([
            "tokens", "create", "--scope", "read", "--scope", "decide", "--name", "ci", "--json",
        ])
        #expect(token.status == 0, "\(token.stderr)")
        let created = try object(token.stdout)
        #expect(Set(created.keys) == ["id", "name", "scopes", "created", "expires", "bearer"], "\(token.stdout)")
        #expect(created["expires"] is NSNull, "no --expires: null, it never expires")
        #expect(created["scopes"] as? [String] == ["decide", "read"])
        #expect(created["name"] as? String == "ci")
        let id = try #require(created["id"] as? String)
        #expect((created["bearer"] as? String)?.hasPrefix("custody_\(id)_") == true)
        let listed = try await scratch.run(["tokens", "list"])
        #expect(listed.stdout.contains(id), "the token is in the state: \(listed.stdout)")
    }
}
