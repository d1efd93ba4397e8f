public import Custody
public import CustodyPolicy
import CustodyStore
import Foundation
public import Logging

/// What one sync read and produced.
public struct GraphSyncReport: Sendable {
    /// The bundle's revision (content hash): the same for an unchanged tenant.
    public let revision: String
    public let policies: Int
    public let groups: Int
    public let accounts: Int
    public let statistics: GraphStatistics
    public let duration: Duration
    /// Policies deleted while they were read, groups that no longer exist.
    public let warnings: [String]
    /// Whether group members were read by delta (only the groups that changed), and how many
    /// member listings were read (a group holding a newly found nested group is read twice).
    public let incremental: Bool
    public let groupsRead: Int
}

/// Reads a tenant from Microsoft Graph and makes it a bundle: `custody graph sync`.
///
/// A sync is one snapshot: it either completes (the bundle is written or applied whole) or
/// fails with a `GraphError` naming the request that failed, leaving the previous bundle, the
/// directory or the bundle in force, exactly as it was.
public final class GraphSync: Sendable {
    public let settings: GraphSettings
    private let client: GraphClient
    private let logger: Logger
    /// The tenant overlay's bytes (see `GraphBundle.files`).
    private let overlay: [UInt8]?
    /// Signs each bundle built (`.custody-signature.json`, sequence: the time in milliseconds),
    /// so that a state that trusts its public key takes it.
    private let signingKey: BundleSigningKey?

    public init(
        settings: GraphSettings, overlay: [UInt8]? = nil, signingKey: BundleSigningKey? = nil,
        logger: Logger = Logger(label: "custody.graph")
    ) throws(GraphError) {
        self.settings = settings
        self.overlay = overlay
        self.signingKey = signingKey
        self.logger = logger
        client = try GraphClient(settings: settings, logger: logger)
    }

    /// The client's counters since it was made (requests, pages, 429s...): read before and
    /// after a sync, `since(_:)` gives the sync's own, failed ones included.
    public var statistics: GraphStatistics { client.statistics.withLock { $0 } }

    /// Closes the HTTP client. Call once, when done.
    public func shutdown() async { await client.shutdown() }

    /// Reads the tenant and returns its bundle, not yet written anywhere.
    public func snapshot(progress: (@Sendable (String) -> Void)? = nil) async throws(GraphError) -> (
        files: BundleFiles, report: GraphSyncReport
    ) {
        let (files, report, _) = try await snapshot(tracking: false, cache: nil, progress: progress)
        return (files, report)
    }

    /// Reads the tenant; with `tracking`, group members by delta from `cache` (in full when
    /// there is none or it cannot be used), and returns what to keep for the next sync.
    func snapshot(tracking: Bool, cache: MembershipCache?, progress: (@Sendable (String) -> Void)?)
        async throws(GraphError)
        -> (files: BundleFiles, report: GraphSyncReport, cache: MembershipCache?)
    {
        let started = ContinuousClock.now
        let before = client.statistics.withLock { $0 }
        let tokensBefore = await client.tokens.obtained
        // What was kept is for this tenant read from this Graph root (scheme, host, port, path).
        var reader = TenantReader(
            client: client, logger: logger, progress: progress, source: "\(settings.tenantID)@\(settings.graphURL)")
        reader.tracking = tracking
        reader.cache = cache
        let snapshot = try await reader.read()
        let (loaded, diagnostics) = try GraphBundle.files(of: snapshot, overlay: overlay)
        var files = loaded
        if let signingKey {
            let now = Date()
            var signature = BundleSignatureFile(
                manifest: BundleManifest(
                    describing: files, sequence: Int64(now.timeIntervalSince1970 * 1_000), created: now, expires: nil))
            signature.sign(with: signingKey)
            files = files.signed(signature.encoded)
        }
        var statistics = client.statistics.withLock { $0 }.since(before)
        statistics.tokens = await client.tokens.obtained - tokensBefore
        let groups = Set(snapshot.assignmentTargets.compactMap { $0["groupId"]?.string })
        let report = GraphSyncReport(
            revision: files.contentHash, policies: snapshot.policyCount, groups: groups.count,
            accounts: snapshot.users.count,
            statistics: statistics, duration: started.duration(to: .now), warnings: snapshot.warnings + diagnostics,
            incremental: snapshot.incremental,
            groupsRead: snapshot.groupsRead)
        return (files, report, snapshot.membershipCache)
    }

    /// Reads the tenant and writes its bundle as the directory `path`, atomically.
    public func sync(to path: String, progress: (@Sendable (String) -> Void)? = nil) async throws(GraphError)
        -> GraphSyncReport
    {
        let (files, report) = try await snapshot(progress: progress)
        try GraphBundle.write(files, to: path)
        return report
    }

    /// Reads the tenant and applies its bundle to `engine`'s state, as `custody apply` does,
    /// its source recorded as the tenant.
    ///
    /// Group members are read by delta: the state keeps what this sync read and the delta
    /// links (the cache `graph-membership`), so the next sync of an unchanged tenant reads the
    /// policies and one round of each link, not every group. Read in full once a day, when Graph
    /// no longer honours a link, and when the cache is missing or unreadable.
    ///
    /// One sync at a time on a state: the sync holds the state's `graph-sync` lease while it
    /// runs (see `StateStore.lease`).
    /// - Throws: `GraphError` (`busy` when another process or replica holds the lease),
    ///   `StoreError` when the state cannot be reached to take it, `CustodyError` when the
    ///   bundle is not applied.
    public func sync(into engine: CustodyEngine, progress: (@Sendable (String) -> Void)? = nil) async throws -> (
        report: GraphSyncReport, applied: CustodyEngine.ApplyResult
    ) {
        // The state's calls wait for it (the lease, the cache): on the state's threads, never
        // on the cooperative pool.
        try await StateExecutor.run {
            () async throws -> (report: GraphSyncReport, applied: CustodyEngine.ApplyResult) in
            try await syncHoldingLease(into: engine, progress: progress)
        }
    }

    private func syncHoldingLease(into engine: CustodyEngine, progress: (@Sendable (String) -> Void)?) async throws -> (
        report: GraphSyncReport, applied: CustodyEngine.ApplyResult
    ) {
        guard let lease = try await engine.lease(Self.leaseName) else {
            throw GraphError(
                .busy,
                "another process or replica on this state is syncing from Graph now; its bundle reaches this one through the state"
            )
        }
        let result: Result<(report: GraphSyncReport, applied: CustodyEngine.ApplyResult), any Error>
        do {
            result = .success(try await syncLeased(into: engine, progress: progress))
        } catch {
            result = .failure(error)
        }
        await lease.release()
        return try result.get()
    }

    /// The sync, once this process holds the lease.
    private func syncLeased(into engine: CustodyEngine, progress: (@Sendable (String) -> Void)?) async throws -> (
        report: GraphSyncReport, applied: CustodyEngine.ApplyResult
    ) {
        var cache: MembershipCache?
        do {
            if let text = try await engine.cache(MembershipCache.name) {
                cache = try JSONDecoder().decode(MembershipCache.self, from: Data(text.utf8))
            }
        } catch {
            logger.warning(
                "the kept group members cannot be read; every group is read", metadata: ["error": "\(error)"])
        }
        var (files, report, kept) = try await snapshot(tracking: true, cache: cache, progress: progress)
        // An unchanged tenant is the bundle in force under the signature it went in with, not
        // under a new one (which the state would record as a new application every sync).
        if signingKey != nil, let inForce = engine.bundleInForce, inForce.revision == files.contentHash,
            let signature = inForce.provenance.signature
        {
            files = files.signed(signature)
        }
        let applied = try await engine.apply(
            files: files, source: source, provenance: BundleProvenance(appliedBy: "graph-sync"))
        if kept != nil || cache != nil {
            do {
                let encoder = JSONEncoder()
                encoder.outputFormatting = .sortedKeys
                // Nothing kept (delta queries not allowed): the old cache is forgotten too.
                try await engine.saveCache(
                    MembershipCache.name, try kept.map { String(decoding: try encoder.encode($0), as: UTF8.self) })
            } catch {
                // The bundle is in force; the next sync reads every group.
                logger.warning(
                    "the group members read cannot be kept; the next sync reads every group",
                    metadata: ["error": "\(error)"])
            }
        }
        return (report, applied)
    }

    /// The name of the state's lease that keeps syncs apart across processes and replicas.
    public static let leaseName = "graph-sync"

    /// How a bundle from this tenant is named in the history: `graph:{tenant}@{graph host}`.
    public var source: String {
        "graph:\(settings.tenantID)@\(URL(string: settings.graphURL)?.host ?? settings.graphURL)"
    }
}
