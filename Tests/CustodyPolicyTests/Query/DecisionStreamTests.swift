import CustodyPolicy
import Testing

@Suite("The JSON Lines stream")
struct DecisionStreamTests {
    private func stream(strict: Bool = false, format: DecisionStream.Format = .json) -> DecisionStream {
        let snapshot = World.snapshot(
            owner: .with {
                $0.saveAsBlocked = true
                $0.allowedDataStorageLocations = [.oneDriveForBusiness]
                $0.allowedOutboundDataTransferDestinations = .managedApps
                $0.notificationRestriction = .blockOrganizationalData
                $0.periodOfflineBeforeAccessCheck = PolicyDuration(seconds: 3_600)
            }, ownerApps: ["com.microsoft.office.word"])
        return DecisionStream(
            snapshot: snapshot,
            options: DecisionStream.Options(strictAccounts: strict, format: format, currentTime: { .seconds(7_200) }))
    }

    private func answer(_ lines: [String], stream: DecisionStream? = nil) -> [String] {
        var stream = stream ?? self.stream()
        let output = stream.answer(lines: Array(lines.joined(separator: "\n").utf8))
        return String(decoding: output, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
            .dropLast().map(String.init)
    }

    /// What the installation holds for a launch query's missing facts: read, absent, or not
    /// readable. Microsoft: "Offline grace period … the number of minutes that MAM apps can run
    /// offline … After the period expires, the app will block access" — a last check-in the
    /// state cannot read is no evidence of one, so the line is an error, not a decision.
    static let recordedCases: [(name: String, recorded: RecordedFacts, expected: String)] = [
        ("a recent check-in read from the state", .checkedIn(seconds: 7_000), #""outcome":"allow""#),
        ("nothing recorded", .nothing, #""outcome":"block""#),
        (
            "the state cannot be read", .unreadable,
            #"{"error":"line 1, the last check-in cannot be read","line":1,"code":"state"}"#
        ),
    ]

    enum RecordedFacts: Sendable {
        case checkedIn(seconds: Int64)
        case nothing
        case unreadable
    }

    @Test(
        "a launch's missing facts come from what the installation recorded; a state that cannot be read makes the line an error with code state",
        arguments: recordedCases)
    func recordedFacts(_ example: (name: String, recorded: RecordedFacts, expected: String)) {
        var stream = stream()
        let recorded = example.recorded
        stream.options.recordedFacts = { _ throws(QueryError) in
            switch recorded {
            case .checkedIn(let seconds):
                var facts = LaunchFacts()
                facts.lastCheckIn = .seconds(seconds)
                return facts
            case .nothing:
                return nil
            case .unreadable:
                var error = QueryError(message: "the last check-in cannot be read", column: 1)
                error.isStateFailure = true
                throw error
            }
        }
        let output = answer([#"{"action":"launch","account":"owner@contoso.com","facts":{}}"#], stream: stream)
        #expect(output.count == 1 && output[0].contains(example.expected), "\(example.name): \(output)")
    }

    @Test("answers one JSON object per line, in order, with the contract's members")
    func answers() {
        let output = answer([
            #"{"action":"saveTo","owner":"owner@contoso.com","location":"box","locationAccount":"owner@contoso.com"}"#,
            #"{"action":"saveTo","owner":"owner@contoso.com","location":"oneDriveForBusiness","locationAccount":"owner@contoso.com"}"#,
            #"{"action":"notifications","account":"owner@contoso.com"}"#,
            #"{"action":"encryptionRequired","account":"outsider@fabrikam.com"}"#,
            #"{"action":"offlineAccess","account":"owner@contoso.com","lastCheckIn":"1970-01-01T00:00:00Z"}"#,
            #"{"action":"share","owner":"owner@contoso.com","targets":["com.microsoft.office.word","com.getdropbox.Dropbox"]}"#,
        ])
        #expect(
            output == [
                #"{"action":"saveTo","allowed":false,"reason":"saveAsBlocked is true and box is not in allowedDataStorageLocations [oneDriveForBusiness] (from \"Owner policy\")","setting":"allowedDataStorageLocations","policies":["Owner policy"]}"#,
                #"{"action":"saveTo","allowed":true,"reason":"saveAsBlocked is true, but oneDriveForBusiness is in allowedDataStorageLocations [oneDriveForBusiness] and the location belongs to the owner's account (from \"Owner policy\")","setting":"allowedDataStorageLocations","policies":["Owner policy"]}"#,
                #"{"action":"notifications","allowed":false,"restriction":"blockOrganizationalData","reason":"notificationRestriction is blockOrganizationalData: notifications may show no org data (from \"Owner policy\")","setting":"notificationRestriction","policies":["Owner policy"]}"#,
                #"{"action":"encryptionRequired","allowed":false,"required":false,"reason":"the account is not managed: no protection policy applies to it","setting":null,"policies":[]}"#,
                #"{"action":"offlineAccess","allowed":false,"state":"accessBlocked","reason":"offline for PT2H, at least periodOfflineBeforeAccessCheck PT1H: access is blocked until the account checks in (from \"Owner policy\")","setting":"periodOfflineBeforeAccessCheck","policies":["Owner policy"]}"#,
                #"{"action":"share","allowed":false,"reason":"1 of 2 targets allowed","targets":[{"id":"com.microsoft.office.word","allowed":true,"reason":"allowedOutboundDataTransferDestinations is managedApps and com.microsoft.office.word is a policy-managed app (from \"Owner policy\")","setting":"allowedOutboundDataTransferDestinations","policies":["Owner policy"]},{"id":"com.getdropbox.Dropbox","allowed":false,"reason":"allowedOutboundDataTransferDestinations is managedApps and com.getdropbox.Dropbox is neither a policy-managed app nor exempted (from \"Owner policy\")","setting":"allowedOutboundDataTransferDestinations","policies":["Owner policy"]}]}"#,
            ])
    }

    @Test("a bad line gets an error line and the lines after it are still answered")
    func badLines() {
        var stream = stream()
        let lines = [
            #"{"action":"print","account":"owner@contoso.com"}"#,
            #"{"action":"print","account":"owner@contoso.com""#,
            "",
            #"{"action":"fly","account":"owner@contoso.com"}"#,
            "   ",
            #"{"action":"print","account":"owner@contoso.com"} x"#,
            #"{"action":"backup","account":"owner@contoso.com"}"#,
        ]
        let output = answer(lines, stream: stream)
        #expect(output.count == lines.count)
        #expect(output[0].hasPrefix(#"{"action":"print","allowed":true"#))
        #expect(
            output[1]
                == #"{"error":"line 2, column 1: object is not closed: expected '}' before the end of the input","line":2,"code":"invalid-query"}"#
        )
        #expect(
            output[2]
                == #"{"error":"line 3, column 1: empty line: expected a JSON query object","line":3,"code":"invalid-query"}"#
        )
        #expect(output[3].hasPrefix(#"{"error":"line 4, column 11: unknown action 'fly'"#))
        #expect(output[4].hasPrefix(#"{"error":"line 5, column 1: empty line"#))
        #expect(
            output[5]
                == #"{"error":"line 6, column 50: unexpected 'x' after the end of the JSON value","line":6,"code":"invalid-query"}"#
        )
        #expect(output[6].hasPrefix(#"{"action":"backup","allowed":true"#))
        _ = stream.answer(lines: Array(lines.joined(separator: "\n").utf8))
        #expect(stream.lineNumber == 7)
        #expect(stream.errorCount == 5)
    }

    @Test("carriage returns are ignored and the last line needs no line break")
    func lineEndings() {
        var stream = stream()
        let output = stream.answer(
            lines: Array("{\"action\":\"print\",\"account\":null}\r\n{\"action\":\"print\",\"account\":null}".utf8))
        #expect(String(decoding: output, as: UTF8.self).split(separator: "\n").count == 2)
        #expect(stream.errorCount == 0)
    }

    @Test("strict accounts turn accounts outside the tenant into errors")
    func strictAccounts() {
        let line = #"{"action":"saveTo","owner":"outsider@fabrikam.com","location":"box","locationAccount":null}"#
        #expect(answer([line]).first?.hasPrefix(#"{"action":"saveTo","allowed":true"#) == true)
        let strict = answer([line, #"{"action":"print","account":"owner@contoso.com"}"#], stream: stream(strict: true))
        #expect(strict[0].contains("unknown account 'outsider@fabrikam.com' (the data's owner): not in the tenant"))
        #expect(strict[1].hasPrefix(#"{"action":"print""#))
    }

    @Test("the text format writes one line per answer for people")
    func textFormat() {
        let output = answer(
            [
                #"{"action":"print","account":"owner@contoso.com"}"#,
                #"{"action":"encryptionRequired","account":"owner@contoso.com"}"#, "nope",
            ],
            stream: stream(format: .text))
        #expect(
            output == [
                "ALLOW    print: account owner@contoso.com — printBlocked is false (Intune default: no applicable policy configures printBlocked)",
                "REQUIRED encryptionRequired: account owner@contoso.com — appDataEncryptionType is whenDeviceLocked: encryption of the account's data is required (Intune default: no applicable policy configures appDataEncryptionType)",
                "ERROR    line 3, column 1: expected a value, found an unquoted word (strings need double quotes)",
            ])
    }

    @Test("cached reasons stay right when the same finding repeats across policies")
    func cache() {
        let lines = (0..<50).flatMap { _ in
            [#"{"action":"print","account":"owner@contoso.com"}"#, #"{"action":"print","account":"peer@contoso.com"}"#]
        }
        let output = answer(lines)
        #expect(
            output.enumerated().allSatisfy { index, line in
                line.contains(index % 2 == 0 ? #""policies":[]"# : #""policies":[]"#)
                    && line.contains("printBlocked is false")
            })
        let owner = World.snapshot(owner: .with { $0.printBlocked = false }, peer: .with { $0.printBlocked = true })
        var stream = DecisionStream(snapshot: owner, options: DecisionStream.Options(currentTime: { .zero }))
        let mixed = String(decoding: stream.answer(lines: Array(lines.joined(separator: "\n").utf8)), as: UTF8.self)
            .split(separator: "\n")
        #expect(
            mixed.enumerated().allSatisfy { index, line in
                line.contains(index % 2 == 0 ? #""allowed":true"# : #""allowed":false"#)
                    && line.contains(index % 2 == 0 ? #""policies":["Owner policy"]"# : #""policies":["Peer policy"]"#)
            })
    }
}
