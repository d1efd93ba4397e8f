import CustodyPolicy
import CustodyProtection
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// What the harnesses decide and open against, made once per process: the example bundle
/// (`policies/`, read from the package root, the working directory of `make fuzz`) and a key
/// ring whose keys are committed beside the corpus (`Fuzz/keys`, copied to a scratch
/// directory), so that seed envelopes open in every run.
enum Fixtures {
    static let root = ProcessInfo.processInfo.environment["CUSTODY_FUZZ_ROOT"] ?? FileManager.default.currentDirectoryPath

    static let files: [PolicyBundle.File] = {
        let directory = root + "/policies"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.filter { $0.hasSuffix(".json") }.sorted().compactMap { name in
            FileManager.default.contents(atPath: directory + "/" + name).map { PolicyBundle.File(name: name, bytes: [UInt8]($0)) }
        }
    }()

    static let tenant: PolicyBundle.File? = files.first { $0.name == "tenant.json" }
    static let documents: [PolicyBundle.File] = files.filter { $0.name != "tenant.json" }

    static let bundle: PolicyBundle = {
        guard let bundle = try? PolicyBundle.load(tenant: tenant, documents: documents) else {
            fatalError("the example bundle does not load from \(root)/policies: run from the package root or set CUSTODY_FUZZ_ROOT")
        }
        return bundle
    }()

    /// Near-miss diagnostics of identity resolution are not wanted a million times a minute.
    static let quiet = Logger(label: "custody.fuzz") { _ in SwiftLogNoOpLogHandler() }

    static let snapshot = PolicySnapshot(bundle: bundle, context: EvaluationContext(platform: .ios), logger: quiet)

    /// A fresh decision stream over the example snapshot (a stream is not shared).
    static func makeStream() -> DecisionStream {
        DecisionStream(snapshot: snapshot, options: DecisionStream.Options(currentTime: { .seconds(1_795_248_000) }))
    }

    static let alice = AccountID(upn: "alice@contoso.com")!

    /// A scratch copy of `Fuzz/keys` (a FileKeyStore and its master key).
    static let keyDirectory: String = {
        let scratch = NSTemporaryDirectory() + "custody-fuzz-" + UUID().uuidString
        try? FileManager.default.copyItem(atPath: root + "/Fuzz/keys", toPath: scratch)
        if !FileManager.default.fileExists(atPath: scratch) {
            try? FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        }
        chmod(scratch + "/master.key", 0o600)
        return scratch
    }()

    static let protector: DataProtector = {
        do {
            let ring = try blocking { () async throws(ProtectionError) -> KeyRing in
                try await KeyRing(
                    store: FileKeyStore(directory: keyDirectory + "/store"),
                    masterKey: .keyFile(path: keyDirectory + "/master.key"))
            }
            return DataProtector(keyRing: ring)
        } catch {
            fatalError("the fuzzing key ring does not open: \(error)")
        }
    }()

    /// `body`'s result, waited for on this thread: libFuzzer calls a harness synchronously, on a
    /// thread of its own (never one of Swift's pool, which `body` runs on).
    static func blocking<T: Sendable, Failure: Error>(_ body: @escaping @Sendable () async throws(Failure) -> T)
        throws(Failure) -> T
    {
        let done = DispatchSemaphore(value: 0)
        let result = Locked<Result<T, Failure>?>(nil)
        Task {
            let outcome: Result<T, Failure>
            do throws(Failure) { outcome = .success(try await body()) } catch { outcome = .failure(error) }
            result.withLock { $0 = outcome }
            done.signal()
        }
        done.wait()
        return try result.withLock { $0! }.get()
    }

    /// Writes `bytes` to a scratch file and unprotects it to /dev/null (the file reader).
    static func unprotectFile(_ bytes: [UInt8]) async {
        let path = keyDirectory + "/input.cst"
        guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else { return }
        let sink = open("/dev/null", O_WRONLY)
        defer { close(sink) }
        _ = try? await protector.unprotect(from: .file(path), to: .stream(sink, name: "/dev/null"))
    }
}
