internal import CLibcrypto

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import Synchronization
import CustodyPolicy

/// AES-256-GCM or ChaCha20-Poly1305 (RFC 8439, 96-bit nonces) over OpenSSL's libcrypto, bound
/// to one key.
///
/// OpenSSL's implementations run at the machine's limit (AES-NI with carry-less multiply, or
/// AVX2 ChaCha20), about three times libsodium 1.0.18's AES-GCM here. An OpenSSL context holds
/// the expanded key and is not thread-safe, so the cipher keeps one context for the common case
/// (one thread) and hands further ones out of a small pool when chunks are sealed on several
/// threads at once. Every context is freed (and its key schedule cleared by OpenSSL) when the
/// cipher goes away. A key that seals or opens one message only (a buffer envelope's data key)
/// needs no cipher: the static `seal` and `open` key a context of the calling thread for that
/// message and clear it afterwards.
final class OpenSSLCipher: @unchecked Sendable {
    // @unchecked: `primary` is used only by the thread that set `primaryBusy`; the pool's
    // contexts only by the thread that took them out; the key is read-only.

    private let algorithm: Algorithm
    private let key: SecretBytes
    private let primary: OpaquePointer
    private let primaryBusy = Atomic<Bool>(false)
    /// Idle spare contexts (their addresses), already keyed.
    private let spares = Locked<[UInt]>([])

    enum Algorithm: Sendable {
        case aes256GCM
        case chaCha20Poly1305
    }

    /// The algorithms, fetched from OpenSSL's default provider once per process.
    private struct Fetched: @unchecked Sendable {
        let aes256GCM: OpaquePointer
        let chaCha20Poly1305: OpaquePointer

        func cipher(_ algorithm: Algorithm) -> OpaquePointer {
            algorithm == .aes256GCM ? aes256GCM : chaCha20Poly1305
        }
    }

    private static let fetched: Fetched = {
        guard let aes = EVP_CIPHER_fetch(nil, "AES-256-GCM", nil),
            let chacha = EVP_CIPHER_fetch(nil, "ChaCha20-Poly1305", nil)
        else {
            fatalError("OpenSSL's default provider has no AES-256-GCM or ChaCha20-Poly1305: libcrypto is not usable")
        }
        return Fetched(aes256GCM: aes, chaCha20Poly1305: chacha)
    }()

    /// - Parameter key: 32 bytes, copied.
    init(_ algorithm: Algorithm, key: UnsafeRawBufferPointer) {
        precondition(key.count == 32, "a 32-byte key")
        self.algorithm = algorithm
        self.key = SecretBytes(copying: key)
        primary = Self.makeContext(algorithm, key: self.key)
    }

    deinit {
        EVP_CIPHER_CTX_free(primary)
        for address in spares.withLock({ $0 }) {
            EVP_CIPHER_CTX_free(OpaquePointer(bitPattern: address))
        }
    }

    private static func makeContext(_ algorithm: Algorithm, key: SecretBytes) -> OpaquePointer {
        guard let context = EVP_CIPHER_CTX_new() else {
            fatalError("OpenSSL could not allocate a cipher context (out of memory)")
        }
        let status = key.withUnsafeBytes { key in
            EVP_CipherInit_ex2(
                context, fetched.cipher(algorithm), key.baseAddress!.assumingMemoryBound(to: UInt8.self), nil, 1, nil)
        }
        guard status == 1 else { fatalError("OpenSSL refused a 32-byte key for \(algorithm)") }
        return context
    }

    /// Runs `body` with a context no other thread is using.
    @inline(__always)
    private func withContext<Result>(_ body: (OpaquePointer) -> Result) -> Result {
        if primaryBusy.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged {
            defer { primaryBusy.store(false, ordering: .releasing) }
            return body(primary)
        }
        let context =
            spares.withLock { $0.popLast() }.flatMap { OpaquePointer(bitPattern: $0) }
            ?? Self.makeContext(algorithm, key: key)
        defer { spares.withLock { $0.append(UInt(bitPattern: context)) } }
        return body(context)
    }

    /// Seals `plaintext` into `output` (`plaintext.count + 16` bytes: ciphertext, then tag).
    func seal(
        _ plaintext: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer,
        into output: UnsafeMutableRawBufferPointer
    ) {
        withContext { Self.seal(on: $0, cipher: nil, key: nil, plaintext, nonce: nonce, aad: aad, into: output) }
    }

    /// Opens `sealed` (ciphertext, then 16-byte tag) into `output` (`sealed.count - 16` bytes);
    /// false, with `output` zeroed, when the tag does not verify.
    func open(
        _ sealed: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer,
        into output: UnsafeMutableRawBufferPointer
    ) -> Bool {
        withContext { Self.open(on: $0, cipher: nil, key: nil, sealed, nonce: nonce, aad: aad, into: output) }
    }

    // MARK: One message under a key of its own

    /// Seals one message under `key` (32 bytes) on this thread's context for `algorithm`: keyed
    /// and given its nonce in one initialization, its key schedule cleared afterwards. For a
    /// key that seals a single chunk (a buffer envelope's data key), where keeping a cipher
    /// would cost more than the sealing.
    static func seal(
        _ algorithm: Algorithm, key: UnsafeRawBufferPointer, _ plaintext: UnsafeRawBufferPointer,
        nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer
    ) {
        precondition(key.count == 32, "a 32-byte key")
        let (context, cipher) = ThreadContexts.current.context(for: algorithm)
        defer { ThreadContexts.clear(context, algorithm) }
        seal(on: context, cipher: cipher, key: key, plaintext, nonce: nonce, aad: aad, into: output)
    }

    /// Opens one message under `key` on this thread's context (see the sealing counterpart);
    /// false, with `output` zeroed, when the tag does not verify.
    static func open(
        _ algorithm: Algorithm, key: UnsafeRawBufferPointer, _ sealed: UnsafeRawBufferPointer,
        nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer
    ) -> Bool {
        precondition(key.count == 32, "a 32-byte key")
        let (context, cipher) = ThreadContexts.current.context(for: algorithm)
        defer { ThreadContexts.clear(context, algorithm) }
        return open(on: context, cipher: cipher, key: key, sealed, nonce: nonce, aad: aad, into: output)
    }

    // MARK: The calls

    /// Seals on `context`, setting its algorithm first when `cipher` is given (a context that
    /// has none) and keying it when `key` is.
    private static func seal(
        on context: OpaquePointer, cipher: OpaquePointer?, key: UnsafeRawBufferPointer?,
        _ plaintext: UnsafeRawBufferPointer,
        nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer
    ) {
        precondition(nonce.count == 12 && output.count == plaintext.count + 16 && plaintext.count <= Int(Int32.max))
        let status = custody_aead_seal(
            context, cipher, key?.baseAddress?.assumingMemoryBound(to: UInt8.self),
            nonce.baseAddress!.assumingMemoryBound(to: UInt8.self),
            aad.baseAddress?.assumingMemoryBound(to: UInt8.self),
            Int32(aad.count), plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(plaintext.count),
            output.baseAddress!.assumingMemoryBound(to: UInt8.self),
            output.baseAddress!.assumingMemoryBound(to: UInt8.self) + plaintext.count)
        // Sealing with a keyed context and a 12-byte nonce cannot fail short of memory corruption.
        precondition(status == 1, "OpenSSL failed to seal a chunk")
    }

    /// Opens on `context`, setting its algorithm and key first as sealing does.
    private static func open(
        on context: OpaquePointer, cipher: OpaquePointer?, key: UnsafeRawBufferPointer?,
        _ sealed: UnsafeRawBufferPointer,
        nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer
    ) -> Bool {
        guard nonce.count == 12, sealed.count >= 16, output.count == sealed.count - 16, output.count <= Int(Int32.max)
        else { return false }
        let count = output.count
        let status = custody_aead_open(
            context, cipher, key?.baseAddress?.assumingMemoryBound(to: UInt8.self),
            nonce.baseAddress!.assumingMemoryBound(to: UInt8.self),
            aad.baseAddress?.assumingMemoryBound(to: UInt8.self),
            Int32(aad.count), sealed.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(count),
            output.baseAddress?.assumingMemoryBound(to: UInt8.self),
            sealed.baseAddress!.assumingMemoryBound(to: UInt8.self) + count)
        guard status == 1 else {
            // OpenSSL writes the plaintext before it checks the tag: none of it may be used.
            Sodium.zero(output)
            return false
        }
        return true
    }

    /// One context per algorithm for each thread that seals single messages: made on first use,
    /// keyed with each message's nonce in one initialization, and cleared after the message so
    /// that what it keeps says nothing about the message's key. Each algorithm is cleared the
    /// way that costs it least (measured with OpenSSL 3.0, docs/decisions.md): an AES-256-GCM
    /// context is reset, which cleanses its key schedule as OpenSSL frees the algorithm's state
    /// and leaves it with no algorithm for the next message to set (an AES key schedule and
    /// GHASH table for a zero key cost more than the state's allocation); a ChaCha20-Poly1305
    /// context is re-keyed with an all-zero key (its key setup is a copy; a new state costs
    /// more). Freed, with what they hold cleansed by OpenSSL, when the thread ends.
    private struct ThreadContexts {
        let slots: UnsafeMutablePointer<OpaquePointer?>

        /// The calling thread's contexts.
        static var current: ThreadContexts {
            if let slots = pthread_getspecific(threadKey) {
                return ThreadContexts(slots: slots.assumingMemoryBound(to: OpaquePointer?.self))
            }
            let slots = UnsafeMutablePointer<OpaquePointer?>.allocate(capacity: 2)
            slots.initialize(repeating: nil, count: 2)
            pthread_setspecific(threadKey, slots)
            return ThreadContexts(slots: slots)
        }

        /// This thread's context for `algorithm`, and the cipher to initialize it with when it
        /// has none (after a reset).
        func context(for algorithm: Algorithm) -> (OpaquePointer, OpaquePointer?) {
            let index = algorithm == .aes256GCM ? 0 : 1
            let cipher = fetched.cipher(algorithm)
            if let context = slots[index] { return (context, algorithm == .aes256GCM ? cipher : nil) }
            guard let context = EVP_CIPHER_CTX_new() else {
                fatalError("OpenSSL could not allocate a cipher context (out of memory)")
            }
            guard EVP_CipherInit_ex2(context, cipher, nil, nil, 1, nil) == 1 else {
                fatalError("OpenSSL could not set up \(algorithm)")
            }
            slots[index] = context
            return (context, nil)
        }

        /// Clears what the last message left in `context`, this thread's context for `algorithm`.
        static func clear(_ context: OpaquePointer, _ algorithm: Algorithm) {
            let status =
                algorithm == .aes256GCM
                ? EVP_CIPHER_CTX_reset(context)
                : zeroKey.withUnsafeBufferPointer { EVP_CipherInit_ex2(context, nil, $0.baseAddress, nil, -1, nil) }
            precondition(status == 1, "OpenSSL refused to clear a context")
        }

        private static let zeroKey = [UInt8](repeating: 0, count: 32)

        /// The thread-specific slot, its destructor freeing the thread's contexts.
        private static let threadKey: pthread_key_t = {
            var key = pthread_key_t()
            let status = pthread_key_create(&key) { slots in
                guard let slots = slots?.assumingMemoryBound(to: OpaquePointer?.self) else { return }
                for index in 0..<2 { EVP_CIPHER_CTX_free(slots[index]) }
                slots.deinitialize(count: 2)
                slots.deallocate()
            }
            precondition(status == 0, "no thread-specific key left for OpenSSL's contexts")
            return key
        }()
    }
}
