import Custody
import CustodyPolicy

/// One JSON line per event, for `custody watch`.
enum EventJSON {
    static func line(_ event: PolicyEvent) -> [UInt8] {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("event")
        func accounts(_ key: String, _ accounts: [AccountID]) {
            writer.key(key)
            writer.beginArray()
            for account in accounts { writer.value(account.description) }
            writer.endArray()
        }
        /// The event's name and its account.
        func named(_ name: String, _ account: AccountID) {
            writer.value(name)
            writer.key("account")
            writer.value(account.description)
        }
        func list(_ key: String, _ values: [String]?) {
            writer.key(key)
            guard let values else { return writer.null() }
            writer.beginArray()
            for value in values { writer.value(value) }
            writer.endArray()
        }
        switch event {
        case .allowedAccountsChanged(let old, let new):
            writer.value("allowedAccountsChanged")
            list("old", old)
            list("new", new)
        case .policyChanged(let changed):
            writer.value("policyChanged")
            accounts("accounts", changed)
        case .dataProtectionChanged(let account, let required):
            named("dataProtectionChanged", account)
            writer.key("encryptionRequired")
            writer.value(required)
        case .appConfigurationChanged(let account):
            named("appConfigurationChanged", account)
        case .configurationDecodingFailed(let account, let type, let error):
            named("configurationDecodingFailed", account)
            writer.key("type"); writer.value(type)
            writer.key("setting"); writer.value(error.keyPath)
            writer.key("code"); writer.value(error.code.rawValue)
            writer.key("message"); writer.value(error.message)
        case .secretsChanged(let account, let identifiers):
            writer.value("secretsChanged")
            writer.key("account")
            writer.value(account?.description)
            list("identifiers", identifiers)
        case .wipeRequired(let account, let reason):
            named("wipeRequired", account)
            writer.key("reason")
            writer.value(reason)
        case .wipeCompleted(let account):
            named("wipeCompleted", account)
        case .bundleRejected(let rejection):
            writer.value("bundleRejected")
            writer.key("source"); writer.value(rejection.source)
            writer.key("error"); writer.value(rejection.message)
        }
        writer.endObject()
        writer.newline()
        return writer.bytes
    }
}
