import CustodyPolicy
import CustodyProtection
import Foundation

/// The harness a fuzzing run drives: `CUSTODY_FUZZ_HARNESS`, read once.
let selectedHarness: Harness = {
    let name = ProcessInfo.processInfo.environment["CUSTODY_FUZZ_HARNESS"] ?? ""
    guard let harness = Harness.named(name) else {
        let names = Harness.all.map(\.name).joined(separator: ", ")
        FileHandle.standardError.write(Data("CUSTODY_FUZZ_HARNESS must name a harness (\(names))\n".utf8))
        exit(2)
    }
    return harness
}()

#if CUSTODY_FUZZING
    /// libFuzzer's entry point (the build passes -sanitize=fuzzer,address and -D CUSTODY_FUZZING).
    @_cdecl("LLVMFuzzerTestOneInput")
    public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
        let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: count)) } ?? []
        selectedHarness.run(bytes)
        return 0
    }

    /// libFuzzer's driver (in the runtime `-sanitize=fuzzer` links).
    @_silgen_name("LLVMFuzzerRunDriver")
    func runFuzzerDriver(
        _ argc: UnsafeMutablePointer<CInt>,
        _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
        _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
    ) -> CInt

    /// The executable's entry point: SwiftPM links an executable target's `main` to
    /// `<module>_main`, which here hands over to libFuzzer's driver.
    @_cdecl("CustodyFuzz_main")
    public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
        var count = argc
        var arguments = argv
        _ = selectedHarness
        return runFuzzerDriver(&count, &arguments) { data, size in fuzzOneInput(data, size) }
    }
#else
    /// Without libFuzzer: replays files through a harness (the seed corpus and every input a
    /// fuzzing run once crashed on, as a regression test), or writes the envelope seeds.
    @main
    struct FuzzReplay {
        static func main() async {
            let arguments = Array(CommandLine.arguments.dropFirst())
            switch arguments.first {
            case "list":
                for harness in Harness.all { print("\(harness.name): \(harness.summary)") }
            case "replay" where arguments.count >= 2:
                guard let harness = Harness.named(arguments[1]) else {
                    FileHandle.standardError.write(Data("no harness named \(arguments[1])\n".utf8))
                    exit(2)
                }
                var count = 0
                for path in inputs(Array(arguments.dropFirst(2))) {
                    guard let data = FileManager.default.contents(atPath: path) else {
                        FileHandle.standardError.write(Data("cannot read \(path)\n".utf8))
                        exit(1)
                    }
                    harness.run([UInt8](data))
                    count += 1
                }
                print("\(harness.name): \(count) inputs replayed")
            case "seed-envelopes" where arguments.count == 2:
                await writeEnvelopeSeeds(to: arguments[1])
            default:
                FileHandle.standardError.write(
                    Data(
                        """
                        usage: CustodyFuzz list
                               CustodyFuzz replay HARNESS FILE-OR-DIRECTORY...
                               CustodyFuzz seed-envelopes DIRECTORY   (with Fuzz/keys in place)

                        """.utf8))
                exit(2)
            }
        }

        /// Files given, and the files directly inside directories given.
        static func inputs(_ paths: [String]) -> [String] {
            paths.flatMap { path -> [String] in
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue
                else { return [path] }
                let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
                return names.filter { !$0.hasPrefix(".") }.sorted().map { path + "/" + $0 }
            }
        }

        /// Envelopes of several sizes, both algorithms and tag-only, sealed under the fixed keys.
        static func writeEnvelopeSeeds(to directory: String) async {
            let protector = Fixtures.protector
            var seeds: [(String, [UInt8])] = []
            for size in [0, 1, 100, 65_536, 65_537] {
                let data = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31) }
                for algorithm in [EnvelopeAlgorithm.aes256GCM, .xChaCha20Poly1305] {
                    let sealer = DataProtector(keyRing: protector.keyRing, algorithm: algorithm)
                    // Sealed for the tenant's form of alice, as the engine seals.
                    let owner = Fixtures.snapshot.tenantAccount(for: Fixtures.alice)?.id ?? Fixtures.alice
                    if let envelope = try? await sealer.protect(data, owner: owner, encrypt: true) {
                        seeds.append(("\(algorithm)-\(size)", envelope))
                    }
                }
                if let tagged = try? await protector.protect(
                    data, owner: AccountID(upn: "someone@unmanaged.invalid")!, encrypt: false)
                {
                    seeds.append(("tag-only-\(size)", tagged))
                }
            }
            for (name, bytes) in seeds {
                guard FileManager.default.createFile(atPath: directory + "/" + name, contents: Data(bytes)) else {
                    FileHandle.standardError.write(Data("cannot write \(directory)/\(name)\n".utf8))
                    exit(1)
                }
            }
            // Keep the keys the seeds were sealed under (created on first use) with the corpus.
            let kept = Fixtures.root + "/Fuzz/keys/store"
            if !FileManager.default.fileExists(atPath: kept) {
                do {
                    try FileManager.default.copyItem(atPath: Fixtures.keyDirectory + "/store", toPath: kept)
                } catch {
                    FileHandle.standardError.write(Data("cannot keep the keys in \(kept): \(error)\n".utf8))
                    exit(1)
                }
            }
            print("\(seeds.count) envelope seeds written to \(directory)")
        }
    }
#endif
