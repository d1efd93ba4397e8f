import Benchmark
import CLibsodium
import CustodyPolicy
import CustodyProtection
import Foundation

// Targets (issue 3): 1 KiB buffers at ≥ 400,000 protect+unprotect pairs per second per core;
// 64 KiB buffers at ≥ 80% of libsodium's own single-call throughput for the same algorithm.

func protectionBenchmarks() {
    let directory = NSTemporaryDirectory() + "custody-bench-keys-\(ProcessInfo.processInfo.processIdentifier)"
    try! FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let keyRing = try! KeyRing(store: FileKeyStore(directory: directory + "/state"), masterKey: .keyFile(path: directory + "/master.key"))
    let owner = AccountID(oid: "5a1e0000-0000-4000-8000-000000000001", upn: "owner@contoso.com")!
    _ = sodium_init()

    for algorithm in [EnvelopeAlgorithm.aes256GCM, .xChaCha20Poly1305] {
        let protector = DataProtector(keyRing: keyRing, algorithm: algorithm)
        let name = algorithm == .aes256GCM ? "AES-256-GCM" : "XChaCha20-Poly1305"

        let small = [UInt8](repeating: 0x42, count: 1_024)
        Benchmark("protect+unprotect 1 KiB buffer, \(name)", configuration: .init(metrics: [.wallClock, .throughput], scalingFactor: .kilo)) { benchmark in
            for _ in benchmark.scaledIterations {
                let envelope = try protector.protect(small, owner: owner, forceEncryption: true)
                blackHole(try protector.unprotect(envelope))
            }
        }

        let large = [UInt8](repeating: 0x42, count: 64 * 1_024)
        Benchmark("protect+unprotect 64 KiB buffer, \(name)", configuration: .init(metrics: [.wallClock, .throughput])) { benchmark in
            for _ in benchmark.scaledIterations {
                let envelope = try protector.protect(large, owner: owner, forceEncryption: true)
                blackHole(try protector.unprotect(envelope))
            }
        }

        // The baseline: one libsodium call to encrypt and one to decrypt the same 64 KiB, no
        // envelope, no key wrapping (a fresh random nonce each time, as the envelope has).
        var key = [UInt8](repeating: 7, count: 32)
        var nonce = [UInt8](repeating: 0, count: algorithm == .aes256GCM ? 12 : 24)
        var sealed = [UInt8](repeating: 0, count: large.count + 16)
        var opened = [UInt8](repeating: 0, count: large.count)
        Benchmark("libsodium encrypt+decrypt 64 KiB (single calls), \(name)", configuration: .init(metrics: [.wallClock, .throughput])) { benchmark in
            for _ in benchmark.scaledIterations {
                var written: UInt64 = 0
                randombytes_buf(&nonce, nonce.count)
                if algorithm == .aes256GCM {
                    _ = crypto_aead_aes256gcm_encrypt(&sealed, &written, large, UInt64(large.count), nil, 0, nil, nonce, key)
                    _ = crypto_aead_aes256gcm_decrypt(&opened, &written, nil, sealed, UInt64(sealed.count), nil, 0, nonce, key)
                } else {
                    _ = crypto_aead_xchacha20poly1305_ietf_encrypt(&sealed, &written, large, UInt64(large.count), nil, 0, nil, nonce, key)
                    _ = crypto_aead_xchacha20poly1305_ietf_decrypt(&opened, &written, nil, sealed, UInt64(sealed.count), nil, 0, nonce, key)
                }
                blackHole(opened)
            }
        }
        key.withUnsafeMutableBytes { sodium_memzero($0.baseAddress!, 32) }
    }
}
