@testable import CustodyPolicy
import Testing

@Suite("Paths taken apart")
struct PathNameTests {
    @Test(
        "the directory part of a path, as NSString's deletingLastPathComponent gives it where that does not trap",
        arguments: [
            ("b", ""), ("ab", ""), ("state.sqlite", ""), ("/b", "/"), ("/", "/"), ("", ""), ("a/b", "a"),
            ("a/b/", "a"), ("a//b", "a"), ("./b", "."), ("../b", ".."), ("/var/lib/custody/state", "/var/lib/custody"),
            ("dir/ü/é", "dir/ü"),
        ])
    func directory(path: String, expected: String) {
        #expect(PathName.directory(of: path) == expected)
    }
}
