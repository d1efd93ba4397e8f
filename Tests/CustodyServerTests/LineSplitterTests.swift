import Testing

@testable import CustodyServer

@Suite("Splitting a batch into lines")
struct LineSplitterTests {
    /// Splits `text` fed in chunks of `chunk` bytes; too-long lines come back as `<long N>`.
    func split(_ text: String, chunk: Int, maximum: Int = 8) -> [String] {
        var splitter = LineSplitter(maximumLine: maximum)
        var lines: [String] = []
        func collect(_ line: LineSplitter.Line) -> Bool {
            switch line {
            case .complete(let bytes): lines.append(String(decoding: bytes, as: UTF8.self))
            case .tooLong(let count): lines.append("<long \(count)>")
            }
            return true
        }
        let bytes = Array(text.utf8)
        var start = 0
        while start < bytes.count {
            let end = min(bytes.count, start + chunk)
            _ = bytes[start..<end].withUnsafeBytes { splitter.feed($0, line: collect) }
            start = end
        }
        _ = splitter.finish(line: collect)
        return lines
    }

    @Test("lines come out whole however the stream is cut", arguments: [1, 2, 3, 5, 7, 100])
    func chunks(chunk: Int) {
        #expect(split("a\nbc\r\n\ndef\ngh", chunk: chunk) == ["a", "bc", "", "def", "gh"])
        #expect(split("abcdefghijk\nxy\n123456789012345\n", chunk: chunk) == ["<long 11>", "xy", "<long 15>"])
        #expect(split("12345678\n", chunk: chunk) == ["12345678"])
    }

    @Test("a consumer can stop the split")
    func stop() {
        var splitter = LineSplitter(maximumLine: 100)
        var seen = 0
        let more = Array("a\nb\nc\n".utf8).withUnsafeBytes { bytes in
            splitter.feed(bytes) { _ in
                seen += 1
                return seen < 2
            }
        }
        #expect(!more)
        #expect(seen == 2)
    }
}
