extension DecisionQuery {
    /// The members each action takes; every other member is an error (names are exact).
    static func fields(of action: DecisionAction) -> (required: [String], optional: [String]) {
        switch action {
        case .saveTo: (["owner", "location"], ["locationAccount"])
        case .openFrom: (["receiver", "location"], ["locationAccount"])
        case .share: (["owner", "targets"], [])
        case .receive: (["receiver"], ["dataOwner"])
        case .copyOut: (["owner", "destinationManaged"], ["length"])
        case .pasteIn: (["owner", "sourceManaged"], [])
        case .print, .backup, .screenCapture, .encryptionRequired, .notifications, .accountAllowed: (["account"], [])
        case .offlineAccess: (["account"], ["offlineFor", "lastCheckIn", "now"])
        }
    }

    /// Reads a query from one JSON object, such as
    /// `{"action":"saveTo","owner":"a@contoso.com","location":"box","locationAccount":null}`.
    ///
    /// Accounts are a string (a UPN, or an OID in GUID form), an object
    /// `{"oid": ..., "upn": ...}`, or null (no account; `""` too). `offlineAccess` takes either
    /// `offlineFor` (an ISO 8601 duration) or `lastCheckIn` and optionally `now` (RFC 3339
    /// timestamps; `now` defaults to `currentTime`).
    ///
    /// - Parameters:
    ///   - extraMembers: members the caller reads itself (a scenario matrix's `expect`), allowed
    ///     beside the query's own.
    ///   - currentTime: the time since the Unix epoch that `now` defaults to.
    /// - Throws: `QueryError` naming the column of the offending member or value.
    package init(json object: JSONValue, extraMembers: Set<String> = [], currentTime: () -> Duration) throws(QueryError) {
        let reader = QueryReader(object: object)
        guard object.kind == .object else {
            throw reader.error("a query must be a JSON object, found \(object.kind.article)", at: object)
        }
        guard let actionValue = object["action"] else {
            throw reader.error("the query has no \"action\" (one of: \(DecisionAction.allCases.map(\.rawValue).joined(separator: ", ")))", at: object)
        }
        guard let actionName = actionValue.string, let action = DecisionAction(rawValue: actionName) else {
            let found = actionValue.string.map { "'\($0)'" } ?? actionValue.kind.article
            throw reader.error("unknown action \(found) (one of: \(DecisionAction.allCases.map(\.rawValue).joined(separator: ", ")))", at: actionValue)
        }
        let (required, optional) = Self.fields(of: action)
        var values: [String: JSONValue] = [:]
        for member in object.members {
            let key = member.key
            if key == "action" || extraMembers.contains(key) { continue }
            guard required.contains(key) || optional.contains(key) else {
                throw reader.error(
                    "unknown field '\(key)' for action \(action) (it takes: \((required + optional).joined(separator: ", ")))",
                    at: member.name)
            }
            guard values.updateValue(member.value, forKey: key) == nil else {
                throw reader.error("field '\(key)' appears more than once", at: member.name)
            }
        }
        for key in required where values[key] == nil {
            throw reader.error("action \(action) needs the field '\(key)'", at: object)
        }

        switch action {
        case .saveTo:
            self = .saveTo(
                owner: try reader.account(values["owner"]),
                location: try reader.enumValue(values["location"]!, SaveLocation.self),
                locationAccount: try reader.account(values["locationAccount"]))
        case .openFrom:
            self = .openFrom(
                receiver: try reader.account(values["receiver"]),
                location: try reader.enumValue(values["location"]!, OpenLocation.self),
                locationAccount: try reader.account(values["locationAccount"]))
        case .share:
            self = .share(owner: try reader.account(values["owner"]), targets: try reader.targets(values["targets"]!))
        case .receive:
            self = .receive(receiver: try reader.account(values["receiver"]), dataOwner: try reader.account(values["dataOwner"]))
        case .copyOut:
            self = .copyOut(
                owner: try reader.account(values["owner"]),
                destinationManaged: try reader.bool(values["destinationManaged"]!),
                length: try values["length"].flatMap { value throws(QueryError) in try reader.length(value) })
        case .pasteIn:
            self = .pasteIn(owner: try reader.account(values["owner"]), sourceManaged: try reader.bool(values["sourceManaged"]!))
        case .print: self = .print(account: try reader.account(values["account"]))
        case .backup: self = .backup(account: try reader.account(values["account"]))
        case .screenCapture: self = .screenCapture(account: try reader.account(values["account"]))
        case .encryptionRequired: self = .encryptionRequired(account: try reader.account(values["account"]))
        case .notifications: self = .notifications(account: try reader.account(values["account"]))
        case .accountAllowed: self = .accountAllowed(account: try reader.account(values["account"]))
        case .offlineAccess:
            self = .offlineAccess(
                account: try reader.account(values["account"]),
                offlineFor: try reader.offlineFor(values, object: object, currentTime: currentTime))
        }
    }
}

/// Reads the values of one query object, turning problems into `QueryError`s with columns.
private struct QueryReader {
    let object: JSONValue

    func error(_ message: String, at value: JSONValue) -> QueryError {
        QueryError(
            message: message, column: JSONText.lineAndColumn(ofOffset: value.offset, in: object.document.source).column,
            offset: value.offset)
    }

    func account(_ value: JSONValue?) throws(QueryError) -> AccountID? {
        guard let value, !value.isNull else { return nil }
        switch value.kind {
        case .string:
            return AccountID(value.string!)
        case .object:
            var oid: String?
            var upn: String?
            for member in value.members {
                switch member.key {
                case "oid": oid = try optionalString(member.value)
                case "upn": upn = try optionalString(member.value)
                default: throw error("unknown field '\(member.key)' of an account (it takes: oid, upn)", at: member.name)
                }
            }
            return AccountID(oid: oid, upn: upn)
        default:
            throw error("an account must be a UPN or OID string, an {\"oid\", \"upn\"} object or null, found \(value.kind.article)", at: value)
        }
    }

    private func optionalString(_ value: JSONValue) throws(QueryError) -> String? {
        if value.isNull { return nil }
        guard let string = value.string else { throw error("expected a string, found \(value.kind.article)", at: value) }
        return string
    }

    func enumValue<E: RawRepresentable<String> & CaseIterable>(_ value: JSONValue, _ type: E.Type) throws(QueryError) -> E {
        guard let text = value.string else {
            throw error("expected a location name, found \(value.kind.article)", at: value)
        }
        guard let known = E(rawValue: text) else {
            throw error("unknown location '\(text)' (one of: \(E.allCases.map(\.rawValue).joined(separator: ", ")))", at: value)
        }
        return known
    }

    func bool(_ value: JSONValue) throws(QueryError) -> Bool {
        guard let bool = value.bool else { throw error("expected true or false, found \(value.kind.article)", at: value) }
        return bool
    }

    func length(_ value: JSONValue) throws(QueryError) -> Int? {
        if value.isNull { return nil }
        guard let length = value.int, length >= 0 else {
            throw error("\"length\" must be a whole number of characters, zero or more", at: value)
        }
        return length
    }

    func targets(_ value: JSONValue) throws(QueryError) -> [String] {
        guard value.kind == .array else { throw error("\"targets\" must be an array of app ids, found \(value.kind.article)", at: value) }
        var targets: [String] = []
        for element in value.elements {
            guard let target = element.string, !target.isEmpty else {
                throw error("each target must be a non-empty app id, URL scheme or package id", at: element)
            }
            targets.append(target)
        }
        guard !targets.isEmpty else { throw error("\"targets\" must name at least one app", at: value) }
        return targets
    }

    func offlineFor(_ values: [String: JSONValue], object: JSONValue, currentTime: () -> Duration) throws(QueryError) -> Duration {
        if let offlineFor = values["offlineFor"] {
            guard values["lastCheckIn"] == nil, values["now"] == nil else {
                throw error("give either \"offlineFor\" or \"lastCheckIn\", not both", at: offlineFor)
            }
            guard let text = offlineFor.string else {
                throw error("\"offlineFor\" must be an ISO 8601 duration such as PT13H, found \(offlineFor.kind.article)", at: offlineFor)
            }
            do {
                return try PolicyDuration(iso8601: text).duration
            } catch {
                throw self.error("\"offlineFor\" is not a duration: \(error)", at: offlineFor)
            }
        }
        guard let lastCheckIn = values["lastCheckIn"] else {
            throw error("action offlineAccess needs \"offlineFor\" or \"lastCheckIn\"", at: object)
        }
        let checkedIn = try timestamp(lastCheckIn, field: "lastCheckIn")
        let now = try values["now"].map { value throws(QueryError) in try timestamp(value, field: "now") } ?? currentTime()
        return now - checkedIn
    }

    private func timestamp(_ value: JSONValue, field: String) throws(QueryError) -> Duration {
        guard let text = value.string, let time = RFC3339.durationSinceEpoch(text) else {
            throw error("\"\(field)\" must be an RFC 3339 timestamp such as 2026-11-21T08:00:00Z", at: value)
        }
        return time
    }
}
