import CustodyPolicy
import Foundation
import Testing

@testable import CustodyProtection

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 13's reproducers at the protection layer: what Custody writes to, what it reads
/// from, the temporary files a killed process leaves, and secret memory.
@Suite("Hardening: files and memory")
struct HardeningTests {
    private func write(_ text: String, _ path: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    private func contents(_ path: String) throws -> String {
        String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self)
    }

    enum Destination: String, CaseIterable, Sendable {
        case fifo, device, symlinkToFile, symlinkToNothing, directory
    }

    /// Makes `path` the kind of destination; returns what must stay unchanged (a path and its
    /// contents) when the write is refused.
    private func make(_ kind: Destination, at path: String, in directory: String) throws -> String? {
        switch kind {
        case .fifo:
            #expect(mkfifo(path, 0o600) == 0)
        case .device:
            #expect(symlink("/dev/null", path) == 0)  // a link to a device: refused as a link
        case .symlinkToFile:
            try write("the target's own plaintext", directory + "/target.txt")
            #expect(symlink(directory + "/target.txt", path) == 0)
            return directory + "/target.txt"
        case .symlinkToNothing:
            #expect(symlink(directory + "/nowhere", path) == 0)
        case .directory:
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        }
        return nil
    }

    @Test(
        "unprotect refuses a destination that is not a regular file, and leaves it as it was",
        arguments: Destination.allCases)
    func nonRegularDestination(kind: Destination) async throws {
        let state = try await TestState()
        let protector = state.protector()
        let envelope = state.path("x.cst")
        try write("payroll", state.path("x.txt"))
        try await protector.protect(
            from: .file(state.path("x.txt")), to: .file(envelope), owner: alice, encrypt: true)
        let destination = state.path("dest")
        let target = try make(kind, at: destination, in: state.directory)
        var before = stat()
        #expect(lstat(destination, &before) == 0)

        let error = await protectionError {
            try await protector.unprotect(from: .file(envelope), to: .file(destination))
        }
        #expect(error?.code == .invalidArguments)
        #expect(
            error.map { "\($0)".contains("Custody writes only regular files") } == true, "\(String(describing: error))")
        #expect(throws: ProtectionError.self) {
            try DataProtector.checkFiles(source: .file(envelope), sink: .file(destination), protecting: false)
        }
        var after = stat()
        #expect(lstat(destination, &after) == 0)
        #expect(after.st_mode == before.st_mode && after.st_ino == before.st_ino)
        if let target { #expect(try contents(target) == "the target's own plaintext") }
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: state.directory).filter { $0.contains(".custody-tmp-") }
                .isEmpty)
    }

    @Test("the device itself is refused as a destination, not replaced")
    func deviceDestination() {
        #expect(throws: ProtectionError.self) { try FileSystem.requireReplaceable("/dev/null") }
    }

    @Test("in-place protect refuses a symbolic link (its target would stay plaintext) and a file with other hard links")
    func inPlaceLinks() async throws {
        let state = try await TestState()
        let protector = state.protector()
        try write("plaintext", state.path("real.txt"))
        #expect(symlink(state.path("real.txt"), state.path("link.txt")) == 0)
        let linked = await protectionError {
            try await protector.protect(file: state.path("link.txt"), owner: alice, encrypt: true)
        }
        #expect(linked.map { "\($0)".contains("is a symbolic link") } == true)
        #expect(try contents(state.path("real.txt")) == "plaintext")
        await #expect(throws: ProtectionError.self) {
            try await protector.protect(
                from: .file(state.path("link.txt")), to: .file(state.path("link.txt")), owner: alice, encrypt: false)
        }

        #expect(link(state.path("real.txt"), state.path("hard.txt")) == 0)
        let hard = await protectionError {
            try await protector.protect(file: state.path("real.txt"), owner: alice, encrypt: true)
        }
        #expect(hard.map { "\($0)".contains("has 2 hard links") } == true)
        #expect(try contents(state.path("hard.txt")) == "plaintext")
        // Unprotecting in place is allowed: the other names keep the envelope, never plaintext.
        #expect(unlink(state.path("hard.txt")) == 0)
        try await protector.protect(file: state.path("real.txt"), owner: alice, encrypt: true)
        #expect(link(state.path("real.txt"), state.path("hard.txt")) == 0)
        try await protector.unprotect(file: state.path("real.txt"))
        #expect(try contents(state.path("real.txt")) == "plaintext")
        #expect(try DataProtector.protectionInfo(file: state.path("hard.txt")) != nil)
    }

    @Test("reading a header from a FIFO is refused at once instead of waiting for a writer")
    func fifoSource() async throws {
        let state = try await TestState()
        let fifo = state.path("pipe")
        #expect(mkfifo(fifo, 0o600) == 0)
        let info = await protectionError { _ = try DataProtector.protectionInfo(file: fifo) }
        #expect(info.map { "\($0)".contains("is a FIFO, not a regular file") } == true)
        await #expect(throws: ProtectionError.self) { _ = try await state.protector().makeReader(path: fifo) }
        #expect(throws: ProtectionError.self) { _ = try DataProtector.head(ofFile: fifo, count: 16) }
        await #expect(throws: ProtectionError.self) {
            try await state.protector().protect(
                from: .file(fifo), to: .file(state.path("out")), owner: alice, encrypt: false)
        }
    }

    enum Stray: String, CaseIterable, Sendable {
        /// Left by a killed writer: unlocked, with content.
        case abandoned
        /// Held by a live writer (its flock): kept.
        case held
        /// Just created, empty: kept (its writer may not have locked it yet).
        case fresh
        /// Not our pattern: kept.
        case foreign
    }

    @Test(
        "temporary files of a killed writer are removed on the next write into their directory; live and foreign ones stay",
        arguments: Stray.allCases)
    func strayTemporaries(kind: Stray) async throws {
        let state = try await TestState()
        let name: String
        var holder: Int32 = -1
        switch kind {
        case .abandoned, .held:
            name = ".report.txt.custody-tmp-0123456789abcdef"
            try write("half an envelope", state.path(name))
            if kind == .held {
                holder = open(state.path(name), O_RDONLY)
                #expect(flock(holder, LOCK_EX) == 0)
            }
        case .fresh:
            name = ".report.txt.custody-tmp-00ff"
            try write("", state.path(name))
        case .foreign:
            name = ".report.txt.custody-tmp-notours"
            try write("someone else's", state.path(name))
        }
        defer { if holder >= 0 { close(holder) } }
        let removed = StrayTemporaries.remove(in: state.directory)
        #expect(removed == (kind == .abandoned ? [name] : []))
        #expect(FileManager.default.fileExists(atPath: state.path(name)) == (kind != .abandoned))
    }

    @Test("the first write into a directory removes its strays, and a writer's own temporary is never taken for one")
    func strayRemovedByNextWrite() async throws {
        let state = try await TestState()
        let stray = state.path(".a.txt.custody-tmp-00000000000000aa")
        try write("left by kill -9", stray)
        try write("data", state.path("a.txt"))
        let protector = state.protector()
        let writer = try await protector.makeWriter(path: state.path("b.txt"), owner: alice, encrypt: true)
        #expect(!FileManager.default.fileExists(atPath: stray))
        try writer.write(Array("open while another process cleans".utf8))
        // A live writer's temporary is locked: a cleaner in another process would leave it.
        #expect(StrayTemporaries.remove(in: state.directory).isEmpty)
        try writer.close()
        #expect(try DataProtector.protectionInfo(file: state.path("b.txt")) != nil)
    }

    @Test(
        "temporary names are recognised exactly",
        arguments: [
            (".a.txt.custody-tmp-0123456789abcdef", true), (".a.custody-tmp-1", true), (".a.txt.custody-tmp-", false),
            (".a.txt.custody-tmp-0123456789abcdef0", false), ("a.txt.custody-tmp-01", false),
            (".custody-tmp-01", false),
            (".a.txt.custody-tmp-xyz", false), (".a.txt", false),
        ])
    func temporaryNames(name: String, matches: Bool) {
        #expect(StrayTemporaries.isTemporaryName(name) == matches)
        #expect(
            StrayTemporaries.isTemporaryName(FileSystem.fileName(of: FileSystem.temporaryPath(besides: "/x/a.txt"))))
    }

    struct FillFailed: Error {}

    @Test("secret memory whose fill throws is released once (by deinit alone)")
    func secretBytesFillThrows() {
        for _ in 0..<1_000 {
            #expect(throws: FillFailed.self) { _ = try SecretBytes(count: 32) { _ in throw FillFailed() } }
            #expect(throws: FillFailed.self) {
                _ = try SecretBytes(count: 32, locked: true) { _ in throw FillFailed() }
            }
        }
    }

    @Test(
        "an owner whose value starts with a combining mark names exactly that value, of the kind its prefix says",
        arguments: [
            ("upn:\u{301}x@contoso.com", "\u{301}x@contoso.com", false), ("oid:\u{301}abc", "\u{301}abc", true),
        ])
    func combiningOwner(raw: String, value: String, isOID: Bool) throws {
        let owner = try #require(Array(raw.utf8).withUnsafeBytes { OwnerIdentifier(encoded: $0) })
        #expect(owner.rawValue == raw)
        #expect(isOID ? owner.account.oid == value : owner.account.upn == value)
        #expect(isOID ? owner.account.upn == nil : owner.account.oid == nil)
        #expect(OwnerIdentifier(owner.account) == owner)
    }

    @Test(
        "an envelope whose owner is not a valid identifier is refused as malformed",
        arguments: [
            "upn:   ", "upn:a\u{1B}[2Jb@contoso.com", "oid:\u{202E}x", "upn: padded@contoso.com", "upn:", "xyz:alice",
            "upň:x", "up\u{301}n:x",
            // What the header's all-ASCII fast path decides on bytes: blank or padded ends, a
            // tab, DEL and other controls, at either end or inside.
            "upn:alice@contoso.com ", "upn:alice@contoso.com\t", "oid:\t5a1e", "upn:a\u{7F}b", "oid:a\u{1F}",
            "upn: ", "oid:x\r",
        ])
    func invalidOwners(owner: String) {
        let bytes = Array(owner.utf8)
        let parsed = bytes.withUnsafeBytes { OwnerIdentifier(encoded: $0) }
        #expect(parsed == nil)
        #expect(OwnerIdentifier(rawValue: owner) == nil)
    }

    @Test(
        "an all-ASCII owner is valid exactly when the account it names is: inner spaces and every visible character are",
        arguments: [
            "upn:a b@contoso.com", "upn:~!#$%&'*+/=?^_`{|}", "oid:5a1e0000-0000-4000-8000-000000000001", "upn:x",
        ])
    func asciiOwners(owner: String) throws {
        let parsed = try #require(Array(owner.utf8).withUnsafeBytes { OwnerIdentifier(encoded: $0) })
        let value = String(owner.dropFirst(4))
        #expect(parsed.rawValue == owner)
        #expect(owner.hasPrefix("oid:") ? parsed.account.oid == value : parsed.account.upn == value)
        #expect(OwnerIdentifier(rawValue: owner) == parsed)
    }

    /// A tag-only envelope with chunk size exponent `exponent` and `size` bytes of plaintext
    /// (built with the real header and checksums, whatever the exponent).
    /// Exponents above 24 (which no code can seal with) are written into byte 6 afterwards.
    private func tagOnly(exponent: UInt8, size: Int) -> [UInt8] {
        let header = EnvelopeHeader(unencryptedFor: OwnerIdentifier(alice), chunkSizeExponent: min(exponent, 24))
        var envelope = pattern(size).withUnsafeBytes {
            DataProtector.seal($0, with: ChunkCipher(header: header, cipher: nil))
        }
        envelope[6] = exponent
        return envelope
    }

    @Test(
        "a header declaring chunks over 1 MiB is refused at byte 6, from a buffer, a file or a stream, before anything is allocated for it",
        arguments: [UInt8(21), 22, 24, 31, 255])
    func chunkSizeCap(exponent: UInt8) async throws {
        let state = try await TestState()
        let protector = state.protector()
        let envelope = tagOnly(exponent: exponent, size: 100)
        let buffer = await protectionError { _ = try await protector.unprotect(envelope) }
        #expect(buffer?.code == .malformedEnvelope)
        #expect(buffer?.message.contains("chunk size exponent \(exponent) at byte 6 is outside 10...20") == true)
        await #expect(protectionError { _ = try DataProtector.protectionInfo(envelope) }?.code == .malformedEnvelope)
        let path = state.path("large-chunks.cst")
        try Data(envelope).write(to: URL(fileURLWithPath: path))
        let file = await protectionError {
            try await protector.unprotect(from: .file(path), to: .file(state.path("out")))
        }
        #expect(file?.code == .malformedEnvelope)
        #expect(file?.path == path)
        #expect(!FileManager.default.fileExists(atPath: state.path("out")))
        let reader = await protectionError { _ = try await protector.makeReader(path: path) }
        #expect(reader?.code == .malformedEnvelope)
    }

    @Test(
        "the largest chunk size there is (1 MiB, as buffers use) still reads from a file and a stream",
        arguments: [UInt8(10), 16, 20])
    func largestChunkReads(exponent: UInt8) async throws {
        let state = try await TestState()
        let protector = state.protector()
        let size = (3 << exponent) + 77
        let path = state.path("chunks.cst")
        try Data(tagOnly(exponent: exponent, size: size)).write(to: URL(fileURLWithPath: path))
        try await protector.unprotect(from: .file(path), to: .file(state.path("out")))
        #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: state.path("out")))) == pattern(size))
        let descriptor = open(path, O_RDONLY)
        defer { close(descriptor) }
        let reader = try await ProtectedFileReader(
            descriptor: descriptor, name: "stream", owning: false, protector: protector)
        var read: [UInt8] = []
        try reader.forEachBlock { read += $0 }
        #expect(read == pattern(size))
    }

    @Test(
        "a reader's and a writer's buffers stay a few MiB whatever the chunk size",
        arguments: [1 << 10, 1 << 16, 1 << 20])
    func batchBytesBounded(chunkSize: Int) {
        let chunks = ChunkBatch.chunksPerBatch(chunkSize: chunkSize)
        #expect(chunks >= 1)
        #expect(chunks * chunkSize <= ChunkBatch.batchBytes)
        // Two buffers (plaintext, sealed) of one batch and one spare chunk each.
        #expect(2 * (chunks + 1) * (chunkSize + 16) <= 9 << 20)
    }
}
