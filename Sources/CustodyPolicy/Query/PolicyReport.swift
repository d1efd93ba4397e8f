/// The effective policy of one account as JSON: what `custody policy show` prints and the
/// decision service returns.
///
/// ```json
/// {"account": {...}, "context": {...}, "managed": true, "accountAllowed": {...},
///  "policies": [{"name", "id", "type", "location"}],
///  "settings": {"saveAsBlocked": {"value": true, "resolution": "configured", "sources": ["..."]}, ...},
///  "managedApps": ["..."]}
/// ```
package enum PolicyReport {
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

        writer.endObject()
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
