import Benchmark
import CLibsodium
import CustodyPolicy
import CustodyProtection
import Foundation

// Targets (issue 3): 1 KiB buffers at ≥ 400,000 protect+unprotect pairs per second per core;
// 64 KiB buffers at ≥ 80% of libsodium's own single-call throughput for the same algorithm.
// Each envelope benchmark runs beside the bare libsodium calls it stands on, so the ratio of
// the two medians is Custody's own cost.

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

        // The floor under the 1 KiB pair: the libsodium calls an envelope pair makes, bare. One
        // kernel draw of the random parts, wrap the data key (XChaCha20-Poly1305 under the
        // account key, a 55-byte header prefix as associated data), seal 1 KiB under the data
        // key with a 130-byte header as associated data; then unwrap and open.
        let accountKey = [UInt8](repeating: 9, count: 32)
        let header = [UInt8](repeating: 0x11, count: 130)
        let randomCount = algorithm == .aes256GCM ? 32 + 24 + 7 : 32 + 24 + 19
        // The random parts, then room for the counter and flag of the chunk nonce.
        var random = [UInt8](repeating: 0, count: randomCount + 5)
        var wrapped = [UInt8](repeating: 0, count: 48)
        var dataKey = [UInt8](repeating: 0, count: 32)
        var smallSealed = [UInt8](repeating: 0, count: small.count + 16)
        var smallOpened = [UInt8](repeating: 0, count: small.count)
        var state = crypto_aead_aes256gcm_state()
        Benchmark("libsodium floor of a 1 KiB envelope pair, \(name)", configuration: .init(metrics: [.wallClock, .throughput], scalingFactor: .kilo)) { benchmark in
            for _ in benchmark.scaledIterations {
                var written: UInt64 = 0
                random.withUnsafeMutableBufferPointer { random in
                    let base = random.baseAddress!
                    randombytes_buf(base, randomCount)
                    let (key, wrapNonce, chunkNonce) = (base, base + 32, base + 56)
                    _ = crypto_aead_xchacha20poly1305_ietf_encrypt(&wrapped, &written, key, 32, header, 55, nil, wrapNonce, accountKey)
                    if algorithm == .aes256GCM {
                        _ = crypto_aead_aes256gcm_beforenm(&state, key)
                        _ = crypto_aead_aes256gcm_encrypt_afternm(&smallSealed, &written, small, 1_024, header, 130, nil, chunkNonce, &state)
                    } else {
                        _ = crypto_aead_xchacha20poly1305_ietf_encrypt(&smallSealed, &written, small, 1_024, header, 130, nil, chunkNonce, key)
                    }
                    _ = crypto_aead_xchacha20poly1305_ietf_decrypt(&dataKey, &written, nil, wrapped, 48, header, 55, wrapNonce, accountKey)
                    if algorithm == .aes256GCM {
                        _ = crypto_aead_aes256gcm_beforenm(&state, dataKey)
                        _ = crypto_aead_aes256gcm_decrypt_afternm(&smallOpened, &written, nil, smallSealed, 1_040, header, 130, chunkNonce, &state)
                    } else {
                        _ = crypto_aead_xchacha20poly1305_ietf_decrypt(&smallOpened, &written, nil, smallSealed, 1_040, header, 130, chunkNonce, dataKey)
                    }
                }
                blackHole(smallOpened)
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
