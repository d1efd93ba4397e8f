import Dispatch
import Foundation

/// Seals or opens a batch of chunks on every core.
///
/// Chunks are independent (each has its own counter in its nonce), so a batch of them is split
/// between threads; the caller writes the results out in order. The batch size bounds memory:
/// it does not grow with the file.
enum ChunkBatch {
    /// Chunks per batch for chunks of `chunkSize` bytes: four per core, so every core has work,
    /// but no more than `batchBytes` of plaintext, so the two batch buffers of a reader or
    /// writer stay near 6 MiB on any machine and for any chunk size a header may declare.
    static func chunksPerBatch(chunkSize: Int) -> Int {
        max(1, min(max(1, ProcessInfo.processInfo.activeProcessorCount) * 4, batchBytes / chunkSize))
    }

    /// The most plaintext one batch holds (48 chunks of 64 KiB, 3 chunks of 1 MiB).
    static let batchBytes = 3 << 20

    /// Runs `body` for `count` chunks, in parallel when there is more than one.
    static func forEach(_ count: Int, _ body: @Sendable (Int) -> Void) {
        if count == 1 {
            body(0)
        } else if count > 1 {
            DispatchQueue.concurrentPerform(iterations: count, execute: body)
        }
    }

    /// Seals `chunkCount` full chunks of `plaintext` (non-final, indexes from `firstIndex`) into
    /// `sealed`, in order.
    static func sealFull(
        _ plaintext: UnsafeRawBufferPointer, chunkCount: Int, firstIndex: UInt64, cipher: ChunkCipher,
        into sealed: UnsafeMutableRawBufferPointer
    ) {
        let chunkSize = cipher.chunkSize
        let sealedSize = cipher.sealedChunkSize
        let plaintext = Disjoint(plaintext)
        let sealed = Disjoint(sealed)
        forEach(chunkCount) { chunk in
            let plaintext = plaintext.value
            let sealed = sealed.value
            cipher.seal(
                index: firstIndex + UInt64(chunk), last: false,
                UnsafeRawBufferPointer(rebasing: plaintext[chunk * chunkSize..<(chunk + 1) * chunkSize]),
                into: UnsafeMutableRawBufferPointer(rebasing: sealed[chunk * sealedSize..<(chunk + 1) * sealedSize]))
        }
    }

    /// Opens `chunkCount` full sealed chunks (non-final, indexes from `firstIndex`) into
    /// `plaintext`; returns the index of the first chunk that does not verify, or nil.
    static func openFull(
        _ sealed: UnsafeRawBufferPointer, chunkCount: Int, firstIndex: UInt64, cipher: ChunkCipher,
        into plaintext: UnsafeMutableRawBufferPointer
    ) -> UInt64? {
        let chunkSize = cipher.chunkSize
        let sealedSize = cipher.sealedChunkSize
        let failureFlags = UnsafeMutableBufferPointer<Bool>.allocate(capacity: max(chunkCount, 1))
        defer { failureFlags.deallocate() }
        failureFlags.initialize(repeating: false)
        let failures = Disjoint(failureFlags)
        let sealed = Disjoint(sealed)
        let plaintext = Disjoint(plaintext)
        forEach(chunkCount) { chunk in
            let sealed = sealed.value
            let plaintext = plaintext.value
            failures.value[chunk] = !cipher.open(
                index: firstIndex + UInt64(chunk), last: false,
                UnsafeRawBufferPointer(rebasing: sealed[chunk * sealedSize..<(chunk + 1) * sealedSize]),
                into: UnsafeMutableRawBufferPointer(rebasing: plaintext[chunk * chunkSize..<(chunk + 1) * chunkSize]))
        }
        return (0..<chunkCount).first { failureFlags[$0] }.map { firstIndex + UInt64($0) }
    }
}

/// A buffer shared by the iterations of a batch, each of which touches only its own chunk's
/// bytes: disjoint writes, so no iteration can see another's.
private struct Disjoint<Buffer>: @unchecked Sendable {
    let value: Buffer
    init(_ value: Buffer) { self.value = value }
}
