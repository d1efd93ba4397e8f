package import CustodyPolicy
import Foundation

extension PolicyEvent {
    /// The event's name, as its JSON carries it in `"event"` and Server-Sent Events in `event:`.
    public var name: String {
        switch self {
        case .allowedAccountsChanged: "allowedAccountsChanged"
        case .policyChanged: "policyChanged"
        case .dataProtectionChanged: "dataProtectionChanged"
        case .appConfigurationChanged: "appConfigurationChanged"
        case .configurationDecodingFailed: "configurationDecodingFailed"
        case .secretsChanged: "secretsChanged"
        case .wipeRequired: "wipeRequired"
        case .wipeCompleted: "wipeCompleted"
        case .bundleRejected: "bundleRejected"
        case .bundleApplied: "bundleApplied"
        case .policySynced: "policySynced"
        case .replicaBehind: "replicaBehind"
        case .keyRotated: "keyRotated"
        }
    }

    /// The event as one JSON object, such as
    /// `{"event":"policyChanged","accounts":["a@contoso.com"]}`: what `custody watch` prints,
    /// what the state's event log keeps, and what the decision service streams.
    public var json: [UInt8] {
        var writer = JSONWriter()
        write(to: &writer)
        return writer.bytes
    }

    /// `json` and a line break: one line of `custody watch`.
    public var jsonLine: [UInt8] { json + [UInt8(ascii: "\n")] }

    /// Writes the event's JSON object.
    package func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("event")
        writer.value(name)
        func accounts(_ key: String, _ accounts: [AccountID]) {
            writer.key(key)
            writer.beginArray()
            for account in accounts { writer.value(account.description) }
            writer.endArray()
        }
        func account(_ account: AccountID) {
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
        switch self {
        case .allowedAccountsChanged(let old, let new):
            list("old", old)
            list("new", new)
        case .policyChanged(let changed, let platform):
            accounts("accounts", changed)
            if let platform {
                writer.key("platform")
                writer.value(platform.rawValue)
            }
        case .dataProtectionChanged(let changed, let required):
            account(changed)
            writer.key("encryptionRequired")
            writer.value(required)
        case .appConfigurationChanged(let changed):
            account(changed)
        case .configurationDecodingFailed(let changed, let type, let error):
            account(changed)
            writer.key("type"); writer.value(type)
            writer.key("setting"); writer.value(error.keyPath)
            writer.key("code"); writer.value(error.code.rawValue)
            writer.key("message"); writer.value(error.message)
        case .secretsChanged(let changed, let identifiers):
            writer.key("account")
            writer.value(changed?.description)
            list("identifiers", identifiers)
        case .wipeRequired(let changed, let reason):
            account(changed)
            writer.key("reason")
            writer.value(reason)
        case .wipeCompleted(let changed):
            account(changed)
        case .bundleRejected(let rejection):
            // The files named relative to the bundle directory, which `source` names: an event
            // reaches every events token, and its text does not lay out the server's disk.
            writer.key("source"); writer.value(rejection.source)
            writer.key("error"); writer.value(namingFiles(in: rejection.message, relativeTo: rejection.source))
        case .bundleApplied(let revision, let source):
            writer.key("revision"); writer.value(revision)
            writer.key("source"); writer.value(source)
        case .policySynced(let sync):
            sync.write(to: &writer)
        case .keyRotated(let rotated, let version):
            account(rotated)
            writer.key("version"); writer.value(Int(version))
        case .replicaBehind(let replica, let host, let revision, let newest, let seconds):
            writer.key("replica"); writer.value(replica)
            writer.key("host"); writer.value(host)
            writer.key("revision"); writer.value(revision)
            writer.key("newest"); writer.value(newest)
            writer.key("seconds"); writer.value(seconds)
        }
        writer.endObject()
    }
}

extension PolicySync: Encodable {
    private enum CodingKeys: String, CodingKey {
        case status, trigger, source, revision, pages, requests, throttled, durationMs, finishedAt, error, warnings
    }

    /// The fields `write(to:)` writes, as an `Encodable` (for the service's answers off the
    /// event path: `/readyz`, `POST /v1/graph/sync`); a missing revision or error is `null`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(status.rawValue, forKey: .status)
        try container.encode(trigger.rawValue, forKey: .trigger)
        try container.encode(source, forKey: .source)
        try container.encode(revision, forKey: .revision)
        try container.encode(pages, forKey: .pages)
        try container.encode(requests, forKey: .requests)
        try container.encode(throttled, forKey: .throttled)
        try container.encode(milliseconds, forKey: .durationMs)
        try container.encode(finishedAt.formatted(.iso8601), forKey: .finishedAt)
        try container.encode(error, forKey: .error)
        try container.encode(warnings, forKey: .warnings)
    }

    /// The sync's fields, inside an object already begun (the event log's `policySynced`,
    /// written with the other events): `status`, `trigger`, `source`, `revision`, `pages`,
    /// `requests`, `throttled`, `durationMs`, `finishedAt`, `error`, `warnings`.
    package func write(to writer: inout JSONWriter) {
        writer.key("status"); writer.value(status.rawValue)
        writer.key("trigger"); writer.value(trigger.rawValue)
        writer.key("source"); writer.value(source)
        writer.key("revision"); writer.value(revision)
        writer.key("pages"); writer.value(pages)
        writer.key("requests"); writer.value(requests)
        writer.key("throttled"); writer.value(throttled)
        writer.key("durationMs"); writer.value(milliseconds)
        writer.key("finishedAt"); writer.value(finishedAt.formatted(.iso8601))
        writer.key("error"); writer.value(error)
        writer.key("warnings")
        writer.beginArray()
        for warning in warnings { writer.value(warning) }
        writer.endArray()
    }
}
