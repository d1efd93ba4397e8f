internal import CSodium
import Crypto
import Foundation

/// An AEAD cipher bound to one key: the state an envelope's chunks are sealed and opened with.
///
/// The derived-key algorithms (AES-256-GCM and ChaCha20-Poly1305, algorithm ids 3 and 4) run on
/// OpenSSL's libcrypto, which has fast paths for every x86-64 and ARM CPU and portable code for
/// the rest. The wrapped-key algorithms of earlier envelopes (ids 1 and 2) stay on libsodium:
/// AES-256-GCM through its precomputed state (AES-NI) when available and swift-crypto's
/// implementation otherwise, so they open on every machine. One instance may seal or open
/// chunks on several threads at once.
final class AEADCipher: @unchecked Sendable {
    /// Which implementation does the work (tests force the portable one).
    enum Implementation: Sendable {
        case automatic
        case portable
    }

    let algorithm: EnvelopeAlgorithm
    /// The key, for XChaCha20-Poly1305 (libsodium has no precomputed state for it).
    private let key: SecretBytes?
    /// libsodium's expanded AES-256-GCM key, when the hardware path is used.
    private let aesState: UnsafeMutableRawPointer?
    private let portableKey: SymmetricKey?
    /// OpenSSL's contexts, for the derived-key algorithms.
    private let openSSL: OpenSSLCipher?

    /// - Parameters:
    ///   - key: 32 bytes, copied; the caller zeroes its own copy.
    ///   - lockingKey: lock the copy against swapping: for long-lived keys (account and master
    ///     keys), not for a data key that lives a microsecond.
    init(
        algorithm: EnvelopeAlgorithm, key: UnsafeRawBufferPointer, implementation: Implementation = .automatic,
        lockingKey: Bool = false
    ) {
        precondition(
            algorithm != .none && key.count == EnvelopeAlgorithm.keyCount, "an AEAD cipher needs a 32-byte key")
        Sodium.ensureInitialized()
        self.algorithm = algorithm
        openSSL = algorithm.openSSLAlgorithm.map { OpenSSLCipher($0, key: key) }
        if openSSL != nil {
            self.key = nil
            aesState = nil
            portableKey = nil
        } else if algorithm == .aes256GCM, implementation == .automatic, Sodium.hasHardwareAESGCM {
            let state = UnsafeMutableRawPointer.allocate(byteCount: crypto_aead_aes256gcm_statebytes(), alignment: 16)
            _ = crypto_aead_aes256gcm_beforenm(
                state.assumingMemoryBound(to: crypto_aead_aes256gcm_state.self), key.baseAddress!)
            self.key = nil
            aesState = state
            portableKey = nil
        } else if algorithm == .aes256GCM {
            self.key = nil
            aesState = nil
            portableKey = SymmetricKey(data: key)
        } else {
            self.key = SecretBytes(copying: key, locked: lockingKey)
            aesState = nil
            portableKey = nil
        }
    }

    deinit {
        if let aesState {
            Sodium.zero(UnsafeMutableRawBufferPointer(start: aesState, count: crypto_aead_aes256gcm_statebytes()))
            aesState.deallocate()
        }
    }

    /// Seals `plaintext` into `output` (exactly `plaintext.count + 16` bytes: ciphertext, then tag).
    func seal(
        _ plaintext: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer,
        into output: UnsafeMutableRawBufferPointer
    ) {
        precondition(
            nonce.count == algorithm.nonceCount && output.count == plaintext.count + EnvelopeAlgorithm.tagCount)
        if let openSSL { return openSSL.seal(plaintext, nonce: nonce, aad: aad, into: output) }
        var written: UInt64 = 0
        let plain = plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self)
        let additional = aad.baseAddress?.assumingMemoryBound(to: UInt8.self)
        let out = output.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let noncePointer = nonce.baseAddress!.assumingMemoryBound(to: UInt8.self)
        switch algorithm {
        case .aes256GCM:
            if let aesState {
                _ = crypto_aead_aes256gcm_encrypt_afternm(
                    out, &written, plain, UInt64(plaintext.count), additional, UInt64(aad.count), nil, noncePointer,
                    aesState.assumingMemoryBound(to: crypto_aead_aes256gcm_state.self))
            } else {
                sealPortably(plaintext, nonce: nonce, aad: aad, into: output)
            }
        case .xChaCha20Poly1305:
            key!.withUnsafeBytes { key in
                _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
                    out, &written, plain, UInt64(plaintext.count), additional, UInt64(aad.count), nil, noncePointer,
                    key.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        case .none, .aes256GCMDerived, .chaCha20Poly1305Derived:
            preconditionFailure("no libsodium cipher for \(algorithm)")
        }
    }

    /// Opens `sealed` (ciphertext then 16-byte tag) into `output` (`sealed.count - 16` bytes).
    /// Returns false, with `output` zeroed, when the tag does not verify: the data was changed,
    /// or the key, nonce or associated data are not the ones it was sealed with.
    func open(
        _ sealed: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer,
        into output: UnsafeMutableRawBufferPointer
    ) -> Bool {
        guard sealed.count >= EnvelopeAlgorithm.tagCount, nonce.count == algorithm.nonceCount,
            output.count == sealed.count - EnvelopeAlgorithm.tagCount
        else { return false }
        if let openSSL { return openSSL.open(sealed, nonce: nonce, aad: aad, into: output) }
        var written: UInt64 = 0
        let input = sealed.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let additional = aad.baseAddress?.assumingMemoryBound(to: UInt8.self)
        let out = output.baseAddress?.assumingMemoryBound(to: UInt8.self)
        let noncePointer = nonce.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let status: Int32
        switch algorithm {
        case .aes256GCM:
            if let aesState {
                status = crypto_aead_aes256gcm_decrypt_afternm(
                    out, &written, nil, input, UInt64(sealed.count), additional, UInt64(aad.count), noncePointer,
                    aesState.assumingMemoryBound(to: crypto_aead_aes256gcm_state.self))
            } else {
                status = openPortably(sealed, nonce: nonce, aad: aad, into: output) ? 0 : -1
            }
        case .xChaCha20Poly1305:
            status = key!.withUnsafeBytes { key in
                crypto_aead_xchacha20poly1305_ietf_decrypt(
                    out, &written, nil, input, UInt64(sealed.count), additional, UInt64(aad.count), noncePointer,
                    key.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        case .none, .aes256GCMDerived, .chaCha20Poly1305Derived:
            return false
        }
        if status != 0 {
            Sodium.zero(output)
            return false
        }
        return true
    }

    // MARK: swift-crypto AES-256-GCM

    private func sealPortably(
        _ plaintext: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer,
        into output: UnsafeMutableRawBufferPointer
    ) {
        do {
            let box = try AES.GCM.seal(
                plaintext, using: portableKey!, nonce: try AES.GCM.Nonce(data: nonce), authenticating: aad)
            box.ciphertext.withUnsafeBytes { output.copyMemory(from: $0) }
            box.tag.withUnsafeBytes {
                UnsafeMutableRawBufferPointer(rebasing: output[plaintext.count...]).copyMemory(from: $0)
            }
        } catch {
            // Only a nonce of the wrong length can fail, and seal's precondition rules that out.
            preconditionFailure("AES-GCM seal failed: \(error)")
        }
    }

    private func openPortably(
        _ sealed: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer,
        into output: UnsafeMutableRawBufferPointer
    ) -> Bool {
        let split = sealed.count - EnvelopeAlgorithm.tagCount
        do {
            let box = try AES.GCM.SealedBox(
                nonce: try AES.GCM.Nonce(data: nonce),
                ciphertext: UnsafeRawBufferPointer(rebasing: sealed[..<split]),
                tag: UnsafeRawBufferPointer(rebasing: sealed[split...]))
            let plaintext = try AES.GCM.open(box, using: portableKey!, authenticating: aad)
            plaintext.withUnsafeBytes { output.copyMemory(from: $0) }
            return true
        } catch {
            return false
        }
    }
}

extension EnvelopeAlgorithm {
    /// The OpenSSL cipher of a derived-key algorithm; nil for the others (libsodium's).
    var openSSLAlgorithm: OpenSSLCipher.Algorithm? {
        switch self {
        case .aes256GCMDerived: .aes256GCM
        case .chaCha20Poly1305Derived: .chaCha20Poly1305
        case .none, .aes256GCM, .xChaCha20Poly1305: nil
        }
    }
}
