/// A place in a policy document: file, 1-based line and column.
public struct DocumentLocation: Sendable, Hashable, CustomStringConvertible {
    /// The file's path as it was given to the loader.
    public var file: String
    /// 1-based line; 1 for problems with a whole file.
    public var line: Int
    /// 1-based column in Unicode scalars.
    public var column: Int

    /// Creates a location.
    public init(file: String, line: Int, column: Int) {
        self.file = file
        self.line = line
        self.column = column
    }

    /// `file:line:column`, the form compilers and editors understand.
    public var description: String { "\(file):\(line):\(column)" }
}

/// A problem found while loading a policy bundle, with where it is and what to do about it.
public struct Diagnostic: Error, Sendable, Hashable, CustomStringConvertible {
    /// Errors stop a bundle from loading; warnings are reported and the bundle still loads;
    /// notices say what Custody leaves aside (settings it does not enforce, files that are not
    /// policy documents).
    public enum Severity: String, Sendable, Hashable {
        case error
        case warning
        case notice
    }

    /// A stable, machine-readable name for the kind of problem.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The file could not be read.
        public static let unreadable = Code(rawValue: "unreadable")
        /// The bytes are not text in a supported encoding.
        public static let encoding = Code(rawValue: "encoding")
        /// The text is not valid JSON.
        public static let syntax = Code(rawValue: "syntax")
        /// A value has the wrong JSON type or an impossible value.
        public static let invalidValue = Code(rawValue: "invalid-value")
        /// A member appears twice in one object.
        public static let duplicateMember = Code(rawValue: "duplicate-member")
        /// A document has no `@odata.type`, so nothing says what it is.
        public static let missingType = Code(rawValue: "missing-type")
        /// A document's `@odata.type` is not one Custody evaluates; it is ignored.
        public static let unsupportedType = Code(rawValue: "unsupported-type")
        /// A property Custody does not know; it is ignored.
        public static let unknownProperty = Code(rawValue: "unknown-property")
        /// An enum value Custody does not know; the most restrictive value is used instead.
        public static let unknownEnumValue = Code(rawValue: "unknown-enum-value")
        /// Something in `tenant.json` is inconsistent (duplicate accounts, accounts without ids).
        public static let tenant = Code(rawValue: "tenant")
        /// Two policies share an id.
        public static let duplicatePolicy = Code(rawValue: "duplicate-policy")
        /// Targeting that cannot be evaluated exactly; the conservative reading is used.
        public static let targeting = Code(rawValue: "targeting")
        /// A targeted policy whose `assignments` property is absent (exported without expanding
        /// them): read as reaching every account of the tenant.
        public static let assignmentsMissing = Code(rawValue: "assignments-missing")
        /// An app configuration policy's settings exceed `AppConfigurationPolicy.maximumSize`.
        public static let configurationTooLarge = Code(rawValue: "configuration-too-large")
        /// A configuration value that the app's spec does not allow.
        public static let configurationValue = Code(rawValue: "configuration-value")
        /// A configuration setting the app's spec does not declare (the app ignores it).
        public static let undeclaredSetting = Code(rawValue: "undeclared-setting")
        /// A setting the app's spec requires is absent for some managed accounts.
        public static let missingSetting = Code(rawValue: "missing-setting")
        /// Policies give one account different values for one setting.
        public static let configurationConflict = Code(rawValue: "configuration-conflict")
        /// The bundle has no `tenant.json`, so it knows no accounts.
        public static let noTenant = Code(rawValue: "no-tenant")
        /// The bundle has no tenant.json and no app protection policy: it knows no account and
        /// manages none, so it would allow everything. Refused unless applied on purpose.
        public static let emptyBundle = Code(rawValue: "empty-bundle")
        /// The bundle's signature does not make it trusted where trusted keys are required
        /// (unsigned, an unknown or revoked key, a changed, extra or missing file, expired).
        public static let untrusted = Code(rawValue: "untrusted")
        /// The bundle's sequence is not above the highest one applied: an older bundle replayed.
        public static let replayed = Code(rawValue: "replayed")
        /// The policy in force is frozen: no new bundle until it is lifted.
        public static let frozen = Code(rawValue: "frozen")
        /// A policy configures settings Custody does not enforce (PIN, device conditions, …).
        public static let notEnforced = Code(rawValue: "not-enforced")
        /// A setting whose value is not in effect given another setting (as Microsoft documents).
        public static let notInEffect = Code(rawValue: "not-in-effect")
        /// A template's placeholder where an app belongs (`replace_with_dialer_app_url_scheme`):
        /// read as not configured.
        public static let placeholder = Code(rawValue: "placeholder")
        /// A file of the bundle directory that is not a Graph document; it is ignored.
        public static let ignoredFile = Code(rawValue: "ignored-file")
    }

    public var severity: Severity
    public var code: Code
    /// What is wrong and, where it helps, what to do.
    public var message: String
    public var location: DocumentLocation
    /// The JSON path of the value, such as `$.value[2].saveAsBlocked`, when there is one.
    public var path: String?

    /// Creates a diagnostic.
    public init(severity: Severity, code: Code, message: String, location: DocumentLocation, path: String? = nil) {
        self.severity = severity
        self.code = code
        self.message = message
        self.location = location
        self.path = path
    }

    /// `file:line:column: error: message (at $.path)`.
    public var description: String {
        var text = "\(location): \(severity.rawValue): \(message)"
        if let path { text += " (at \(path))" }
        return text
    }
}

/// A bundle or document that could not be loaded, with every problem found.
public struct BundleError: Error, Sendable, CustomStringConvertible {
    /// All diagnostics, errors and warnings, in the order they were found.
    public var diagnostics: [Diagnostic]

    /// Creates an error from diagnostics, of which at least one should be an error.
    public init(diagnostics: [Diagnostic]) {
        self.diagnostics = diagnostics
    }

    /// The errors alone.
    public var errors: [Diagnostic] { diagnostics.filter { $0.severity == .error } }

    /// One diagnostic per line.
    public var description: String {
        diagnostics.map(\.description).joined(separator: "\n")
    }
}

extension Diagnostic {
    /// Why a bundle that manages no account is refused (`why` continues "the bundle manages no
    /// account"), and how to apply it anyway: every door says it the same way.
    public static func emptyBundle(_ why: String, at place: String) -> Diagnostic {
        Diagnostic(
            severity: .error, code: .emptyBundle,
            message: """
                the bundle manages no account\(why), so every decision would allow; \
                to clear the policy on purpose, apply it with --allow-empty (PUT /v1/bundle: "allowEmpty": true)
                """,
            location: DocumentLocation(file: place, line: 1, column: 1))
    }
}
