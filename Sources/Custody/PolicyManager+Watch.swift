import CustodyPolicy
import CustodyStore
import Foundation

extension PolicyManager {
    /// Applies the bundle in `directory` now (unless it is the policy in force already) and
    /// again whenever its files change, until the returned task is cancelled.
    ///
    /// Every `interval` the directory is probed with `stat` (names, sizes, times, inodes of
    /// its `*.json` entries); the files are read only when the probe changed and has stayed the
    /// same for `debounce` (see `BundleWatch`), then applied when their content differs from
    /// the policy in force. A bundle that does not load leaves the policy in force and is
    /// announced as `bundleRejected`; the same broken files are not announced again until they
    /// change. Files the state could not record (unreachable, busy) are read again at the
    /// next look, changed or not. A directory that cannot be read is announced once; when it
    /// can be read again with the content it had, nothing is applied (the policy in force may
    /// have been put there another way since).
    /// The watcher runs on `StateExecutor`'s threads: each look is blocking I/O (`stat`, then
    /// reading the files and recording them in the state), and a cooperative pool held by
    /// other work (one thread per core) delayed its looks by seconds.
    /// - Parameters:
    ///   - onlyWhileInForce: apply a change only while the bundle in force came from this
    ///     directory (a watch that follows the bundle in force, `CustodyEngine.watch`): once
    ///     another is put in force, an edit here is left alone. The state checks it again as
    ///     it records the edit (`apply(_:source:allowingEmpty:provenance:inForceFrom:)`), so
    ///     another writer's bundle put in force a moment before is never replaced.
    ///   - clock: the clock the watcher sleeps on (tests inject their own).
    public nonisolated func watch<C: Clock>(
        bundleDirectory directory: String, interval: Duration = .seconds(1), debounce: Duration = .milliseconds(250),
        onlyWhileInForce: Bool = false, clock: C
    ) -> Task<Void, Never> where C.Duration == Duration {
        // When the directory holds the policy in force right now, only its later changes are
        // applied: a bundle put in force another way meanwhile (PUT /v1/bundle, a replica) is
        // not overridden by a late first look at an unchanged directory. The probe is taken
        // before the files are read, so a change between the two is still seen.
        var initial = BundleWatch(debounce: debounce)
        let probe = BundleProbe.take(directory: directory)
        // Settled too when these files were just refused from this directory (a service that
        // starts with a refused directory): the refusal is recorded once, not again here.
        let source = URL(fileURLWithPath: directory).standardizedFileURL.path
        let refused = lastRejection.withLock { $0 }
        var dealtWith: String?
        if let files = try? BundleFiles.read(directory: directory),
            (bundleInForce.map { !$0.isOverride && files.contentHash == $0.revision } ?? false)
                || (refused?.source == source && refused?.revision == files.contentHash)
        {
            initial.settle(probe)
            dealtWith = files.offerKey
        }
        return Task(executorPreference: StateExecutor.shared) { [weak self, initial, dealtWith] in
            var watch = initial
            // The directory's content when it was last read and dealt with (applied, or
            // refused): a look in between that could not read it (the directory gone a moment,
            // the process out of file descriptors) changes nothing. Without this, the same
            // files read again afterwards would be applied again over a bundle put in force
            // another way meanwhile (PUT /v1/bundle, another replica), for the whole fleet.
            var dealtWith = dealtWith
            var generation = self?.offerGeneration.withLock { $0 } ?? 0
            let start = clock.now
            while !Task.isCancelled {
                // A freeze lifted: what it refused is read and offered again, unchanged or not.
                if let current = self?.offerGeneration.withLock({ $0 }), current != generation {
                    generation = current
                    dealtWith = nil
                    watch.retry()
                }
                if watch.shouldRead(BundleProbe.take(directory: directory), at: start.duration(to: clock.now)) {
                    guard let self else { return }
                    let files: BundleFiles
                    do throws(BundleError) {
                        files = try BundleFiles.read(directory: directory)
                    } catch {
                        // Said once (the probe stays settled until the directory changes).
                        _ = await self.reject(
                            source: source, contentHash: "", message: error.description,
                            diagnostics: error.diagnostics, offeredBy: BundleProvenance(appliedBy: "watch"))
                        continue
                    }
                    // Content and signature: a signature added or changed is a new offer.
                    guard files.offerKey != dealtWith else { continue }
                    if onlyWhileInForce,
                        !(self.bundleInForce.map { !$0.isOverride && !$0.provenance.isRollback && $0.source == source }
                            ?? false)
                    {
                        dealtWith = files.offerKey
                        continue
                    }
                    do {
                        _ = try await self.apply(
                            files, source: source, provenance: BundleProvenance(appliedBy: "watch"),
                            inForceFrom: onlyWhileInForce ? source : nil)
                        dealtWith = files.offerKey
                    } catch let rejection as BundleRejection where rejection.stateFailure != nil {
                        // The files were not refused, the state failed: read them again at
                        // the next look, not only when they change.
                        watch.retry()
                        try? await clock.sleep(for: interval)
                    } catch {
                        dealtWith = files.offerKey
                    }
                    continue
                }
                try? await clock.sleep(for: watch.isSettling ? min(interval, debounce) : interval)
            }
        }
    }

    /// `watch(bundleDirectory:interval:debounce:onlyWhileInForce:clock:)` on the continuous clock.
    public nonisolated func watch(
        bundleDirectory directory: String, interval: Duration = .seconds(1), debounce: Duration = .milliseconds(250),
        onlyWhileInForce: Bool = false
    )
        -> Task<Void, Never>
    {
        watch(
            bundleDirectory: directory, interval: interval, debounce: debounce, onlyWhileInForce: onlyWhileInForce,
            clock: ContinuousClock())
    }
}
