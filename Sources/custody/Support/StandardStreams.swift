#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Standard error, written line by line.
enum StandardError {
    static func write(lines: [String]) {
        for line in lines { write(line + "\n") }
    }

    static func write(_ text: String) {
        var text = text
        text.withUTF8 { StandardOutput.writeAll($0, to: 2) }
    }
}

/// Standard output and input as raw bytes, for streaming commands.
enum StandardOutput {
    static func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { writeAll($0, to: 1) }
    }

    static func write(_ text: String) {
        var text = text
        text.withUTF8 { writeAll($0, to: 1) }
    }

    /// Writes every byte, retrying on interruption and short writes. A closed pipe ends the
    /// process quietly, as `head` expects of a filter.
    static func writeAll(_ bytes: UnsafeBufferPointer<UInt8>, to descriptor: Int32) {
        guard var pointer = bytes.baseAddress else { return }
        var remaining = bytes.count
        while remaining > 0 {
            let written = Glibc.write(descriptor, pointer, remaining)
            if written < 0 {
                if errno == EINTR { continue }
                exit(errno == EPIPE ? 0 : 1)
            }
            pointer += written
            remaining -= written
        }
    }
}

/// Reads a file descriptor in large blocks, handing over complete lines.
struct LineReader {
    private let descriptor: Int32
    private var buffer: [UInt8] = []
    private var blockSize: Int

    init(descriptor: Int32, blockSize: Int = 1 << 20) {
        self.descriptor = descriptor
        self.blockSize = blockSize
    }

    /// Calls `body` with each line, without its line break, until the end of the input.
    /// The last line needs no line break. Returns false when reading failed.
    mutating func forEachLine(_ body: (UnsafeRawBufferPointer) -> Void) -> Bool {
        var block = [UInt8](repeating: 0, count: blockSize)
        while true {
            let count = block.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, blockSize) }
            if count < 0 {
                if errno == EINTR { continue }
                return false
            }
            if count == 0 { break }
            buffer.append(contentsOf: block[0..<count])
            var consumed = 0
            buffer.withUnsafeBytes { bytes in
                var start = 0
                while let newline = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) {
                    body(UnsafeRawBufferPointer(rebasing: bytes[start..<newline]))
                    start = newline + 1
                }
                consumed = start
            }
            buffer.removeFirst(consumed)
        }
        if !buffer.isEmpty {
            buffer.withUnsafeBytes { body($0) }
            buffer.removeAll()
        }
        return true
    }
}
