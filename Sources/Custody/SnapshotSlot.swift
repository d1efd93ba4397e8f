import Atomics
import CustodyPolicy

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where a manager keeps the snapshot in force, made cheap to read from many threads at once.
///
/// The box sits in a `ManagedAtomic`; loading a strong reference from it is safe but costs
/// tens of nanoseconds (swift-atomics guards the reference count with a double-word exchange),
/// a third of a decision. So each thread keeps the box it loaded last, and a read first loads
/// the published version (a plain atomic integer): when it equals the cached box's version, the
/// cached box is the one in force and nothing else is touched.
///
/// Why it is correct: `store` writes the box before it publishes its version (both releasing),
/// and versions only grow. A reader that sees version `v` either has the box of version `v`
/// cached, or loads the box after acquiring `v`, which gives it `v` or a later one. A reader
/// that still sees the old version returns the old box, as it would have had it read a moment
/// earlier. Boxes of different slots never mix: each slot has its own serial number.
///
/// Cost: each thread keeps one box alive (the last one it read) until its next read or its
/// exit; so a replaced snapshot may outlive its replacement by one read per thread.
final class SnapshotSlot: Sendable {
    private let box: ManagedAtomic<SnapshotBox>
    private let published: ManagedAtomic<Int>
    private let serial: UInt64
    private static let serials = ManagedAtomic<UInt64>(0)

    init(_ initial: SnapshotBox) {
        box = ManagedAtomic(initial)
        published = ManagedAtomic(initial.version)
        serial = Self.serials.wrappingIncrementThenLoad(ordering: .relaxed)
    }

    /// The box in force.
    var current: SnapshotBox {
        let version = published.load(ordering: .acquiring)
        let cache = ThreadSnapshotCache.forThisThread()
        if cache.serial == serial, cache.version == version, let cached = cache.box {
            return cached
        }
        let fresh = box.load(ordering: .acquiring)
        cache.hold(fresh, of: serial)
        return fresh
    }

    /// Calls `body` with the snapshot in force, without taking a reference to it: the thread's
    /// cache holds it. `body` must not read any slot (that could replace the cached box while
    /// `body` uses it): pass it a pure snapshot call.
    @inline(__always)
    func withSnapshot<Result>(_ body: (PolicySnapshot) -> Result) -> Result {
        let version = published.load(ordering: .acquiring)
        guard let pointer = pthread_getspecific(threadSnapshotCacheKey) else { return body(current.snapshot) }
        return Unmanaged<ThreadSnapshotCache>.fromOpaque(pointer)._withUnsafeGuaranteedRef { cache in
            if cache.serial == serial, cache.version == version, let cached = cache.unretained {
                return cached._withUnsafeGuaranteedRef { body($0.snapshot) }
            }
            let fresh = box.load(ordering: .acquiring)
            cache.hold(fresh, of: serial)
            return body(fresh.snapshot)
        }
    }

    /// Puts `new` in force. Only one writer at a time (the manager's actor), with growing versions.
    func store(_ new: SnapshotBox) {
        box.store(new, ordering: .releasing)
        published.store(new.version, ordering: .releasing)
    }
}

/// One thread's last read box. Touched only by its own thread.
private final class ThreadSnapshotCache {
    private(set) var serial: UInt64 = 0
    private(set) var version = -1
    /// Keeps `unretained` alive.
    private(set) var box: SnapshotBox?
    /// `box`, for reads that must not touch its reference count.
    private(set) var unretained: Unmanaged<SnapshotBox>?

    func hold(_ box: SnapshotBox, of serial: UInt64) {
        self.serial = serial
        self.version = box.version
        self.box = box
        self.unretained = Unmanaged.passUnretained(box)
    }

    static func forThisThread() -> ThreadSnapshotCache {
        if let pointer = pthread_getspecific(threadSnapshotCacheKey) {
            return Unmanaged<ThreadSnapshotCache>.fromOpaque(pointer).takeUnretainedValue()
        }
        let cache = ThreadSnapshotCache()
        // Released by the key's destructor when the thread exits.
        pthread_setspecific(threadSnapshotCacheKey, Unmanaged.passRetained(cache).toOpaque())
        return cache
    }
}

private let threadSnapshotCacheKey: pthread_key_t = {
    var key = pthread_key_t()
    let status = pthread_key_create(&key) { pointer in
        #if canImport(Darwin)
            Unmanaged<AnyObject>.fromOpaque(pointer).release()
        #else
            if let pointer { Unmanaged<AnyObject>.fromOpaque(pointer).release() }
        #endif
    }
    precondition(status == 0, "pthread_key_create failed: \(status)")
    return key
}()
