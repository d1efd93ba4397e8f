import CustodyPolicy
import Foundation
import Testing

@Suite("Queries: the custody decide contract")
struct DecisionQueryTests {
    /// 2026-11-21T08:00:00Z.
    static let now = Duration.seconds(1_795_248_000)

    private func parse(_ line: String) throws(QueryError) -> DecisionQuery {
        let document: JSONDocument
        do {
            document = try JSONDocument(parsing: Array(line.utf8))
        } catch {
            throw QueryError(message: error.message, column: error.offset + 1)
        }
        return try DecisionQuery(json: document.root, currentTime: { Self.now })
    }

    static let valid: [(String, DecisionQuery)] = [
        (
            #"{"action":"saveTo","owner":"a@contoso.com","location":"box","locationAccount":null}"#,
            .saveTo(owner: id("a@contoso.com"), location: .box, locationAccount: nil)
        ),
        (
            #"{"action":"saveTo","owner":"a@contoso.com","location":"iManage"}"#,
            .saveTo(owner: id("a@contoso.com"), location: .iManage, locationAccount: nil)
        ),
        (
            #"{"location":"egnyte","locationAccount":{"oid":"o1","upn":"B@contoso.com"},"owner":"","action":"saveTo"}"#,
            .saveTo(owner: nil, location: .egnyte, locationAccount: AccountID(oid: "o1", upn: "B@contoso.com"))
        ),
        (
            #"{"action":"openFrom","receiver":"0a000000-0000-4000-8000-000000000001","location":"photos","locationAccount":"a@contoso.com"}"#,
            .openFrom(
                receiver: AccountID(oid: "0a000000-0000-4000-8000-000000000001"), location: .photos,
                locationAccount: id("a@contoso.com"))
        ),
        (
            #"{"action":"share","owner":"a@contoso.com","targets":["com.microsoft.office.word","skype"]}"#,
            .share(owner: id("a@contoso.com"), targets: ["com.microsoft.office.word", "skype"])
        ),
        // As many targets as a share may name.
        (
            #"{"action":"share","owner":"a@contoso.com","targets":["#
                + Array(repeating: #""t""#, count: DecisionQuery.maximumTargets).joined(separator: ",") + "]}",
            .share(owner: id("a@contoso.com"), targets: Array(repeating: "t", count: DecisionQuery.maximumTargets))
        ),
        (
            #"{"action":"receive","receiver":"a@contoso.com","dataOwner":null}"#,
            .receive(receiver: id("a@contoso.com"), dataOwner: nil)
        ),
        (#"{"action":"receive","receiver":"a@contoso.com"}"#, .receive(receiver: id("a@contoso.com"), dataOwner: nil)),
        (
            #"{"action":"copyOut","owner":"a@contoso.com","destinationManaged":false,"length":12}"#,
            .copyOut(owner: id("a@contoso.com"), destinationManaged: false, length: 12)
        ),
        (
            #"{"action":"copyOut","owner":"a@contoso.com","destinationManaged":true}"#,
            .copyOut(owner: id("a@contoso.com"), destinationManaged: true, length: nil)
        ),
        (
            #"{"action":"pasteIn","owner":"a@contoso.com","sourceManaged":true}"#,
            .pasteIn(owner: id("a@contoso.com"), sourceManaged: true)
        ),
        (#"{"action":"print","account":"a@contoso.com"}"#, .print(account: id("a@contoso.com"))),
        (#"{"action":"backup","account":"a@contoso.com"}"#, .backup(account: id("a@contoso.com"))),
        (#"{"action":"screenCapture","account":"a@contoso.com"}"#, .screenCapture(account: id("a@contoso.com"))),
        (
            #"{"action":"encryptionRequired","account":"a@contoso.com"}"#,
            .encryptionRequired(account: id("a@contoso.com"))
        ),
        (#"{"action":"notifications","account":"a@contoso.com"}"#, .notifications(account: id("a@contoso.com"))),
        (#"{"action":"accountAllowed","account":null}"#, .accountAllowed(account: nil)),
        (
            #"{"action":"offlineAccess","account":"a@contoso.com","offlineFor":"PT13H"}"#,
            .offlineAccess(account: id("a@contoso.com"), offlineFor: .seconds(13 * 3_600))
        ),
        (
            #"{"action":"offlineAccess","account":"a@contoso.com","lastCheckIn":"2026-11-20T08:00:00Z","now":"2026-11-21T09:30:00+01:30"}"#,
            .offlineAccess(account: id("a@contoso.com"), offlineFor: .seconds(86_400))
        ),
        (
            #"{"action":"offlineAccess","account":"a@contoso.com","lastCheckIn":"2026-11-21T07:59:30.5Z"}"#,
            .offlineAccess(account: id("a@contoso.com"), offlineFor: .milliseconds(29_500))
        ),
        (#"{"action":"appSharing","account":"a@contoso.com"}"#, .appSharing(account: id("a@contoso.com"))),
        (#"{"action":"appIntents","account":"a@contoso.com"}"#, .appIntents(account: id("a@contoso.com"))),
        (#"{"action":"contactSync","account":"a@contoso.com"}"#, .contactSync(account: id("a@contoso.com"))),
        // A view of several accounts.
        (
            #"{"action":"print","accounts":["a@contoso.com","b@contoso.com",null]}"#,
            .view(.print(account: nil), accounts: [id("a@contoso.com"), id("b@contoso.com"), nil])
        ),
        (
            #"{"action":"copyOut","owners":["a@contoso.com"],"destinationManaged":false,"length":3}"#,
            .view(.copyOut(owner: nil, destinationManaged: false, length: 3), accounts: [id("a@contoso.com")])
        ),
        (
            #"{"action":"share","owners":["a@contoso.com","b@contoso.com"],"targets":["skype"]}"#,
            .view(.share(owner: nil, targets: ["skype"]), accounts: [id("a@contoso.com"), id("b@contoso.com")])
        ),
        (
            #"{"action":"notifications","accounts":[{"upn":"a@contoso.com"}]}"#,
            .view(.notifications(account: nil), accounts: [id("a@contoso.com")])
        ),
        (#"{"action":"writingTools","account":"a@contoso.com"}"#, .writingTools(account: id("a@contoso.com"))),
        (
            #"{"action":"genmoji","accounts":["a@contoso.com"]}"#,
            .view(.genmoji(account: nil), accounts: [id("a@contoso.com")])
        ),
        (#"{"action":"widgetContentSync","account":null}"#, .widgetContentSync(account: nil)),
        (
            #"{"action":"thirdPartyKeyboard","account":"a@contoso.com","keyboard":"com.swiftkey"}"#,
            .thirdPartyKeyboard(account: id("a@contoso.com"), keyboard: "com.swiftkey")
        ),
        (
            #"{"action":"openURL","url":"tel:+15550100","account":"a@contoso.com"}"#,
            .openURL(account: id("a@contoso.com"), url: "tel:+15550100")
        ),
        (
            #"{"action":"launch","account":"a@contoso.com","facts":{"osVersion":"17.4","rooted":false,"threatLevel":null},"missingFacts":"ignore","now":"1970-01-01T00:01:40Z"}"#,
            .launch(
                account: id("a@contoso.com"),
                facts: {
                    var facts = LaunchFacts()
                    facts.osVersion = SoftwareVersion("17.4")
                    facts.jailbroken = false
                    return facts
                }(), now: .seconds(100), missingFacts: .ignore)
        ),
    ]

    @Test("reads every action", arguments: valid)
    func reads(line: String, expected: DecisionQuery) throws {
        #expect(try parse(line) == expected)
    }

    /// Every action's query, and queries whose first account is missing.
    static let subjects: [DecisionQuery] =
        valid.map(\.1) + [
            .saveTo(owner: nil, location: .box, locationAccount: id("b@contoso.com")),
            .openFrom(receiver: nil, location: .box, locationAccount: id("b@contoso.com")),
            .receive(receiver: nil, dataOwner: id("b@contoso.com")),
            .receive(receiver: nil, dataOwner: nil),
            .view(.print(account: nil), accounts: [nil, id("b@contoso.com"), id("a@contoso.com")]),
            .view(.print(account: nil), accounts: [nil]),
        ]

    @Test("a query's first account is the first of its accounts", arguments: subjects)
    func firstAccount(query: DecisionQuery) {
        #expect(query.firstAccount == query.accounts.first?.account)
    }

    @Test("the actions table covers every decision")
    func everyAction() {
        #expect(Set(Self.valid.map(\.1.action)) == Set(DecisionAction.allCases))
    }

    @Test(
        "bad queries name the problem and its column (the column of `marker`'s first occurrence)",
        arguments: [
            (#"[1]"#, #"["#, "a query must be a JSON object, found an array"),
            (#"{"owner":"a"}"#, #"{"#, "the query has no \"action\""),
            (#"{"action":"saveto","owner":"a"}"#, #""save"#, "unknown action 'saveto' (one of: saveTo, openFrom,"),
            (#"{"action":7}"#, #"7}"#, "unknown action a number"),
            (
                #"{"action":"saveTo","owner":"a","location":"box","locationAcount":null}"#, #""locationAcount""#,
                "unknown field 'locationAcount' for action saveTo (it takes: owner, location, locationAccount)"
            ),
            (#"{"action":"saveTo","owner":"a"}"#, #"{"#, "action saveTo needs the field 'location'"),
            (#"{"action":"openURL","url":"tel:1\u0000https://x"}"#, #""tel"#, "\"url\" holds a control, format"),
            (#"{"action":"openURL","url":"https://x\u2028y"}"#, #""https"#, "\"url\" holds a control, format"),
            (#"{"action":"openURL","url":"https://x\u0085y"}"#, #""https"#, "\"url\" holds a control, format"),
            (#"{"action":"openURL","url":"https://x\u200By"}"#, #""https"#, "\"url\" holds a control, format"),
            (#"{"action":"openURL","url":"contoso.com"}"#, #""contoso"#, "\"url\" must start with a scheme"),
            (
                #"{"action":"saveTo","owner":"a","location":"dropBox"}"#, #""dropBox""#,
                "unknown location 'dropBox' (one of: other, oneDriveForBusiness,"
            ),
            (
                #"{"action":"openFrom","receiver":"a","location":"cameraRoll"}"#, #""cameraRoll""#,
                "unknown location 'cameraRoll' (one of: other, oneDriveForBusiness, sharePoint, camera,"
            ),
            (#"{"action":"saveTo","owner":5,"location":"box"}"#, #"5,"#, "an account must be a UPN or OID string"),
            (#"{"action":"saveTo","owner":{"id":"x"},"location":"box"}"#, #""id""#, "unknown field 'id' of an account"),
            (
                #"{"action":"print","account":"a","account":"b"}"#, #""account":"b""#,
                "field 'account' appears more than once"
            ),
            (#"{"action":"share","owner":"a","targets":[]}"#, #"[]"#, "\"targets\" must name at least one app"),
            (
                #"{"action":"share","owner":"a","targets":["#
                    + Array(repeating: #""t""#, count: 1_000).joined(separator: ",") + #","overflow"]}"#,
                #""overflow""#, "\"targets\" may name at most 1000 apps"
            ),
            (#"{"action":"share","owner":"a","targets":["",1]}"#, #""",1"#, "each target must be a non-empty app id"),
            (
                #"{"action":"copyOut","owner":"a","destinationManaged":"yes"}"#, #""yes""#,
                "expected true or false, found a string"
            ),
            (
                #"{"action":"copyOut","owner":"a","destinationManaged":true,"length":-1}"#, #"-1"#,
                "\"length\" must be a whole number"
            ),
            (#"{"action":"offlineAccess","account":"a"}"#, #"{"#, "needs \"offlineFor\" or \"lastCheckIn\""),
            (
                #"{"action":"offlineAccess","account":"a","offlineFor":"13h"}"#, #""13h""#,
                "\"offlineFor\" is not a duration"
            ),
            (
                #"{"action":"offlineAccess","account":"a","offlineFor":"PT1H","now":"2026-01-01T00:00:00Z"}"#,
                #""PT1H""#, "give either \"offlineFor\" or \"lastCheckIn\""
            ),
            (
                #"{"action":"offlineAccess","account":"a","lastCheckIn":"2026-02-30T00:00:00Z"}"#, #""2026"#,
                "must be an RFC 3339 timestamp"
            ),
            (
                #"{"action":"offlineAccess","account":"a","lastCheckIn":"2026-11-21 08:00"}"#, #""2026"#,
                "must be an RFC 3339 timestamp"
            ),
            (
                #"{"action":"print"}"#, #"{"#,
                "action print needs the field 'account' (or 'accounts' for a view of several accounts)"
            ),
            (
                #"{"action":"print","account":"a","accounts":["b"]}"#, #"["#,
                "give either 'account' or 'accounts', not both"
            ),
            (#"{"action":"print","accounts":[]}"#, #"[]"#, "\"accounts\" must name at least one account"),
            (#"{"action":"print","accounts":"a"}"#, #""a""#, "\"accounts\" must be an array of accounts"),
            (#"{"action":"print","accounts":[5]}"#, #"5]"#, "an account must be a UPN or OID string"),
            (
                #"{"action":"copyOut","destinationManaged":true}"#, #"{"#,
                "action copyOut needs the field 'owner' (or 'owners'"
            ),
            (
                #"{"action":"saveTo","owners":["a"],"location":"box"}"#, #""owners""#,
                "unknown field 'owners' for action saveTo"
            ),
            (
                #"{"action":"accountAllowed","accounts":["a"]}"#, #""accounts""#,
                "unknown field 'accounts' for action accountAllowed"
            ),
            // Issue 13: a second action is refused like any other duplicate (a proxy that kept
            // the last one would see another query).
            (
                #"{"action":"print","account":"a","action":"share"}"#, #""action":"share""#,
                "field 'action' appears more than once"
            ),
            (
                #"{"action":"saveTo","action":"saveTo","owner":"a","location":"box"}"#, #""action":"saveTo","owner""#,
                "field 'action' appears more than once"
            ),
            // Identifiers: no control characters, at most 1,020 bytes.
            (
                #"{"action":"print","account":"al\u001b[2Jice@contoso.com"}"#, #""al"#,
                "holds the control character U+001B at character 3"
            ),
            (
                #"{"action":"print","account":{"upn":"a\u202e@contoso.com"}}"#, #"{"upn""#,
                "the account's upn holds the control character U+202E"
            ),
            (
                #"{"action":"print","account":{"oid":"x\u0000"}}"#, #"{"oid""#,
                "the account's oid holds the control character U+0000"
            ),
            (
                "{\"action\":\"print\",\"account\":\"" + String(repeating: "a", count: 1_021) + "\"}", #""aaa"#,
                "is 1021 bytes long; at most 1020 are allowed"
            ),
        ])
    func errors(line: String, marker: String, message: String) throws {
        let offset = try #require(line.range(of: marker)).lowerBound.utf16Offset(in: line)
        #expect {
            try parse(line)
        } throws: { error in
            guard let error = error as? QueryError else { return false }
            return error.column == offset + 1 && error.message.contains(message)
        }
    }

    @Test("a matrix case may carry its own members beside the query's")
    func extraMembers() throws {
        let document = try JSONDocument(
            parsing: Array(#"{"action":"print","account":"a@c.com","expect":"block"}"#.utf8))
        #expect(throws: QueryError.self) { try DecisionQuery(json: document.root, currentTime: { .zero }) }
        #expect(
            try DecisionQuery(json: document.root, extraMembers: ["expect"], currentTime: { .zero })
                == .print(account: id("a@c.com")))
    }

    @Test(
        "RFC 3339 timestamps",
        arguments: [
            ("1970-01-01T00:00:00Z", 0.0 as Double?), ("2000-02-29T12:00:00Z", 951_825_600),
            ("2026-11-21T08:00:00z", 1_795_248_000),
            ("2026-11-21T10:00:00+02:00", 1_795_248_000), ("2026-11-21t08:00:00.25Z", 1_795_248_000.25),
            ("1969-12-31T23:59:59Z", -1),
            ("2026-11-21T08:00:00", nil), ("2026-13-01T00:00:00Z", nil), ("2026-11-21T24:00:00Z", nil),
            ("2026-11-21T08:00:00Zjunk", nil),
            ("2025-02-29T00:00:00Z", nil),
        ])
    func timestamps(text: String, seconds: Double?) throws {
        let line = #"{"action":"offlineAccess","account":"a","lastCheckIn":"\#(text)","now":"1970-01-01T00:00:00Z"}"#
        if let seconds {
            let query = try parse(line)
            guard case .offlineAccess(_, let offlineFor) = query else { Issue.record("wrong query"); return }
            let (whole, fraction) = (Duration.zero - offlineFor).components
            #expect(Double(whole) + Double(fraction) / 1e18 == seconds)
        } else {
            #expect(throws: QueryError.self) { try parse(line) }
        }
    }
}

@Suite("Queries: escaped member names")
struct EscapedQueryTests {
    @Test("member names with escapes read like any other")
    func escapedNames() throws {
        let document = try JSONDocument(parsing: Array(#"{"\u0061ction":"print","acc\u006funt":"a@contoso.com"}"#.utf8))
        #expect(try DecisionQuery(json: document.root, currentTime: { .zero }) == .print(account: id("a@contoso.com")))
    }
}
