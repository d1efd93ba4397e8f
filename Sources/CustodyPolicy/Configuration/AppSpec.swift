import Foundation

/// What an app reads from its managed configuration and which secrets it expects: the small
/// `<app>.spec.json` an app ships, Apple ManagedApp's published-specification practice.
/// `custody spec` prints it for administrators; `custody config validate` checks a bundle
/// against it before rollout. The format is in docs/configuration.md.
public struct AppSpec: Sendable, Hashable {
    /// How a setting's text is read.
    public enum ValueType: String, Sendable, Hashable, CaseIterable {
        case string, integer, double, bool
    }

    /// One configuration key the app reads.
    public struct Setting: Sendable, Hashable {
        public let key: String
        public let type: ValueType
        public let description: String?
        /// Whether the app needs it: a managed account without it is an error.
        public let required: Bool
        /// The only values allowed, when listed.
        public let values: [String]?
        /// Bounds for integers and doubles.
        public let minimum: Double?
        public let maximum: Double?
        /// The longest string allowed, in characters.
        public let maxLength: Int?
        /// What the app uses when the setting is absent.
        public let defaultValue: String?
        /// Where the setting is declared in the spec file.
        public let location: DocumentLocation

        /// Why `value` is not valid for this setting; nil when it is.
        public func problem(with value: String) -> String? {
            switch type {
            case .string:
                if let maxLength, value.count > maxLength {
                    return "is \(value.count) characters long; at most \(maxLength) are allowed"
                }
            case .integer:
                guard let number = Int(value) else { return "'\(value)' is not an integer" }
                if let problem = outOfRange(Double(number)) { return problem }
            case .double:
                guard let number = AppConfiguration.double(value) else { return "'\(value)' is not a number" }
                if let problem = outOfRange(number) { return problem }
            case .bool:
                guard AppConfiguration.bool(value) != nil else { return "'\(value)' is not true or false" }
            }
            if let values, !values.contains(value) {
                return "'\(value)' is not one of the allowed values: \(values.joined(separator: ", "))"
            }
            return nil
        }

        private func outOfRange(_ number: Double) -> String? {
            if let minimum, number < minimum {
                return "\(number.formattedBound) is below the minimum \(minimum.formattedBound)"
            }
            if let maximum, number > maximum {
                return "\(number.formattedBound) is above the maximum \(maximum.formattedBound)"
            }
            return nil
        }
    }

    /// A secret the app looks up.
    public struct Secret: Sendable, Hashable {
        public enum Kind: String, Sendable, Hashable, CaseIterable {
            case password, certificate, identity
        }

        public enum Scope: String, Sendable, Hashable, CaseIterable {
            /// One per account.
            case account
            /// One for the app.
            case app
        }

        public let identifier: String
        public let kind: Kind
        public let scope: Scope
        public let description: String?
    }

    /// The app's bundle or package id.
    public let app: String
    public let description: String?
    /// By key.
    public let settings: [Setting]
    /// By identifier.
    public let secrets: [Secret]
    /// Where the spec was read from.
    public let file: String

    /// The codes a `ConfigurationDecoder` may report for this app's configuration.
    public static var decoderErrorCodes: [ConfigurationDecodingError.Code] { ConfigurationDecodingError.Code.allCases }

    /// The setting declared for `key`.
    public func setting(_ key: String) -> Setting? { settings.first { $0.key == key } }
}

extension Double {
    /// A bound as people write it: `65535`, not `65535.0`.
    fileprivate var formattedBound: String {
        rounded() == self && abs(self) < 1e15 ? String(Int(self)) : String(self)
    }
}

/// A spec file that could not be read, with every problem and where it is.
public struct AppSpecError: Error, Sendable, CustomStringConvertible {
    public var diagnostics: [Diagnostic]
    public var description: String { diagnostics.map(\.description).joined(separator: "\n") }
}
