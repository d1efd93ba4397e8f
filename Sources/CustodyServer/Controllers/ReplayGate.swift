import Custody
import CustodyPolicy
import HTTPTypes

/// The replays a service runs at once (`POST /v1/bundle/impact` and the console's candidate
/// diff together): each holds a couple of pages of the audit log and the cores the decisions
/// leave idle. One more is `503 replay-busy`.
final class ReplayGate: Sendable {
    static let limit = 2
    private let running = Locked(0)

    /// Takes a place; false when every place is taken. A place taken is given back by `leave()`.
    func enter() -> Bool {
        running.withLock { running in
            guard running < Self.limit else { return false }
            running += 1
            return true
        }
    }

    func leave() {
        running.withLock { $0 -= 1 }
    }

    /// The error of a replay refused for want of a place.
    static var busy: ServiceError {
        ServiceError(
            .serviceUnavailable, .replayBusy,
            "\(limit) replays are running on this service, as many as it runs at once; try again when one ends",
            headers: [.retryAfter: "5"])
    }
}
