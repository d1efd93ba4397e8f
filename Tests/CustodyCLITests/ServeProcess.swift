import CustodyTestSupport
import Foundation
import Testing

/// `custody serve` on a free loopback port (`--listen 127.0.0.1:0`), its stderr in a log file,
/// started and running once it has announced the port it bound.
final class ServeProcess {
    struct StartFailure: Error, CustomStringConvertible {
        let log: String
        var description: String { "serve did not start: \(log)" }
    }

    let process = ChildProcess()
    let log: String
    let port: Int
    var address: String { "http://127.0.0.1:\(port)" }

    /// Starts `custody serve` with `arguments` (`--listen` is added) and waits up to 10 s for it
    /// to announce its address.
    init(_ arguments: [String], log: String, environment: [String: String] = [:]) async throws {
        self.log = log
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        process.executableURL = URL(fileURLWithPath: CLIRunner.executable)
        process.arguments = ["serve", "--listen", "127.0.0.1:0"] + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        try process.run()
        var announced: Int?
        for _ in 0..<400 where announced == nil && process.isRunning {
            try await Task.sleep(for: .milliseconds(25))
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            // "custody serve: http on 127.0.0.1:PORT, revision ..."
            if let range = text.range(of: "custody serve: http on 127.0.0.1:") {
                announced = Int(text[range.upperBound...].prefix { $0.isNumber })
            }
        }
        guard let announced else {
            if process.isRunning { process.terminate() }
            throw StartFailure(log: (try? String(contentsOfFile: log, encoding: .utf8)) ?? "")
        }
        port = announced
    }

    /// What it wrote to stderr so far.
    var output: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

    /// SIGTERM, then waits for it to exit; returns its exit status.
    @discardableResult
    func stop() -> Int32 {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        return process.terminationStatus
    }

    deinit { if process.isRunning { process.terminate() } }
}
