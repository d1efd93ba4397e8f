public import CustodyPolicy
import CustodyStore

extension CustodyEngine {
    /// A runner that answers JSON Lines queries with the policy in force on `jobs` cores.
    /// When decision auditing is on in the state, every decision is written to the audit log
    /// before its answer (see `DecisionRunner`).
    /// - Throws: `CustodyError` `.noPolicy` with no policy in force; `.state` when the audit
    ///   setting cannot be read (answers are never given unaudited by mistake).
    public func decisionRunner(options: DecisionStream.Options, jobs: Int, blockBytes: Int = 1 << 20) throws(CustodyError) -> DecisionRunner {
        let snapshot = try policy()
        let auditing: Bool
        do {
            auditing = try database.isDecisionAuditEnabled()
        } catch {
            throw CustodyError(.state, "\(error)", underlying: error)
        }
        let database = self.database
        return DecisionRunner(
            snapshot: snapshot, options: options, jobs: jobs, blockBytes: blockBytes,
            audit: auditing ? { records in try database.audit(records) } : nil, now: configuration.now)
    }
}
