import Custody
import CustodyPolicy
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Foundation
import NIOCore

/// Splits a byte stream into lines (without their breaks), however the stream is cut. A line
/// that lies whole in the bytes fed is handed over where it is, without a copy; only a line cut
/// by the stream's chunks is gathered. A line longer than `maximumLine` is reported, not kept.
struct LineSplitter {
    enum Line {
        /// The line's bytes, valid only during the call.
        case complete(UnsafeRawBufferPointer)
        case tooLong(Int)
    }

    let maximumLine: Int
    private var pending: [UInt8] = []
    private var overflow = 0

    init(maximumLine: Int) {
        self.maximumLine = maximumLine
    }

    /// Hands each complete line of what is fed so far to `line`; stops, returning false, when
    /// `line` does.
    mutating func feed(_ bytes: UnsafeRawBufferPointer, line: (Line) -> Bool) -> Bool {
        var start = 0
        while start < bytes.count {
            guard let newline = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) else {
                gather(UnsafeRawBufferPointer(rebasing: bytes[start...]))
                return true
            }
            let segment = UnsafeRawBufferPointer(rebasing: bytes[start..<newline])
            start = newline + 1
            if pending.isEmpty, overflow == 0, segment.count <= maximumLine {
                guard line(.complete(Self.trimmed(segment))) else { return false }
                continue
            }
            gather(segment)
            guard take(line) else { return false }
        }
        return true
    }

    /// The last line, when the stream did not end with a line break.
    mutating func finish(line: (Line) -> Bool) -> Bool {
        guard overflow > 0 || !pending.isEmpty else { return true }
        return take(line)
    }

    private mutating func gather(_ bytes: UnsafeRawBufferPointer) {
        if overflow > 0 || pending.count + bytes.count > maximumLine {
            overflow += pending.count + bytes.count
            pending.removeAll(keepingCapacity: true)
        } else {
            pending.append(contentsOf: bytes)
        }
    }

    private mutating func take(_ line: (Line) -> Bool) -> Bool {
        defer {
            pending.removeAll(keepingCapacity: true)
            overflow = 0
        }
        if overflow > 0 { return line(.tooLong(overflow)) }
        return pending.withUnsafeBytes { line(.complete(Self.trimmed($0))) }
    }

    /// Without a trailing carriage return.
    private static func trimmed(_ bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        bytes.last == UInt8(ascii: "\r") ? UnsafeRawBufferPointer(rebasing: bytes.dropLast()) : bytes
    }
}
