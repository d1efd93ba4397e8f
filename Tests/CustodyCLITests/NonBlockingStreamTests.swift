import CustodyTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A parent may give custody a pipe it made non-blocking (`O_NONBLOCK` belongs to the open file
/// description, shared with the child): a read of an empty pipe or a write to a full one then
/// fails with EAGAIN, which is no error of the stream. Every command that streams waits and goes
/// on, delivering every byte.
@Suite("Non-blocking standard input and output")
struct NonBlockingStreamTests {
    enum Side: String, CustomStringConvertible {
        case input, output
        var description: String { rawValue }
    }

    /// Commands that stream: what they read, and a check of what they wrote.
    enum Workload: String, CaseIterable, CustomStringConvertible {
        case decide, protect, unprotect, addPassword, checkInFacts
        var description: String { rawValue }
    }

    static let cases: [(Workload, Side)] = Workload.allCases.flatMap { workload in
        [.addPassword, .checkInFacts].contains(workload)
            ? [(workload, .input)] : [(workload, .input), (workload, .output)]
    }

    @Test("a non-blocking pipe a reader drains slowly, or a writer fills slowly, loses nothing", arguments: cases)
    func slowPipe(workload: Workload, side: Side) async throws {
        let scratch = try TemporaryDirectory()
        let environment = ["CUSTODY_MASTER_KEY_FILE": scratch.file("master.key")]
        let state = ["--state", scratch.file("state")]
        let applied = try await CLIRunner.run(
            ["apply", "--bundle", CLIRunner.packageRoot + "/policies", "--platform", "ios"] + state,
            environment: environment)
        try #require(applied.status == 0, "\(applied.stderr)")

        // More than a pipe holds (64 KiB), so that the writer and the reader each wait.
        var random = SystemRandomNumberGenerator()
        let plaintext = (0..<(1 << 20) + 12_345).map { _ in UInt8.random(in: 0...255, using: &random) }
        let queries = Array(
            (try String(contentsOfFile: CLIRunner.packageRoot + "/policies/examples.jsonl", encoding: .utf8))
                .split(separator: "\n").map { $0 + "\n" }.joined().utf8)
        let manyQueries = Array([[UInt8]](repeating: queries, count: 200).joined())

        switch workload {
        case .decide:
            let slow = try await Self.run(
                ["decide"] + state, input: manyQueries, nonBlocking: side, environment: environment)
            let plain = try await Self.run(
                ["decide"] + state, input: manyQueries, nonBlocking: nil, environment: environment)
            #expect(slow.status == 0, "\(slow.stderr)")
            // Compared first: on a difference, #expect would diff the megabytes element by element.
            let same = slow.stdout == plain.stdout
            #expect(same && !plain.stdout.isEmpty, "\(slow.stdout.count) bytes against \(plain.stdout.count)")
        case .protect:
            let slow = try await Self.run(
                ["protect", "--owner", "alice@contoso.com", "-", "-"] + state, input: plaintext, nonBlocking: side,
                environment: environment)
            #expect(slow.status == 0, "\(slow.stderr)")
            let back = try await Self.run(
                ["unprotect", "-", "-"] + state, input: slow.stdout, nonBlocking: nil, environment: environment)
            let same = back.stdout == plaintext
            #expect(back.status == 0 && same, "\(back.stderr)")
        case .unprotect:
            let sealed = try await Self.run(
                ["protect", "--owner", "alice@contoso.com", "-", "-"] + state, input: plaintext, nonBlocking: nil,
                environment: environment)
            try #require(sealed.status == 0, "\(sealed.stderr)")
            let slow = try await Self.run(
                ["unprotect", "-", "-"] + state, input: sealed.stdout, nonBlocking: side, environment: environment)
            #expect(slow.status == 0, "\(slow.stderr)")
            let same = slow.stdout == plaintext
            #expect(same, "\(slow.stdout.count) bytes against \(plaintext.count)")
        case .addPassword:
            let password = Array("S3cret-\(UUID().uuidString)".utf8)
            let added = try await Self.run(
                ["secrets", "add-password", "vpn"] + state, input: password, nonBlocking: side,
                environment: environment)
            #expect(added.status == 0, "\(added.stderr)")
            #expect(String(decoding: added.stdout, as: UTF8.self) == "stored password vpn for the app\n")
        case .checkInFacts:
            let facts = Array(#"{"osVersion":"17.4","appVersion":"5.2","jailbroken":false,"pinFailures":9}"#.utf8)
            let checkedIn = try await Self.run(
                ["checkin", "--account", "alice@contoso.com", "--facts", "-"] + state, input: facts,
                nonBlocking: side, environment: environment)
            #expect(checkedIn.status == 0, "\(checkedIn.stderr)")
            // Decided on the facts read (nine PIN failures block), not on none (a missing fact blocks too, but says so).
            #expect(String(decoding: checkedIn.stdout, as: UTF8.self).contains("pinFailures 9 fails maximumPinRetries"))
        }
    }

    /// Runs custody with `input` written in small pieces with pauses, and its output read after
    /// a pause in small pieces; the pipe end custody holds on `nonBlocking` is made non-blocking.
    static func run(
        _ arguments: [String], input: [UInt8], nonBlocking side: Side?, environment: [String: String]
    ) async throws -> (status: Int32, stdout: [UInt8], stderr: String) {
        try await offThePool {
            try runBlocking(arguments, input: input, nonBlocking: side, environment: environment)
        }
    }

    /// `run`, waiting on the calling thread.
    static func runBlocking(
        _ arguments: [String], input: [UInt8], nonBlocking side: Side?, environment: [String: String]
    ) throws -> (status: Int32, stdout: [UInt8], stderr: String) {
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: CLIRunner.executable)
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: CLIRunner.packageRoot)
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        // Standard input is a stream socket rather than a pipe, so that writing to it after
        // custody went away (a failure this test exists to catch) returns EPIPE rather than
        // ending the test process by SIGPIPE (`MSG_NOSIGNAL`).
        var pair: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        let childInput = FileHandle(fileDescriptor: pair[0], closeOnDealloc: true)
        let writer = pair[1]
        defer { close(writer) }
        let standardOutput = Pipe()
        let standardError = Pipe()
        process.standardInput = childInput
        process.standardOutput = standardOutput
        process.standardError = standardError
        switch side {
        case .input: try setNonBlocking(pair[0])
        case .output: try setNonBlocking(standardOutput.fileHandleForWriting.fileDescriptor)
        case nil: break
        }
        try process.run()
        try childInput.close()

        let group = DispatchGroup()
        nonisolated(unsafe) var output: [UInt8] = []
        nonisolated(unsafe) var errors = Data()
        let slowReader = side == .output
        DispatchQueue.global().async(group: group) {
            if slowReader { usleep(200_000) }
            output = readSlowly(standardOutput.fileHandleForReading.fileDescriptor, pausing: slowReader)
        }
        DispatchQueue.global().async(group: group) {
            errors = CLIRunner.readToEnd(standardError.fileHandleForReading.fileDescriptor)
        }
        // custody starts on an empty pipe, and finds it empty again between pieces.
        if side == .input { usleep(200_000) }
        var offset = 0
        var pieces = 0
        while offset < input.count {
            let count = min(4_096, input.count - offset)
            let written = input.withUnsafeBytes { send(writer, $0.baseAddress! + offset, count, Int32(MSG_NOSIGNAL)) }
            if written < 0 {
                if errno == EINTR { continue }
                break  // custody went away; its status says why
            }
            offset += written
            pieces += 1
            if side == .input, pieces % 8 == 0 { usleep(2_000) }
        }
        // And once more before the end, however short the input.
        if side == .input { usleep(50_000) }
        shutdown(writer, Int32(SHUT_WR))
        process.waitUntilExit()
        group.wait()
        return (process.terminationStatus, output, String(decoding: errors, as: UTF8.self))
    }

    private static func setNonBlocking(_ descriptor: Int32) throws {
        let flags = fcntl(descriptor, F_GETFL)
        try #require(flags >= 0 && fcntl(descriptor, F_SETFL, flags | O_NONBLOCK) == 0)
    }

    /// Everything `descriptor` yields, in reads of at most 4 KiB with pauses when `pausing`.
    private static func readSlowly(_ descriptor: Int32, pausing: Bool) -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4_096)
        var reads = 0
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count > 0 {
                bytes += buffer[..<count]
                reads += 1
                if pausing, reads % 16 == 0 { usleep(1_000) }
            } else if count == 0 || errno != EINTR {
                return bytes
            }
        }
    }
}
