extension PolicyManager {
    /// Applies the bundle in `directory` now and again whenever its files change, until the
    /// returned task is cancelled.
    ///
    /// The directory is polled every `interval` (its content hash: names, lengths and bytes of
    /// the `*.json` files). A change is applied once the files have stayed the same for
    /// `debounce`, so an editor's or a sync tool's several writes become one reload. A bundle
    /// that does not load leaves the policy in force and is announced as `bundleRejected`; the
    /// same broken files are not announced again until they change.
    public nonisolated func watch(bundleDirectory directory: String, interval: Duration = .seconds(1), debounce: Duration = .milliseconds(250))
        -> Task<Void, Never>
    {
        Task { [weak self] in
            var settled: String??  // the hash last applied or rejected; nil: none yet
            while !Task.isCancelled {
                let seen = BundleDigest.contentHash(ofDirectory: directory)
                if settled == nil || settled! != seen {
                    // Wait until the files stop changing.
                    try? await Task.sleep(for: debounce)
                    let again = BundleDigest.contentHash(ofDirectory: directory)
                    if again == seen {
                        guard let self else { return }
                        _ = try? await self.apply(bundleDirectory: directory)
                        settled = .some(seen)
                    }
                    continue
                }
                try? await Task.sleep(for: interval)
            }
        }
    }
}
