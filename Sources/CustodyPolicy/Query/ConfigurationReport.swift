/// The app configuration an account receives, as JSON (`custody config show`,
/// `GET /v1/accounts/{account}/configuration`):
///
/// ```json
/// {"fullData": [{"key": "value"}, ...], "policies": [{"id": "...", "displayName": "...", "isDefault": false}],
///  "keys": {"key": {"values": ["..."], "any": "...", "conflict": false}}}
/// ```
///
/// `fullData` has one object per contributing policy (targeted ones by policy id, then the
/// defaults); `null` for an unmanaged account.
package enum ConfigurationReport {
    package static func write(_ configuration: AppConfiguration?, to writer: inout JSONWriter) {
        guard let configuration else { return writer.null() }
        writer.beginObject()
        writer.key("fullData")
        writer.beginArray()
        for source in configuration.sources {
            writer.beginObject()
            for key in source.values.keys.sorted() {
                writer.key(key)
                writer.value(source.values[key]!)
            }
            writer.endObject()
        }
        writer.endArray()
        writer.key("policies")
        writer.beginArray()
        for source in configuration.sources {
            writer.beginObject()
            writer.key("id"); writer.value(source.policy.id)
            writer.key("displayName"); writer.value(source.policy.displayName)
            writer.key("isDefault"); writer.value(source.isDefault)
            writer.endObject()
        }
        writer.endArray()
        writer.key("keys")
        writer.beginObject()
        for key in configuration.keys {
            writer.key(key)
            writer.beginObject()
            writer.key("values")
            writer.beginArray()
            for value in configuration.allStrings(key) { writer.value(value) }
            writer.endArray()
            writer.key("any"); writer.value(configuration.string(key))
            writer.key("conflict"); writer.value(configuration.hasConflict(key))
            writer.endObject()
        }
        writer.endObject()
        writer.endObject()
    }
}
