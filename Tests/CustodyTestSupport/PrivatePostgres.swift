import Foundation

/// A PostgreSQL cluster of one test's own (scripts/test-postgres.sh), for the faults that would
/// disturb every other test on the shared one: stopping the server as a crash would and starting
/// it again on the same port. Its commits are durable (`synchronous_commit` on), as a real
/// server's are.
public final class PrivatePostgres: Sendable {
    public let url: String
    private let directory: String

    public struct ScriptError: Error, CustomStringConvertible {
        public let description: String
    }

    public init() throws {
        directory = "/tmp/custody-private-postgres-\(UInt64.random(in: 0..<UInt64.max))"
        url = try Self.script("start", directory).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Stops the server with `-m immediate`: every session is cut, nothing is checkpointed.
    public func halt() throws { _ = try Self.script("halt", directory) }

    /// Starts it again on the same port.
    public func resume() throws { _ = try Self.script("resume", directory) }

    /// Stops it and removes its directory.
    public func stop() { _ = try? Self.script("stop", directory) }

    /// Runs the script with its output in files, never pipes: the server it starts must not hold
    /// a pipe this process reads to its end. `ChildProcess`, not Foundation's `Process`, which in
    /// a test process with many threads was seen never to notice a child that had exited.
    private static func script(_ command: String, _ directory: String) throws -> String {
        let output = directory + ".\(command).out"
        let errors = directory + ".\(command).err"
        defer { for file in [output, errors] { try? FileManager.default.removeItem(atPath: file) } }
        for file in [output, errors] {
            guard FileManager.default.createFile(atPath: file, contents: nil, attributes: [.posixPermissions: 0o600])
            else { throw ScriptError(description: "test-postgres.sh \(command): cannot create \(file)") }
        }
        let script = ChildProcess()
        script.executableURL = URL(fileURLWithPath: "/bin/bash")
        script.arguments = [TestPaths.package("scripts/test-postgres.sh"), command, directory]
        // Durable: a cluster stopped as a crash would keeps every commit it acknowledged.
        script.environment = ProcessInfo.processInfo.environment.merging(["CUSTODY_TEST_POSTGRES_DURABLE": "1"]) { $1 }
        script.standardInput = nil
        script.standardOutput = FileHandle(forWritingAtPath: output)
        script.standardError = FileHandle(forWritingAtPath: errors)
        do {
            try script.run()
        } catch {
            throw ScriptError(description: "test-postgres.sh \(command): \(error)")
        }
        script.waitUntilExit()
        let printed = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        guard script.terminationStatus == 0, !script.terminatedBySignal else {
            let said = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
            throw ScriptError(
                description: "test-postgres.sh \(command) failed (status \(script.terminationStatus)): \(said)")
        }
        return printed
    }
}
