/// Writes decisions as the JSON objects of the `custody decide` contract:
///
/// `{"action":"saveTo","allowed":false,"reason":"...","setting":"saveAsBlocked","policies":["..."]}`
///
/// Notifications add `"restriction"`, offline access adds `"state"`, encryption adds
/// `"required"` (the same as `allowed`), a receive or open of data that becomes the receiver's
/// adds `"protectAsReceiver": true`, and a share adds `"targets"`, each target with its own
/// `id`, `allowed`, `reason`, `setting` and `policies` (and `"filtersShareSheet": true` under
/// Open-In/Share filtering). A view of several accounts answers as its deciding account does,
/// adding `"account"` (that account) and `"accounts"` (each account's own answer).
package enum DecisionEncoding {
    /// Writes one answer as a JSON object.
    /// - Parameter explanation: writes the `reason`, `setting` and `policies` members of a
    ///   decision; callers that cache rendered reasons pass their own.
    /// - Parameter trailer: writes members the caller adds at the end of the object (a
    ///   decision id).
    package static func write(
        _ answer: DecisionAnswer, to writer: inout JSONWriter,
        explanation: (Decision, inout JSONWriter) -> Void = writeExplanation,
        trailer: (inout JSONWriter) -> Void = { _ in }
    ) {
        writer.beginObject()
        writeMembers(answer, to: &writer, explanation: explanation)
        trailer(&writer)
        writer.endObject()
    }

    private static func writeMembers(
        _ answer: DecisionAnswer, to writer: inout JSONWriter, explanation: (Decision, inout JSONWriter) -> Void
    ) {
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
            if decision.protectsAsReceiver {
                writer.key("protectAsReceiver")
                writer.value(true)
            }
            if let outcome = decision.urlOutcome {
                writer.key("outcome")
                writer.value(outcome.rawValue)
                if let redirect = decision.redirect {
                    writer.key("redirect")
                    writer.value(redirect)
                }
                if decision.onlyManagedApps {
                    writer.key("onlyManagedApps")
                    writer.value(true)
                }
            }
            explanation(decision, &writer)
        case .share(let share):
            writer.key("action")
            writer.value(DecisionAction.share.rawValue)
            writer.key("allowed")
            writer.value(share.isAllowed)
            if share.filtersShareSheet {
                writer.key("filtersShareSheet")
                writer.value(true)
            }
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
        case .launch(let launch):
            writeLaunch(launch, to: &writer)
        case .view(let view):
            writeMembers(view.combined, to: &writer, explanation: explanation)
            writer.key("account")
            writer.value(view.deciding?.account?.description)
            writer.key("accounts")
            writer.beginArray()
            for account in view.accounts {
                writer.beginObject()
                writer.key("account")
                writer.value(account.account?.description)
                writeMembers(account.answer, to: &writer, explanation: explanation)
                writer.endObject()
            }
            writer.endArray()
        }
    }

    /// A launch decision: `"outcome"` (allow, warn, block, wipe), `"reason"`, `"setting"` and
    /// `"policies"` (the deciding check's, as every answer has them), `"checks"` (each failed or
    /// unanswerable check: its setting, value, fact, the fact's reported value or null, whether
    /// it was missing, outcome, policy and whether it counted) and `"missingFacts"`.
    private static func writeLaunch(_ launch: LaunchDecision, to writer: inout JSONWriter) {
        writer.key("action")
        writer.value(DecisionAction.launch.rawValue)
        writer.key("allowed")
        writer.value(launch.isAllowed)
        writer.key("outcome")
        writer.value(launch.outcome.rawValue)
        writer.key("reason")
        writer.value(launch.reason)
        let deciding = launch.decidingCheck
        writer.key("setting")
        writer.value(deciding?.setting)
        writer.key("policies")
        writer.beginArray()
        if let policy = deciding?.policy { writer.value(policy.name) }
        writer.endArray()
        writer.key("checks")
        writer.beginArray()
        for check in launch.checks {
            writer.beginObject()
            writer.key("setting")
            writer.value(check.setting)
            writer.key("value")
            writer.value(check.value)
            writer.key("requirement")
            writer.value(check.requirement)
            writer.key("fact")
            writer.value(check.fact.rawValue)
            writer.key("reported")
            writer.value(check.reported)
            writer.key("missing")
            writer.value(check.isMissing)
            writer.key("outcome")
            writer.value(check.outcome.rawValue)
            writer.key("policy")
            writer.value(check.policy?.name)
            writer.key("counts")
            writer.value(check.counts)
            writer.endObject()
        }
        writer.endArray()
        writer.key("missingFacts")
        writer.beginArray()
        for fact in launch.missingFacts { writer.value(fact.rawValue) }
        writer.endArray()
        if launch.outcome == .wipe {
            writer.key("wipeConfirmed")
            writer.value(launch.wipeIsConfirmed)
        }
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
    package static func writeError(_ message: String, line: Int?, code: String, to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("error")
        writer.value(line.map { "line \($0), \(message)" } ?? message)
        if let line {
            writer.key("line")
            writer.value(line)
        }
        writer.key("code")
        writer.value(code)
        writer.endObject()
    }
}
