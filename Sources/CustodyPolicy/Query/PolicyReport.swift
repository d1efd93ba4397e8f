/// The effective policy of one account as JSON: what `custody policy show` prints and the
/// decision service returns.
///
/// ```json
/// {"account": {...}, "context": {...}, "managed": true, "accountAllowed": {...},
///  "policies": [{"name", "id", "type", "location"}],
///  "settings": {"saveAsBlocked": {"value": true, "resolution": "configured", "sources": ["..."]}, ...},
///  "managedApps": ["..."], "precedence": "mostRestrictive",
///  "conflicts": {"settings": [{"setting", "value", "resolution", "values": [{"policy", "value"}]}],
///                "setAside": [{"policy", "incumbents": ["..."]}]}}
/// ```
package enum PolicyReport {
    /// One report, or, for policies resolved per platform (no platform named for a bundle of
    /// both), an array of one report per platform.
    package static func write(account: AccountID, snapshots: [PolicySnapshot], to writer: inout JSONWriter) {
        guard snapshots.count != 1 else { return write(account: account, snapshot: snapshots[0], to: &writer) }
        writer.beginArray()
        for snapshot in snapshots { write(account: account, snapshot: snapshot, to: &writer) }
        writer.endArray()
    }

    package static func write(account: AccountID, snapshot: PolicySnapshot, to writer: inout JSONWriter) {
        let policy = snapshot.effectivePolicy(for: account)
        writer.beginObject()

        writer.key("account")
        writer.beginObject()
        writer.key("oid")
        writer.value(snapshot.tenantAccount(for: account)?.id.oid ?? account.oid)
        writer.key("upn")
        writer.value(snapshot.tenantAccount(for: account)?.id.upn ?? account.upn)
        writer.key("inTenant")
        writer.value(snapshot.tenantAccount(for: account) != nil)
        writer.key("groups")
        writer.beginArray()
        for group in snapshot.tenantAccount(for: account)?.groups ?? [] { writer.value(group) }
        writer.endArray()
        writer.endObject()

        writer.key("context")
        writer.beginObject()
        writer.key("platform")
        writer.value(snapshot.context.platform?.rawValue)
        writer.key("app")
        writer.value(snapshot.context.appID)
        writer.key("managementLevel")
        writer.value(snapshot.context.managementLevel?.rawValue)
        writer.endObject()

        writer.key("managed")
        writer.value(policy != nil)

        let allowed = snapshot.accountAllowed(account)
        writer.key("accountAllowed")
        writer.beginObject()
        writer.key("allowed")
        writer.value(allowed.isAllowed)
        writer.key("reason")
        writer.value(allowed.reason)
        writer.endObject()

        writer.key("policies")
        writer.beginArray()
        for reference in policy?.policies ?? [] {
            writer.beginObject()
            writer.key("name")
            writer.value(reference.name)
            writer.key("id")
            writer.value(reference.id)
            writer.key("type")
            writer.value(reference.kind.rawValue)
            writer.key("location")
            writer.value(reference.location.description)
            writer.endObject()
        }
        writer.endArray()

        writer.key("settings")
        writer.beginObject()
        for setting in policy?.applicableSettings ?? [] {
            let summary = policy!.setting(setting)
            writer.key(setting.rawValue)
            writer.beginObject()
            writer.key("value")
            write(summary.value, to: &writer)
            writer.key("resolution")
            writer.value(summary.resolution.rawValue)
            writer.key("sources")
            writer.beginArray()
            for source in summary.sources { writer.value(source.name) }
            writer.endArray()
            writer.endObject()
        }
        writer.endObject()

        writer.key("managedApps")
        writer.beginArray()
        for app in policy?.managedApps ?? [] { writer.value(app) }
        writer.endArray()

        writer.key("precedence")
        writer.value(snapshot.precedence.rule.rawValue)
        writeConflicts(snapshot.conflicts(for: account), to: &writer)

        writer.endObject()
    }

    /// `"conflicts": {"settings": [...], "setAside": [...]}`.
    package static func writeConflicts(_ conflicts: PolicyConflicts, to writer: inout JSONWriter) {
        writer.key("conflicts")
        writer.beginObject()
        writer.key("settings")
        writer.beginArray()
        for conflict in conflicts.settings {
            writer.beginObject()
            writer.key("setting")
            writer.value(conflict.setting.rawValue)
            writer.key("value")
            write(conflict.resolved.value, to: &writer)
            writer.key("resolution")
            writer.value(conflict.resolved.resolution.rawValue)
            writer.key("values")
            writer.beginArray()
            for (policy, value) in conflict.values {
                writer.beginObject()
                writer.key("policy")
                writer.value(policy.name)
                writer.key("value")
                write(value, to: &writer)
                writer.endObject()
            }
            writer.endArray()
            writer.endObject()
        }
        writer.endArray()
        writer.key("setAside")
        writer.beginArray()
        for aside in conflicts.setAside {
            writer.beginObject()
            writer.key("policy")
            writer.value(aside.policy.name)
            writer.key("incumbents")
            writer.beginArray()
            for incumbent in aside.incumbents { writer.value(incumbent.name) }
            writer.endArray()
            writer.endObject()
        }
        writer.endArray()
        writer.endObject()
    }

    /// The conflicts in words, one line each, for tables people read.
    package static func conflictLines(_ conflicts: PolicyConflicts) -> [String] {
        conflicts.settings.map { conflict in
            let values = conflict.values.map { "\"\($0.policy.name)\" \($0.value)" }.joined(separator: ", ")
            let outcome =
                conflict.resolved.resolution == .conflictDefault ? "the recommended default" : "the most restrictive"
            return "\(conflict.setting): \(values); \(outcome), \(conflict.resolved.value), applies"
        }
            + conflicts.setAside.map { aside in
                "\"\(aside.policy.name)\" is set aside: \(quotedNames(aside.incumbents)) reached the account first and take\(aside.incumbents.count == 1 ? "s" : "") precedence"
            }
    }

    package static func write(_ value: SettingValue, to writer: inout JSONWriter) {
        switch value {
        case .bool(let bool): writer.value(bool)
        case .int(let int): writer.value(int)
        case .string(let string): writer.value(string)
        case .list(let list):
            writer.beginArray()
            for element in list { writer.value(element) }
            writer.endArray()
        }
    }
}
