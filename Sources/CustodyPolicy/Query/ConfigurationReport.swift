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
    /// The report as one line of JSON (`null` for an unmanaged account).
    package static func json(_ configuration: AppConfiguration?) -> [UInt8] {
        // Strings and booleans: encoding cannot fail.
        (try? JSONLine.encode(Report(configuration))) ?? []
    }

    /// The report, or `null`.
    struct Report: Encodable {
        struct Policy: Encodable {
            @Nullable var id: String?
            @Nullable var displayName: String?
            var isDefault: Bool
        }

        struct Key: Encodable {
            var values: [String]
            @Nullable var any: String?
            var conflict: Bool
        }

        struct Body: Encodable {
            var fullData: [[String: String]]
            var policies: [Policy]
            var keys: [String: Key]
        }

        @Nullable var body: Body?

        init(_ configuration: AppConfiguration?) {
            body = configuration.map { configuration in
                Body(
                    fullData: configuration.sources.map(\.values),
                    policies: configuration.sources.map {
                        Policy(id: $0.policy.id, displayName: $0.policy.displayName, isDefault: $0.isDefault)
                    },
                    keys: Dictionary(
                        uniqueKeysWithValues: configuration.keys.map { key in
                            (
                                key,
                                Key(
                                    values: configuration.allStrings(key), any: configuration.string(key),
                                    conflict: configuration.hasConflict(key))
                            )
                        }))
            }
        }

        func encode(to encoder: any Encoder) throws {
            try _body.encode(to: encoder)
        }
    }
}
