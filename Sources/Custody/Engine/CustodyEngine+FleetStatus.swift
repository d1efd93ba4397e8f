public import CustodyStore
public import Foundation

/// One replica as `GET /v1/fleet` and `custody fleet status` show it.
public struct FleetReplica: Sendable, Hashable {
    public let record: ReplicaRecord
    /// Not heard from within `FleetStatus.staleAfter`: it may be down or cut off.
    public let isStale: Bool
    /// It reported another revision than the newest applied, after that one was applied.
    public let isBehind: Bool
    /// Not heard from for a status period past stale (`FleetStatus.goneAfterMissing`): it has
    /// stopped or was replaced. Shown, not counted against the fleet; forgotten after an hour.
    public let isGone: Bool
}

/// What every replica of a state last said about itself.
public struct FleetStatus: Sendable {
    public let replicas: [FleetReplica]
    /// The revision last applied to the state; nil when none.
    public let newestRevision: String?
    /// When it was applied.
    public let newestAppliedAt: Date?
    /// How many replicas that are not stale run another revision than the newest.
    public var behind: Int { replicas.filter { !$0.isStale && !$0.isGone && $0.isBehind }.count }

    /// How often a serving replica records its status.
    public static let interval: Duration = .seconds(5)
    /// Not heard from for this long: stale.
    public static let staleAfter: TimeInterval = 15
    /// Not heard from for this long (stale, and one more status period missed): gone.
    public static let goneAfterMissing: TimeInterval = staleAfter + 5
    /// Not heard from for this long: forgotten.
    public static let goneAfter: TimeInterval = 3_600

    /// Whether the fleet is whole: every replica still there (not gone) is current, neither
    /// stale nor behind.
    public var isWhole: Bool { !replicas.contains { !$0.isGone && ($0.isStale || $0.isBehind) } }
}

/// The custody version replicas report.
public let custodyVersion = "0.1.0"

/// Who a replica is: its host, process and start time, and an id made of them (unique per
/// engine, so several engines in one process are several replicas).
public struct ReplicaIdentity: Sendable, Hashable {
    public let id: String
    public let host: String
    public let processID: Int
    public let startedAt: Date

    init() {
        host = ProcessInfo.processInfo.hostName
        processID = Int(ProcessInfo.processInfo.processIdentifier)
        startedAt = Date()
        id =
            "\(host)-\(processID)-\(Int64(startedAt.timeIntervalSince1970 * 1_000))-\(String(UInt16.random(in: .min ... .max), radix: 16))"
    }
}

extension CustodyEngine {
    /// Records this replica's status in the state (what it has in force, how current it is,
    /// its last error) and forgets replicas gone for an hour. Called every few seconds by a
    /// serving process.
    public func recordReplicaStatus(at now: Date = Date()) async throws(CustodyError) {
        let identity = replicaIdentity
        let status = replicaStatus
        let record = ReplicaRecord(
            id: identity.id, host: identity.host, processID: identity.processID, startedAt: identity.startedAt,
            version: custodyVersion, revision: bundleInForce?.revision, change: status.revision, lastContact: now,
            lastError: status.divergence ?? status.problem)
        try await CustodyError.fromState {
            try await database.recordReplica(record)
            try await database.forgetReplicas(
                lastContactBefore: now.addingTimeInterval(-FleetStatus.goneAfter), id: nil)
        }
    }

    /// Forgets this replica's status (a service that stops says it is gone).
    public func forgetReplicaStatus() async {
        _ = try? await database.forgetReplicas(lastContactBefore: .distantPast, id: replicaIdentity.id)
    }

    /// Every replica's last status, stale and behind ones marked.
    public func fleetStatus(at now: Date = Date()) async throws(CustodyError) -> FleetStatus {
        let (records, newest) = try await CustodyError.fromState {
            (try await database.replicas(), try await database.lastAppliedBundle())
        }
        // Behind: it said it runs another revision after the newest was applied (a replica that
        // has not said anything since is not judged yet; if it never does, it turns stale).
        let replicas = records.map { record in
            FleetReplica(
                record: record, isStale: now.timeIntervalSince(record.lastContact) > FleetStatus.staleAfter,
                isBehind: newest.map { record.revision != $0.contentHash && record.lastContact > $0.appliedAt }
                    ?? false,
                isGone: now.timeIntervalSince(record.lastContact) > FleetStatus.goneAfterMissing
            )
        }
        return FleetStatus(replicas: replicas, newestRevision: newest?.contentHash, newestAppliedAt: newest?.appliedAt)
    }

    /// Announces (`replicaBehind`, in the event log every replica streams) each replica that is
    /// not stale and has run another revision than the newest for longer than `threshold`
    /// since it was applied; once per replica and revision (`announced` keeps which: the
    /// updated set is returned). Only one replica announces: the first by id among those not
    /// stale (every replica reads the same table, so they agree; when this one stops, the next
    /// takes over), so the fleet says it once.
    public func announceReplicasBehind(
        threshold: TimeInterval, announced given: Set<String>, at now: Date = Date()
    ) async throws(CustodyError) -> Set<String> {
        var announced = given
        let status = try await fleetStatus(at: now)
        guard status.replicas.first(where: { !$0.isStale })?.record.id == replicaIdentity.id else {
            return announced
        }
        guard let newest = status.newestRevision, let appliedAt = status.newestAppliedAt,
            now.timeIntervalSince(appliedAt) > threshold
        else { return announced }
        for replica in status.replicas where replica.isBehind && !replica.isStale {
            let key = replica.record.id + " " + newest
            guard announced.insert(key).inserted else { continue }
            await manager.announce(
                .replicaBehind(
                    replica: replica.record.id, host: replica.record.host, revision: replica.record.revision,
                    newest: newest, seconds: Int(now.timeIntervalSince(appliedAt))))
        }
        return announced
    }
}
