import Custody
import CustodyPolicy
import Foundation
import Hummingbird
import HummingbirdCore

/// A request's query string, read once and checked whole: every parameter is one the route
/// takes (an unknown one, such as a misspelt `platfrom`, is a 400, never ignored), and none is
/// given twice (a repeated one is a 400, never its first value).
///
/// The evaluation context parameters, `platform`, `app` and `managementLevel`, each override
/// their own field of the service's context only (`--platform`, `--app`, or what `custody
/// apply` recorded): `?app=` on a service started for iOS decides for that app on iOS.
struct QueryParameters {
    /// The parameters every route whose answer depends on the policy takes.
    static let context = ["platform", "app", "managementLevel"]

    private let values: [String: String]

    /// Reads `uri`'s query string for a route that takes `accepted`.
    /// - Throws: `ServiceError` `invalid-parameter` naming an unknown or repeated parameter.
    init(_ uri: URI, accepting accepted: [String]) throws(ServiceError) {
        try Self.refuseUndecodable(uri.query)
        var values: [String: String] = [:]
        for (key, value) in uri.queryParameters {
            let name = String(key)
            guard accepted.contains(name) else {
                let takes = accepted.isEmpty ? "it takes none" : "it takes: \(accepted.joined(separator: ", "))"
                throw ServiceError.badParameter(name.escapingControlCharacters, "unknown parameter (\(takes))")
            }
            guard values.updateValue(String(value), forKey: name) == nil else {
                throw ServiceError.badParameter(name, "given more than once; give it once")
            }
        }
        self.values = values
    }

    /// Refuses a query string holding a name or value whose percent-encoding is not UTF-8 (`%FF`,
    /// a lone `%C3`): decoded leniently, each bad byte would become U+FFFD, and different bytes
    /// asked for would name one account. As a path segment that is not UTF-8 is refused.
    private static func refuseUndecodable(_ query: String?) throws(ServiceError) {
        guard let query, query.utf8.contains(UInt8(ascii: "%")) else { return }
        for pair in query.split(separator: "&") where pair.utf8.contains(UInt8(ascii: "%")) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            for part in parts where part.removingPercentEncoding == nil {
                let name = parts[0].removingPercentEncoding ?? String(parts[0])
                throw ServiceError.badParameter(
                    name.escapingControlCharacters, "not valid percent-encoded UTF-8")
            }
        }
    }

    subscript(_ name: String) -> String? { values[name] }

    /// A whole-number parameter within `range`: ASCII digits only (no sign, no space, no
    /// leading `+`); nil when absent.
    func wholeNumber(_ name: String, in range: ClosedRange<Int>) throws(ServiceError) -> Int? {
        guard let text = values[name] else { return nil }
        guard text.utf8.count <= 9, !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            let value = Int(text), range.contains(value)
        else {
            throw ServiceError.badParameter(
                name, "must be a whole number from \(range.lowerBound) to \(range.upperBound), in digits only")
        }
        return value
    }

    /// An account search (`q`): at most 256 bytes (as the OpenAPI document says: what a search
    /// box sends), without a control, line-separator or bidirectional character; "" when absent.
    func searchText(_ name: String = "q") throws(ServiceError) -> String {
        let text = values[name] ?? ""
        guard text.utf8.count <= 256, !text.unicodeScalars.contains(where: isUnprintable) else {
            throw ServiceError.badParameter(
                name, "must be at most 256 bytes, without control, line-separator or bidirectional characters")
        }
        return text
    }

    /// A `true` or `false` parameter; nil when absent.
    func flag(_ name: String) throws(ServiceError) -> Bool? {
        switch values[name] {
        case nil: return nil
        case "true": return true
        case "false": return false
        default: throw ServiceError.badParameter(name, "must be true or false")
        }
    }

    /// The service's context with each field the request names overridden; nil when it names
    /// none (the service's own context, resolved already).
    func evaluationContext(over base: EvaluationContext) throws(ServiceError) -> EvaluationContext? {
        var platform: Platform?
        if let text = values["platform"] {
            guard let value = Platform(rawValue: text) else {
                throw ServiceError.badParameter(
                    "platform", "must be one of: \(Platform.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            platform = value
        }
        var level: AppManagementLevel?
        if let text = values["managementLevel"] {
            guard let value = AppManagementLevel(rawValue: text) else {
                throw ServiceError.badParameter(
                    "managementLevel",
                    "must be one of: \(AppManagementLevel.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            level = value
        }
        let app = values["app"]
        if let app,
            app.isEmpty || app.utf8.count > 256
                || app.unicodeScalars.contains(where: isUnprintable)
        {
            throw ServiceError.badParameter(
                "app",
                "must be an app id of 1 to 256 bytes without control, line-separator or bidirectional-formatting characters"
            )
        }
        guard platform != nil || level != nil || app != nil else { return nil }
        return EvaluationContext(
            platform: platform ?? base.platform, appID: app ?? base.appID,
            managementLevel: level ?? base.managementLevel)
    }

    /// The context and answer options of a decision request.
    static func decision(_ uri: URI, engine: CustodyEngine) throws(ServiceError) -> (
        EvaluationContext?, DecisionStream.Options
    ) {
        let parameters = try QueryParameters(uri, accepting: context + ["reasons", "strictAccounts", "explain"])
        let options = DecisionStream.Options(
            strictAccounts: try parameters.flag("strictAccounts") ?? false,
            reasons: try parameters.flag("reasons") ?? true,
            explain: try parameters.flag("explain") ?? false, currentTime: now)
        return (try parameters.evaluationContext(over: engine.context), options)
    }

    /// The current time since the Unix epoch, for offline-access queries without `now`.
    @Sendable static func now() -> Duration {
        .seconds(Date.now.timeIntervalSince1970)
    }
}

extension Request {
    /// Refuses a body on a route that takes none (a wipe, a key rotation, a Graph sync): 400
    /// `unexpected-body`, never a body silently ignored. An empty body is no body.
    func requireNoBody() async throws {
        for try await chunk in body where chunk.readableBytes > 0 {
            throw ServiceError(
                .badRequest, .unexpectedBody, "this endpoint takes no body; send none (what it needs is in the path)")
        }
    }
}
