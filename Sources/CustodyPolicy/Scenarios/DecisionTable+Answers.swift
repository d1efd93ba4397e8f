/// One row of a decision table as both front ends write it (`custody matrix table --json`,
/// `custody bundle diff --json`, `GET /v1/bundle/diff`).
public struct DecisionRowAnswer: Encodable, Sendable {
    package var action: String
    @Nullable package var target: String?
    @Nullable package var counterpart: String?
    package var query: String
    package var decision: String
    package var allowed: Bool
    package var setting: String
    package var reason: String

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
    package var account: String
    package var before: DecisionRowAnswer
    package var after: DecisionRowAnswer

    public init(_ change: DecisionDiff.Change) {
        account = change.account.description
        before = DecisionRowAnswer(change.before)
        after = DecisionRowAnswer(change.after)
    }
}
