#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reading and writing descriptors that another process may have made non-blocking.
///
/// `O_NONBLOCK` belongs to the open file description, which every process holding the
/// descriptor shares: a parent that set it on a pipe it then gave Custody as standard input or
/// output (a supervisor sharing its own non-blocking descriptors, say) makes every read that finds the
/// pipe empty, and every write that finds it full, fail with `EAGAIN`. That is not an error of
/// the stream: Custody waits for the descriptor with `poll` and goes on, as a blocking one would.
package enum Descriptor {
    /// Whether `error` (an `errno`) says only that a non-blocking descriptor is not ready.
    package static func isNotReady(_ error: Int32) -> Bool {
        error == EAGAIN || error == EWOULDBLOCK
    }

    /// Waits until `descriptor` can be read (or, `forWriting`, written), or has failed or hung
    /// up (the retried call then says so). Returns nil, or the `errno` of a wait that failed.
    package static func awaitReady(_ descriptor: Int32, forWriting: Bool) -> Int32? {
        var entry = pollfd(fd: descriptor, events: Int16(forWriting ? POLLOUT : POLLIN), revents: 0)
        while poll(&entry, 1, -1) < 0 {
            if errno != EINTR { return errno }
        }
        return nil
    }

    /// What a failed read or write should do: retry (interrupted, or not ready and now ready),
    /// or fail with the returned `errno`.
    package static func retryOrFailure(after error: Int32, on descriptor: Int32, writing: Bool) -> Int32? {
        if error == EINTR { return nil }
        if isNotReady(error) { return awaitReady(descriptor, forWriting: writing) }
        return error
    }

    /// Writes every byte of `bytes`, retrying short writes and interruptions and waiting while
    /// the descriptor is full; returns nil, or the `errno` of the write that failed.
    package static func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32? {
        var offset = 0
        while offset < bytes.count {
            let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written >= 0 {
                offset += written
            } else if let error = retryOrFailure(after: errno, on: descriptor, writing: true) {
                return error
            }
        }
        return nil
    }

    /// Everything `descriptor` yields until its end, or the `errno` of the read that failed.
    /// Reading stops once more than `maximum` bytes came (the caller refuses what is too large).
    package static func readToEnd(_ descriptor: Int32, maximum: Int = .max) -> Result<[UInt8], ReadError> {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while bytes.count <= maximum {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count > 0 {
                bytes += buffer[..<count]
            } else if count == 0 {
                return .success(bytes)
            } else if let error = retryOrFailure(after: errno, on: descriptor, writing: false) {
                return .failure(ReadError(code: error))
            }
        }
        return .success(bytes)
    }

    /// A read that failed: its `errno`, and what the system says of it.
    package struct ReadError: Error, CustomStringConvertible {
        package let code: Int32
        package var description: String { String(cString: strerror(code)) }
    }
}
