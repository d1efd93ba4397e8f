/// One row of a decision table as both front ends write it (`custody matrix table --json`,
/// `custody bundle diff --json`, `GET /v1/bundle/diff`).
public struct DecisionRowAnswer: Encodable, Sendable {
    var action: String
    @Nullable var target: String?
    @Nullable var counterpart: String?
    var query: String
    var decision: String
    var allowed: Bool
    var setting: String
    var reason: String

    public init(_ row: DecisionTable.Row) {
        action = row.action.rawValue
        target = row.target.isEmpty ? nil : row.target
        counterpart = row.counterpart.isEmpty ? nil : row.counterpart
        query = row.query.description
        decision = DecisionTable.verdict(row)
        allowed = row.answer.isAllowed
        setting = Self.setting(row.answer)
        reason = row.answer.reason
    }

    /// The setting that decided, or "" when none did alone.
    public static func setting(_ answer: DecisionAnswer) -> String {
        if case .single(let decision) = answer { return decision.settingName ?? "" }
        return ""
    }
}

/// One decision that differs between two policies, before and after.
public struct DecisionChangeAnswer: Encodable, Sendable {
    var account: String
    var before: DecisionRowAnswer
    var after: DecisionRowAnswer

    public init(_ change: DecisionDiff.Change) {
        account = change.account.description
        before = DecisionRowAnswer(change.before)
        after = DecisionRowAnswer(change.after)
    }
}
