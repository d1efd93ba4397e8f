import Benchmark
import COpenSSLBaseline
import CLibsodium
import CustodyPolicy
import CustodyProtection
import Foundation

// Targets (issue 14): 1 KiB buffers at ≥ 400,000 protect+unprotect pairs per second per core;
// 64 KiB buffers at the speed of the crypto underneath. Each envelope benchmark runs beside
// the bare library calls it stands on (libsodium's BLAKE2b for the data key, OpenSSL's AEAD for
// the chunks), so the ratio of the two medians is Custody's own cost.

func protectionBenchmarks() {
    let directory = NSTemporaryDirectory() + "custody-bench-keys-\(ProcessInfo.processInfo.processIdentifier)"
    try! FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let keyRing = blocking { try! await KeyRing(store: FileKeyStore(directory: directory + "/state"), masterKey: .keyFile(path: directory + "/master.key")) }
    let owner = AccountID(oid: "5a1e0000-0000-4000-8000-000000000001", upn: "owner@contoso.com")!
    _ = sodium_init()

    for algorithm in [EnvelopeAlgorithm.aes256GCMDerived, .chaCha20Poly1305Derived] {
        let protector = DataProtector(keyRing: keyRing, algorithm: algorithm)
        let name = algorithm == .aes256GCMDerived ? "AES-256-GCM" : "ChaCha20-Poly1305"
        let cipher = EVP_CIPHER_fetch(nil, algorithm == .aes256GCMDerived ? "AES-256-GCM" : "ChaCha20-Poly1305", nil)!

        let small = [UInt8](repeating: 0x42, count: 1_024)
        Benchmark("protect+unprotect 1 KiB buffer, \(name)", configuration: .init(metrics: [.wallClock, .cpuTotal, .throughput], scalingFactor: .kilo)) { benchmark in
            for _ in benchmark.scaledIterations {
                let envelope = try await protector.protect(small, owner: owner, encrypt: true)
                blackHole(try await protector.unprotect(envelope))
            }
        }

        // The same pair into buffers the caller keeps (`protect(_:owner:encrypt:into:)`,
        // `unprotect(_:into:)`): what the library calls of the floor below write into too, so
        // the two differ by the envelope's own work, not by two arrays made and freed. Each pair
        // makes its keys ready first (`prepare`), as a caller must within the ring's revalidation
        // interval: the calls into the caller's memory never wait for the key store.
        var envelopeBuffer = [UInt8](repeating: 0, count: try! protector.envelopeCount(of: small.count, owner: owner, encrypt: true))
        var plaintextBuffer = [UInt8](repeating: 0, count: small.count)
        Benchmark("protect+unprotect 1 KiB into caller's buffers, \(name)", configuration: .init(metrics: [.wallClock, .cpuTotal, .throughput], scalingFactor: .kilo)) { benchmark in
            for _ in benchmark.scaledIterations {
                try await protector.prepare(owner: owner)
                let written = try small.withUnsafeBytes { data in
                    try envelopeBuffer.withUnsafeMutableBytes { try protector.protect(data, owner: owner, encrypt: true, into: $0) }
                }
                try await protector.prepare(envelope: envelopeBuffer)
                let opened = try envelopeBuffer.withUnsafeBytes { envelope in
                    try plaintextBuffer.withUnsafeMutableBytes { try protector.unprotect(UnsafeRawBufferPointer(rebasing: envelope[..<written]), into: $0) }
                }
                blackHole(opened)
                blackHole(plaintextBuffer)
            }
        }

        // The same, with the keys made ready once per sample (1,000 pairs, a few milliseconds,
        // well inside the half second a prepared key stays ready): what a caller sealing a batch
        // pays, against the pair above that prepares for every pair.
        Benchmark("protect+unprotect 1 KiB into caller's buffers, prepared per 1,000 pairs, \(name)", configuration: .init(metrics: [.wallClock, .cpuTotal, .throughput], scalingFactor: .kilo)) { benchmark in
            try await protector.prepare(owner: owner)
            try await protector.prepare(envelope: envelopeBuffer)
            for _ in benchmark.scaledIterations {
                let written = try small.withUnsafeBytes { data in
                    try envelopeBuffer.withUnsafeMutableBytes { try protector.protect(data, owner: owner, encrypt: true, into: $0) }
                }
                let opened = try envelopeBuffer.withUnsafeBytes { envelope in
                    try plaintextBuffer.withUnsafeMutableBytes { try protector.unprotect(UnsafeRawBufferPointer(rebasing: envelope[..<written]), into: $0) }
                }
                blackHole(opened)
                blackHole(plaintextBuffer)
            }
        }

        // The floor under the 1 KiB pair: the library calls an envelope pair makes, bare. Derive
        // the data key and key check (BLAKE2b keyed by the account key, 48 bytes out, over the
        // label, a 54-byte header prefix and a 32-byte salt), seal 1 KiB under it with OpenSSL
        // (a fresh context keyed with the data key, the 102-byte header as associated data); then
        // derive again and open. The salt is counted up rather than drawn: Custody's random pool
        // costs a few nanoseconds a draw, a kernel call would cost more than the rest.
        let accountKey = [UInt8](repeating: 9, count: 32)
        var input = [UInt8](repeating: 0x11, count: 20 + 54 + 32)
        var header = [UInt8](repeating: 0x11, count: 102)
        var derived = [UInt8](repeating: 0, count: 48)
        var smallSealed = [UInt8](repeating: 0, count: small.count + 16)
        var smallOpened = [UInt8](repeating: 0, count: small.count)
        var nonce = [UInt8](repeating: 0, count: 12)
        var salt: UInt64 = 0
        func aead(_ encrypt: Bool, key: UnsafePointer<UInt8>, _ input: UnsafePointer<UInt8>, _ count: Int, _ output: UnsafeMutablePointer<UInt8>) -> Bool {
            let context = EVP_CIPHER_CTX_new()!
            defer { EVP_CIPHER_CTX_free(context) }
            var written: Int32 = 0
            guard EVP_CipherInit_ex2(context, cipher, key, nonce, encrypt ? 1 : 0, nil) == 1,
                EVP_CipherUpdate(context, nil, &written, header, Int32(header.count)) == 1,
                EVP_CipherUpdate(context, output, &written, input, Int32(count)) == 1
            else { return false }
            if encrypt {
                guard EVP_CipherFinal_ex(context, output + count, &written) == 1 else { return false }
                return EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_GET_TAG, 16, output + count) == 1
            }
            guard EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_SET_TAG, 16, UnsafeMutableRawPointer(mutating: input + count)) == 1 else { return false }
            return EVP_CipherFinal_ex(context, output + count, &written) == 1
        }
        Benchmark("library floor of a 1 KiB envelope pair, \(name)", configuration: .init(metrics: [.wallClock, .cpuTotal, .throughput], scalingFactor: .kilo)) { benchmark in
            for _ in benchmark.scaledIterations {
                salt &+= 1
                input.withUnsafeMutableBytes { $0.storeBytes(of: salt, toByteOffset: 74, as: UInt64.self) }
                _ = crypto_generichash(&derived, 48, input, UInt64(input.count), accountKey, 32)
                header.withUnsafeMutableBytes { $0.storeBytes(of: salt, toByteOffset: 74, as: UInt64.self) }
                _ = derived.withUnsafeBufferPointer { key in aead(true, key: key.baseAddress!, small, small.count, &smallSealed) }
                _ = crypto_generichash(&derived, 48, input, UInt64(input.count), accountKey, 32)
                _ = derived.withUnsafeBufferPointer { key in aead(false, key: key.baseAddress!, smallSealed, small.count, &smallOpened) }
                blackHole(smallOpened)
            }
        }

        let large = [UInt8](repeating: 0x42, count: 64 * 1_024)
        Benchmark("protect+unprotect 64 KiB buffer, \(name)", configuration: .init(metrics: [.wallClock, .cpuTotal, .throughput])) { benchmark in
            for _ in benchmark.scaledIterations {
                let envelope = try await protector.protect(large, owner: owner, encrypt: true)
                blackHole(try await protector.unprotect(envelope))
            }
        }

        // The baseline: one OpenSSL seal and one open of the same 64 KiB under a fresh context
        // each, no envelope, no key derivation.
        var key = [UInt8](repeating: 7, count: 32)
        var sealed = [UInt8](repeating: 0, count: large.count + 16)
        var opened = [UInt8](repeating: 0, count: large.count)
        Benchmark("OpenSSL seal+open 64 KiB (single calls), \(name)", configuration: .init(metrics: [.wallClock, .cpuTotal, .throughput])) { benchmark in
            for _ in benchmark.scaledIterations {
                nonce[0] &+= 1
                _ = aead(true, key: key, large, large.count, &sealed)
                _ = aead(false, key: key, sealed, large.count, &opened)
                blackHole(opened)
            }
        }
        key.withUnsafeMutableBytes { sodium_memzero($0.baseAddress!, 32) }
    }
}

/// `body`'s result, waited for on this thread: benchmarks are registered synchronously, on the
/// main thread (never one of Swift's pool, which `body` runs on).
func blocking<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
    let done = DispatchSemaphore(value: 0)
    nonisolated(unsafe) var result: T?
    Task {
        result = await body()
        done.signal()
    }
    done.wait()
    return result!
}
