import CustodyTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The tests' own way of running a program (`ChildProcess`, in place of Foundation's `Process`,
/// see docs/decisions.md): what every CLI test relies on, checked with a shell no one here wrote.
@Suite("Running a child process for the tests")
struct ChildProcessTests {
    /// Runs `/bin/sh -c script` and returns the process and what it printed.
    static func shell(_ script: String, in directory: String? = nil) throws -> (ChildProcess, String) {
        let child = ChildProcess()
        child.executableURL = URL(fileURLWithPath: "/bin/sh")
        child.arguments = ["-c", script]
        child.currentDirectoryURL = directory.map { URL(fileURLWithPath: $0) }
        child.standardInput = nil
        let output = Pipe()
        child.standardOutput = output
        child.standardError = FileHandle.nullDevice
        try child.run()
        let printed = CLIRunner.readToEnd(output.fileHandleForReading.fileDescriptor)
        child.waitUntilExit()
        return (child, String(decoding: printed, as: UTF8.self))
    }

    @Test(
        "the exit status, or the signal that ended it, is the termination status",
        arguments: [
            ("exit 0", Int32(0), false), ("exit 3", 3, false), ("exit 255", 255, false),
            ("kill -TERM $$", SIGTERM, true), ("kill -KILL $$", SIGKILL, true),
        ])
    func status(script: String, status: Int32, bySignal: Bool) throws {
        let (child, _) = try Self.shell(script)
        #expect(child.terminationStatus == status)
        #expect(child.terminatedBySignal == bySignal)
        #expect(!child.isRunning)
    }

    @Test("the child runs in its own directory; this process's stays where it was")
    func workingDirectory() throws {
        let before = FileManager.default.currentDirectoryPath
        let directory = try TemporaryDirectory()
        let (_, printed) = try Self.shell("pwd -P", in: directory.path)
        let expected = URL(fileURLWithPath: directory.path).resolvingSymlinksInPath().path
        #expect(printed == expected + "\n")
        #expect(FileManager.default.currentDirectoryPath == before)
    }

    @Test("the child holds none of this process's descriptors beyond its standard three")
    func descriptorsClosed() throws {
        // A pipe this process keeps open, as another test's would be while this child runs.
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer { ends.forEach { close($0) } }
        var status = stat()
        #expect(fstat(ends[0], &status) == 0)
        let (child, printed) = try Self.shell(#"for f in /proc/$$/fd/*; do readlink "$f" || true; done"#)
        #expect(child.terminationStatus == 0)
        #expect(!printed.isEmpty)
        #expect(!printed.contains("pipe:[\(status.st_ino)]"), "the child holds the test's pipe: \(printed)")
    }

    @Test("a program that cannot be run is an error naming it; nothing runs")
    func missingProgram() throws {
        let child = ChildProcess()
        child.executableURL = URL(fileURLWithPath: "/nonexistent/custody")
        let error = try #require(throws: SpawnError.self) { try child.run() }
        #expect(error.program == "/nonexistent/custody")
        #expect(error.code == ENOENT)
        #expect(child.processIdentifier == 0)
    }

    @Test("terminate ends a running child, and a reaped child is never signalled")
    func terminate() throws {
        let child = ChildProcess()
        child.executableURL = URL(fileURLWithPath: "/bin/sleep")
        child.arguments = ["60"]
        child.standardInput = nil
        try child.run()
        #expect(child.isRunning)
        child.terminate()
        child.waitUntilExit()
        #expect(child.terminationStatus == SIGTERM)
        #expect(child.terminatedBySignal)
        child.terminate()  // reaped: no signal to a pid that may be another's now
        #expect(child.terminationStatus == SIGTERM)
    }
}
