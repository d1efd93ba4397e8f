import Foundation

/// A value guarded by a pthread mutex (`NSLock`).
///
/// Custody's shared state (key caches, the random pool, the runtime's subscribers) uses this
/// rather than `Synchronization.Mutex` because, on Linux,
/// `Mutex` locks through futex calls inside the standard library, which ThreadSanitizer does
/// not see: every access under it is reported as a race (`swift test --sanitize=thread`, which
/// the test suite runs). The sanitizer intercepts pthread mutexes, so this lock is checked.
/// Never call out (resume a continuation, publish an event) while holding it.
package final class Locked<Value>: @unchecked Sendable {
    // @unchecked: `value` is only touched while `lock` is held.
    private let lock = NSLock()
    private var value: Value

    package init(_ value: Value) {
        self.value = value
    }

    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
