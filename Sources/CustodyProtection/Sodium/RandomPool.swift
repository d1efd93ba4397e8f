import CustodyPolicy
internal import CSodium
import Glibc

/// Random bytes made a few kilobytes at a time, for the many small draws envelopes take (a data
/// key, a wrap nonce and a nonce prefix each): one `getrandom` call per hundred or so envelopes
/// instead of one per envelope, which was a fifth of the cost of sealing a small buffer.
///
/// Each refill takes a fresh 32-byte seed from the kernel (`randombytes_buf`, which is
/// `getrandom`) and expands it with libsodium's `randombytes_buf_deterministic` (ChaCha20 keyed
/// by the seed), then zeroes the seed: the arc4random construction, reseeded on every refill.
/// Bytes are handed out once: each draw is zeroed in the pool as it is copied out. The pool lives in its own
/// mapping that the kernel wipes in a forked child (`MADV_WIPEONFORK`), so a child starts empty
/// and never repeats its parent's keys or nonces; the mapping is also locked against swapping
/// where the limits allow and kept out of core dumps (`sodium_mlock`). Where the kernel cannot
/// wipe on fork (Linux before 4.14), the pool stays off and every draw asks the kernel.
final class RandomPool: @unchecked Sendable {
    // @unchecked: `mapping` is touched only while `refills` is locked; the pointer never changes.

    static let shared = RandomPool()

    /// Draws larger than this go straight to the kernel.
    static let largestDraw = 256

    /// The mapping: a word counting the unread bytes (zero after a fork wipes it), room for the
    /// seed, then the pool.
    private let mapping: UnsafeMutableRawPointer?
    /// Refills so far; the lock that guards the mapping.
    private let refills = Locked<UInt64>(0)
    private static let mappingSize = 8_192
    private static let seedOffset = 16
    private static let poolOffset = 64
    private static let capacity = mappingSize - poolOffset

    /// Whether draws are buffered (the kernel wipes the pool in forked children).
    var isBuffered: Bool { mapping != nil }

    /// The pool's address range, for tests that check how the kernel treats it.
    var addressRange: Range<UInt>? {
        mapping.map { UInt(bitPattern: $0)..<UInt(bitPattern: $0) + UInt(Self.mappingSize) }
    }

    private init() {
        Sodium.ensureInitialized()
        guard let base = mmap(nil, Self.mappingSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
            base != MAP_FAILED
        else {
            mapping = nil
            return
        }
        guard madvise(base, Self.mappingSize, MADV_WIPEONFORK) == 0 else {
            munmap(base, Self.mappingSize)
            mapping = nil
            return
        }
        // Best effort: without the privilege to lock memory the pool is still wiped on fork.
        _ = sodium_mlock(base, Self.mappingSize)
        mapping = base
    }

    /// Fills `buffer` with random bytes never handed out before.
    func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return }
        guard let mapping, buffer.count <= Self.largestDraw else {
            randombytes_buf(base, buffer.count)
            return
        }
        refills.withLock { refills in
            var unread = mapping.load(as: Int.self)
            if unread < buffer.count {
                refill(mapping)
                refills &+= 1
                unread = Self.capacity
            }
            let start = mapping + Self.poolOffset + (Self.capacity - unread)
            base.copyMemory(from: start, byteCount: buffer.count)
            sodium_memzero(start, buffer.count)
            mapping.storeBytes(of: unread - buffer.count, as: Int.self)
        }
    }

    /// Fills the whole pool from a fresh kernel seed.
    private func refill(_ mapping: UnsafeMutableRawPointer) {
        // The seed sits in the pool's own (locked, wiped-on-fork) memory while it is used.
        let seed = mapping + Self.seedOffset
        randombytes_buf(seed, Int(randombytes_SEEDBYTES))
        randombytes_buf_deterministic(
            mapping + Self.poolOffset, Self.capacity, seed.assumingMemoryBound(to: UInt8.self))
        sodium_memzero(seed, Int(randombytes_SEEDBYTES))
    }
}
