import CustodyProtection
import CustodyStore
import CustodyTestSupport
import Foundation
import Testing

/// `kill -9` at random moments of `custody apply` and `custody wipe`: the state database must
/// always reopen, holding either the old or the new bundle, and an account either wholly wiped
/// or not at all.
@Suite("Crash consistency", .serialized, .timeLimit(.minutes(5)))
struct CrashConsistencyTests {
    typealias Scratch = ProtectionCLITests.Scratch
    static let kills = 100

    /// Starts `custody` with `arguments`, kills it with SIGKILL after a random delay of up to
    /// `window` (it may finish first), and waits for it, on a thread of its own.
    /// Returns how long the process took when it finished before its kill, nil when killed.
    @discardableResult
    static func runAndKill(_ arguments: [String], scratch: Scratch, state: String? = nil, window: Double)
        async throws -> Double?
    {
        try await offThePool { try runAndKillBlocking(arguments, scratch: scratch, state: state, window: window) }
    }

    /// `runAndKill`, waiting on the calling thread.
    @discardableResult
    static func runAndKillBlocking(_ arguments: [String], scratch: Scratch, state: String? = nil, window: Double)
        throws -> Double?
    {
        let started = Date()
        var random = SystemRandomNumberGenerator()
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: CLIRunner.executable)
        process.arguments = arguments + ["--state", state ?? scratch.file("state")]
        process.environment = ProcessInfo.processInfo.environment.merging([
            "CUSTODY_MASTER_KEY_FILE": scratch.file("master.key")
        ]) { $1 }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Killed at a random moment of the window, or found finished before it: a round never
        // waits out the rest of the window for a process that already exited.
        let deadline = Date().addingTimeInterval(Double.random(in: 0...window, using: &random))
        while Date() < deadline, process.isRunning { usleep(2_000) }
        let finished = !process.isRunning
        process.send(SIGKILL)
        process.waitUntilExit()
        return finished ? Date().timeIntervalSince(started) : nil
    }

    /// The `*.json` files of a directory, by name.
    static func files(_ directory: String) throws -> [String: [UInt8]] {
        var result: [String: [UInt8]] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: directory) where name.hasSuffix(".json") {
            result[name] = [UInt8](try Data(contentsOf: URL(fileURLWithPath: directory + "/" + name)))
        }
        return result
    }

    /// Two copies of the example bundle in `scratch`, the new one differing in one file; their
    /// paths and their files.
    static func twoBundles(_ scratch: Scratch) throws -> (old: String, new: String, files: [[String: [UInt8]]]) {
        let old = scratch.file("old"), new = scratch.file("new")
        for directory in [old, new] {
            try FileManager.default.copyItem(atPath: CLIRunner.packageRoot + "/policies", toPath: directory)
        }
        let tenant = new + "/tenant.json"
        try (try Data(contentsOf: URL(fileURLWithPath: tenant)) + Data(" \n".utf8)).write(
            to: URL(fileURLWithPath: tenant))
        return (old, new, [try Self.files(old), try Self.files(new)])
    }

    @Test("apply killed at random points leaves the old bundle or the new one, never a mix")
    func apply() async throws {
        let scratch = try Scratch()
        let (old, new, bundles) = try Self.twoBundles(scratch)
        #expect(bundles[0] != bundles[1])
        // Kill anywhere in a window half again as long as a whole run takes on this machine now.
        let start = Date()
        #expect(try await scratch.run(["apply", "--bundle", old]).status == 0)
        var window = Date().timeIntervalSince(start) * 1.5

        var finished = 0
        for round in 0..<Self.kills {
            if let took = try await Self.runAndKill(
                ["apply", "--bundle", round % 2 == 0 ? new : old], scratch: scratch, window: window)
            {
                // Kill inside what a whole run takes now (the first was timed on a loaded machine).
                window = min(window, took * 1.5)
            }
            let database = try CustodyDatabase(path: scratch.file("state"))
            let stored = try await #require(try database.lastAppliedBundleFiles(), "round \(round): no applied bundle")
            let byName = Dictionary(uniqueKeysWithValues: stored.files.map { ($0.name, $0.bytes) })
            #expect(bundles.contains(byName), "round \(round): the stored files are neither bundle")
            if byName == bundles[round % 2 == 0 ? 1 : 0] { finished += 1 }
        }
        #expect(
            finished > 0 && finished < Self.kills,
            "kills landed both before and after the commit (\(finished) of \(Self.kills) finished)")
    }

    @Test("wipe killed at random points leaves the account wholly wiped or untouched")
    func wipe() async throws {
        let scratch = try Scratch()
        try await scratch.applyExampleBundle()
        try scratch.write("a.txt", "alice's data")
        let owner = OwnerIdentifier(rawValue: ProtectionCLITests.alice)!
        // Kill anywhere in a window half again as long as a whole wipe takes on this machine now.
        #expect(
            try await scratch.run([
                "protect", "--owner", "alice@contoso.com", scratch.file("a.txt"), scratch.file("a.cst"),
            ])
            .status == 0)
        let start = Date()
        #expect(try await scratch.run(["wipe", "--account", "alice@contoso.com"]).status == 0)
        var window = Date().timeIntervalSince(start) * 1.5
        var wiped = 0, untouched = 0
        for round in 0..<Self.kills {
            // Give alice a key and a check-in when the last round wiped them.
            let database = try CustodyDatabase(path: scratch.file("state"))
            if try await StateKeyStore(state: database).keys(for: owner).isEmpty {
                #expect(
                    try await scratch.run([
                        "protect", "--owner", "alice@contoso.com", scratch.file("a.txt"), scratch.file("a.cst"),
                    ]).status == 0)
                #expect(try await scratch.run(["checkin", "--account", "alice@contoso.com"]).status == 0)
            }
            if let took = try await Self.runAndKill(
                ["wipe", "--account", "alice@contoso.com"], scratch: scratch, window: window)
            {
                // Kill inside what a whole run takes now (the first was timed on a loaded machine).
                window = min(window, took * 1.5)
            }
            let after = try CustodyDatabase(path: scratch.file("state"))
            let keys = try await StateKeyStore(state: after).keys(for: owner).count
            let checkIn = try await after.lastCheckIn(account: owner.rawValue)
            #expect(
                (keys == 0) == (checkIn == nil),
                "round \(round): \(keys) keys left, check-in \(checkIn.map { "\($0)" } ?? "gone")")
            if keys == 0 { wiped += 1 } else { untouched += 1 }
        }
        #expect(
            wiped > 0 && untouched > 0,
            "kills landed both before and after the commit (\(wiped) wiped, \(untouched) untouched)")
    }

    @Test(
        "apply, wipe and protect killed at random points on one state: the state stays consistent and no file is half-written"
    )
    func mixed() async throws {
        let scratch = try Scratch()
        let (old, new, bundles) = try Self.twoBundles(scratch)
        try scratch.write("a.txt", String(repeating: "alice's data ", count: 50_000))
        let plaintext = try scratch.read("a.txt")
        let owner = OwnerIdentifier(rawValue: ProtectionCLITests.alice)!

        #expect(try await scratch.run(["apply", "--bundle", old]).status == 0)
        let commands: [[String]] = [
            ["apply", "--bundle", new], ["apply", "--bundle", old], ["wipe", "--account", "alice@contoso.com"],
            ["protect", "--owner", "alice@contoso.com", scratch.file("a.txt"), scratch.file("a.cst")],
        ]
        // A window long enough to cover each command on this machine now.
        let start = Date()
        for command in commands { _ = try await scratch.run(command) }
        var window = Date().timeIntervalSince(start) / Double(commands.count) * 1.5

        for round in 0..<Self.kills {
            let command = commands[round % commands.count]
            if let took = try await Self.runAndKill(command, scratch: scratch, window: window) {
                // Kill inside what a whole run takes now (the first was timed on a loaded machine).
                window = min(window, took * 1.5)
            }
            let database = try CustodyDatabase(path: scratch.file("state"))
            let stored = try await #require(try database.lastAppliedBundleFiles(), "round \(round): no applied bundle")
            let byName = Dictionary(uniqueKeysWithValues: stored.files.map { ($0.name, $0.bytes) })
            #expect(bundles.contains(byName), "round \(round): the stored files are neither bundle")
            // The envelope is absent or whole: whole means it opens while alice has keys, and
            // is refused as wiped once she has none.
            guard FileManager.default.fileExists(atPath: scratch.file("a.cst")) else { continue }
            let keys = try await StateKeyStore(state: database).keys(for: owner)
            let opened = try await scratch.run(["unprotect", scratch.file("a.cst"), scratch.file("back.txt")])
            if opened.status == 0 {
                #expect(
                    try scratch.read("back.txt") == plaintext, "round \(round): the envelope opened to something else")
            } else {
                // Never damage: only a wipe (of these keys, or of the ones it was sealed with) stops it.
                #expect(
                    opened.stderr.contains("whose keys were wiped"),
                    "round \(round) (\(command[0]), \(keys.count) keys): \(opened.stderr)")
            }
        }
        #expect(try await scratch.run(["keys", "list"]).status == 0, "the key store still reads")
    }

    @Test(
        "in-place protect killed at random points: the file is whole (plain or sealed), and the next run removes the temporaries left"
    )
    func inPlaceProtect() async throws {
        let scratch = try Scratch()
        try await scratch.applyExampleBundle()
        let plaintext = String(repeating: "alice's ledger ", count: 400_000)
        try FileManager.default.createDirectory(atPath: scratch.file("data"), withIntermediateDirectories: true)
        try scratch.write("data/ledger.txt", plaintext)
        let start = Date()
        #expect(
            try await scratch.run(["protect", "--owner", "alice@contoso.com", scratch.file("data/ledger.txt")]).status
                == 0)
        var window = Date().timeIntervalSince(start) * 1.5
        #expect(try await scratch.run(["unprotect", scratch.file("data/ledger.txt")]).status == 0)

        func strays() throws -> [String] {
            try FileManager.default.contentsOfDirectory(atPath: scratch.file("data")).filter {
                $0.contains(".custody-tmp-")
            }
        }
        var left = 0
        for round in 0..<30 {
            let before = try strays()
            if let took = try await Self.runAndKill(
                ["protect", "--owner", "alice@contoso.com", scratch.file("data/ledger.txt")], scratch: scratch,
                window: window)
            {
                // Kill inside what a whole run takes now (the first was timed on a loaded machine).
                window = min(window, took * 1.5)
            }
            // The strays of earlier rounds were removed by this run, unless it was killed
            // before it wrote anything.
            let after = try strays()
            left += after.count
            #expect(after.count <= before.count + 1, "round \(round): \(after)")
            // Whole: plaintext, or an envelope that opens to it.
            if try DataProtector.protectionInfo(file: scratch.file("data/ledger.txt")) != nil {
                #expect(
                    try await scratch.run(["unprotect", scratch.file("data/ledger.txt")]).status == 0, "round \(round)")
            }
            #expect(try scratch.read("data/ledger.txt") == plaintext, "round \(round)")
        }
        // A temporary has no name until it is whole (O_TMPFILE), so kills leave (almost)
        // nothing; what one left between naming and renaming goes with the next full run.
        #expect(
            try await scratch.run(["protect", "--owner", "alice@contoso.com", scratch.file("data/ledger.txt")]).status
                == 0)
        #expect(try strays().isEmpty, "\(left) temporaries were seen after kills; none may be left after a full run")
    }
}
