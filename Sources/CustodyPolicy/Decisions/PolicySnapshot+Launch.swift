/// The answer to a conditional-launch question: the outcome and every check that had a say.
public struct LaunchDecision: Sendable, Hashable {
    /// One check that failed, or could not be made for want of a fact.
    ///
    /// A check holds the effective policy it read and where in it: its setting, threshold and
    /// policy are looked up, and its words rendered, only when asked for, so that making a
    /// decision copies no strings.
    public struct Check: Sendable, Hashable {
        /// What a check compared.
        enum Origin: Sendable, Hashable {
            /// The policy's launch condition at this position of `launchConditions`.
            case condition(Int)
            /// Offline grace: this period setting.
            case offline(PolicySetting)
            /// A check-in later than the time decided at (`now`): not believed.
            case checkInAfter(now: Duration)
        }

        let origin: Origin
        let source: EffectivePolicy
        /// The fact's reported value; nil when a fact the check needs is missing.
        public let reported: String?
        /// The fact the check turned on, when it is not the one it compares: the one missing
        /// (the Android version a passcode-complexity check needs, the manufacturer a Knox
        /// check needs), or the one that failed it (a Knox check on a device Samsung did not
        /// make).
        let decidingFact: LaunchFact?
        /// What the check's action makes of a failure.
        public let outcome: LaunchOutcome
        /// Whether the check counts toward the outcome (a missing fact does not when the caller
        /// ignores missing facts).
        public let counts: Bool

        /// The Graph property that set the threshold (`minimumWipeOsVersion`,
        /// `periodOfflineBeforeAccessCheck`, ...).
        public var setting: String {
            switch origin {
            case .condition(let index): source.launchConditions[index].setting
            case .offline(let setting): setting.rawValue
            case .checkInAfter: PolicySetting.periodOfflineBeforeAccessCheck.rawValue
            }
        }

        /// The threshold as the policy sets it.
        public var value: String {
            switch origin {
            case .condition(let index): source.launchConditions[index].test.threshold
            case .offline, .checkInAfter: period.description
            }
        }

        /// What passes, in words (`osVersion at least 16.1`).
        public var requirement: String {
            switch origin {
            case .condition(let index): source.launchConditions[index].test.requirement
            case .offline: "offline less than \(period)"
            case .checkInAfter(let now):
                "lastCheckIn not after \(RFC3339.format(now)) (5 minutes of clock skew allowed)"
            }
        }

        /// The fact compared, or for a check that could not be made, the fact it lacked.
        public var fact: LaunchFact {
            if let decidingFact { return decidingFact }
            if case .condition(let index) = origin { return source.launchConditions[index].test.fact }
            return .lastCheckIn
        }

        /// Where the check stands among checks of one severity: the MAM FAQ's order, "an Intune
        /// App SDK version requirement would take precedence, and then an app version
        /// requirement, followed by the iOS/iPadOS operating system version requirement" (iOS),
        /// and "an app version requirement would take precedence, followed by Android operating
        /// system version requirement and Android patch version requirement" (Android); every
        /// other check after them, in policy order.
        var precedence: Int {
            guard case .condition(let index) = origin else { return 4 }
            switch source.launchConditions[index].test {
            case .minimumVersion(let fact, _, _), .maximumVersion(let fact, _):
                switch fact {
                case .sdkVersion: return 0
                case .appVersion: return 1
                case .osVersion: return 2
                case .patchVersion: return 3
                default: return 4
                }
            default: return 4
            }
        }

        /// The policy that configures the check; nil for Intune's default (offline grace no
        /// applicable policy configures) and for a number the policies disagree on (the
        /// recommended value applies, which no policy set).
        public var policy: PolicyReference? {
            if disagreement != nil { return nil }
            switch origin {
            case .condition(let index): return source.policies[source.launchSources[index]]
            case .offline(let setting): return source.setting(setting).sources.first
            case .checkInAfter: return source.periodOfflineBeforeAccessCheck.sources.first
            }
        }

        /// For a threshold the applying policies disagree on, who set what (`'A' 3, 'B' 10`).
        public var disagreement: String? {
            switch origin {
            case .condition(let index): source.launchDisagreements[index]
            case .offline(let setting): source.setting(setting).disagreement
            case .checkInAfter: source.setting(.periodOfflineBeforeAccessCheck).disagreement
            }
        }

        /// Where the threshold came from, in words: `from 'A'`, `Intune default`, or
        /// `recommended value; policies disagree: 'A' 3, 'B' 10`.
        public var attribution: String {
            if let disagreement { return "recommended value; policies disagree: \(disagreement)" }
            return policy.map { "from '\($0.name)'" } ?? "Intune default"
        }

        /// Whether the fact the check needs was missing.
        public var isMissing: Bool { reported == nil }

        /// The offline period an offline check compared with.
        private var period: PolicyDuration {
            if case .offline(.periodOfflineBeforeWipeIsEnforced) = origin {
                return source.periodOfflineBeforeWipeIsEnforced.value
            }
            return source.periodOfflineBeforeAccessCheck.value
        }

        public static func == (lhs: Check, rhs: Check) -> Bool {
            lhs.origin == rhs.origin && lhs.source === rhs.source && lhs.reported == rhs.reported
                && lhs.decidingFact == rhs.decidingFact && lhs.outcome == rhs.outcome && lhs.counts == rhs.counts
        }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(origin)
            hasher.combine(ObjectIdentifier(source))
            hasher.combine(reported)
            hasher.combine(decidingFact)
            hasher.combine(outcome)
            hasher.combine(counts)
        }
    }

    /// What the app does: a wipe beats a block beats a warn.
    public let outcome: LaunchOutcome
    /// The checks that failed or lacked their fact, most severe first; among one severity, the
    /// version requirements in the MAM FAQ's order (SDK, app, OS, patch), then the others in
    /// policy order.
    public let checks: [Check]
    /// Why there are no checks: an unmanaged account, or a refusal (an account whose forms
    /// contradict each other; no platform for a bundle of several). Nil for a managed account.
    public let finding: Finding?

    /// The check that decided the outcome: the first that counted with the outcome's action
    /// (checks are ordered most severe first); nil when every check passed or none counted.
    public var decidingCheck: Check? {
        guard outcome != .allow else { return nil }
        return checks.first { $0.counts && $0.outcome == outcome }
    }

    /// The facts a check needed and the query did not give, without repeats.
    public var missingFacts: [LaunchFact] {
        var seen: Set<LaunchFact> = []
        return checks.filter(\.isMissing).map(\.fact).filter { seen.insert($0).inserted }
    }

    /// Whether the app may go on to the account's data (allow, or warn).
    public var isAllowed: Bool { outcome.letsUserIn }

    /// Whether the decision was refused rather than made.
    public var isRefusal: Bool { finding.map { $0.isContradiction || $0.isPlatformRefusal } ?? false }

    /// Whether a wipe rests on facts reported. A missing fact never produces a wipe, so every
    /// wipe outcome does; kept as the guard every front end checks before carrying one out
    /// (`custody checkin --facts` with acting on launch, `POST /v1/launch`).
    public var wipeIsConfirmed: Bool {
        outcome == .wipe && checks.contains { $0.outcome == .wipe && !$0.isMissing }
    }

    /// Why, in words.
    public var reason: String {
        if let finding { return finding.explanation }
        guard !checks.isEmpty else { return "every conditional-launch check passed" }
        return checks.map { check in
            let source = " (\(check.attribution))"
            guard let reported = check.reported else {
                return
                    "\(check.setting) (\(check.requirement)) needs \(check.fact), which was not given: \(check.counts ? "counted as failed, \(check.outcome) (a missing fact never wipes)" : "ignored")\(source)"
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
    /// then warn, else allow. A check whose fact is missing is reported, marked missing; with
    /// `MissingFacts.strict` it counts as failed, but blocks at most: a missing fact never
    /// wipes (an app acting on the answer would destroy data because a caller left out a
    /// field). An unmanaged account is allowed: no policy sets conditions for it.
    ///
    /// - Parameter now: the time since 1970 that offline grace counts to.
    public func launch(
        account: AccountID?, facts: LaunchFacts, now: Duration, missingFacts: MissingFacts = .strict
    ) -> LaunchDecision {
        var facts = facts
        // Entra's record, read by the Graph connector: the confirmation "Disabled account" acts
        // on. The account is resolved once; its state is no filter fact, so resolving first is
        // the same.
        let party = resolve(account, facts: facts)
        if facts.accountState == nil, party.index >= 0, directory.accounts[Int(party.index)].enabled == false {
            facts.accountState = .disabled
        }
        if let refusal = party.refusal(.account) {
            return LaunchDecision(outcome: .block, checks: [], finding: Finding(refusal, nil))
        }
        guard let policy = party.policy else {
            return LaunchDecision(outcome: .allow, checks: [], finding: Finding(.unmanaged(.account), nil))
        }
        var checks: [LaunchDecision.Check] = []
        var outcome = LaunchOutcome.allow
        /// Records a failed (or fact-less) check, most severe first, in policy order among equals.
        /// A check whose fact is missing blocks at most: a wipe is answered only on a reported
        /// value that calls for it, never on absence of evidence.
        func record(
            _ origin: LaunchDecision.Check.Origin, _ reported: String?, _ action: LaunchOutcome,
            turningOn fact: LaunchFact? = nil
        ) {
            let result = reported == nil ? min(action, .block) : action
            let counts = reported != nil || missingFacts == .strict
            if counts, result > outcome { outcome = result }
            // One allocation for every check that can fail, made only when one does.
            if checks.isEmpty { checks.reserveCapacity(policy.launchConditions.count + 1) }
            let check = LaunchDecision.Check(
                origin: origin, source: policy, reported: reported, decidingFact: fact, outcome: result,
                counts: counts)
            let precedence = check.precedence
            let position =
                checks.firstIndex {
                    $0.outcome < result || ($0.outcome == result && $0.precedence > precedence)
                } ?? checks.endIndex
            checks.insert(check, at: position)
        }

        // Offline grace: merged, like the offlineAccess decision, so the two agree.
        if let checkedIn = facts.lastCheckIn {
            let offline = max(now - checkedIn, .zero)
            if checkedIn - now > Self.clockSkew {
                // A check-in later than the time decided at: one of the two clocks is wrong, or
                // the report is. Not believed: access is blocked (never wiped on it).
                record(.checkInAfter(now: now), RFC3339.format(checkedIn), .block)
            } else if policy.wipesWhenOffline, offline >= policy.periodOfflineBeforeWipeIsEnforced.value.duration {
                record(.offline(.periodOfflineBeforeWipeIsEnforced), RFC3339.format(checkedIn), .wipe)
            } else if offline >= policy.periodOfflineBeforeAccessCheck.value.duration {
                record(.offline(.periodOfflineBeforeAccessCheck), RFC3339.format(checkedIn), .block)
            }
        } else {
            record(
                .offline(
                    policy.wipesWhenOffline ? .periodOfflineBeforeWipeIsEnforced : .periodOfflineBeforeAccessCheck),
                nil, .wipe)
        }

        for index in policy.launchConditions.indices {
            let condition = policy.launchConditions[index]
            switch condition.evaluate(facts) {
            case .passes: continue
            case .fails: record(.condition(index), facts.text(of: condition.test.fact), condition.action.outcome)
            case .blocks(let fact): record(.condition(index), facts.text(of: fact), .block, turningOn: fact)
            case .missing(let fact):
                record(
                    .condition(index), nil, condition.action.outcome,
                    turningOn: fact == condition.test.fact ? nil : fact)
            }
        }
        return LaunchDecision(outcome: outcome, checks: checks, finding: nil)
    }
}
