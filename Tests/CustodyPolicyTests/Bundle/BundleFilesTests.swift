import CustodyPolicy
import CustodyTestSupport
import Foundation
import Testing

@Suite("Reading a bundle directory once")
struct BundleFilesTests {
    static let tenant =
        #"{"accounts": [{"oid": "a0000000-0000-4000-8000-000000000001", "upn": "a@contoso.com", "groups": []}]}"#
    static let policy =
        ##"{"@odata.type": "#microsoft.graph.iosManagedAppProtection", "displayName": "P", "printBlocked": true}"##

    private func bundle() throws -> TemporaryDirectory {
        let directory = try TemporaryDirectory()
        try directory.write("tenant.json", Self.tenant)
        try directory.write("policies.json", Self.policy)
        return directory
    }

    /// Entries named like policy files that are not regular files, and the message each gets.
    static let nonRegular: [(name: String, message: String, make: @Sendable (TemporaryDirectory) throws -> Void)] = [
        (
            "a dangling symbolic link", "a symbolic link to nothing",
            { directory in
                try FileManager.default.createSymbolicLink(
                    atPath: directory.file("extra.json"), withDestinationPath: directory.file("missing.json"))
            }
        ),
        (
            "a symbolic link loop", "a symbolic link loop",
            { directory in
                try FileManager.default.createSymbolicLink(
                    atPath: directory.file("extra.json"), withDestinationPath: directory.file("loop"))
                try FileManager.default.createSymbolicLink(
                    atPath: directory.file("loop"), withDestinationPath: directory.file("extra.json"))
            }
        ),
        (
            "a directory", "a directory named like a policy file",
            { directory in
                try FileManager.default.createDirectory(
                    atPath: directory.file("extra.json"), withIntermediateDirectories: false)
            }
        ),
        (
            "a FIFO", "a FIFO named like a policy file",
            { directory in
                #expect(mkfifo(directory.file("extra.json"), 0o600) == 0)
            }
        ),
        (
            "tenant.json as a dangling symbolic link", "a symbolic link to nothing",
            { directory in
                try FileManager.default.removeItem(atPath: directory.file("tenant.json"))
                try FileManager.default.createSymbolicLink(
                    atPath: directory.file("tenant.json"), withDestinationPath: directory.file("gone"))
            }
        ),
    ]

    @Test(
        "an entry named *.json that is not a regular file is an error naming it, never skipped", arguments: nonRegular)
    func nonRegularEntries(name: String, message: String, make: @Sendable (TemporaryDirectory) throws -> Void) throws {
        let directory = try bundle()
        try make(directory)
        let error = try #require(throws: BundleError.self) { try BundleFiles.read(directory: directory.path) }
        #expect(error.errors.map(\.code) == [.unreadable], "\(name)")
        #expect(error.errors.first?.description.contains(message) == true, "\(error)")
        #expect(throws: BundleError.self, "loading fails too") { try PolicyBundle.load(path: directory.path) }
    }

    @Test(
        "a symbolic link to a regular file is read through; hidden files, other names and subdirectories are not entries"
    )
    func entries() throws {
        let directory = try bundle()
        try directory.write("elsewhere", Self.policy)
        try FileManager.default.createSymbolicLink(
            atPath: directory.file("linked.json"), withDestinationPath: directory.file("elsewhere"))
        try directory.write(".hidden.json", "{")
        try directory.write("README.md", "# notes")
        try FileManager.default.createDirectory(atPath: directory.file("matrices"), withIntermediateDirectories: true)
        let files = try BundleFiles.read(directory: directory.path)
        #expect(files.entries.map(\.name) == ["linked.json", "policies.json", "tenant.json"])
        #expect(try files.load().protectionPolicies.count == 2)
    }

    @Test("the content hash depends on names and bytes only, and is the same wherever the files are")
    func contentHash() throws {
        let first = try bundle(), second = try bundle()
        let hash = try BundleFiles.read(directory: first.path).contentHash
        #expect(hash.count == 64 && hash.allSatisfy(\.isHexDigit))
        #expect(try BundleFiles.read(directory: second.path).contentHash == hash)
        let fromMemory = try BundleFiles(entries: [
            BundleFiles.Entry(name: "tenant.json", bytes: Array(Self.tenant.utf8)),
            BundleFiles.Entry(name: "policies.json", bytes: Array(Self.policy.utf8)),
        ])
        #expect(fromMemory.contentHash == hash, "the order given does not matter")
        try second.write("policies.json", Self.policy + " ")
        #expect(try BundleFiles.read(directory: second.path).contentHash != hash)
        try second.write("policies.json", Self.policy)
        try FileManager.default.moveItem(atPath: second.file("policies.json"), toPath: second.file("other.json"))
        #expect(try BundleFiles.read(directory: second.path).contentHash != hash, "a renamed file is another bundle")
    }

    @Test(
        "files from elsewhere must have bundle entry names, each once",
        arguments: ["../tenant.json", ".hidden.json", "notes.txt", "dir/a.json"])
    func entryNames(name: String) {
        #expect(throws: BundleError.self) { try BundleFiles(entries: [BundleFiles.Entry(name: name, bytes: [])]) }
    }

    @Test("a probe changes when an entry is edited, added, removed or re-linked, and not otherwise")
    func probe() throws {
        let directory = try bundle()
        let first = try #require(BundleProbe.take(directory: directory.path))
        #expect(BundleProbe.take(directory: directory.path) == first)
        try directory.write("README.md", "not an entry")
        #expect(BundleProbe.take(directory: directory.path) == first)
        try directory.write("policies.json", Self.policy.replacingOccurrences(of: "true", with: "false"))
        let edited = try #require(BundleProbe.take(directory: directory.path))
        #expect(edited != first)
        try directory.write("extra.json", "{}")
        let added = try #require(BundleProbe.take(directory: directory.path))
        #expect(added != edited)
        try FileManager.default.removeItem(atPath: directory.file("extra.json"))
        try FileManager.default.createSymbolicLink(
            atPath: directory.file("extra.json"), withDestinationPath: directory.file("nowhere"))
        #expect(BundleProbe.take(directory: directory.path) != added)
        #expect(BundleProbe.take(directory: directory.file("missing")) == nil)
    }
}
