extension DecisionQuery {
    /// The members each action takes, required ones first; every other member is an error
    /// (names are exact). No action takes more than four. Actions a view of several accounts
    /// can ask take the account (`account` or `owner`) or a list of them (`accounts`,
    /// `owners`): exactly one of the two.
    static func fields(of action: DecisionAction) -> (names: [String], required: Int) {
        switch action {
        case .saveTo: (["owner", "location", "locationAccount"], 2)
        case .openFrom: (["receiver", "location", "locationAccount"], 2)
        case .share: (["targets", "owner", "owners"], 1)
        case .receive: (["receiver", "dataOwner"], 1)
        case .copyOut: (["destinationManaged", "owner", "length", "owners"], 1)
        case .pasteIn: (["sourceManaged", "owner", "owners"], 1)
        case .print, .backup, .screenCapture, .encryptionRequired, .notifications, .appSharing, .appIntents,
            .contactSync, .writingTools, .genmoji, .widgetContentSync:
            (["account", "accounts"], 0)
        case .thirdPartyKeyboard: (["account", "keyboard", "accounts"], 0)
        case .openURL: (["url", "account", "accounts"], 1)
        case .launch: (["account", "facts", "missingFacts", "now"], 1)
        case .accountAllowed: (["account"], 1)
        case .offlineAccess: (["account", "offlineFor", "lastCheckIn", "now"], 1)
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
    package init(json object: JSONValue, extraMembers: Set<String> = [], currentTime: () -> Duration) throws(QueryError)
    {
        guard object.kind == .object else {
            throw QueryReader(object: object).error(
                "a query must be a JSON object, found \(object.kind.article)", at: object)
        }
        try self.init(
            action: object.member(named: "action") ?? object["action"],
            fields: object.members,
            extraMembers: extraMembers, object: object, currentTime: currentTime)
    }

    /// Reads a query from fields gathered from anywhere in one document (a matrix grid takes
    /// some from its template and the others from its axes); errors point at the fields.
    /// - Parameters:
    ///   - action: the `action` field's value (nil: missing); `fields` may hold it too.
    ///   - object: the JSON object the query stands for, where errors without a field point.
    package init<Fields: Sequence>(
        action actionValue: JSONValue?, fields: Fields, extraMembers: Set<String>, object: JSONValue,
        currentTime: () -> Duration
    ) throws(QueryError) where Fields.Element: QueryFieldSource {
        let reader = QueryReader(object: object)
        guard let actionValue else {
            throw reader.error(
                "the query has no \"action\" (one of: \(DecisionAction.allCases.map(\.rawValue).joined(separator: ", ")))",
                at: object)
        }
        guard let actionName = actionValue.string, let action = DecisionAction(rawValue: actionName) else {
            let found = actionValue.string.map { "'\($0)'" } ?? actionValue.kind.article
            throw reader.error(
                "unknown action \(found) (one of: \(DecisionAction.allCases.map(\.rawValue).joined(separator: ", ")))",
                at: actionValue)
        }
        let (names, required) = Self.fields(of: action)
        var values = FieldValues()
        var actionSeen = false
        for field in fields {
            let key = field.key
            if key == "action" {
                // Twice is an error like any other duplicate: a proxy that takes the last
                // value would see another query.
                guard !actionSeen else { throw reader.error("field 'action' appears more than once", at: field.name) }
                actionSeen = true
                continue
            }
            if !extraMembers.isEmpty && extraMembers.contains(key) { continue }
            guard let position = names.firstIndex(of: key) else {
                throw reader.error(
                    "unknown field '\(key)' for action \(action) (it takes: \(names.joined(separator: ", ")))",
                    at: field.name)
            }
            guard values[position] == nil else {
                throw reader.error("field '\(key)' appears more than once", at: field.name)
            }
            values[position] = field.value
        }
        for position in 0..<required where values[position] == nil {
            throw reader.error("action \(action) needs the field '\(names[position])'", at: object)
        }

        /// The subject of an action a view can ask: one account (`single` at `position`), or
        /// the list at `listPosition`.
        func subject(_ single: Int, _ list: Int, _ name: String) throws(QueryError) -> (AccountID?, [AccountID?]?) {
            switch (values[single], values[list]) {
            case (let one?, nil): return (try reader.account(one), nil)
            case (nil, let many?): return (nil, try reader.accountList(many, field: names[list]))
            case (nil, nil):
                throw reader.error(
                    "action \(action) needs the field '\(name)' (or '\(names[list])' for a view of several accounts)",
                    at: object)
            case (_, let many?):
                throw reader.error("give either '\(name)' or '\(names[list])', not both", at: many)
            }
        }
        func make(_ subject: (AccountID?, [AccountID?]?), _ query: (AccountID?) -> DecisionQuery) -> DecisionQuery {
            guard let accounts = subject.1 else { return query(subject.0) }
            return .view(query(nil), accounts: accounts)
        }

        switch action {
        case .saveTo:
            self = .saveTo(
                owner: try reader.account(values[0]),
                location: try reader.enumValue(values[1]!, SaveLocation.self),
                locationAccount: try reader.account(values[2]))
        case .openFrom:
            self = .openFrom(
                receiver: try reader.account(values[0]),
                location: try reader.enumValue(values[1]!, OpenLocation.self),
                locationAccount: try reader.account(values[2]))
        case .share:
            let targets = try reader.targets(values[0]!)
            self = make(try subject(1, 2, "owner")) { .share(owner: $0, targets: targets) }
        case .receive:
            self = .receive(receiver: try reader.account(values[0]), dataOwner: try reader.account(values[1]))
        case .copyOut:
            let destinationManaged = try reader.bool(values[0]!)
            let length = try values[2].flatMap { value throws(QueryError) in try reader.length(value) }
            self = make(try subject(1, 3, "owner")) {
                .copyOut(owner: $0, destinationManaged: destinationManaged, length: length)
            }
        case .pasteIn:
            let sourceManaged = try reader.bool(values[0]!)
            self = make(try subject(1, 2, "owner")) { .pasteIn(owner: $0, sourceManaged: sourceManaged) }
        case .print: self = make(try subject(0, 1, "account")) { .print(account: $0) }
        case .backup: self = make(try subject(0, 1, "account")) { .backup(account: $0) }
        case .screenCapture: self = make(try subject(0, 1, "account")) { .screenCapture(account: $0) }
        case .encryptionRequired: self = make(try subject(0, 1, "account")) { .encryptionRequired(account: $0) }
        case .notifications: self = make(try subject(0, 1, "account")) { .notifications(account: $0) }
        case .appSharing: self = make(try subject(0, 1, "account")) { .appSharing(account: $0) }
        case .appIntents: self = make(try subject(0, 1, "account")) { .appIntents(account: $0) }
        case .contactSync: self = make(try subject(0, 1, "account")) { .contactSync(account: $0) }
        case .writingTools: self = make(try subject(0, 1, "account")) { .writingTools(account: $0) }
        case .genmoji: self = make(try subject(0, 1, "account")) { .genmoji(account: $0) }
        case .widgetContentSync: self = make(try subject(0, 1, "account")) { .widgetContentSync(account: $0) }
        case .thirdPartyKeyboard:
            let keyboard = try values[1].flatMap { value throws(QueryError) in try reader.keyboard(value) }
            self = make(try subject(0, 2, "account")) { .thirdPartyKeyboard(account: $0, keyboard: keyboard) }
        case .openURL:
            let url = try reader.url(values[0]!)
            self = make(try subject(1, 2, "account")) { .openURL(account: $0, url: url) }
        case .launch:
            let facts = try values[1].map { value throws(QueryError) in try reader.facts(value) } ?? LaunchFacts()
            let missing = try values[2].map { value throws(QueryError) in try reader.missingFacts(value) } ?? .strict
            let now = try values[3].map { value throws(QueryError) in try reader.timestamp(value, field: "now") }
            self = .launch(
                account: try reader.account(values[0]), facts: facts, now: now ?? currentTime(),
                missingFacts: missing)
        case .accountAllowed: self = .accountAllowed(account: try reader.account(values[0]))
        case .offlineAccess:
            self = .offlineAccess(
                account: try reader.account(values[0]),
                offlineFor: try reader.offlineFor(
                    offlineFor: values[1], lastCheckIn: values[2], now: values[3], object: object,
                    currentTime: currentTime))
        }
    }
}

/// A field of a query: its name (decoded, and as the JSON string for error positions) and
/// value. An object's members are fields as they are; a matrix grid assembles `QueryField`s.
package protocol QueryFieldSource {
    var key: String { get }
    var name: JSONValue { get }
    var value: JSONValue { get }
}

extension JSONMembers.Member: QueryFieldSource {}

/// One field of a query gathered from anywhere in a document.
package struct QueryField: QueryFieldSource {
    package let key: String
    package let name: JSONValue
    package let value: JSONValue

    package init(key: String, name: JSONValue, value: JSONValue) {
        self.key = key
        self.name = name
        self.value = value
    }
}

/// The values of a query's fields by their position in `DecisionQuery.fields(of:)`, held inline.
private struct FieldValues {
    private var first, second, third, fourth: JSONValue?

    subscript(position: Int) -> JSONValue? {
        get {
            switch position {
            case 0: first
            case 1: second
            case 2: third
            default: fourth
            }
        }
        set {
            switch position {
            case 0: first = newValue
            case 1: second = newValue
            case 2: third = newValue
            default: fourth = newValue
            }
        }
    }
}

extension LaunchFacts {
    /// Reads the facts of a launch from one JSON object (`custody checkin --facts`, `POST
    /// /v1/launch`), as the `facts` member of a launch query reads them.
    /// - Throws: `QueryError` naming the column of the offending member.
    package init(json object: JSONValue) throws(QueryError) {
        self = try QueryReader(object: object).facts(object)
    }
}

/// Reads the values of one query object, turning problems into `QueryError`s with columns.
private struct QueryReader {
    let object: JSONValue

    func error(_ message: String, at value: JSONValue) -> QueryError {
        QueryError(
            message: message, column: JSONText.lineAndColumn(ofOffset: value.offset, in: object.source).column,
            offset: value.offset)
    }

    func account(_ value: JSONValue?) throws(QueryError) -> AccountID? {
        guard let value, !value.isNull else { return nil }
        switch value.kind {
        case .string:
            do {
                return try AccountID(validating: value.string!)
            } catch {
                // A blank account means "no account" (unmanaged), as null does.
                if error.reason == .blank { return nil }
                throw self.error(error.description, at: value)
            }
        case .object:
            var oid: String?
            var upn: String?
            for member in value.members {
                switch member.key {
                case "oid": oid = try optionalString(member.value)
                case "upn": upn = try optionalString(member.value)
                default:
                    throw error("unknown field '\(member.key)' of an account (it takes: oid, upn)", at: member.name)
                }
            }
            do {
                return try AccountID(validatingOID: oid, upn: upn)
            } catch {
                if error.reason == .blank { return nil }
                throw self.error(error.description, at: value)
            }
        default:
            throw error(
                "an account must be a UPN or OID string, an {\"oid\", \"upn\"} object or null, found \(value.kind.article)",
                at: value)
        }
    }

    /// The accounts of a view: an array of 1 to 64 accounts.
    func accountList(_ value: JSONValue, field: String) throws(QueryError) -> [AccountID?] {
        guard value.kind == .array else {
            throw error("\"\(field)\" must be an array of accounts, found \(value.kind.article)", at: value)
        }
        var accounts: [AccountID?] = []
        for element in value.elements {
            guard accounts.count < 64 else { throw error("\"\(field)\" may name at most 64 accounts", at: element) }
            accounts.append(try account(element))
        }
        guard !accounts.isEmpty else { throw error("\"\(field)\" must name at least one account", at: value) }
        return accounts
    }

    private func optionalString(_ value: JSONValue) throws(QueryError) -> String? {
        if value.isNull { return nil }
        guard let string = value.string else {
            throw error("expected a string, found \(value.kind.article)", at: value)
        }
        return string
    }

    func enumValue<E: RawRepresentable<String> & CaseIterable>(_ value: JSONValue, _ type: E.Type) throws(QueryError)
        -> E
    {
        guard let text = value.string else {
            throw error("expected a location name, found \(value.kind.article)", at: value)
        }
        guard let known = E(rawValue: text) else {
            throw error(
                "unknown location '\(text)' (one of: \(E.allCases.map(\.rawValue).joined(separator: ", ")))", at: value)
        }
        return known
    }

    func bool(_ value: JSONValue) throws(QueryError) -> Bool {
        guard let bool = value.bool else {
            throw error("expected true or false, found \(value.kind.article)", at: value)
        }
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
        guard value.kind == .array else {
            throw error("\"targets\" must be an array of app ids, found \(value.kind.article)", at: value)
        }
        var targets: [String] = []
        for element in value.elements {
            // Each target gets its own decision and reason: a line of millions of tiny ids
            // asked for gigabytes of answer (and of audit entry).
            guard targets.count < DecisionQuery.maximumTargets else {
                throw error("\"targets\" may name at most \(DecisionQuery.maximumTargets) apps", at: element)
            }
            guard let target = element.string, !target.isEmpty else {
                throw error("each target must be a non-empty app id, URL scheme or package id", at: element)
            }
            targets.append(target)
        }
        guard !targets.isEmpty else { throw error("\"targets\" must name at least one app", at: value) }
        return targets
    }

    func offlineFor(
        offlineFor: JSONValue?, lastCheckIn: JSONValue?, now: JSONValue?, object: JSONValue, currentTime: () -> Duration
    ) throws(QueryError) -> Duration {
        if let offlineFor {
            guard lastCheckIn == nil, now == nil else {
                throw error("give either \"offlineFor\" or \"lastCheckIn\", not both", at: offlineFor)
            }
            guard let text = offlineFor.string else {
                throw error(
                    "\"offlineFor\" must be an ISO 8601 duration such as PT13H, found \(offlineFor.kind.article)",
                    at: offlineFor)
            }
            do {
                return try PolicyDuration(iso8601: text).duration
            } catch {
                throw self.error("\"offlineFor\" is not a duration: \(error)", at: offlineFor)
            }
        }
        guard let lastCheckIn else {
            throw error("action offlineAccess needs \"offlineFor\" or \"lastCheckIn\"", at: object)
        }
        let checkedIn = try timestamp(lastCheckIn, field: "lastCheckIn")
        let now = try now.map { value throws(QueryError) in try timestamp(value, field: "now") } ?? currentTime()
        return now - checkedIn
    }

    func keyboard(_ value: JSONValue) throws(QueryError) -> String? {
        if value.isNull { return nil }
        guard let text = value.string, !text.isEmpty else {
            throw error("\"keyboard\" must be a keyboard's package id, or null", at: value)
        }
        return text
    }

    /// A URL to open: a scheme, a colon and the rest (`tel:+1555`, `https://contoso.com`),
    /// at most 8 KiB.
    func url(_ value: JSONValue) throws(QueryError) -> String {
        guard let text = value.string else {
            throw error("\"url\" must be a string such as https://contoso.com or tel:+15550100", at: value)
        }
        guard text.utf8.count <= 8_192 else { throw error("\"url\" is longer than 8,192 bytes", at: value) }
        guard
            !text.unicodeScalars.contains(where: {
                switch $0.properties.generalCategory {
                case .control, .lineSeparator, .paragraphSeparator, .format: true
                default: false
                }
            })
        else {
            throw error(
                "\"url\" holds a control, format or line-separator character (escape it as a URL does, such as %00)",
                at: value)
        }
        let scheme = text.utf8.prefix { $0 != UInt8(ascii: ":") }
        guard scheme.count < text.utf8.count, let first = scheme.first, Self.isLetter(first),
            scheme.allSatisfy({
                Self.isLetter($0) || ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9"))
                    || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".")
            })
        else {
            throw error("\"url\" must start with a scheme and a colon, such as https: or tel:", at: value)
        }
        return text
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z")
    }

    func missingFacts(_ value: JSONValue) throws(QueryError) -> MissingFacts {
        guard let text = value.string, let choice = MissingFacts(rawValue: text) else {
            throw error("\"missingFacts\" must be \"strict\" (the default) or \"ignore\"", at: value)
        }
        return choice
    }

    /// The facts of a launch query: an object whose members are `LaunchFact` names (`rooted`
    /// is `jailbroken`); null is a missing fact.
    func facts(_ value: JSONValue) throws(QueryError) -> LaunchFacts {
        guard value.kind == .object else {
            throw error(
                "\"facts\" must be an object such as {\"osVersion\": \"17.4\"}, found \(value.kind.article)", at: value)
        }
        var facts = LaunchFacts()
        var seen: Set<LaunchFact> = []
        for member in value.members {
            let name = member.key == "rooted" ? LaunchFact.jailbroken.rawValue : member.key
            guard let fact = LaunchFact(rawValue: name) else {
                throw error(
                    "unknown fact '\(member.key)' (known: \(LaunchFact.allCases.map(\.rawValue).joined(separator: ", ")), rooted)",
                    at: member.name)
            }
            guard seen.insert(fact).inserted else {
                throw error(
                    "the fact '\(fact)' is given more than once (rooted and jailbroken are one fact)", at: member.name)
            }
            let item = member.value
            if item.isNull { continue }
            switch fact {
            case .osVersion: facts.osVersion = try version(item, fact)
            case .appVersion: facts.appVersion = try version(item, fact)
            case .sdkVersion: facts.sdkVersion = try version(item, fact)
            case .patchVersion:
                let patch = try version(item, fact)
                guard patch.isPatchDate else {
                    throw error(
                        "\"patchVersion\" must be a security patch level as a date, YYYY-MM-DD, such as \"2026-09-01\"",
                        at: item)
                }
                facts.patchVersion = patch
            case .companyPortalVersion: facts.companyPortalVersion = try version(item, fact)
            case .deviceModel: facts.deviceModel = try text(item, fact)
            case .deviceManufacturer: facts.deviceManufacturer = try text(item, fact)
            case .threatLevel:
                let level = try choice(item, fact, DeviceThreatLevel.self)
                guard level != .notConfigured else {
                    throw error("\"threatLevel\" must be one of: secured, low, medium, high", at: item)
                }
                facts.threatLevel = level
            case .lastCheckIn: facts.lastCheckIn = try timestamp(item, field: "lastCheckIn")
            case .accountState: facts.accountState = try choice(item, fact, AccountState.self)
            case .pinFailures:
                guard let count = item.int, count >= 0 else {
                    throw error("\"pinFailures\" must be a whole number, zero or more", at: item)
                }
                facts.pinFailures = count
            case .jailbroken: facts.jailbroken = try flag(item, member.key)
            case .clockedOut: facts.clockedOut = try flag(item, member.key)
            case .deviceLockSet: facts.deviceLockSet = try flag(item, member.key)
            case .appsVerified: facts.appsVerified = try flag(item, member.key)
            case .knoxAttested: facts.knoxAttested = try flag(item, member.key)
            case .passcodeComplexity: facts.passcodeComplexity = try choice(item, fact, PasscodeComplexity.self)
            case .deviceIntegrity: facts.deviceIntegrity = try choice(item, fact, DeviceIntegrity.self)
            case .integrityEvaluationType:
                facts.integrityEvaluationType = try choice(item, fact, IntegrityEvaluationType.self)
            case .companyPortalVersionAgeDays:
                guard let days = item.int, days >= 0 else {
                    throw error(
                        "\"companyPortalVersionAgeDays\" must be a whole number of days, zero or more", at: item)
                }
                facts.companyPortalVersionAgeDays = days
            }
        }
        return facts
    }

    private func version(_ value: JSONValue, _ fact: LaunchFact) throws(QueryError) -> SoftwareVersion {
        guard let text = value.string, let version = SoftwareVersion(text) else {
            throw error(
                "\"\(fact)\" must be a version string of one to \(SoftwareVersion.maximumComponents) numbers of at most 9 digits, separated by dots, such as \"17.4.1\"\(fact == .patchVersion ? " (a patch level as \"2026-09-01\")" : "")",
                at: value)
        }
        return version
    }

    private func text(_ value: JSONValue, _ fact: LaunchFact) throws(QueryError) -> String {
        guard let text = value.string, !text.isEmpty, text.utf8.count <= 256 else {
            throw error("\"\(fact)\" must be a non-empty string of at most 256 bytes", at: value)
        }
        return text
    }

    private func flag(_ value: JSONValue, _ name: String) throws(QueryError) -> Bool {
        guard let bool = value.bool else { throw error("\"\(name)\" must be true or false", at: value) }
        return bool
    }

    private func choice<E: RawRepresentable<String> & CaseIterable>(
        _ value: JSONValue, _ fact: LaunchFact, _ type: E.Type
    ) throws(QueryError) -> E {
        guard let text = value.string, let known = E(rawValue: text) else {
            let names = E.allCases.map(\.rawValue).filter { $0 != "notConfigured" }
            throw error("\"\(fact)\" must be one of: \(names.joined(separator: ", "))", at: value)
        }
        return known
    }

    func timestamp(_ value: JSONValue, field: String) throws(QueryError) -> Duration {
        guard let text = value.string, let time = RFC3339.durationSinceEpoch(text) else {
            throw error("\"\(field)\" must be an RFC 3339 timestamp such as 2026-11-21T08:00:00Z", at: value)
        }
        return time
    }
}
