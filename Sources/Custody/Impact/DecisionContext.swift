public import CustodyPolicy
import CustodyStore
import Foundation

/// The revision and evaluation context a decision was made under, as an audit entry keeps it
/// (`AuditedQuery.context`): `{"revision":"…","platform":"ios","app":"…","managementLevel":"…"}`,
/// the members after `revision` only when set.
public struct DecisionContext: Sendable, Hashable {
    /// The content hash of the bundle in force.
    public var revision: String
    /// The context the policy was resolved for (with the platform the bundle implied).
    public var context: EvaluationContext

    public init(revision: String, context: EvaluationContext) {
        self.revision = revision
        self.context = context
    }

    /// The JSON object an audit entry keeps.
    public var json: String {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("revision")
        writer.value(revision)
        if let platform = context.platform {
            writer.key("platform")
            writer.value(platform.rawValue)
        }
        if let app = context.appID {
            writer.key("app")
            writer.value(app)
        }
        if let level = context.managementLevel {
            writer.key("managementLevel")
            writer.value(level.rawValue)
        }
        writer.endObject()
        return writer.string
    }

    /// Reads what `json` wrote.
    /// - Throws: `CustodyError` `.state` naming what is wrong: the text comes from the state.
    public init(json text: String) throws(CustodyError) {
        func damaged(_ what: String) -> CustodyError {
            CustodyError(.state, "an audited decision's context is damaged (\(what)): \(text.prefix(200))")
        }
        let document: JSONDocument
        do {
            document = try JSONDocument(parsing: Array(text.utf8))
        } catch {
            throw damaged("not JSON")
        }
        guard document.root.kind == .object else { throw damaged("not an object") }
        var revision: String?
        var context = EvaluationContext()
        for member in document.root.members {
            switch member.key {
            case "revision":
                revision = member.value.string
            case "platform":
                guard let platform = member.value.string.flatMap(Platform.init(rawValue:)) else {
                    throw damaged("an unknown platform")
                }
                context.platform = platform
            case "app":
                guard let app = member.value.string else { throw damaged("an app that is not text") }
                context.appID = app
            case "managementLevel":
                guard let level = member.value.string.flatMap(AppManagementLevel.init(rawValue:)) else {
                    throw damaged("an unknown management level")
                }
                context.managementLevel = level
            default:
                throw damaged("the unknown member \(member.key)")
            }
        }
        guard let revision else { throw damaged("no revision") }
        self.init(revision: revision, context: context)
    }
}

extension AuditedQuery {
    /// A check-in's launch decision as the query that asks the same (`custody decide` reads
    /// it): the account, the facts it reported with its last check-in, and the time, to the
    /// second.
    static func launch(
        account: AccountID, facts: LaunchFacts, at date: Date, context: DecisionContext, outcome: LaunchOutcome
    ) -> AuditedQuery {
        var quoted = JSONWriter()
        quoted.value(account.description)
        let now = secondsTime(date)
        let line =
            #"{"action":"launch","account":"# + quoted.string + #","facts":"# + facts.jsonObject
            + #","now":""# + now + #""}"#
        return AuditedQuery(line: line, context: context.json, recordedFacts: nil, outcome: outcome.rawValue)
    }
}
