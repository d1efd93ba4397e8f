/// The answer to a conditional-launch question: the outcome and every check that had a say.
public struct LaunchDecision: Sendable, Hashable {
    /// One check that failed, or could not be made for want of a fact.
    public struct Check: Sendable, Hashable {
        /// The Graph property that set the threshold (`minimumWipeOsVersion`,
        /// `periodOfflineBeforeAccessCheck`, ...).
        public let setting: String
        /// The threshold as the policy sets it.
        public let value: String
        /// What passes, in words (`osVersion at least 16.1`).
        public let requirement: String
        /// The fact compared.
        public let fact: LaunchFact
        /// The fact's reported value; nil when the fact is missing.
        public let reported: String?
        /// What the check's action makes of a failure.
        public let outcome: LaunchOutcome
        /// The policy that configures the check; nil for Intune's default (offline grace no
        /// applicable policy configures).
        public let policy: PolicyReference?
        /// Whether the check counts toward the outcome (a missing fact does not when the caller
        /// ignores missing facts).
        public let counts: Bool

        /// Whether the fact the check needs was missing.
        public var isMissing: Bool { reported == nil }
    }

    /// What the app does: a wipe beats a block beats a warn.
    public let outcome: LaunchOutcome
    /// The checks that failed or lacked their fact, most severe first (then in policy order).
    public let checks: [Check]
    /// Why there are no checks: an unmanaged account, or a refusal (an account whose forms
    /// contradict each other; no platform for a bundle of several). Nil for a managed account.
    public let finding: Finding?

    /// The facts a check needed and the query did not give, without repeats.
    public var missingFacts: [LaunchFact] {
        var seen: Set<LaunchFact> = []
        return checks.filter(\.isMissing).map(\.fact).filter { seen.insert($0).inserted }
    }

    /// Whether the app may go on to the account's data (allow, or warn).
    public var isAllowed: Bool { outcome.letsUserIn }

    /// Whether the decision was refused rather than made.
    public var isRefusal: Bool { finding.map { $0.isContradiction || $0.isPlatformRefusal } ?? false }

    /// Whether a wipe rests on facts reported, not on missing ones: only such a wipe is
    /// carried out (`custody checkin --facts` with acting on launch).
    public var wipeIsConfirmed: Bool {
        outcome == .wipe && checks.contains { $0.outcome == .wipe && !$0.isMissing }
    }

    /// Why, in words.
    public var reason: String {
        if let finding { return finding.explanation }
        guard !checks.isEmpty else { return "every conditional-launch check passed" }
        return checks.map { check in
            let source = check.policy.map { " (from '\($0.name)')" } ?? " (Intune default)"
            guard let reported = check.reported else {
                return
                    "\(check.setting) (\(check.requirement)) needs \(check.fact), which was not given: \(check.counts ? "counted as failed" : "ignored"), \(check.outcome)\(source)"
            }
            return "\(check.fact) \(reported) fails \(check.setting) (\(check.requirement)): \(check.outcome)\(source)"
        }.joined(separator: "; ")
    }
}

extension PolicySnapshot {
    /// How far a reported check-in may lie after the time a launch is decided at (clocks
    /// differ) before it is not believed.
    public static let clockSkew = Duration.seconds(300)

    /// May the app open `account`'s data, given what the app and device report?
    ///
    /// Every conditional-launch check of every policy that applies to the account is made (they
    /// are not merged: each policy's own thresholds and actions), plus offline grace as the
    /// merged `periodOfflineBeforeAccessCheck` (block) and `periodOfflineBeforeWipeIsEnforced`
    /// (wipe) set it; a check-in more than `clockSkew` after `now` is not believed and blocks.
    /// The outcome is the most severe action of a failed check: wipe, then block,
    /// then warn, else allow. A check whose fact is missing is reported; with
    /// `MissingFacts.strict` it counts as failed (the strictest the fact could produce). An
    /// unmanaged account is allowed: no policy sets conditions for it.
    ///
    /// - Parameter now: the time since 1970 that offline grace counts to.
    public func launch(
        account: AccountID?, facts: LaunchFacts, now: Duration, missingFacts: MissingFacts = .strict
    ) -> LaunchDecision {
        let party = resolve(account)
        if let refusal = party.refusal(.account) {
            return LaunchDecision(outcome: .block, checks: [], finding: Finding(refusal, nil))
        }
        guard let policy = party.policy else {
            return LaunchDecision(outcome: .allow, checks: [], finding: Finding(.unmanaged(.account), nil))
        }
        var checks: [LaunchDecision.Check] = []
        var outcome = LaunchOutcome.allow
        func record(
            _ setting: String, _ value: String, _ requirement: String, _ fact: LaunchFact, _ reported: String?,
            _ result: LaunchOutcome, _ source: PolicyReference?
        ) {
            let counts = reported != nil || missingFacts == .strict
            if counts, result > outcome { outcome = result }
            checks.append(
                LaunchDecision.Check(
                    setting: setting, value: value, requirement: requirement, fact: fact, reported: reported,
                    outcome: result, policy: source, counts: counts))
        }

        // Offline grace: merged, like the offlineAccess decision, so the two always agree.
        let wipeAfter = policy.periodOfflineBeforeWipeIsEnforced
        let blockAfter = policy.periodOfflineBeforeAccessCheck
        if let checkedIn = facts.lastCheckIn {
            let offline = max(now - checkedIn, .zero)
            let reported = RFC3339.format(checkedIn)
            if checkedIn - now > Self.clockSkew {
                // A check-in later than the time decided at: one of the two clocks is wrong, or
                // the report is. Not believed: access is blocked (never wiped on it).
                record(
                    PolicySetting.periodOfflineBeforeAccessCheck.rawValue, blockAfter.value.description,
                    "lastCheckIn not after \(RFC3339.format(now)) (5 minutes of clock skew allowed)", .lastCheckIn,
                    reported, .block, blockAfter.sources.first)
            } else if offline >= wipeAfter.value.duration {
                record(
                    PolicySetting.periodOfflineBeforeWipeIsEnforced.rawValue, wipeAfter.value.description,
                    "offline less than \(wipeAfter.value)", .lastCheckIn, reported, .wipe, wipeAfter.sources.first)
            } else if offline >= blockAfter.value.duration {
                record(
                    PolicySetting.periodOfflineBeforeAccessCheck.rawValue, blockAfter.value.description,
                    "offline less than \(blockAfter.value)", .lastCheckIn, reported, .block, blockAfter.sources.first)
            }
        } else {
            record(
                PolicySetting.periodOfflineBeforeWipeIsEnforced.rawValue, wipeAfter.value.description,
                "offline less than \(wipeAfter.value)", .lastCheckIn, nil, .wipe, wipeAfter.sources.first)
        }

        for (condition, source) in policy.launchConditions {
            switch condition.fails(facts) {
            case false?: continue
            case true?:
                record(
                    condition.setting, condition.test.threshold, condition.test.requirement, condition.test.fact,
                    facts.text(of: condition.test.fact), condition.action.outcome, source)
            case nil:
                record(
                    condition.setting, condition.test.threshold, condition.test.requirement, condition.test.fact, nil,
                    condition.action.outcome, source)
            }
        }
        if checks.count > 1 {
            // Most severe first; a stable sort keeps policy order among equals.
            let ordered = checks.enumerated().sorted { lhs, rhs in
                lhs.element.outcome != rhs.element.outcome
                    ? lhs.element.outcome > rhs.element.outcome : lhs.offset < rhs.offset
            }
            checks = ordered.map(\.element)
        }
        return LaunchDecision(outcome: outcome, checks: checks, finding: nil)
    }
}
