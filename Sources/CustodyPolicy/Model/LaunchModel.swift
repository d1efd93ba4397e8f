/// Graph `managedAppRemediationAction`: what an app does when a conditional-launch check fails.
public enum RemediationAction: String, GraphEnum {
    case block
    case wipe
    case warn
    /// Block where the device supports the setting. Microsoft offers it for Samsung Knox
    /// attestation ("Block access on supported devices"), which then fails only on Samsung
    /// devices running Android 15 or later (`LaunchCondition.Test.knoxAttestedWhereSupported`);
    /// on any other check Custody makes it is `block`.
    case blockWhenSettingIsSupported

    /// The launch outcome the action produces.
    public var outcome: LaunchOutcome {
        switch self {
        case .block, .blockWhenSettingIsSupported: .block
        case .wipe: .wipe
        case .warn: .warn
        }
    }
}

/// The outcome of a conditional-launch decision, from least to most severe: a wipe beats a
/// block beats a warn.
public enum LaunchOutcome: String, Sendable, Hashable, CaseIterable, Comparable, CustomStringConvertible {
    /// Every check passed: the app opens the account's data.
    case allow
    /// The app warns and lets the user go on.
    case warn
    /// Access to the account's data is blocked until the condition is met.
    case block
    /// The account's data is to be wiped from the app.
    case wipe

    public static func < (lhs: LaunchOutcome, rhs: LaunchOutcome) -> Bool { lhs.rank < rhs.rank }

    private var rank: Int {
        switch self {
        case .allow: 0
        case .warn: 1
        case .block: 2
        case .wipe: 3
        }
    }

    /// Whether the app may go on to the account's data (allowed, or allowed with a warning).
    public var letsUserIn: Bool { self == .allow || self == .warn }

    public var description: String { rawValue }
}

/// Graph `managedAppDeviceThreatLevel`, least threatening first; `notConfigured` as a policy
/// value means no threat check.
public enum DeviceThreatLevel: String, GraphEnum, Comparable {
    case notConfigured
    case secured
    case low
    case medium
    case high

    public static func < (lhs: DeviceThreatLevel, rhs: DeviceThreatLevel) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}

/// The state of an account in the directory, as the app learns it when it authenticates.
public enum AccountState: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case active
    case disabled
    case deleted

    public var description: String { rawValue }
}

/// The passcode complexity an Android device reports (`DevicePolicyManager` levels).
public enum PasscodeComplexity: String, Sendable, Hashable, CaseIterable, Comparable, CustomStringConvertible {
    case none
    case low
    case medium
    case high

    public static func < (lhs: PasscodeComplexity, rhs: PasscodeComplexity) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }

    public var description: String { rawValue }
}

/// Graph `androidManagedAppSafetyNetDeviceAttestationType`: the Play Integrity verdict a policy
/// requires, and (as a fact) the verdict a device passed, weakest first.
public enum DeviceIntegrity: String, GraphEnum, Comparable {
    case none
    case basicIntegrity
    case basicIntegrityAndDeviceCertification

    public static func < (lhs: DeviceIntegrity, rhs: DeviceIntegrity) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}

/// Graph `androidManagedAppSafetyNetEvaluationType`: how a device's Play Integrity verdict was
/// evaluated, weakest first. `hardwareBacked` is the portal's "Check strong integrity".
public enum IntegrityEvaluationType: String, GraphEnum, Comparable {
    case basic
    case hardwareBacked

    public static func < (lhs: IntegrityEvaluationType, rhs: IntegrityEvaluationType) -> Bool {
        lhs == .basic && rhs == .hardwareBacked
    }
}

/// A version as Intune compares them: numeric components separated by `.` (app, OS, SDK and
/// Company Portal versions: `16.1`, `11.0.0.94`) or `-` (Android security patch dates:
/// `2026-09-01`), compared component by component as numbers, a missing component counting
/// as zero: `1.10` is later than `1.9`, and `16` equals `16.0`.
public struct SoftwareVersion: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The most components a version may have.
    public static let maximumComponents = 8

    /// The components, two to a word, first component highest: versions compare as these
    /// words do, a missing component being zero, without touching the heap.
    private let packed: (UInt64, UInt64, UInt64, UInt64)
    /// The version as written.
    public let text: String

    /// The numeric components, trailing zeros dropped (so equal versions have equal components).
    public var components: [UInt32] {
        let words = [packed.0, packed.1, packed.2, packed.3]
        var components = words.flatMap { [UInt32(truncatingIfNeeded: $0 >> 32), UInt32(truncatingIfNeeded: $0)] }
        while components.count > 1, components.last == 0 { components.removeLast() }
        return components
    }

    /// Reads a version: one to eight components of at most nine digits each, separated by
    /// dots (or, for a patch date, hyphens). Anything else is nil.
    public init?(_ text: String) {
        var words: [UInt64] = [0, 0, 0, 0]
        var count = 0
        var current: UInt64 = 0
        var digits = 0
        var separator: UInt8?
        func store() {
            words[count / 2] |= count % 2 == 0 ? current << 32 : current
            count += 1
        }
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                guard digits < 9 else { return nil }
                current = current * 10 + UInt64(byte - UInt8(ascii: "0"))
                digits += 1
            case UInt8(ascii: "."), UInt8(ascii: "-"):
                guard digits > 0, separator == nil || separator == byte, count < Self.maximumComponents - 1 else {
                    return nil
                }
                separator = byte
                store()
                current = 0
                digits = 0
            default:
                return nil
            }
        }
        guard digits > 0 else { return nil }
        store()
        self.packed = (words[0], words[1], words[2], words[3])
        self.text = text
    }

    /// The first component: the major version (`11` of `11.0.0.94`), or a patch date's year.
    public var major: UInt32 { UInt32(truncatingIfNeeded: packed.0 >> 32) }

    /// Whether the version is an Android security patch level as the settings page gives its
    /// format, `YYYY-MM-DD`, naming a day of the calendar (`2026-02-30` is not one).
    public var isPatchDate: Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 10, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-") else { return false }
        let parts = components
        guard parts.count == 3, parts[0] >= 1, (1...12).contains(parts[1]) else { return false }
        let year = parts[0]
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let days: [UInt32] = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        return (1...days[Int(parts[1]) - 1]).contains(parts[2])
    }

    /// Whether every component is zero: exports write `0.0` and `0000-00-00` for "no requirement".
    public var isZero: Bool { packed == (0, 0, 0, 0) }

    public static func < (lhs: SoftwareVersion, rhs: SoftwareVersion) -> Bool { lhs.packed < rhs.packed }

    public static func == (lhs: SoftwareVersion, rhs: SoftwareVersion) -> Bool { lhs.packed == rhs.packed }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(packed.0)
        hasher.combine(packed.1)
        hasher.combine(packed.2)
        hasher.combine(packed.3)
    }

    public var description: String { text }
}

/// A fact an app or device reports for a conditional-launch decision.
public enum LaunchFact: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case osVersion
    case appVersion
    case sdkVersion
    /// Android: the security patch level, `YYYY-MM-DD`.
    case patchVersion
    /// Android: the Company Portal's version.
    case companyPortalVersion
    case deviceModel
    /// Android.
    case deviceManufacturer
    case threatLevel
    /// When the account last checked in (the state's record when not given).
    case lastCheckIn
    case accountState
    case pinFailures
    /// iOS jailbreak or Android root detection (`rooted` is the same fact).
    case jailbroken
    case clockedOut
    /// Android: whether a screen lock is set.
    case deviceLockSet
    /// Android: the device passcode's complexity.
    case passcodeComplexity
    /// Android: the Play Integrity verdict the device passed.
    case deviceIntegrity
    /// Android: whether Google Play Protect's app verification is on.
    case appsVerified
    /// Android: whether Samsung Knox attestation passed.
    case knoxAttested
    /// Android: how many days old the installed Company Portal build is (Google Play's
    /// `clientVersionStalenessDays`).
    case companyPortalVersionAgeDays
    /// Android: how the Play Integrity verdict was evaluated (`basic`, or `hardwareBacked` for
    /// a strong integrity check).
    case integrityEvaluationType

    public var description: String { rawValue }
}

/// What an app or device reports for a conditional-launch decision. A fact left nil is
/// missing: checks that need it say so, and count as failed unless the caller ignores
/// missing facts.
public struct LaunchFacts: Sendable, Hashable {
    public var osVersion: SoftwareVersion?
    public var appVersion: SoftwareVersion?
    public var sdkVersion: SoftwareVersion?
    public var patchVersion: SoftwareVersion?
    public var companyPortalVersion: SoftwareVersion?
    public var deviceModel: String?
    public var deviceManufacturer: String?
    public var threatLevel: DeviceThreatLevel?
    /// Seconds since 1970 of the last check-in.
    public var lastCheckIn: Duration?
    public var accountState: AccountState?
    public var pinFailures: Int?
    public var jailbroken: Bool?
    public var clockedOut: Bool?
    public var deviceLockSet: Bool?
    public var passcodeComplexity: PasscodeComplexity?
    public var deviceIntegrity: DeviceIntegrity?
    public var appsVerified: Bool?
    public var knoxAttested: Bool?
    public var companyPortalVersionAgeDays: Int?
    public var integrityEvaluationType: IntegrityEvaluationType?

    /// Creates facts with none given.
    public init() {}

    /// These facts, with each missing one taken from `recorded`.
    public func filling(from recorded: LaunchFacts) -> LaunchFacts {
        var facts = self
        facts.osVersion = osVersion ?? recorded.osVersion
        facts.appVersion = appVersion ?? recorded.appVersion
        facts.sdkVersion = sdkVersion ?? recorded.sdkVersion
        facts.patchVersion = patchVersion ?? recorded.patchVersion
        facts.companyPortalVersion = companyPortalVersion ?? recorded.companyPortalVersion
        facts.deviceModel = deviceModel ?? recorded.deviceModel
        facts.deviceManufacturer = deviceManufacturer ?? recorded.deviceManufacturer
        facts.threatLevel = threatLevel ?? recorded.threatLevel
        facts.lastCheckIn = lastCheckIn ?? recorded.lastCheckIn
        facts.accountState = accountState ?? recorded.accountState
        facts.pinFailures = pinFailures ?? recorded.pinFailures
        facts.jailbroken = jailbroken ?? recorded.jailbroken
        facts.clockedOut = clockedOut ?? recorded.clockedOut
        facts.deviceLockSet = deviceLockSet ?? recorded.deviceLockSet
        facts.passcodeComplexity = passcodeComplexity ?? recorded.passcodeComplexity
        facts.deviceIntegrity = deviceIntegrity ?? recorded.deviceIntegrity
        facts.appsVerified = appsVerified ?? recorded.appsVerified
        facts.knoxAttested = knoxAttested ?? recorded.knoxAttested
        facts.companyPortalVersionAgeDays = companyPortalVersionAgeDays ?? recorded.companyPortalVersionAgeDays
        facts.integrityEvaluationType = integrityEvaluationType ?? recorded.integrityEvaluationType
        return facts
    }

    /// The facts as a JSON object of their given members (what `custody checkin --facts`
    /// records), in `LaunchFact` order.
    public var jsonObject: String {
        var writer = JSONWriter()
        writer.beginObject()
        for fact in LaunchFact.allCases {
            guard let text = text(of: fact) else { continue }
            writer.key(fact.rawValue)
            switch fact {
            case .pinFailures: writer.value(pinFailures!)
            case .companyPortalVersionAgeDays: writer.value(companyPortalVersionAgeDays!)
            case .jailbroken, .clockedOut, .deviceLockSet, .appsVerified, .knoxAttested: writer.value(flag(fact)!)
            default: writer.value(text)
            }
        }
        writer.endObject()
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    /// The facts given, by name.
    public var given: [LaunchFact] { LaunchFact.allCases.filter { self.text(of: $0) != nil } }

    /// A fact's value as text for reasons and answers; nil when missing.
    public func text(of fact: LaunchFact) -> String? {
        switch fact {
        case .osVersion: osVersion?.text
        case .appVersion: appVersion?.text
        case .sdkVersion: sdkVersion?.text
        case .patchVersion: patchVersion?.text
        case .companyPortalVersion: companyPortalVersion?.text
        case .deviceModel: deviceModel
        case .deviceManufacturer: deviceManufacturer
        case .threatLevel: threatLevel?.rawValue
        case .lastCheckIn: lastCheckIn.map(RFC3339.format)
        case .accountState: accountState?.rawValue
        case .pinFailures: pinFailures.map(String.init)
        case .jailbroken: jailbroken.map(String.init)
        case .clockedOut: clockedOut.map(String.init)
        case .deviceLockSet: deviceLockSet.map(String.init)
        case .passcodeComplexity: passcodeComplexity?.rawValue
        case .deviceIntegrity: deviceIntegrity?.rawValue
        case .appsVerified: appsVerified.map(String.init)
        case .knoxAttested: knoxAttested.map(String.init)
        case .companyPortalVersionAgeDays: companyPortalVersionAgeDays.map(String.init)
        case .integrityEvaluationType: integrityEvaluationType?.rawValue
        }
    }
}

/// What to do with a check whose fact is missing.
public enum MissingFacts: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// The check counts as failed: the outcome is the strictest the missing fact could produce.
    case strict
    /// The check is reported and left out of the outcome.
    case ignore

    public var description: String { rawValue }
}

/// One conditional-launch check a policy configures: the condition, the Graph property that
/// set its threshold, and the action when it fails.
public struct LaunchCondition: Sendable, Hashable {
    /// What is compared.
    public enum Test: Sendable, Hashable {
        /// Fails when the fact's version is below the threshold (`orEqual`: at or below it).
        case minimumVersion(LaunchFact, SoftwareVersion, orEqual: Bool)
        /// Fails when the fact's version is above the threshold.
        case maximumVersion(LaunchFact, SoftwareVersion)
        /// Fails when the fact (a device model or manufacturer) is not in the list (lower-cased).
        case allowedValues(LaunchFact, Set<String>)
        /// Fails when the reported threat level is above the allowed one.
        case maximumThreatLevel(DeviceThreatLevel)
        /// Fails when the account is disabled or deleted.
        case accountUsable
        /// Fails when the PIN was entered wrongly this many times or more.
        case pinRetries(Int)
        /// Fails when the fact (jailbroken, clocked out) is true.
        case mustBeFalse(LaunchFact)
        /// Fails when the fact (device lock, app verification, Knox attestation) is false.
        case mustBeTrue(LaunchFact)
        /// Fails when the passcode is less complex than this; on Android 11 and earlier, when it
        /// is less complex than low (Android settings page, "Require device lock": the level "is
        /// targeted to Android 12+").
        case minimumPasscodeComplexity(PasscodeComplexity)
        /// Fails when the device passed a weaker integrity verdict than this.
        case minimumDeviceIntegrity(DeviceIntegrity)
        /// Fails when the verdict was evaluated more weakly than this ("Check strong integrity").
        case minimumEvaluationType(IntegrityEvaluationType)
        /// Fails when the fact (a number of days) is above the limit.
        case maximumCount(LaunchFact, Int)
        /// Samsung Knox attestation (warn, block or wipe): fails when not attested, and blocks
        /// a device another manufacturer made whatever the action ("On non-Samsung devices,
        /// users can't accept the Knox terms of service and are blocked").
        case knoxAttested
        /// Knox attestation under "Block access on supported devices": fails only on a Samsung
        /// device running Android 15 or later (One UI 7, Samsung's Android 15 release) that did
        /// not pass; other devices are not affected.
        case knoxAttestedWhereSupported

        /// The fact the test reads.
        public var fact: LaunchFact {
            switch self {
            case .minimumVersion(let fact, _, _), .maximumVersion(let fact, _), .allowedValues(let fact, _),
                .mustBeFalse(let fact), .mustBeTrue(let fact), .maximumCount(let fact, _):
                fact
            case .maximumThreatLevel: .threatLevel
            case .accountUsable: .accountState
            case .pinRetries: .pinFailures
            case .minimumPasscodeComplexity: .passcodeComplexity
            case .minimumDeviceIntegrity: .deviceIntegrity
            case .minimumEvaluationType: .integrityEvaluationType
            case .knoxAttested, .knoxAttestedWhereSupported: .knoxAttested
            }
        }

        /// What passes, in words: `osVersion at least 16.1`, `jailbroken false`.
        public var requirement: String {
            switch self {
            case let .minimumVersion(fact, version, orEqual):
                orEqual ? "\(fact) above \(version)" : "\(fact) at least \(version)"
            case let .maximumVersion(fact, version): "\(fact) at most \(version)"
            case let .allowedValues(fact, values): "\(fact) one of \(values.sorted().joined(separator: ", "))"
            case .maximumThreatLevel(let level): "threatLevel at most \(level)"
            case .accountUsable: "accountState active"
            case .pinRetries(let count): "pinFailures below \(count)"
            case .mustBeFalse(let fact): "\(fact) false"
            case .mustBeTrue(let fact): "\(fact) true"
            case .minimumPasscodeComplexity(let complexity):
                complexity > .low
                    ? "passcodeComplexity at least \(complexity) (at least low on Android 11 and earlier)"
                    : "passcodeComplexity at least \(complexity)"
            case .minimumDeviceIntegrity(let integrity): "deviceIntegrity at least \(integrity)"
            case .minimumEvaluationType(let type): "integrityEvaluationType \(type)"
            case let .maximumCount(fact, limit): "\(fact) at most \(limit)"
            case .knoxAttested: "knoxAttested true, on a Samsung device (others are blocked)"
            case .knoxAttestedWhereSupported: "knoxAttested true on Samsung devices with Android 15 or later"
            }
        }

        /// The threshold as text.
        public var threshold: String {
            switch self {
            case .minimumVersion(_, let version, _), .maximumVersion(_, let version): version.text
            case .allowedValues(_, let values): values.sorted().joined(separator: ";")
            case .maximumThreatLevel(let level): level.rawValue
            case .accountUsable: AccountState.active.rawValue
            case .pinRetries(let count): String(count)
            case .mustBeFalse: "false"
            case .mustBeTrue: "true"
            case .minimumPasscodeComplexity(let complexity): complexity.rawValue
            case .minimumDeviceIntegrity(let integrity): integrity.rawValue
            case .minimumEvaluationType(let type): type.rawValue
            case .maximumCount(_, let limit): String(limit)
            case .knoxAttested, .knoxAttestedWhereSupported: "true"
            }
        }
    }

    /// The Graph property that set the threshold, such as `minimumWipeOsVersion`.
    public let setting: String
    public let test: Test
    public let action: RemediationAction
    /// The platform the check is made on; nil for both (a default policy carries both
    /// platforms' checks).
    public let platform: Platform?

    public init(setting: String, test: Test, action: RemediationAction, platform: Platform? = nil) {
        self.setting = setting
        self.test = test
        self.action = action
        self.platform = platform
    }

    /// What a check makes of some facts.
    public enum Evaluation: Sendable, Hashable {
        case passes
        case fails
        /// The check fails on this fact, and blocks whatever its action (a device that cannot
        /// take the check at all).
        case blocks(LaunchFact)
        /// The check cannot be made: this fact is missing.
        case missing(LaunchFact)
    }

    /// Makes the check on `facts`.
    public func evaluate(_ facts: LaunchFacts) -> Evaluation {
        func judge(_ failed: Bool?, missing fact: LaunchFact) -> Evaluation {
            guard let failed else { return .missing(fact) }
            return failed ? .fails : .passes
        }
        switch test {
        case let .minimumVersion(fact, threshold, orEqual):
            return judge(facts.version(fact).map { orEqual ? $0 <= threshold : $0 < threshold }, missing: fact)
        case let .maximumVersion(fact, threshold):
            return judge(facts.version(fact).map { $0 > threshold }, missing: fact)
        case let .allowedValues(fact, values):
            let reported = fact == .deviceModel ? facts.deviceModel : facts.deviceManufacturer
            return judge(reported.map { !values.contains($0.trimmingSpaces.lowercased()) }, missing: fact)
        case .maximumThreatLevel(let allowed):
            return judge(facts.threatLevel.map { $0 > allowed }, missing: .threatLevel)
        case .accountUsable:
            return judge(facts.accountState.map { $0 != .active }, missing: .accountState)
        case .pinRetries(let limit):
            return judge(facts.pinFailures.map { $0 >= limit }, missing: .pinFailures)
        case .mustBeFalse(let fact):
            return judge(facts.flag(fact), missing: fact)
        case .mustBeTrue(let fact):
            return judge(facts.flag(fact).map { !$0 }, missing: fact)
        case .minimumPasscodeComplexity(let minimum):
            guard let complexity = facts.passcodeComplexity else { return .missing(.passcodeComplexity) }
            if complexity >= minimum { return .passes }
            if complexity < .low { return .fails }
            // Between low and the level asked for: the answer turns on the Android version.
            guard let os = facts.osVersion else { return .missing(.osVersion) }
            return os.major <= 11 ? .passes : .fails
        case .minimumDeviceIntegrity(let minimum):
            return judge(facts.deviceIntegrity.map { $0 < minimum }, missing: .deviceIntegrity)
        case .minimumEvaluationType(let minimum):
            return judge(facts.integrityEvaluationType.map { $0 < minimum }, missing: .integrityEvaluationType)
        case let .maximumCount(fact, limit):
            return judge(facts.count(fact).map { $0 > limit }, missing: fact)
        case .knoxAttested:
            // Every device answers to it: one another manufacturer made is blocked (it cannot
            // accept Knox's terms), and a failed attestation fails whoever made the device.
            if let manufacturer = facts.deviceManufacturer, manufacturer.trimmingSpaces.lowercased() != "samsung" {
                return .blocks(.deviceManufacturer)
            }
            if facts.knoxAttested == false { return .fails }
            guard facts.deviceManufacturer != nil else {
                return .missing(facts.knoxAttested == nil ? .knoxAttested : .deviceManufacturer)
            }
            return judge(facts.knoxAttested.map { !$0 }, missing: .knoxAttested)
        case .knoxAttestedWhereSupported:
            guard let manufacturer = facts.deviceManufacturer else { return .missing(.deviceManufacturer) }
            guard manufacturer.trimmingSpaces.lowercased() == "samsung" else { return .passes }
            guard let os = facts.osVersion else { return .missing(.osVersion) }
            guard os.major >= 15 else { return .passes }
            return judge(facts.knoxAttested.map { !$0 }, missing: .knoxAttested)
        }
    }
}

extension LaunchFacts {
    func version(_ fact: LaunchFact) -> SoftwareVersion? {
        switch fact {
        case .osVersion: osVersion
        case .appVersion: appVersion
        case .sdkVersion: sdkVersion
        case .patchVersion: patchVersion
        case .companyPortalVersion: companyPortalVersion
        default: nil
        }
    }

    func count(_ fact: LaunchFact) -> Int? {
        switch fact {
        case .pinFailures: pinFailures
        case .companyPortalVersionAgeDays: companyPortalVersionAgeDays
        default: nil
        }
    }

    func flag(_ fact: LaunchFact) -> Bool? {
        switch fact {
        case .jailbroken: jailbroken
        case .clockedOut: clockedOut
        case .deviceLockSet: deviceLockSet
        case .appsVerified: appsVerified
        case .knoxAttested: knoxAttested
        default: nil
        }
    }
}
