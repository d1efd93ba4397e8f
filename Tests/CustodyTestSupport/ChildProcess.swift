public import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Where a child's standard input, output or error goes: a `Pipe` (the child gets the end it
/// reads or writes, and the parent's copy of that end is closed once the child runs) or a
/// `FileHandle` (the child gets a copy of its descriptor).
public protocol ChildStandardStream: AnyObject {}
extension Pipe: ChildStandardStream {}
extension FileHandle: ChildStandardStream {}

/// Runs a program for the tests, shaped as Foundation's `Process` so the tests read the same.
///
/// Not Foundation's `Process`: in Swift 6.3's Foundation on Linux, `Process.run()` copies each
/// `/proc/self/fd` entry's whole 256-byte `d_name`, which reads past glibc's directory buffer
/// and crashes the test process when the next page is unmapped (swift-corelibs-foundation
/// #5472, fixed after 6.3), and it changes the *whole process's* working directory around the
/// spawn while other tests run. This spawns with `posix_spawn`, gives the child its own working
/// directory and closes every descriptor above standard error in the child
/// (`posix_spawn_file_actions_addchdir_np` and `…_addclosefrom_np`, glibc 2.29 and 2.34), so a
/// child never holds another test's pipe open. See docs/decisions.md.
public final class ChildProcess: @unchecked Sendable {
    public var executableURL: URL?
    public var arguments: [String] = []
    /// The child's whole environment; this process's when nil.
    public var environment: [String: String]?
    /// The child's working directory; this process's when nil.
    public var currentDirectoryURL: URL?
    /// Standard input, output and error: this process's own unless set; nil or
    /// `FileHandle.nullDevice` is `/dev/null`.
    public var standardInput: (any ChildStandardStream)? = FileHandle.standardInput
    public var standardOutput: (any ChildStandardStream)? = FileHandle.standardOutput
    public var standardError: (any ChildStandardStream)? = FileHandle.standardError

    /// The child's process identifier, once it runs.
    public private(set) var processIdentifier: pid_t = 0
    /// The raw wait status once the child has been reaped.
    private let reaped = Mutex<Int32?>(nil)

    public init() {}

    /// Starts the child. Throws when the program cannot be spawned (no such file, not
    /// executable, no such working directory), naming the program.
    public func run() throws {
        precondition(processIdentifier == 0, "a ChildProcess runs once")
        guard let executable = executableURL?.path else {
            throw SpawnError(program: "(none)", code: EINVAL, step: "executableURL is not set")
        }
        var actions = posix_spawn_file_actions_t()
        try check(posix_spawn_file_actions_init(&actions), executable, "posix_spawn_file_actions_init")
        defer { posix_spawn_file_actions_destroy(&actions) }
        var attributes = posix_spawnattr_t()
        try check(posix_spawnattr_init(&attributes), executable, "posix_spawnattr_init")
        defer { posix_spawnattr_destroy(&attributes) }

        // /dev/null for a stream set to nil, open until the child has its copy.
        var devNull: FileHandle?
        defer { try? devNull?.close() }
        for (target, stream) in [
            (STDIN_FILENO, standardInput), (STDOUT_FILENO, standardOutput), (STDERR_FILENO, standardError),
        ] {
            let source: Int32
            switch stream {
            case let pipe as Pipe:
                source =
                    target == STDIN_FILENO
                    ? pipe.fileHandleForReading.fileDescriptor : pipe.fileHandleForWriting.fileDescriptor
            case let handle as FileHandle where handle !== FileHandle.nullDevice:
                source = handle.fileDescriptor
            default:
                if devNull == nil { devNull = FileHandle(forUpdatingAtPath: "/dev/null") }
                guard let devNull else { throw SpawnError(program: executable, code: errno, step: "open /dev/null") }
                source = devNull.fileDescriptor
            }
            try check(posix_spawn_file_actions_adddup2(&actions, source, target), executable, "adddup2")
        }
        try check(Self.closeFrom(&actions, STDERR_FILENO + 1), executable, "addclosefrom_np")
        if let directory = currentDirectoryURL?.path {
            try check(Self.changeDirectory(&actions, directory), executable, "addchdir_np")
        }
        // Its own process group, as Foundation's Process does, and no signal blocked that the
        // spawning thread happened to block.
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        try check(posix_spawnattr_setsigmask(&attributes, &noSignals), executable, "setsigmask")
        try check(
            posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK)), executable,
            "setflags")

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let environment = (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") }
        let envp = environment + [nil]
        defer {
            argv.forEach { free($0) }
            environment.forEach { free($0) }
        }
        var pid = pid_t()
        try check(posix_spawn(&pid, executable, &actions, &attributes, argv, envp), executable, "posix_spawn")
        processIdentifier = pid

        // The parent's copies of the ends the child uses: without closing them, a reader of
        // the child's output would never see its end.
        if let pipe = standardInput as? Pipe { try? pipe.fileHandleForReading.close() }
        if let pipe = standardOutput as? Pipe { try? pipe.fileHandleForWriting.close() }
        if let pipe = standardError as? Pipe { try? pipe.fileHandleForWriting.close() }
    }

    /// Whether the child has not exited yet (reaping it when it has).
    public var isRunning: Bool {
        precondition(processIdentifier > 0, "the child has not been run")
        return reaped.withLock { status in
            if status == nil {
                var raw: Int32 = 0
                if waitpid(processIdentifier, &raw, WNOHANG) == processIdentifier { status = raw }
            }
            return status == nil
        }
    }

    /// Waits until the child has exited.
    public func waitUntilExit() {
        precondition(processIdentifier > 0, "the child has not been run")
        while reaped.withLock({ $0 }) == nil {
            var raw: Int32 = 0
            let result = waitpid(processIdentifier, &raw, 0)
            if result == processIdentifier {
                reaped.withLock { if $0 == nil { $0 = raw } }
            } else if result == -1 && errno != EINTR {
                // Another thread's `isRunning` reaped it and is recording its status.
                usleep(1_000)
            }
        }
    }

    /// Its exit status, or the number of the signal that ended it (as Foundation's `Process`).
    public var terminationStatus: Int32 {
        guard let raw = reaped.withLock({ $0 }) else { preconditionFailure("the child is still running") }
        let signal = raw & 0x7f
        return signal == 0 ? (raw >> 8) & 0xff : signal
    }

    /// Whether a signal ended it.
    public var terminatedBySignal: Bool {
        guard let raw = reaped.withLock({ $0 }) else { preconditionFailure("the child is still running") }
        return raw & 0x7f != 0
    }

    /// Sends SIGTERM, unless the child has already been reaped (its pid may be another's now).
    public func terminate() { send(SIGTERM) }

    /// Sends `signal`, unless the child has already been reaped.
    public func send(_ signal: Int32) {
        precondition(processIdentifier > 0, "the child has not been run")
        reaped.withLock { if $0 == nil { _ = kill(processIdentifier, signal) } }
    }

    private func check(_ code: Int32, _ program: String, _ step: String) throws {
        if code != 0 { throw SpawnError(program: program, code: code, step: step) }
    }

    // glibc has both, but Swift's Glibc module does not declare them (they are GNU
    // extensions), so they are looked up once, as swift-subprocess does for the first.
    private typealias FileActionInt = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private typealias FileActionPath =
        @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32
    private static let addCloseFrom: FileActionInt? = dlsym(
        UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np"
    ).map { unsafeBitCast($0, to: FileActionInt.self) }
    private static let addChangeDirectory: FileActionPath? = dlsym(
        UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addchdir_np"
    ).map { unsafeBitCast($0, to: FileActionPath.self) }

    private static func closeFrom(_ actions: inout posix_spawn_file_actions_t, _ first: Int32) -> Int32 {
        guard let addCloseFrom else { return ENOSYS }
        return addCloseFrom(&actions, first)
    }

    private static func changeDirectory(_ actions: inout posix_spawn_file_actions_t, _ path: String) -> Int32 {
        guard let addChangeDirectory else { return ENOSYS }
        return addChangeDirectory(&actions, path)
    }
}

/// A child that could not be started: the program, the step and the error number.
public struct SpawnError: Error, CustomStringConvertible {
    public let program: String
    public let code: Int32
    public let step: String
    public var description: String { "cannot run \(program): \(step): \(String(cString: strerror(code)))" }
}
