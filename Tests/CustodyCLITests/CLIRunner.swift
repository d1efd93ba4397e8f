import CustodyTestSupport
import Foundation
#if canImport(Glibc)
    import Glibc
#endif

/// Runs the `custody` binary built beside the tests.
struct CLIRunner {
    struct Result {
        let status: Int32
        let stdout: String
        let stderr: String

        var stdoutLines: [String] {
            stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
        }
        var stderrLines: [String] {
            stderr.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
        }
    }

    /// The package root, for paths in arguments.
    static var packageRoot: String { TestPaths.packageRoot }

    /// `.build/<triple>/debug/custody`, next to the test binary.
    static let executable: String = {
        let testBinary =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var directory = URL(fileURLWithPath: testBinary).deletingLastPathComponent()
        while !FileManager.default.isExecutableFile(atPath: directory.appendingPathComponent("custody").path),
            directory.path != "/"
        {
            directory.deleteLastPathComponent()
        }
        return directory.appendingPathComponent("custody").path
    }()

    /// Runs `custody` with `arguments` and waits for it, on a thread of its own: a test that
    /// waited for its process on one of Swift's cooperative threads (one per core) held up
    /// every other test of the run meanwhile (issue 48).
    static func run(
        _ arguments: [String], stdin: String = "", executable: String = executable, environment: [String: String] = [:],
        currentDirectory: String = packageRoot
    ) async throws -> Result {
        try await offThePool {
            try runBlocking(
                arguments, stdin: stdin, executable: executable, environment: environment,
                currentDirectory: currentDirectory)
        }
    }

    /// `run`, waiting on the calling thread: for code that already runs on a thread of its own.
    static func runBlocking(
        _ arguments: [String], stdin: String = "", executable: String = executable, environment: [String: String] = [:],
        currentDirectory: String = packageRoot
    ) throws -> Result {
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: currentDirectory)
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let input = Pipe()
        let output = Pipe()
        let error = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = error
        try process.run()
        // Read both pipes while the process runs so a full pipe cannot stall it.
        let group = DispatchGroup()
        nonisolated(unsafe) var outData = Data()
        nonisolated(unsafe) var errData = Data()
        DispatchQueue.global().async(group: group) { outData = readToEnd(output.fileHandleForReading.fileDescriptor) }
        DispatchQueue.global().async(group: group) { errData = readToEnd(error.fileHandleForReading.fileDescriptor) }
        input.fileHandleForWriting.write(Data(stdin.utf8))
        try input.fileHandleForWriting.close()
        process.waitUntilExit()
        group.wait()
        return Result(
            status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self))
    }

    /// Runs `arguments` with standard output on `output` (a full disk, a pipe nobody reads) and
    /// standard input from `input` (none: empty): its exit status and what it said on standard
    /// error.
    static func run(
        _ arguments: [String], standardOutput output: FileHandle, standardInput input: FileHandle? = nil,
        executable: String = executable
    ) async throws -> (status: Int32, stderr: String) {
        return try await offThePool {
            try runBlocking(arguments, standardOutput: output, standardInput: input, executable: executable)
        }
    }

    /// `run(_:standardOutput:standardInput:executable:)`, waiting on the calling thread.
    static func runBlocking(
        _ arguments: [String], standardOutput output: FileHandle, standardInput input: FileHandle? = nil,
        executable: String = executable
    ) throws -> (status: Int32, stderr: String) {
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: packageRoot)
        process.standardInput = try input ?? FileHandle(forReadingFrom: URL(fileURLWithPath: "/dev/null"))
        process.standardOutput = output
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let said = readToEnd(errors.fileHandleForReading.fileDescriptor)
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: said, as: UTF8.self))
    }

    /// Everything `descriptor` yields until its end. A read interrupted by a signal (the
    /// SIGCHLD of another test's child, say) is tried again: Foundation's
    /// `readDataToEndOfFile()` stops the whole test process on EINTR instead.
    static func readToEnd(_ descriptor: Int32) -> Data {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count > 0 {
                data.append(contentsOf: buffer[..<count])
            } else if count == 0 || errno != EINTR {
                return data
            }
        }
    }

    /// What `descriptor` has now, waiting for some (empty at its end); retried on EINTR.
    static func readSome(_ descriptor: Int32) -> Data {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count >= 0 { return Data(buffer[..<count]) }
            if errno != EINTR { return Data() }
        }
    }

    /// The shared Graph exports (see `TestPaths.graphExamples`).
    static var sharedGraphExamples: String { TestPaths.graphExamples }
}
