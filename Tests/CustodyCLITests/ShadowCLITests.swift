import CustodyTestSupport
import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import Testing

/// `custody bundle shadow` (issue 51), with a running `custody serve` deciding under it.
@Suite("custody bundle shadow", .timeLimit(.minutes(2)))
struct ShadowCLITests {
    /// The example bundle with every staff member's print blocked, in `name`.
    static func candidate(in scratch: TemporaryDirectory, _ name: String) throws -> String {
        let directory = scratch.file(name)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let source = CLIRunner.packageRoot + "/policies"
        for file in try FileManager.default.contentsOfDirectory(atPath: source) where file.hasSuffix(".json") {
            var text = try String(contentsOfFile: source + "/" + file, encoding: .utf8)
            if file == "all-staff.json" {
                text = text.replacingOccurrences(of: #""printBlocked": false"#, with: #""printBlocked": true"#)
            }
            try text.write(toFile: directory + "/" + file, atomically: true, encoding: .utf8)
        }
        return directory
    }

    @Test(
        "set, status (with what a running service counted), stop, promote by apply; none set is exit 2; refused: the bundle in force, a directory that is not one"
    )
    func workflow() async throws {
        let scratch = try TemporaryDirectory()
        try await scratch.applyExampleBundle()
        let none = try await scratch.run(["bundle", "shadow", "status"])
        #expect(none.status == 2 && none.stderr.contains("the state has no shadow bundle"), "\(none.stderr)")
        let noneJSON = try await scratch.run(["bundle", "shadow", "status", "--json"])
        #expect(noneJSON.status == 2 && noneJSON.stdout == "{\n  \"shadow\" : null\n}\n", "\(noneJSON.stdout)")
        let empty = try await scratch.run(["bundle", "shadow", ""])
        #expect(empty.status == 64 && empty.stderr.contains("DIR is empty: give a bundle directory"), "\(empty.stderr)")
        #expect(try await scratch.run(["bundle", "shadow", "stop"]).stdout == "no shadow was running\n")
        let same = try await scratch.run(["bundle", "shadow", CLIRunner.packageRoot + "/policies"])
        #expect(same.status != 0 && same.stderr.contains("is the bundle in force already"), "\(same.stderr)")
        let missing = try await scratch.run(["bundle", "shadow", scratch.file("nowhere")])
        #expect(missing.status != 0 && missing.stderr.contains("nowhere"), "\(missing.stderr)")

        let token = try #require(
            try await scratch.run(["tokens", "create", "--scope", "decide"]).stdoutLines.last)
        let server = try await ServeProcess(
            ["--state", scratch.file("state"), "--without-keys"], log: scratch.file("serve.log"))
        defer { server.stop() }
        let candidate = try Self.candidate(in: scratch, "candidate")
        let set = try await scratch.run(["bundle", "shadow", candidate])
        #expect(set.status == 0 && set.stdout.hasPrefix("shadow "), "\(set.stderr)")
        // The service hears of it through the change log within a poll; bob (All Staff) may
        // print, the candidate blocks it.
        func print() async throws -> Bool {
            var request = URLRequest(url: URL(string: server.address + "/v1/decisions")!)
            request.httpMethod = "POST"
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            request.httpBody = Data(#"{"action":"print","account":"bob@contoso.com"}"#.utf8)
            let (data, _) = try await URLSession.shared.data(for: request)
            return (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["allowed"] as? Bool == true
        }
        var status: [String: Any] = [:]
        for _ in 0..<100 {
            #expect(try await print())
            try await Task.sleep(for: .milliseconds(100))
            let read = try await scratch.run(["bundle", "shadow", "status", "--json"])
            let answer = try #require(try JSONSerialization.jsonObject(with: Data(read.stdout.utf8)) as? [String: Any])
            status = try #require(answer["shadow"] as? [String: Any])
            if ((status["report"] as? [String: Any])?["tightened"] as? Int ?? 0) > 0 { break }
        }
        let report = try #require(status["report"] as? [String: Any])
        #expect((report["tightened"] as? Int ?? 0) > 0 && report["loosened"] as? Int == 0, "\(status)")
        #expect(
            status["replicas"] as? Int == 1 && status["decidingHere"] as? Bool == false, "a command decides nothing")
        let text = try await scratch.run(["bundle", "shadow", "status"])
        #expect(text.stdout.contains("running since ") && text.stdout.contains("TIGHTENS"), "\(text.stdout)")
        #expect(text.stdout.contains("by 1 service process(es)") && text.stdout.contains("e.g. decision "))
        #expect(
            text.stdout.contains("live: printBlocked is false") && text.stdout.contains("shadow: printBlocked is true"))
        #expect(try await scratch.run(["bundle", "shadow", "status", "--fail-on", "loosened"]).status == 0)
        #expect(try await scratch.run(["bundle", "shadow", "status", "--fail-on", "flipped"]).status == 1)

        #expect(try await scratch.run(["bundle", "shadow", "stop"]).stdout == "shadow stopped\n")
        let stopped = try await scratch.run(["bundle", "shadow", "status"]).stdout
        #expect(stopped.contains("ended ") && stopped.contains("stopped by"), "\(stopped)")
        // Set again, then promoted: applying its files ends it.
        #expect(try await scratch.run(["bundle", "shadow", "set", candidate]).status == 0)
        #expect(try await scratch.run(["apply", "--bundle", candidate]).status == 0)
        let promoted = try await scratch.run(["bundle", "shadow", "status"]).stdout
        #expect(promoted.contains(", promoted; ran from "), "\(promoted)")
        let audit = try await scratch.run(["audit"]).stdout
        #expect(audit.contains("shadow-end") && audit.contains("promoted"), "\(audit)")
    }
}
