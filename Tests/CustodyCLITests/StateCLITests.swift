import CustodyTestSupport
import Foundation
import Testing

@Suite("custody checkin, audit, wipe, watch")
struct StateCLITests {
    typealias Scratch = ProtectionCLITests.Scratch

    @Test("checkin records a time; a bad time is a usage error naming the option")
    func checkIn() throws {
        let scratch = try Scratch()
        let good = try scratch.run(["checkin", "--account", "alice@contoso.com", "--at", "2026-11-21T09:30:00Z"])
        #expect(good.status == 0)
        #expect(good.stdout == "upn:alice@contoso.com: checked in at 2026-11-21T09:30:00Z\n")
        let bad = try scratch.run(["checkin", "--account", "alice@contoso.com", "--at", "yesterday"])
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("--at must be an RFC 3339 time"))
    }

    @Test("a wipe is in the audit log; auditing can be switched off")
    func audit() throws {
        let scratch = try Scratch()
        try scratch.write("a.txt", "secret")
        #expect(try scratch.run(["protect", "--owner", "alice@contoso.com", "--force-encrypt", scratch.file("a.txt")]).status == 0)
        let wipe = try scratch.run(["wipe", "--account", "alice@contoso.com"])
        #expect(wipe.status == 0)
        #expect(wipe.stdout.contains("wiped 1 key version"))
        let log = try scratch.run(["audit", "--json"])
        #expect(log.status == 0)
        #expect(log.stdoutLines.count == 1)
        #expect(log.stdout.contains(#""kind":"wipe""#) && log.stdout.contains("upn:alice@contoso.com"))
        #expect(try scratch.run(["audit", "--set", "off"]).stdout == "auditing is off\n")
        #expect(try scratch.run(["wipe", "--account", "bob@contoso.com"]).status == 0)
        #expect(try scratch.run(["audit"]).stdoutLines.count == 1, "nothing written while off")
        #expect(try scratch.run(["audit", "--since", "2999-01-01T00:00:00Z"]).stdout.isEmpty)
    }

    @Test("watch prints each change as one JSON line, and a broken edit as bundleRejected")
    func watch() throws {
        let scratch = try Scratch()
        let bundle = scratch.file("bundle")
        try FileManager.default.createDirectory(atPath: bundle, withIntermediateDirectories: true)
        let tenant = #"{"accounts": [{"oid": "a0000000-0000-4000-8000-000000000001", "upn": "a@contoso.com", "groups": []}], "allowedAccounts": null}"#
        func policy(_ printBlocked: Bool) -> String {
            ##"{"value": [{"@odata.type": "#microsoft.graph.iosManagedAppProtection", "id": "T_1", "displayName": "P", "printBlocked": \##(printBlocked)}]}"##
        }
        try Data(tenant.utf8).write(to: URL(fileURLWithPath: bundle + "/tenant.json"))
        try Data(policy(false).utf8).write(to: URL(fileURLWithPath: bundle + "/policies.json"))

        let process = Process()
        process.executableURL = URL(fileURLWithPath: CLIRunner.executable)
        process.arguments = ["watch", "--bundle", bundle, "--interval", "20", "--state", scratch.file("state")]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        // A watchdog: should a line never come, closing the pipe ends the reads below.
        DispatchQueue.global().asyncAfter(deadline: .now() + 60) { if process.isRunning { process.terminate() } }
        var buffer = Data()
        func nextLine() -> String? {
            while true {
                if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: buffer[..<newline], as: UTF8.self)
                    buffer.removeSubrange(...newline)
                    return line
                }
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { return nil }
                buffer.append(chunk)
            }
        }
        #expect(nextLine() == #"{"event":"policyChanged","accounts":["a@contoso.com"]}"#)
        try Data(policy(true).utf8).write(to: URL(fileURLWithPath: bundle + "/policies.json"))
        #expect(nextLine() == #"{"event":"policyChanged","accounts":["a@contoso.com"]}"#)
        try Data("{".utf8).write(to: URL(fileURLWithPath: bundle + "/policies.json"))
        let rejected = nextLine() ?? ""
        #expect(rejected.hasPrefix(#"{"event":"bundleRejected","source":"#))
        #expect(rejected.contains("policies.json:1:2"))
    }
}
