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
    /// a pipe this process reads to its end. Spawned and reaped with posix_spawn and waitpid:
    /// Foundation's Process, in a test process with many threads, was seen never to notice a
    /// child that had exited.
    private static func script(_ command: String, _ directory: String) throws -> String {
        let output = directory + ".\(command).out"
        let errors = directory + ".\(command).err"
        defer { for file in [output, errors] { try? FileManager.default.removeItem(atPath: file) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errors, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let arguments = ["/bin/bash", TestPaths.package("scripts/test-postgres.sh"), command, directory]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        // Durable: a cluster stopped as a crash would keeps every commit it acknowledged.
        let environment = ProcessInfo.processInfo.environment.merging(["CUSTODY_TEST_POSTGRES_DURABLE": "1"]) { $1 }
        var envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for variable in envp { free(variable) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, "/bin/bash", &actions, nil, &argv, &envp)
        guard spawned == 0 else {
            throw ScriptError(description: "test-postgres.sh \(command): posix_spawn failed (\(spawned))")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let printed = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        // Exited normally with status 0: the low 7 bits (the signal) and the exit code are 0.
        guard status == 0 else {
            let said = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
            throw ScriptError(description: "test-postgres.sh \(command) failed (wait status \(status)): \(said)")
        }
        return printed
    }
}
