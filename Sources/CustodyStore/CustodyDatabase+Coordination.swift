import CustodyPolicy
import Foundation
import GRDB

extension CustodyDatabase {
    /// Kept in the settings table as `cache:{name}`, outside the change log.
    public func cache(_ name: String) async throws(StoreError) -> String? {
        try await read("reading the cache \(name)") { db in
            try SettingRow.value("cache:" + name, in: db)
        }
    }

    public func saveCache(_ name: String, _ text: String?) async throws(StoreError) {
        try await write("saving the cache \(name)") { db in
            if let text {
                try SettingRow.save("cache:" + name, text, in: db)
            } else {
                try SettingRow.deleteOne(db, key: "cache:" + name)
            }
        }
    }

    /// An `flock` on `{database}.{name}.lock`, which every process opening this database takes
    /// the same way; in memory, a lock of this instance alone.
    public func lease(_ name: String) async throws(StoreError) -> (any StateLease)? {
        guard let path else { return memoryLeases.take(name) }
        let lockPath = "\(path).\(name).lock"
        let descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw StoreError(
                .unavailable, "cannot open the lease file \(lockPath): \(String(cString: strerror(errno)))", path: path)
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let failure = errno
            close(descriptor)
            if failure == EWOULDBLOCK { return nil }
            throw StoreError(
                .unavailable, "cannot lock the lease file \(lockPath): \(String(cString: strerror(failure)))",
                path: path)
        }
        return FileLease(descriptor: descriptor)
    }
}

/// A lease held as an `flock` on an open file: released by closing it (or by the process
/// ending).
final class FileLease: StateLease {
    private let descriptor: Locked<Int32?>

    init(descriptor: Int32) {
        self.descriptor = Locked(descriptor)
    }

    func release() {
        descriptor.withLock { descriptor in
            if let open = descriptor { close(open) }
            descriptor = nil
        }
    }

    deinit { release() }
}

/// The leases of a database in memory: held by name in this instance.
final class MemoryLeases: Sendable {
    private let held = Locked<Set<String>>([])

    func take(_ name: String) -> (any StateLease)? {
        let taken = held.withLock { $0.insert(name).inserted }
        return taken ? MemoryLease(name: name, leases: self) : nil
    }

    fileprivate func give(back name: String) {
        _ = held.withLock { $0.remove(name) }
    }
}

private final class MemoryLease: StateLease {
    private let name: String
    private let leases: Locked<MemoryLeases?>

    init(name: String, leases: MemoryLeases) {
        self.name = name
        self.leases = Locked(leases)
    }

    func release() {
        leases.withLock { leases in
            leases?.give(back: name)
            leases = nil
        }
    }

    deinit { release() }
}
