import CustodyTestSupport
import Foundation

/// Runs the `custody` binary built beside the tests.
struct CLIRunner {
    struct Result {
        let status: Int32
        let stdout: String
        let stderr: String

        var stdoutLines: [String] { stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init) }
        var stderrLines: [String] { stderr.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init) }
    }

    /// The package root, for paths in arguments.
    static var packageRoot: String { TestPaths.packageRoot }

    /// `.build/<triple>/debug/custody`, next to the test binary.
    static let executable: String = {
        let testBinary = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var directory = URL(fileURLWithPath: testBinary).deletingLastPathComponent()
        while !FileManager.default.isExecutableFile(atPath: directory.appendingPathComponent("custody").path), directory.path != "/" {
            directory.deleteLastPathComponent()
        }
        return directory.appendingPathComponent("custody").path
    }()

    static func run(_ arguments: [String], stdin: String = "", executable: String = executable, environment: [String: String] = [:]) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: packageRoot)
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
        DispatchQueue.global().async(group: group) { outData = output.fileHandleForReading.readDataToEndOfFile() }
        DispatchQueue.global().async(group: group) { errData = error.fileHandleForReading.readDataToEndOfFile() }
        input.fileHandleForWriting.write(Data(stdin.utf8))
        try input.fileHandleForWriting.close()
        process.waitUntilExit()
        group.wait()
        return Result(status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self), stderr: String(decoding: errData, as: UTF8.self))
    }

    /// The shared Graph exports (see `TestPaths.graphExamples`).
    static var sharedGraphExamples: String { TestPaths.graphExamples }
}
