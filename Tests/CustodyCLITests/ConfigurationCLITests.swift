import CustodyTestSupport
import Foundation
import Testing

@Suite("custody config, spec and secrets")
struct ConfigurationCLITests {
    static let outlook = ["--platform", "ios", "--app", "com.microsoft.office.outlook"]
    static let spec = "specs/com.microsoft.office.outlook.spec.json"

    @Test("config show prints fullData and, per key, all values and whether they conflict")
    func show() async throws {
        let result = try await CLIRunner.run(
            ["config", "show", "--bundle", "policies", "--account", "alice@contoso.com"] + Self.outlook)
        #expect(result.status == 0, "\(result.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect((json["fullData"] as? [[String: String]])?.count == 2)
        let keys = try #require(json["keys"] as? [String: [String: Any]])
        #expect(keys["com.contoso.outlook.SignatureLines"]?["values"] as? [String] == ["2", "4"])
        #expect(keys["com.contoso.outlook.SignatureLines"]?["conflict"] as? Bool == true)
        #expect(keys["com.microsoft.outlook.Mail.FocusedInbox"]?["conflict"] as? Bool == false)

        let unmanaged = try await CLIRunner.run(
            ["config", "show", "--bundle", "policies", "--account", "mallory@fabrikam.com"] + Self.outlook)
        #expect(unmanaged.status == 0 && unmanaged.stdout == "null\n")
    }

    struct KeyCase: Sendable, CustomTestStringConvertible {
        let account: String
        let arguments: [String]
        let output: String?
        var testDescription: String { "\(account) \(arguments.joined(separator: " "))" }
    }

    @Test(
        "config show --key prints the resolved value alone, or nothing and exit 1",
        arguments: [
            KeyCase(
                account: "alice",
                arguments: ["--key", "com.contoso.outlook.SignatureLines", "--type", "integer", "--query", "max"],
                output: "4"),
            KeyCase(
                account: "alice",
                arguments: ["--key", "com.contoso.outlook.SignatureLines", "--type", "integer", "--query", "min"],
                output: "2"),
            KeyCase(account: "alice", arguments: ["--key", "com.contoso.outlook.SignatureLines"], output: "2"),
            KeyCase(
                account: "alice",
                arguments: [
                    "--key", "com.microsoft.outlook.Mail.BlockExternalImagesEnabled", "--type", "bool", "--query", "or",
                ], output: "true"),
            KeyCase(
                account: "alice",
                arguments: [
                    "--key", "com.microsoft.outlook.Mail.BlockExternalImagesEnabled", "--type", "bool", "--query",
                    "and",
                ], output: "false"),
            KeyCase(
                account: "bob",
                arguments: ["--key", "com.contoso.outlook.SignatureLines", "--type", "double", "--query", "max"],
                output: "2.0"),
            KeyCase(
                account: "alice", arguments: ["--key", "com.microsoft.outlook.Mail.FocusedInbox", "--type", "integer"],
                output: nil),
            KeyCase(account: "dave", arguments: ["--key", "com.contoso.outlook.SignatureLines"], output: nil),
            KeyCase(account: "mallory", arguments: ["--key", "com.contoso.outlook.SignatureLines"], output: nil),
        ])
    func key(_ keyCase: KeyCase) async throws {
        let result = try await CLIRunner.run(
            ["config", "show", "--bundle", "policies", "--account", keyCase.account + "@contoso.com"] + Self.outlook
                + keyCase.arguments)
        if let output = keyCase.output {
            #expect(result.status == 0)
            #expect(result.stdout == output + "\n")
        } else {
            #expect(result.status == 1)
            #expect(result.stdout.isEmpty)
        }
    }

    @Test("config show refuses a query that does not fit the type")
    func badQuery() async throws {
        let result = try await CLIRunner.run(
            [
                "config", "show", "--bundle", "policies", "--account", "alice@contoso.com", "--key", "k", "--type",
                "string", "--query", "and",
            ])
        #expect(result.status == 64)
        #expect(result.stderr.contains("--query for a string must be one of: any, min, max"))
    }

    @Test("config validate passes the example, and finds bad values where they are and required settings accounts lack")
    func validate() async throws {
        let good = try await CLIRunner.run([
            "config", "validate", "--spec", Self.spec, "--bundle", "policies", "--platform", "ios",
        ])
        #expect(good.status == 0, "\(good.stdout)\(good.stderr)")
        #expect(good.stdoutLines.last == "0 errors, 2 warnings")

        let directory = try TemporaryDirectory(copying: "policies")
        try directory.edit("app-configuration.json") {
            $0.replacingOccurrences(of: #""value": "4""#, with: #""value": "40""#)
        }
        let bad = try await CLIRunner.run(["config", "validate", "--spec", Self.spec, "--bundle", directory.path])
        #expect(bad.status == 1)
        let line = try #require(bad.stdoutLines.first { $0.contains("error:") })
        #expect(
            line.hasPrefix(
                directory.path
                    + "/app-configuration.json:21:9: error: configuration 'Outlook: finance' sets 'com.contoso.outlook.SignatureLines': 40 is above"
            ), "\(line)")
        #expect(line.contains("above the maximum 10 (com.microsoft.office.outlook reads it as integer)"))

        let strict = try directory.write(
            "strict.spec.json",
            #"{"app": "com.microsoft.office.outlook", "settings": [{"key": "com.microsoft.outlook.Mail.FocusedInbox", "type": "bool", "required": true}]}"#
        )
        let missing = try await CLIRunner.run(["config", "validate", "--spec", strict, "--bundle", "policies"])
        #expect(missing.status == 1)
        #expect(
            missing.stdout.contains(
                "strict.spec.json:1:54: error: the required setting 'com.microsoft.outlook.Mail.FocusedInbox' reaches no configuration of 1 managed account (dave@contoso.com)"
            ))
    }

    @Test("spec prints Markdown and JSON; a spec with an unknown member is an error where it is")
    func spec() async throws {
        let markdown = try await CLIRunner.run([
            "spec", "--app", "com.microsoft.office.outlook", "--directory", "specs",
        ])
        #expect(markdown.status == 0)
        #expect(markdown.stdout.contains("| `com.contoso.outlook.SignatureLines` | integer | no | 0 to 10 | `2` |"))
        #expect(markdown.stdout.contains("- `type-mismatch`:"))
        #expect(markdown.stdout.contains("| `smtp-relay` | password | app-wide |"))

        let json = try await CLIRunner.run(["spec", "--spec", Self.spec, "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect((object["settings"] as? [Any])?.count == 4)
        #expect(object["decoderErrors"] as? [String] == ["missing-key", "type-mismatch", "invalid-value", "too-large"])

        let wrongApp = try await CLIRunner.run(["spec", "--app", "com.contoso.other", "--spec", Self.spec])
        #expect(wrongApp.status == 64, "--app and --spec together are refused")

        let directory = try TemporaryDirectory()
        let broken = try directory.write(
            "com.contoso.notes.spec.json", "{\n  \"app\": \"com.contoso.notes\",\n  \"setings\": []\n}\n")
        let result = try await CLIRunner.run(["spec", "--spec", broken])
        #expect(result.status == 1)
        #expect(result.stderr.hasPrefix(broken + ":3:3: error: unknown member 'setings'"))
    }
}

extension ConfigurationCLITests {
    @Test(
        "secrets from standard input and files; values never printed, logged, audited or in --help; wiped with the account"
    )
    func secrets() async throws {
        let directory = try TemporaryDirectory()
        var seen: [String] = []
        func run(_ arguments: [String], stdin: String = "", verbose: Bool = true) async throws -> CLIRunner.Result {
            let result = try await CLIRunner.run(
                arguments + ["--state", directory.path + "/state"] + (verbose ? ["--log-level", "trace"] : []),
                stdin: stdin,
                environment: ["CUSTODY_MASTER_KEY_FILE": directory.path + "/master.key"])
            seen.append(result.stdout + result.stderr)
            return result
        }
        let password = "S3cret-\(UUID().uuidString)"
        let now = Date()
        let made = try TestCertificates.make(
            .p256, commonName: "Contoso CLI", notBefore: now - 3_600, notAfter: now + 86_400)
        let other = try TestCertificates.make(
            .p256, commonName: "Other", notBefore: now - 3_600, notAfter: now + 86_400)
        let keyLine = String(made.keyPEM.split(separator: "\n")[1])
        let certificate = try directory.write("cert.pem", made.certificatePEM)
        let key = try directory.write("key.pem", made.keyPEM)
        let otherKey = try directory.write("other.pem", other.keyPEM)
        let garbage = try directory.write(
            "garbage.pem", "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n")

        #expect(try await run(["audit", "--set", "on"], verbose: false).status == 0)
        let added = try await run(
            ["secrets", "add-password", "vpn", "--account", "alice@contoso.com", "--bundle", "policies"],
            stdin: password + "\n")
        #expect(added.status == 0, "\(added.stderr)")
        #expect(added.stdout == "stored password vpn for alice@contoso.com\n")
        #expect(try await run(["secrets", "add-password", "smtp-relay"], stdin: password).status == 0)
        let storedCertificate = try await run(["secrets", "add-certificate", "root", certificate])
        #expect(storedCertificate.status == 0 && storedCertificate.stdout.contains("CN=Contoso CLI"))
        #expect(
            try await run([
                "secrets", "add-identity", "device", "--certificate", certificate, "--key", key, "--account",
                "alice@contoso.com", "--bundle", "policies",
            ]).status == 0)

        let mismatched = try await run([
            "secrets", "add-identity", "device2", "--certificate", certificate, "--key", otherKey,
        ])
        #expect(mismatched.status == 1 && mismatched.stderr.contains("does not belong to the certificate"))
        let notCertificate = try await run(["secrets", "add-certificate", "bad", garbage])
        #expect(notCertificate.status == 1 && notCertificate.stderr.contains("not a PEM certificate"))
        #expect(try await run(["secrets", "add-password", "empty"], stdin: "").status == 1)

        // The account's secrets are filed under its tenant OID, so the OID finds them too.
        let listed = try await run([
            "secrets", "list", "--account", "a1f0c7d2-5b1e-4c3a-9e8f-000000000001", "--bundle", "policies",
        ])
        #expect(
            listed.stdoutLines.map { $0.split(separator: "\t").prefix(2).joined(separator: " ") } == [
                "device identity", "vpn password",
            ], "\(listed.stderr)")
        let appWide = try await run(["secrets", "list", "--json"])
        let entries = try #require(
            try JSONSerialization.jsonObject(with: Data(appWide.stdout.utf8)) as? [[String: Any]])
        #expect(entries.compactMap { $0["identifier"] as? String } == ["root", "smtp-relay"])

        #expect(try await run(["secrets", "remove", "smtp-relay"]).status == 0)
        #expect(try await run(["secrets", "remove", "smtp-relay"]).status == 1)
        #expect(try await run(["wipe", "--account", "alice@contoso.com", "--bundle", "policies"]).status == 0)
        #expect(
            try await run(["secrets", "list", "--account", "alice@contoso.com", "--bundle", "policies"]).stdout.isEmpty)

        for command in [[], ["add-password"], ["add-certificate"], ["add-identity"], ["list"], ["remove"]] {
            seen.append(try await CLIRunner.run(["secrets"] + command + ["--help"]).stdout)
        }
        let audit = try await run(["audit", "--json"], verbose: false)
        #expect(
            audit.stdout.contains("store password") && audit.stdout.contains("\"detail\":\"vpn\""),
            "the audit log records the change")
        for output in seen {
            #expect(!output.contains(password) && !output.contains(keyLine), "disclosed: \(output)")
        }
        // At rest, the state holds sealed bytes only.
        #expect(FileManager.default.fileExists(atPath: directory.path + "/state"))
        for file in ["state", "state-wal"] {
            let bytes = (try? Data(contentsOf: URL(fileURLWithPath: directory.path + "/" + file))) ?? Data()
            #expect(bytes.range(of: Data(password.utf8)) == nil, "\(file) holds the password")
        }
    }
}
