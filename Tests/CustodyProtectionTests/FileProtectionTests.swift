import CustodyPolicy
import Foundation
import Testing

@testable import CustodyProtection

@Suite("Files")
struct FileProtectionTests {
    static let chunk = 1 << 16

    private func write(_ bytes: [UInt8], _ path: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    private func read(_ path: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    private func strays(in directory: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.contains(".custody-tmp-") }
    }

    @Test(
        "round trips at every size that matters, every algorithm and tag-only",
        arguments: [0, 1, chunk - 1, chunk, chunk + 1, 5 * chunk + 3, 40 * chunk])
    func roundTrips(size: Int) async throws {
        let state = try await TestState()
        let data = pattern(size)
        let path = state.path("file.bin")
        for algorithm in BufferProtectionTests.algorithms {
            let protector = state.protector(algorithm: algorithm)
            try write(data, path)
            try await protector.protect(file: path, owner: alice, encrypt: true)
            let info = try #require(try protector.protectionInfo(file: path))
            #expect(info.algorithm == algorithm)
            #expect(info.chunkSize == Self.chunk)
            #expect(try read(path).count == info.headerLength + size + 16 * (size / Self.chunk + 1))
            try await protector.unprotect(file: path)
            #expect(try read(path) == data)
        }
        try write(data, path)
        try await state.protector().protect(file: path, owner: alice, encrypt: false)
        #expect(try DataProtector.protectionInfo(file: path)?.isEncrypted == false)
        try await state.protector().unprotect(file: path)
        #expect(try read(path) == data)
        #expect(try strays(in: state.directory).isEmpty)
    }

    @Test("a file written in odd pieces and read in odd pieces comes back whole")
    func streaming() async throws {
        let state = try await TestState()
        let protector = state.protector()
        let path = state.path("stream.bin")
        let data = pattern(3 * Self.chunk + 12_345)
        let writer = try await protector.makeWriter(path: path, owner: alice, encrypt: true)
        var offset = 0
        var step = 1
        while offset < data.count {
            let count = min(step, data.count - offset)
            try writer.write(Array(data[offset..<offset + count]))
            offset += count
            step = step * 7 % 100_003 + 1
        }
        #expect(!FileManager.default.fileExists(atPath: path), "nothing appears before close()")
        try writer.close()
        #expect(writer.bytesWritten == Int64(data.count))
        let reader = try await protector.makeReader(path: path)
        var back: [UInt8] = []
        while true {
            let piece = try reader.read(maximum: 777)
            if piece.isEmpty { break }
            back += piece
        }
        #expect(back == data)
        #expect(reader.bytesRead == Int64(data.count))
    }

    /// Pieces in batches (`ChunkBatch.chunksPerBatch` full chunks) and chunks: a whole batch with
    /// nothing pending is sealed where it lies, anything else goes through the pending buffer.
    static let batchPieces: [(name: String, pieces: [(batches: Int, chunks: Int, bytes: Int)])] = [
        ("one whole batch", [(1, 0, 0)]),
        ("whole batches, then a partial chunk", [(3, 0, 0), (0, 0, 5)]),
        ("a byte pending, then whole batches", [(0, 0, 1), (2, 0, 0), (0, 0, 7)]),
        ("a batch and a bit in one piece, twice", [(1, 0, 3), (1, 1, 0)]),
        ("a batch less a byte, then a batch and a byte", [(1, 0, -1), (1, 0, 1)]),
        ("chunks to a batch's end, then whole batches", [(1, -1, 0), (0, 1, 0), (2, 0, 0)]),
        ("exactly whole chunks: the last chunk is empty", [(2, 3, 0)]),
    ]

    @Test(
        "pieces of a batch and more round trip whatever is pending when they arrive",
        arguments: batchPieces.indices)
    func batchSizedPieces(index: Int) async throws {
        let (name, pieces) = Self.batchPieces[index]
        let batch = ChunkBatch.chunksPerBatch(chunkSize: Self.chunk) * Self.chunk
        let sizes = pieces.map { $0.batches * batch + $0.chunks * Self.chunk + $0.bytes }
        let state = try await TestState()
        let protector = state.protector()
        let path = state.path("pieces.bin")
        let data = pattern(sizes.reduce(0, +))
        let writer = try await protector.makeWriter(path: path, owner: alice, encrypt: true)
        var offset = 0
        for size in sizes {
            try writer.write(Array(data[offset..<offset + size]))
            offset += size
        }
        try writer.close()
        #expect(writer.bytesWritten == Int64(data.count), "\(name)")
        let info = try #require(try protector.protectionInfo(file: path))
        #expect(
            try read(path).count == info.headerLength + data.count + 16 * (data.count / Self.chunk + 1), "\(name)")
        try await protector.unprotect(file: path)
        #expect(try read(path) == data, "\(name)")
    }

    @Test("a stream that delivers the header in pieces is read whole, not taken for a damaged one")
    func slowStream() async throws {
        let state = try await TestState()
        let protector = state.protector()
        let data = pattern(5_000)
        let envelope = try await protector.protect(data, owner: alice, encrypt: true)
        var descriptors: [Int32] = [0, 0]
        try #require(pipe(&descriptors) == 0)
        let (readEnd, writeEnd) = (descriptors[0], descriptors[1])
        // Three pieces: inside the magic, inside the owner, the rest.
        let pieces = [envelope[..<3], envelope[3..<20], envelope[20...]]
        let feeder = Thread {
            for piece in pieces {
                _ = piece.withUnsafeBytes { Glibc.write(writeEnd, $0.baseAddress, $0.count) }
                usleep(20_000)
            }
            close(writeEnd)
        }
        feeder.start()
        defer { close(readEnd) }
        let output = state.path("from-pipe.bin")
        try await protector.unprotect(from: .stream(readEnd, name: "<pipe>"), to: .file(output))
        #expect(try read(output) == data)
    }

    /// A protected file with 1 KiB chunks: several chunks in a few kilobytes.
    private func smallChunked(_ state: TestState, size: Int, encrypted: Bool = true) async throws -> (
        path: String, bytes: [UInt8], header: Int
    ) {
        let path = state.path("small.bin")
        let writer = try await state.protector().makeWriter(
            path: path, owner: alice, encrypt: encrypted, chunkExponent: 10)
        try writer.write(pattern(size))
        try writer.close()
        let bytes = try read(path)
        return (path, bytes, try #require(try DataProtector.protectionInfo(bytes)).headerLength)
    }

    private func expectRejected(
        _ bytes: [UInt8], _ state: TestState, _ what: String, codes: Set<ProtectionError.Code> = [.decryptFailed]
    ) async throws {
        let path = state.path("tampered.bin")
        try write(bytes, path)
        let error = await protectionError { try await state.protector().unprotect(file: path) }
        #expect(error.map { codes.contains($0.code) } == true, "\(what): \(String(describing: error))")
        #expect(try read(path) == bytes, "\(what): the file must be left as it was")
        #expect(try strays(in: state.directory).isEmpty, "\(what): no temporary file left behind")
    }

    @Test(
        "every single-byte change of a small protected file is rejected, encrypted or tagged", arguments: [true, false])
    func flips(encrypted: Bool) async throws {
        let state = try await TestState()
        let (_, original, _) = try await smallChunked(state, size: 100, encrypted: encrypted)
        for index in 4..<original.count {
            var damaged = original
            damaged[index] ^= 0x40
            try await expectRejected(
                damaged, state, "byte \(index)",
                codes: [.decryptFailed, .malformedEnvelope, .unsupportedVersion, .keyUnavailable])
        }
    }

    @Test("truncation at every chunk boundary and inside chunks is rejected")
    func truncation() async throws {
        let state = try await TestState()
        let (_, original, header) = try await smallChunked(state, size: 3 * 1_024 + 500)
        let sealedChunk = 1_024 + 16
        var cuts: Set<Int> = [original.count - 1, original.count - 16, original.count - 17]
        for chunk in 0...3 {
            let boundary = header + chunk * sealedChunk
            cuts.formUnion([boundary, boundary + 1, boundary + 15, boundary + 16, boundary + 500])
        }
        for cut in cuts.sorted() where cut < original.count && cut >= header {
            try await expectRejected(Array(original.prefix(cut)), state, "cut at \(cut)")
        }
    }

    @Test("swapped, duplicated and dropped chunks, appended bytes are rejected")
    func reordering() async throws {
        let state = try await TestState()
        let (_, original, header) = try await smallChunked(state, size: 3 * 1_024 + 500)
        let sealedChunk = 1_024 + 16
        func chunk(_ index: Int) -> ArraySlice<UInt8> {
            original[header + index * sealedChunk..<header + (index + 1) * sealedChunk]
        }
        let head = Array(original[..<header])
        let tail = Array(original[(header + 3 * sealedChunk)...])
        try await expectRejected(head + chunk(1) + chunk(0) + chunk(2) + tail, state, "swap 0 and 1")
        try await expectRejected(head + chunk(0) + chunk(0) + chunk(1) + chunk(2) + tail, state, "duplicate 0")
        try await expectRejected(head + chunk(0) + chunk(2) + tail, state, "drop 1")
        try await expectRejected(head + chunk(0) + chunk(1) + chunk(2), state, "drop the final chunk")
        try await expectRejected(original + [0], state, "one byte appended")
        try await expectRejected(original + Array(chunk(0)), state, "a chunk appended")
        // A chunk from another envelope of the same owner and key does not fit either.
        let (_, other, otherHeader) = try await smallChunked(state, size: 3 * 1_024 + 500)
        try await expectRejected(
            head + Array(other[otherHeader..<otherHeader + sealedChunk]) + chunk(1) + chunk(2) + tail, state,
            "chunk from another file")
    }

    @Test("a file moved to another owner, a wiped key or a wrong key is rejected")
    func keys() async throws {
        let state = try await TestState()
        _ = try await state.protector().protect(pattern(10), owner: bob, encrypt: true)
        let (path, original, _) = try await smallChunked(state, size: 2_000)
        var moved = original
        let range = try #require(moved.firstRange(of: Array("0d000000-0000-4000-8000-000000000001".utf8)))
        moved.replaceSubrange(range, with: Array("0d000000-0000-4000-8000-000000000002".utf8))
        try await expectRejected(moved, state, "owner changed")

        // Another state (another master key, other account keys) cannot open it.
        let other = try await TestState()
        _ = try await other.protector().protect(pattern(10), owner: alice, encrypt: true)
        try write(original, other.path("file.bin"))
        #expect(
            await protectionError { try await other.protector().unprotect(file: other.path("file.bin")) }?.code
                == .decryptFailed)

        try await state.keyRing.wipe(state.protector().ownerIdentifier(for: alice))
        try write(original, path)
        #expect(await protectionError { try await state.protector().unprotect(file: path) }?.code == .keyUnavailable)
        #expect(try read(path) == original)
    }

    @Test("a protect that fails half-way leaves the original file and no temporary file", arguments: [0, 1, 7, 40])
    func interrupted(failAfter: UInt64) async throws {
        let state = try await TestState()
        let path = state.path("precious.bin")
        let data = pattern(40 * Self.chunk + 99)
        try write(data, path)
        let error = await protectionError {
            try await state.protector().protect(
                file: path, owner: alice, encrypt: true, progress: nil, failAfterChunks: failAfter)
        }
        #expect(error?.code == .io)
        #expect(error?.message.contains("injected failure") == true)
        #expect(try read(path) == data)
        #expect(try strays(in: state.directory).isEmpty)
    }

    @Test("unprotect leaves a file that is not protected alone; protectionInfo says so")
    func plainFiles() async throws {
        let state = try await TestState()
        let path = state.path("plain.txt")
        try write(Array("not protected".utf8), path)
        try await state.protector().unprotect(file: path)
        #expect(try read(path) == Array("not protected".utf8))
        #expect(try DataProtector.protectionInfo(file: path) == nil)
        #expect(
            await protectionError { _ = try await state.protector().makeReader(path: path) }?.code == .invalidArguments)
        #expect(
            await protectionError {
                try await state.protector().protect(file: state.directory, owner: alice, encrypt: false)
            }?.code
                == .invalidArguments)
        #expect(
            await protectionError {
                try await state.protector().protect(file: state.path("missing"), owner: alice, encrypt: false)
            }?.code == .io)
    }

    @Test("protecting a protected file re-seals it for the new owner; verifyAndProtect skips files already right")
    func reprotect() async throws {
        let state = try await TestState()
        let protector = state.protector()
        let path = state.path("doc.bin")
        try write(pattern(5_000), path)
        try await protector.protect(file: path, owner: alice, encrypt: true)
        #expect(try await !protector.verifyAndProtect(file: path, owner: alice, encrypt: true))
        #expect(try await protector.verifyAndProtect(file: path, owner: bob, encrypt: true))
        #expect(try protector.protectionInfo(file: path)?.owner == protector.ownerIdentifier(for: bob))
        try await protector.unprotect(file: path)
        #expect(try read(path) == pattern(5_000))
    }

    @Test("rotation then rewrap moves a file and a buffer to the newest key version")
    func rewrap() async throws {
        let state = try await TestState()
        let protector = state.protector()
        let path = state.path("doc.bin")
        try write(pattern(70_000), path)
        try await protector.protect(file: path, owner: alice, encrypt: true)
        let buffer = try await protector.protect(pattern(300), owner: alice, encrypt: true)
        #expect(try await !protector.rewrap(file: path), "already on the newest version")
        try await state.keyRing.rotate(protector.ownerIdentifier(for: alice))
        #expect(try await protector.rewrap(file: path))
        #expect(try protector.protectionInfo(file: path)?.keyVersion == 2)
        let moved = try await protector.rewrap(buffer)
        #expect(try protector.protectionInfo(moved)?.keyVersion == 2)
        #expect(try await protector.unprotect(moved) == pattern(300))
        try await protector.unprotect(file: path)
        #expect(try read(path) == pattern(70_000))
    }

    @Test("a directory's files are protected recursively, and new files inherit its owner")
    func directories() async throws {
        let state = try await TestState()
        let protector = state.protector()
        let root = state.path("docs")
        try FileManager.default.createDirectory(atPath: root + "/sub/deeper", withIntermediateDirectories: true)
        for name in ["a.txt", "sub/b.txt", "sub/deeper/c.txt"] { try write(Array(name.utf8), root + "/" + name) }
        let first = try await protector.protect(directory: root, owner: alice, encrypt: true)
        #expect(first.written == ["a.txt", "sub/b.txt", "sub/deeper/c.txt"].map { root + "/" + $0 })
        #expect(first.skipped.isEmpty && first.failed.isEmpty)
        let again = try await protector.protect(directory: root, owner: alice, encrypt: true)
        #expect(again.written.isEmpty, "already protected")
        #expect(again.skipped.map(\.path) == first.written)
        #expect(again.skipped.allSatisfy { $0.reason.hasPrefix("already protected for oid:") })
        for name in ["a.txt", "sub/b.txt", "sub/deeper/c.txt"] {
            #expect(
                try protector.protectionInfo(file: root + "/" + name)?.owner == protector.ownerIdentifier(for: alice))
        }
        let writer = try await protector.makeWriter(path: root + "/sub/new.txt", owner: nil, encrypt: true)
        try writer.write(Array("inherited".utf8))
        try writer.close()
        #expect(
            try protector.protectionInfo(file: root + "/sub/new.txt")?.owner == protector.ownerIdentifier(for: alice))
        try write(Array("dropped in".utf8), root + "/later.txt")
        #expect(try await protector.verifyAndProtect(file: root + "/later.txt", encrypt: true))
        #expect(
            await protectionError {
                _ = try await protector.makeWriter(path: state.path("orphan.txt"), owner: nil, encrypt: false)
            }?.code
                == .invalidArguments)
    }

    /// A tree with one file of each kind that matters: plain files at two depths, a file already
    /// protected for alice, one protected for bob, a symbolic link, a FIFO, and an empty file.
    private func mixedTree(_ state: TestState, _ protector: DataProtector) async throws -> String {
        let root = state.path("tree")
        try FileManager.default.createDirectory(atPath: root + "/sub", withIntermediateDirectories: true)
        try write(pattern(70_000), root + "/plain.bin")
        try write(pattern(10, seed: 2), root + "/sub/small.txt")
        try write([], root + "/sub/empty")
        try write(pattern(500, seed: 3), root + "/alice.bin")
        try await protector.protect(file: root + "/alice.bin", owner: alice, encrypt: true)
        try write(pattern(600, seed: 4), root + "/bob.bin")
        try await protector.protect(file: root + "/bob.bin", owner: bob, encrypt: true)
        #expect(symlink(root + "/plain.bin", root + "/link") == 0)
        #expect(mkfifo(root + "/sub/fifo", 0o600) == 0)
        return root
    }

    @Test("a tree protected for alice: what is written, what is skipped and why; progress covers the tree once")
    func directoryReport() async throws {
        let state = try await TestState()
        let protector = state.protector()
        let root = try await mixedTree(state, protector)
        var progress: [(Int64, Int64)] = []
        let bobSize = Int64(try read(root + "/bob.bin").count)
        let total = bobSize + 70_000 + 0 + 10
        let report = try await protector.protect(directory: root, owner: alice, encrypt: true) {
            progress.append(($0, $1))
        }
        #expect(report.written == ["bob.bin", "plain.bin", "sub/empty", "sub/small.txt"].map { root + "/" + $0 })
        #expect(report.bytes == total)
        #expect(report.failed.isEmpty)
        let skipped = Dictionary(
            uniqueKeysWithValues: report.skipped.map {
                ($0.path.replacingOccurrences(of: root + "/", with: ""), $0.reason)
            })
        #expect(skipped.keys.sorted() == ["alice.bin", "link", "sub/fifo"])
        #expect(
            skipped["alice.bin"]?.hasPrefix("already protected for oid:0d000000-0000-4000-8000-000000000001") == true)
        #expect(skipped["link"] == "a symbolic link: its target is not protected through it")
        #expect(skipped["sub/fifo"] == "a FIFO, not a regular file")
        #expect(progress.first.map { $0.0 == 0 && $0.1 == total } == true)
        #expect(progress.last.map { $0.0 == total && $0.1 == total } == true)
        #expect(zip(progress, progress.dropFirst()).allSatisfy { $0.0 <= $1.0 }, "progress never goes back")
        for name in ["bob.bin", "plain.bin", "sub/empty", "sub/small.txt", "alice.bin"] {
            let info = try #require(try protector.protectionInfo(file: root + "/" + name), "\(name)")
            #expect(info.owner == protector.ownerIdentifier(for: alice), "\(name)")
            #expect(info.isEncrypted, "\(name)")
        }
        #expect(try protector.directoryOwner(forNewFileAt: root + "/sub/new") == protector.ownerIdentifier(for: alice))
    }

    @Test("unprotecting a tree restores every file, skips plain ones, and removes the owner record")
    func directoryUnprotect() async throws {
        let state = try await TestState()
        let protector = state.protector()
        let root = try await mixedTree(state, protector)
        _ = try await protector.protect(directory: root, owner: alice, encrypt: true)
        try write(Array("plain, added later".utf8), root + "/sub/later.txt")
        let report = try await protector.unprotect(directory: root)
        #expect(
            report.written
                == ["alice.bin", "bob.bin", "plain.bin", "sub/empty", "sub/small.txt"].map { root + "/" + $0 })
        #expect(report.failed.isEmpty)
        #expect(report.skipped.map(\.path) == ["link", "sub/fifo", "sub/later.txt"].map { root + "/" + $0 })
        #expect(report.skipped.last?.reason == "not protected")
        #expect(try read(root + "/plain.bin") == pattern(70_000))
        #expect(try read(root + "/alice.bin") == pattern(500, seed: 3))
        #expect(try read(root + "/bob.bin") == pattern(600, seed: 4))
        #expect(try read(root + "/sub/empty") == [])
        #expect(!FileManager.default.fileExists(atPath: root + "/" + DataProtector.directoryOwnerFileName))
    }

    @Test("a file that fails in a tree is reported and left as it was; the others are done, and the owner record stays")
    func directoryFailure() async throws {
        let state = try await TestState()
        let protector = state.protector()
        let root = try await mixedTree(state, protector)
        _ = try await protector.protect(directory: root, owner: alice, encrypt: true)
        // bob's file, protected again for alice above, is damaged in its last byte.
        var damaged = try read(root + "/bob.bin")
        damaged[damaged.count - 1] ^= 1
        try write(damaged, root + "/bob.bin")
        let report = try await protector.unprotect(directory: root)
        #expect(report.failed.map(\.path) == [root + "/bob.bin"])
        #expect(report.failed.first?.error.code == .decryptFailed)
        #expect(try read(root + "/bob.bin") == damaged, "left as it was")
        #expect(report.written.count == 4)
        #expect(try read(root + "/plain.bin") == pattern(70_000))
        #expect(FileManager.default.fileExists(atPath: root + "/" + DataProtector.directoryOwnerFileName))
    }

    @Test(
        "a directory argument that is not a directory is refused before anything is written",
        arguments: ["missing", "file", "link"])
    func notADirectory(kind: String) async throws {
        let state = try await TestState()
        let protector = state.protector()
        try write(pattern(10), state.path("file"))
        try FileManager.default.createDirectory(atPath: state.path("dir"), withIntermediateDirectories: true)
        #expect(symlink(state.path("dir"), state.path("link")) == 0)
        let error = await protectionError {
            _ = try await protector.protect(directory: state.path(kind), owner: alice, encrypt: true)
        }
        #expect(error?.code == (kind == "missing" ? .io : .invalidArguments))
        #expect(await protectionError { _ = try await protector.unprotect(directory: state.path(kind)) } != nil)
        #expect(!FileManager.default.fileExists(atPath: state.path("dir/" + DataProtector.directoryOwnerFileName)))
    }

    /// Table for verifyAndProtect: the file as it is, the owner asked for, whether encryption is
    /// forced, and whether the file is written.
    struct VerifyCase: Sendable, CustomTestStringConvertible {
        enum Start: Sendable { case plain, encryptedForAlice, encryptedForBob, taggedForAlice }
        let start: Start
        let force: Bool
        let writes: Bool
        var testDescription: String { "\(start), force \(force) → \(writes ? "written" : "skipped")" }
    }

    @Test(
        "verifyAndProtect protects only what is not already protected for the owner",
        arguments: [
            VerifyCase(start: .plain, force: true, writes: true),
            VerifyCase(start: .plain, force: false, writes: true),
            VerifyCase(start: .encryptedForAlice, force: true, writes: false),
            VerifyCase(start: .encryptedForAlice, force: false, writes: false),
            VerifyCase(start: .encryptedForBob, force: true, writes: true),
            VerifyCase(start: .taggedForAlice, force: true, writes: true),
            VerifyCase(start: .taggedForAlice, force: false, writes: false),
        ])
    func verifyAndProtect(_ test: VerifyCase) async throws {
        let state = try await TestState()
        let protector = state.protector()
        let path = state.path("file")
        try write(pattern(3_000), path)
        switch test.start {
        case .plain: break
        case .encryptedForAlice: try await protector.protect(file: path, owner: alice, encrypt: true)
        case .encryptedForBob: try await protector.protect(file: path, owner: bob, encrypt: true)
        case .taggedForAlice: try await protector.protect(file: path, owner: alice, encrypt: false)
        }
        let before = try read(path)
        #expect(
            try (protector.alreadyProtected(file: path, for: alice, encrypt: test.force) == nil) == test.writes)
        #expect(try await protector.verifyAndProtect(file: path, owner: alice, encrypt: test.force) == test.writes)
        if !test.writes { #expect(try read(path) == before, "skipped files are not touched") }
        #expect(try protector.protectionInfo(file: path)?.owner == protector.ownerIdentifier(for: alice))
        #expect(try await protector.unprotect(try read(path)) == pattern(3_000))
    }

    @Test(
        "pass-through: data that is not an envelope is copied unchanged; an envelope is opened; a damaged header is still an error"
    )
    func passThrough() async throws {
        let state = try await TestState()
        let protector = state.protector()
        for (name, bytes) in [("plain", pattern(5_000)), ("short", [UInt8(0x89)]), ("empty", [])] {
            try write(bytes, state.path(name))
            #expect(
                try await !protector.unprotect(
                    from: .file(state.path(name)), to: .file(state.path(name + ".out")), passThrough: true))
            #expect(try read(state.path(name + ".out")) == bytes, "\(name)")
            let refused = await protectionError {
                try await protector.unprotect(from: .file(state.path(name)), to: .file(state.path(name + ".refused")))
            }
            #expect(refused?.code == .invalidArguments, "\(name)")
            #expect(!FileManager.default.fileExists(atPath: state.path(name + ".refused")))
            // In place, a plain file is left alone.
            #expect(
                try await !protector.unprotect(
                    from: .file(state.path(name)), to: .file(state.path(name)), passThrough: true))
            #expect(try read(state.path(name)) == bytes)
        }
        try write(pattern(5_000), state.path("sealed"))
        try await protector.protect(file: state.path("sealed"), owner: alice, encrypt: true)
        #expect(
            try await protector.unprotect(
                from: .file(state.path("sealed")), to: .file(state.path("sealed.out")), passThrough: true))
        #expect(try read(state.path("sealed.out")) == pattern(5_000))
        var damaged = try read(state.path("sealed"))
        damaged[5] = 0x7F  // the algorithm byte
        try write(damaged, state.path("damaged"))
        let error = await protectionError {
            try await protector.unprotect(
                from: .file(state.path("damaged")), to: .file(state.path("damaged.out")), passThrough: true)
        }
        #expect(error?.code == .malformedEnvelope)
        #expect(!FileManager.default.fileExists(atPath: state.path("damaged.out")))
    }
}
