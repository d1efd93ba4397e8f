import CustodyTestSupport
import Foundation
import Testing

/// Every fuzzing harness replays its committed seeds (Fuzz/Corpus) and every input a fuzzing
/// run ever failed on (Fuzz/Regressions, one file per finding, named after it), with the
/// harness binary built without libFuzzer: each finding stays a test.
@Suite("Fuzzing corpora replay")
struct FuzzCorpusTests {
    static let harnesses = ["json", "query", "bundle", "envelope", "matrix", "configuration", "spec"]

    static let binary = (CLIRunner.executable as NSString).deletingLastPathComponent + "/CustodyFuzz"

    @Test("the harness list is the one the Makefile fuzzes")
    func harnessList() async throws {
        let result = try await run(["list"])
        #expect(result.status == 0)
        #expect(result.stdout.split(separator: "\n").map { String($0.prefix { $0 != ":" }) } == Self.harnesses)
        let makefile = try String(contentsOfFile: CLIRunner.packageRoot + "/Makefile", encoding: .utf8)
        #expect(makefile.contains("FUZZ_HARNESSES := " + Self.harnesses.joined(separator: " ")))
    }

    @Test("replays the seeds and the regressions of every harness", arguments: harnesses)
    func replay(harness: String) async throws {
        var paths = [CLIRunner.packageRoot + "/Fuzz/Corpus/" + harness]
        let regressions = CLIRunner.packageRoot + "/Fuzz/Regressions/" + harness
        if FileManager.default.fileExists(atPath: regressions) { paths.append(regressions) }
        let result = try await run(["replay", harness] + paths)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("\(harness): "), "\(result.stdout)")
        #expect(!result.stdout.contains(": 0 inputs replayed"))
    }

    private func run(_ arguments: [String]) async throws -> CLIRunner.Result {
        try await offThePool { try Self.runBlocking(arguments) }
    }

    private static func runBlocking(_ arguments: [String]) throws -> CLIRunner.Result {
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: CLIRunner.packageRoot)
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        try process.run()
        let out = CLIRunner.readToEnd(output.fileHandleForReading.fileDescriptor)
        let err = CLIRunner.readToEnd(error.fileHandleForReading.fileDescriptor)
        process.waitUntilExit()
        return CLIRunner.Result(
            status: process.terminationStatus, stdout: String(decoding: out, as: UTF8.self),
            stderr: String(decoding: err, as: UTF8.self))
    }
}
