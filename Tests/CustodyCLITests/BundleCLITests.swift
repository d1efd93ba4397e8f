import CustodyTestSupport
import Foundation
import Testing

@Suite("custody bundle, trust and fleet", .timeLimit(.minutes(2)))
struct BundleCLITests {
    /// What `bundle sign` is given, the flag, and what it says when it refuses (nil: it signs).
    static let signable: [(files: [String: String], allowEmpty: Bool, refusal: String?)] = [
        ([:], false, "is not signed: a bundle that clears the policy on purpose is signed with --allow-empty"),
        ([:], true, nil),
        (["tenant.json": "{"], false, "tenant.json:1:2: error: expected a member name"),
        (["tenant.json": "{"], true, "is not signed: no state would apply it"),
        (["policy.json": #"{"id": 1}"#], false, "policy.json:1:"),
        // A tenant that manages no one allows every decision (issue 47): on purpose only.
        (
            ["tenant.json": #"{"accounts": [], "allowedAccounts": null}"#], false,
            "is not signed: a bundle that clears the policy on purpose is signed with --allow-empty"
        ),
        (["tenant.json": #"{"accounts": [], "allowedAccounts": null}"#], true, nil),
        (
            ["Tenant.json": #"{"accounts": [{"upn": "a@contoso.com"}]}"#], true,
            "'Tenant.json' is not tenant.json"
        ),
    ]

    /// Found from outside: `--limit 0` printed one entry.
    @Test(
        "bundle history takes --limit from 1 to 1000, as GET /v1/bundle/history does; any other is refused before the state is opened",
        arguments: ["0", "-1", "1001", "x"])
    func historyLimit(limit: String) async throws {
        let result = try await CLIRunner.run(["bundle", "history", "--limit", limit, "--state", "/nonexistent/state"])
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.contains("--limit"), "\(result.stderr)")
    }

    @Test(
        "bundle reset-sequence refuses, changing nothing: no reason, a negative mark (given either way), a mark not below, a state that took no signed bundle",
        arguments: [
            (["--reason", "x", "--to", "-1"], "a sequence is a whole number of at least 0, not -1"),
            (["--reason", "x", "--to=-1"], "a sequence is a whole number of at least 0, not -1"),
            (["--reason", "  "], "a sequence reset needs a reason"),
            (["--reason", "new signer"], "the highest sequence is 0 already: there is nothing to reset"),
            (["--reason", "x", "--to", "5"], "the highest sequence is 0 already: there is nothing to reset"),
        ])
    func resetSequenceRefusals(arguments: [String], message: String) async throws {
        let directory = try TemporaryDirectory()
        #expect(
            try await directory.run(["apply", "--bundle", CLIRunner.packageRoot + "/policies", "--platform", "ios"])
                .status == 0)
        let result = try await directory.run(["bundle", "reset-sequence"] + arguments)
        #expect(result.status != 0, "\(arguments): \(result.stdout)")
        #expect(result.stderr.contains(message), "\(arguments): \(result.stderr)")
        let audit = try await directory.run(["audit"])
        #expect(!audit.stdout.contains("reset-sequence"), "a refused reset is not audited as done: \(audit.stdout)")
    }

    /// The second signer's `--audience` (none: keep the manifest's), and the audience and
    /// signers the manifest ends with.
    static let coSignings: [(second: String?, audience: String?, signers: Int)] = [
        (nil, "staging", 2),  // a co-signature keeps the audience signed for
        ("staging", "staging", 2),
        ("production", "production", 1),  // another audience: a new manifest, the first dropped
    ]

    @Test(
        "bundle sign beside another key's signature keeps the manifest's audience unless another is given",
        arguments: coSignings)
    func coSigning(second: String?, audience: String?, signers: Int) async throws {
        let directory = try TemporaryDirectory()
        let (first, other) = (directory.file("first.key"), directory.file("second.key"))
        for key in [first, other] { #expect(try await CLIRunner.run(["bundle", "keygen", "--out", key]).status == 0) }
        let bundle = directory.file("bundle")
        try FileManager.default.copyItem(atPath: CLIRunner.packageRoot + "/policies", toPath: bundle)
        #expect(
            try await CLIRunner.run(["bundle", "sign", bundle, "--key", first, "--audience", "staging"]).status == 0)
        let signed = try await CLIRunner.run(
            ["bundle", "sign", bundle, "--key", other] + (second.map { ["--audience", $0] } ?? []))
        #expect(signed.status == 0, "\(signed.stderr)")
        let file =
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: URL(fileURLWithPath: bundle + "/.custody-signature.json"))) as! [String: Any]
        #expect((file["manifest"] as? [String: Any])?["audience"] as? String == audience)
        #expect((file["signatures"] as? [Any])?.count == signers)
    }

    @Test(
        "bundle sign refuses a bundle no state would apply, and an empty one unless --allow-empty", arguments: signable)
    func signRefusesWhatNoStateApplies(files: [String: String], allowEmpty: Bool, refusal: String?) async throws {
        let directory = try TemporaryDirectory()
        let key = directory.file("signer.key")
        #expect(try await CLIRunner.run(["bundle", "keygen", "--out", key]).status == 0)
        let bundle = directory.file("bundle")
        try FileManager.default.createDirectory(atPath: bundle, withIntermediateDirectories: true)
        for (name, text) in files { try Data(text.utf8).write(to: URL(fileURLWithPath: bundle + "/" + name)) }
        let signed = try await CLIRunner.run(
            ["bundle", "sign", bundle, "--key", key] + (allowEmpty ? ["--allow-empty"] : []))
        let signature = FileManager.default.fileExists(atPath: bundle + "/.custody-signature.json")
        if let refusal {
            #expect(signed.status == 1 && signed.stderr.contains(refusal), "\(signed.stderr)")
            #expect(!signature, "nothing is signed")
        } else {
            #expect(signed.status == 0 && signed.stdout.hasPrefix("signed "), "\(signed.stderr)")
            #expect(signature)
        }
    }

    @Test(
        "keygen, sign, trust, apply; a tampered bundle exits 1 naming the file; verify agrees; history, show, rollback, freeze, fleet status"
    )
    func signing() async throws {
        let directory = try TemporaryDirectory()
        let state = directory.file("state.sqlite")
        let bundle = directory.file("bundle")
        try FileManager.default.copyItem(atPath: TestPaths.package("policies"), toPath: bundle)
        let key = directory.file("signer.key")
        let keygen = try await CLIRunner.run(["bundle", "keygen", "--out", key])
        #expect(keygen.status == 0 && keygen.stdout.hasPrefix("ed25519:"), "\(keygen.stderr)")
        let publicKey = keygen.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try FileManager.default.attributesOfItem(atPath: key)[.posixPermissions] as? Int == 0o600)
        #expect(try await CLIRunner.run(["bundle", "keygen", "--out", key]).status == 1, "never overwrites a key")

        #expect(
            try await CLIRunner.run(["apply", "--bundle", bundle, "--state", state, "--platform", "ios"]).status == 0)
        let first = try await CLIRunner.run(["bundle", "history", "--state", state, "--json"])
        let firstRevision = try #require(
            (try JSONSerialization.jsonObject(with: Data(first.stdout.utf8)) as? [[String: Any]])?.first?["revision"]
                as? String)
        #expect(
            try await CLIRunner.run(["trust", "add", "--public-key", publicKey, "--name", "ci", "--state", state])
                .status == 0
        )
        #expect(
            try await CLIRunner.run(["trust", "add", "--public-key", "ed25519:AAAA", "--state", state]).status == 1)

        let unsigned = try await CLIRunner.run(["apply", "--bundle", bundle, "--state", state])
        #expect(unsigned.status == 0 && unsigned.stdout.hasPrefix("already in force"), "the same files: nothing to do")

        try Data("{}".utf8).write(to: URL(fileURLWithPath: bundle + "/extra.json"))
        let refused = try await CLIRunner.run(["apply", "--bundle", bundle, "--state", state])
        #expect(refused.status == 1 && refused.stderr.contains("unsigned"), "\(refused.stderr)")

        let signed = try await CLIRunner.run(["bundle", "sign", bundle, "--key", key, "--sequence", "7"])
        #expect(signed.status == 0 && signed.stdout.contains("sequence 7"), "\(signed.stderr)")
        #expect(try await CLIRunner.run(["bundle", "verify", bundle, "--public-key", publicKey]).status == 0)
        #expect(try await CLIRunner.run(["bundle", "verify", bundle, "--state", state]).status == 0)
        #expect(try await CLIRunner.run(["apply", "--bundle", bundle, "--state", state]).status == 0)

        try Data("[]".utf8).write(to: URL(fileURLWithPath: bundle + "/extra.json"))
        let changed = try await CLIRunner.run(["apply", "--bundle", bundle, "--state", state])
        #expect(changed.status == 1 && changed.stderr.contains("extra.json:1:1: error:"), "\(changed.stderr)")
        let verify = try await CLIRunner.run(["bundle", "verify", bundle, "--public-key", publicKey])
        #expect(verify.status == 1 && verify.stderr.contains("changed-file"), "\(verify.stderr)")

        let show = try await CLIRunner.run(["bundle", "show", String(firstRevision.prefix(12)), "--state", state])
        #expect(show.status == 0 && show.stdout.contains("tenant.json"), "\(show.stderr)")
        let rollback = try await CLIRunner.run([
            "bundle", "rollback", firstRevision, "--reason", "test", "--state", state,
        ])
        #expect(rollback.status == 1 && rollback.stderr.contains("unsigned"), "never past trust: \(rollback.stderr)")
        #expect(try await CLIRunner.run(["bundle", "freeze", "--reason", "window", "--state", state]).status == 0)
        #expect(try await CLIRunner.run(["bundle", "sign", bundle, "--key", key, "--sequence", "8"]).status == 0)
        let frozen = try await CLIRunner.run(["apply", "--bundle", bundle, "--state", state])
        #expect(frozen.status == 1 && frozen.stderr.contains("window"), "\(frozen.stderr)")
        #expect(try await CLIRunner.run(["bundle", "unfreeze", "--state", state]).stdout == "unfrozen\n")
        #expect(try await CLIRunner.run(["apply", "--bundle", bundle, "--state", state]).status == 0)
        let history = try await CLIRunner.run(["bundle", "history", "--state", state])
        #expect(history.stdout.contains("sequence 8") && history.stdout.contains("rejected"), "\(history.stdout)")
        let fleet = try await CLIRunner.run(["fleet", "status", "--state", state, "--json"])
        #expect(fleet.status == 0 && fleet.stdout.contains("\"replicas\":[]"), "\(fleet.stdout) \(fleet.stderr)")
        let keys = try await CLIRunner.run(["trust", "list", "--state", state, "--json"])
        #expect(keys.stdout.contains("\"name\":\"ci\""))
    }
}
