/// Writes decisions as the JSON objects of the `custody decide` contract:
///
/// `{"action":"saveTo","allowed":false,"reason":"...","setting":"saveAsBlocked","policies":["..."]}`
///
/// Notifications add `"restriction"`, offline access adds `"state"`, encryption adds
/// `"required"` (the same as `allowed`), and a share adds `"targets"`, each target with its own
/// `id`, `allowed`, `reason`, `setting` and `policies`.
package enum DecisionEncoding {
    /// Writes one answer as a JSON object.
    /// - Parameter explanation: writes the `reason`, `setting` and `policies` members of a
    ///   decision; callers that cache rendered reasons pass their own.
    /// - Parameter trailer: writes members the caller adds at the end of the object (a
    ///   decision id).
    package static func write(
        _ answer: DecisionAnswer, to writer: inout JSONWriter,
        explanation: (Decision, inout JSONWriter) -> Void = writeExplanation, trailer: (inout JSONWriter) -> Void = { _ in }
    ) {
        writer.beginObject()
        switch answer {
        case .single(let decision):
            writer.key("action")
            writer.value(decision.action.rawValue)
            writer.key("allowed")
            writer.value(decision.isAllowed)
            if let restriction = decision.notificationRestriction {
                writer.key("restriction")
                writer.value(restriction.rawValue)
            }
            if let state = decision.offlineState {
                writer.key("state")
                writer.value(state.rawValue)
            }
            if decision.action == .encryptionRequired {
                writer.key("required")
                writer.value(decision.isAllowed)
            }
            explanation(decision, &writer)
        case .share(let share):
            writer.key("action")
            writer.value(DecisionAction.share.rawValue)
            writer.key("allowed")
            writer.value(share.isAllowed)
            writer.key("reason")
            writer.value(share.reason)
            writer.key("targets")
            writer.beginArray()
            for target in share.targets {
                writer.beginObject()
                writer.key("id")
                writer.value(target.id)
                writer.key("allowed")
                writer.value(target.decision.isAllowed)
                explanation(target.decision, &writer)
                writer.endObject()
            }
            writer.endArray()
        }
        trailer(&writer)
        writer.endObject()
    }

    /// Writes `"reason"`, `"setting"` and `"policies"` for a decision.
    package static func writeExplanation(_ decision: Decision, to writer: inout JSONWriter) {
        writer.key("reason")
        writer.value(decision.reason)
        writer.key("setting")
        writer.value(decision.settingName)
        writer.key("policies")
        writer.beginArray()
        for policy in decision.sourcePolicies {
            writer.value(policy.name)
        }
        writer.endArray()
    }

    /// Writes an error object: `{"error":"line 3, column 12: ...","line":3}`.
    package static func writeError(_ message: String, line: Int?, to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("error")
        writer.value(line.map { "line \($0), \(message)" } ?? message)
        if let line {
            writer.key("line")
            writer.value(line)
        }
        writer.endObject()
    }
}
