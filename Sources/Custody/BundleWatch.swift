import CustodyPolicy

/// When a watcher reads a bundle directory again: the decisions of
/// `PolicyManager.watch(bundleDirectory:)`, kept apart from time and I/O so that they can be
/// tested without sleeping.
///
/// Each round the watcher takes a `BundleProbe` (`stat` of every entry, nothing read). A probe
/// equal to the one last read needs nothing. A new probe starts a quiet period; once the same
/// probe has been seen for `debounce`, the files are read once (and applied if their content
/// changed). An editor's or a sync tool's several writes thus become one read and one apply.
struct BundleWatch: Sendable {
    let debounce: Duration
    /// The probe when the files were last read; nil before the first read.
    private var settled: BundleProbe??
    /// A probe not read yet, and when it was first seen.
    private var pending: (probe: BundleProbe?, since: Duration)?

    init(debounce: Duration) {
        self.debounce = debounce
    }

    /// Takes `probe` as already read: the directory as it is now needs nothing, only a later
    /// change does (its content is the policy in force when the watch starts).
    mutating func settle(_ probe: BundleProbe?) {
        settled = .some(probe)
        pending = nil
    }

    /// Forgets the last read: the files are read again at the next look (after `debounce`),
    /// changed or not. For a read whose files could not be recorded.
    mutating func retry() {
        settled = nil
        pending = nil
    }

    /// Whether a change is waiting to settle (the watcher then looks again sooner).
    var isSettling: Bool { pending != nil }

    /// Given the probe taken at `now` (time since the watch began; nil when the directory
    /// cannot be listed), whether to read the files now.
    mutating func shouldRead(_ probe: BundleProbe?, at now: Duration) -> Bool {
        if let settled, settled == probe {
            pending = nil
            return false
        }
        if let pending, pending.probe == probe {
            guard now - pending.since >= debounce else { return false }
            self.pending = nil
            settled = .some(probe)
            return true
        }
        pending = (probe, now)
        guard debounce <= .zero else { return false }
        pending = nil
        settled = .some(probe)
        return true
    }
}
