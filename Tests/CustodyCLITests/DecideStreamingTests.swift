import CustodyTestSupport
import Foundation
import Testing

@Suite("custody decide: parallel and interactive use")
struct DecideStreamingTests {
    /// The example queries many times over, with a bad line every 997 lines and blank lines.
    static let bigInput: String = {
        let examples =
            (try? String(contentsOfFile: CLIRunner.packageRoot + "/policies/examples.jsonl", encoding: .utf8)) ?? ""
        let lines = examples.split(separator: "\n").map(String.init)
        var output: [String] = []
        for index in 0..<8_000 {
            output.append(index % 997 == 0 ? #"{"action":"saveTo","owner":"# : lines[index % lines.count])
        }
        return output.joined(separator: "\n") + "\n"
    }()

    @Test("the answers are the same, in the same order, whatever the number of jobs")
    func jobsDoNotChangeOutput() async throws {
        let arguments = ["decide", "--bundle", "policies", "--platform", "ios"]
        let one = try await CLIRunner.run(arguments + ["--jobs", "1"], stdin: Self.bigInput)
        // Small blocks: many batches, each split three ways, so lines cross every kind of boundary.
        let three = try await CLIRunner.run(
            arguments + ["--jobs", "3", "--block-bytes", "50000"], stdin: Self.bigInput)
        #expect(one.status == 1)
        #expect(three.status == 1)
        #expect(one.stdoutLines.count == 8_000)
        #expect(one.stdout == three.stdout)
        let errors = three.stdoutLines.enumerated().filter { $0.element.hasPrefix(#"{"error""#) }
        #expect(errors.map(\.offset) == Array(stride(from: 0, to: 8_000, by: 997)))
        #expect(errors.allSatisfy { $0.element.contains(#""line":\#($0.offset + 1),"code":"invalid-query"}"#) })
    }

    @Test("a block size at the top of its range reads as the whole input at once, not a crash")
    func hugeBlocks() async throws {
        let arguments = ["decide", "--bundle", "policies", "--platform", "ios"]
        let one = try await CLIRunner.run(arguments + ["--jobs", "1"], stdin: Self.bigInput)
        let huge = try await CLIRunner.run(
            arguments + ["--jobs", "2", "--block-bytes", String(Int.max)], stdin: Self.bigInput)
        #expect(huge.status == one.status)
        #expect(huge.stdout == one.stdout)
    }

    /// Where the queries come from (nil: a file of `bigInput`) and the answers go, and the last
    /// line of standard error.
    static let brokenStreams: [(label: String, input: String?, output: String, message: String)] = [
        (
            "answers that cannot be written", nil, "/dev/full",
            "error: writing standard output failed: No space left on device"
        ),
        // A directory opens for reading, but reading it fails (EISDIR).
        (
            "input that cannot be read", "policies", "/dev/null",
            "error: reading standard input failed after line 0: Is a directory"
        ),
    ]

    @Test("a stream that fails ends the command with an error that says why", arguments: brokenStreams)
    func brokenStream(label: String, input: String?, output: String, message: String) async throws {
        // The queries come from a file, not a pipe this test writes: the command may end
        // before it has read them all, and a write to its closed pipe would end the test.
        let directory = try TemporaryDirectory()
        let queries = directory.file("queries.jsonl")
        try Self.bigInput.write(toFile: queries, atomically: true, encoding: .utf8)
        let (status, said) = try await CLIRunner.run(
            ["decide", "--bundle", "policies", "--platform", "ios"],
            standardOutput: FileHandle(forWritingTo: URL(fileURLWithPath: output)),
            standardInput: FileHandle(
                forReadingFrom: URL(fileURLWithPath: input.map { CLIRunner.packageRoot + "/" + $0 } ?? queries)))
        #expect(status == 1, "\(label)")
        #expect(said.hasSuffix(message + "\n"), "\(label): \(said)")
    }

    @Test(
        "where SIGPIPE is ignored, a reader that closed its end is a failure said on standard error, not a success",
        .timeLimit(.minutes(1)))
    func closedReader() async throws {
        let directory = try TemporaryDirectory()
        let queries = directory.file("queries.jsonl")
        try Self.bigInput.write(toFile: queries, atomically: true, encoding: .utf8)
        // A pipe whose reader is closed, and a shell that ignores SIGPIPE (as some parents do) and
        // runs the command with it ignored.
        var descriptors: [Int32] = [0, 0]
        #expect(pipe(&descriptors) == 0)
        close(descriptors[0])
        let (status, said) = try await CLIRunner.run(
            [
                "-c", #"trap "" PIPE; exec "$0" "$@""#, CLIRunner.executable, "decide", "--bundle", "policies",
                "--platform", "ios",
            ],
            standardOutput: FileHandle(fileDescriptor: descriptors[1], closeOnDealloc: true),
            standardInput: FileHandle(forReadingFrom: URL(fileURLWithPath: queries)), executable: "/bin/sh")
        // Exit status 1: not 0, and not ended by SIGPIPE (its status would be 13).
        #expect(status == 1)
        #expect(said.hasSuffix("error: writing standard output failed: Broken pipe\n"), "\(said)")
    }

    @Test("a writer that waits for each answer gets it before sending the next query")
    func interactive() async throws {
        try await offThePool { try Self.interactiveBlocking() }
    }

    private static func interactiveBlocking() throws {
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: CLIRunner.executable)
        process.arguments = ["decide", "--bundle", "policies", "--platform", "ios", "--jobs", "2"]
        process.currentDirectoryURL = URL(fileURLWithPath: CLIRunner.packageRoot)
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        for account in ["alice@contoso.com", "bob@contoso.com", "nobody@fabrikam.com"] {
            input.fileHandleForWriting.write(Data((#"{"action":"print","account":"\#(account)"}"# + "\n").utf8))
            let line = try #require(
                readLine(from: output.fileHandleForReading, timeout: .seconds(20)), "no answer for \(account)")
            #expect(line.hasPrefix(#"{"action":"print","allowed":"#))
        }
        try input.fileHandleForWriting.close()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }

    /// One line from `handle`, or nil when none comes within `timeout`.
    private static func readLine(from handle: FileHandle, timeout: Duration) -> String? {
        let box = LineBox()
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            var bytes: [UInt8] = []
            while true {
                let chunk = handle.readData(ofLength: 1)
                guard let byte = chunk.first else { break }
                if byte == UInt8(ascii: "\n") { break }
                bytes.append(byte)
            }
            box.line = String(decoding: bytes, as: UTF8.self)
            done.signal()
        }
        let seconds = Double(timeout.components.seconds)
        return done.wait(timeout: .now() + seconds) == .success ? box.line : nil
    }
}

private final class LineBox: @unchecked Sendable {
    var line: String?
}
