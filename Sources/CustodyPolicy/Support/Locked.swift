#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A value guarded by a pthread mutex.
///
/// Custody's shared state (key caches, the random pool, the runtime's subscribers) uses this
/// rather than `Synchronization.Mutex` because, on Linux,
/// `Mutex` locks through futex calls inside the standard library, which ThreadSanitizer does
/// not see: every access under it is reported as a race (`swift test --sanitize=thread`, which
/// the test suite runs). The sanitizer intercepts pthread mutexes, so this lock is checked.
/// Never call out (resume a continuation, publish an event) while holding it.
///
/// The value and the mutex live in one allocation (`NSLock` cost two more, and a call through
/// Objective-C-style dispatch): short-lived owners, such as each envelope's cipher, create one.
/// Copies share the one lock and value, as a class's references would.
package struct Locked<Value>: @unchecked Sendable {
    // @unchecked: the value is only touched while the mutex is held.
    @usableFromInline let storage: LockedStorage<Value>

    package init(_ value: Value) {
        storage = LockedStorage.make(value)
    }

    @inlinable
    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try storage.withUnsafeMutablePointers { value, words in
            let mutex = UnsafeMutableRawPointer(words).assumingMemoryBound(to: pthread_mutex_t.self)
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            return try body(&value.pointee)
        }
    }

    /// `body` under the lock if it is free now; nil, without waiting, when another holds it.
    @inlinable
    package func withLockIfAvailable<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result? {
        try storage.withUnsafeMutablePointers { value, words in
            let mutex = UnsafeMutableRawPointer(words).assumingMemoryBound(to: pthread_mutex_t.self)
            guard pthread_mutex_trylock(mutex) == 0 else { return nil }
            defer { pthread_mutex_unlock(mutex) }
            return try body(&value.pointee)
        }
    }
}

/// The value (header) and its mutex (the elements: words bound to `pthread_mutex_t`) of a
/// `Locked`. Words, not `pthread_mutex_t` itself, so that the class can be inlined into other
/// modules of the package (a C type cannot appear in its superclass there).
@usableFromInline
final class LockedStorage<Value>: ManagedBuffer<Value, UInt64> {
    static var words: Int { (MemoryLayout<pthread_mutex_t>.size + 7) / 8 }

    static func make(_ value: Value) -> LockedStorage {
        let buffer = create(minimumCapacity: words) { _ in value }
        buffer.withUnsafeMutablePointerToElements { words in
            let mutex = UnsafeMutableRawPointer(words).bindMemory(to: pthread_mutex_t.self, capacity: 1)
            mutex.initialize(to: pthread_mutex_t())
            let status = pthread_mutex_init(mutex, nil)
            precondition(status == 0, "pthread_mutex_init failed (\(status))")
        }
        // `create` is declared on ManagedBuffer; the instance is of the class it was called on.
        return unsafeDowncast(buffer, to: LockedStorage.self)
    }

    deinit {
        // The header (the value) is destroyed by ManagedBuffer itself; the mutex is ours.
        withUnsafeMutablePointerToElements { words in
            let mutex = UnsafeMutableRawPointer(words).assumingMemoryBound(to: pthread_mutex_t.self)
            pthread_mutex_destroy(mutex)
            mutex.deinitialize(count: 1)
        }
    }
}
