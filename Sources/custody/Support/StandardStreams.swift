import CustodyPolicy

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

    /// Writes `text`; control characters other than its line breaks are escaped, since
    /// messages quote input (paths, accounts, query text) that could otherwise rewrite the
    /// terminal.
    static func write(_ text: String) {
        var text = text.split(separator: "\n", omittingEmptySubsequences: false)
            .map { String($0).escapingControlCharacters }.joined(separator: "\n")
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

    /// Writes every byte, retrying on interruption and short writes and waiting while a
    /// non-blocking descriptor is full (`Descriptor.writeAll`). A pipe its reader closed
    /// ends the process by SIGPIPE, as `head` expects of a filter; where SIGPIPE is ignored the
    /// write fails with EPIPE instead, and that is a failure like any other (said, exit 1, as
    /// coreutils do): what was not delivered is never reported as done.
    static func writeAll(_ bytes: UnsafeBufferPointer<UInt8>, to descriptor: Int32) {
        guard let error = Descriptor.writeAll(descriptor, UnsafeRawBufferPointer(bytes)) else { return }
        // Said on standard error, unless that is what failed (which then ends here).
        if descriptor != 2 { StandardError.write("error: \(failure(error, writing: descriptor))\n") }
        exit(1)
    }

    /// What a failed write says: `writing standard output failed: Broken pipe`.
    private static func failure(_ error: Int32, writing descriptor: Int32) -> String {
        let stream = descriptor == 1 ? "standard output" : "descriptor \(descriptor)"
        return "writing \(stream) failed: \(String(cString: strerror(error)))"
    }

    /// Writes `text` to standard output; on failure returns what `writeAll` would say instead of
    /// ending the process, for a command that must undo something when its output is lost.
    static func attemptWrite(_ text: String) -> String? {
        var text = text
        return text.withUTF8 { Descriptor.writeAll(1, UnsafeRawBufferPointer($0)) }.map { failure($0, writing: 1) }
    }
}
