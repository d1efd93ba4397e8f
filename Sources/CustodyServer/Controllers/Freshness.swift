import Custody
import CustodyPolicy
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Foundation
import NIOCore

/// `Custody-Min-Revision` and `Custody-Min-Event-Id`: a caller refuses an answer from a service
/// that is behind.
enum Freshness {
    static func require(_ request: Request, engine: CustodyEngine) async throws {
        if let text = request.headers[.custodyMinEventID] {
            guard let wanted = Int64(text), wanted >= 0 else {
                throw ServiceError.badParameter("Custody-Min-Event-Id", "must be a whole number, zero or more")
            }
            let current = engine.lastEventID
            if current < wanted {
                throw stale(engine, "this service has seen events up to \(current), not \(wanted) yet")
            }
        }
        if let wanted = request.headers[.custodyMinRevision] {
            guard !wanted.isEmpty, wanted.utf8.count <= 128,
                wanted.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) })
            else {
                throw ServiceError.badParameter("Custody-Min-Revision", "must be a bundle revision (lower-case hex)")
            }
            let replica = engine.replicaStatus
            if wanted != engine.bundleInForce?.revision, replica.isStale() {
                throw stale(
                    engine,
                    "this replica cannot reach the shared state (\(replica.problem ?? "no contact recently")) and does not have revision \(wanted) in force"
                )
            }
            guard try await engine.hasReached(revision: wanted) else {
                throw stale(engine, "this service has not applied revision \(wanted) (or anything after it) yet")
            }
        }
    }

    private static func stale(_ engine: CustodyEngine, _ message: String) -> ServiceError {
        let revision = engine.bundleInForce?.revision
        let eventID = engine.lastEventID
        return ServiceError(
            .conflict, .stale, message,
            headers: [.custodyRevision: revision ?? "", .custodyEventID: String(eventID)],
            details: ServiceError.Details(revision: .some(revision), eventId: eventID))
    }
}
