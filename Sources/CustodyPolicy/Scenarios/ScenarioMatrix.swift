/// A scenario matrix: a bundle, an evaluation context and cases, each a `custody decide`
/// query with the result it should have. See docs/matrices.md.
///
/// ```json
/// {"description": "Save to, excluded",
///  "bundle": "bundles/save-excluded",
///  "context": {"platform": "ios", "app": "com.microsoft.office.word"},
///  "cases": [{"name": "OneDrive, own account", "action": "saveTo", "owner": "user1@contoso.com",
///             "location": "oneDriveForBusiness", "locationAccount": "user1@contoso.com",
///             "expect": "allow", "reason": "is in allowedDataStorageLocations"}]}
/// ```
public struct ScenarioMatrix: Sendable {
    /// The matrix file.
    public var file: String
    public var description: String?
    /// The bundle directory, resolved against the matrix file's directory.
    public var bundlePath: String
    /// Where the matrix names its bundle.
    public var bundleLocation: DocumentLocation
    public var context: EvaluationContext
    public var cases: [ScenarioCase]

    /// Creates a matrix.
    public init(
        file: String, description: String?, bundlePath: String, bundleLocation: DocumentLocation? = nil,
        context: EvaluationContext,
        cases: [ScenarioCase]
    ) {
        self.file = file
        self.description = description
        self.bundlePath = bundlePath
        self.bundleLocation = bundleLocation ?? DocumentLocation(file: file, line: 1, column: 1)
        self.context = context
        self.cases = cases
    }
}

/// What a case's answer should be.
public struct ScenarioExpectation: Sendable, Hashable {
    /// Whether the answer should allow (for `encryptionRequired`: require).
    public var expectAllowed: Bool
    /// Text the reason should contain.
    public var reasonContains: String?
    /// For `notifications`: the restriction the answer should carry.
    public var restriction: NotificationRestriction?
    /// For `offlineAccess`: the state the answer should carry.
    public var state: OfflineState?

    public init(
        expectAllowed: Bool, reasonContains: String? = nil, restriction: NotificationRestriction? = nil,
        state: OfflineState? = nil
    ) {
        self.expectAllowed = expectAllowed
        self.reasonContains = reasonContains
        self.restriction = restriction
        self.state = state
    }

    /// `allow`/`block`, and whatever else is expected, for reports.
    public var summary: String {
        var text = expectAllowed ? "allow" : "block"
        if let restriction { text += ", restriction \(restriction.rawValue)" }
        if let state { text += ", state \(state.rawValue)" }
        if let reasonContains { text += ", reason containing \"\(reasonContains)\"" }
        return text
    }
}

/// One case of a matrix: a query and what its answer should be.
public struct ScenarioCase: Sendable {
    /// A label for reports; defaults to the query's summary (a grid's names its axis values).
    public var name: String
    public var query: DecisionQuery
    public var expectation: ScenarioExpectation
    /// Where the case (or the grid rule or table cell that made it) is written.
    public var location: DocumentLocation

    public var expectAllowed: Bool { expectation.expectAllowed }

    /// Creates a case.
    public init(name: String, query: DecisionQuery, expectation: ScenarioExpectation, location: DocumentLocation) {
        self.name = name
        self.query = query
        self.expectation = expectation
        self.location = location
    }
}

/// A case's outcome.
public struct ScenarioResult: Sendable {
    public let scenario: ScenarioCase
    public let answer: DecisionAnswer
    /// What did not match; empty when the case passed.
    public let mismatches: [String]

    public var passed: Bool { mismatches.isEmpty }
}

extension ScenarioMatrix {
    /// Runs every case against `snapshot` (which should be the matrix's bundle in its context).
    public func run(against snapshot: PolicySnapshot) -> [ScenarioResult] {
        cases.map { scenario in
            let answer = snapshot.answer(scenario.query)
            var mismatches: [String] = []
            let expectation = scenario.expectation
            if answer.isAllowed != expectation.expectAllowed {
                mismatches.append(
                    "expected \(expectation.expectAllowed ? "allow" : "block"), got \(answer.isAllowed ? "allow" : "block")"
                )
            }
            if let expected = expectation.reasonContains, !answer.reason.contains(expected) {
                mismatches.append("reason does not contain \"\(expected)\"")
            }
            if case .single(let decision) = answer {
                if let expected = expectation.restriction, decision.notificationRestriction != expected {
                    mismatches.append(
                        "expected restriction \(expected), got \(decision.notificationRestriction?.rawValue ?? "none")")
                }
                if let expected = expectation.state, decision.offlineState != expected {
                    mismatches.append("expected state \(expected), got \(decision.offlineState?.rawValue ?? "none")")
                }
            }
            return ScenarioResult(scenario: scenario, answer: answer, mismatches: mismatches)
        }
    }
}
