import CustodyPolicy
import Testing

@Suite("Typed configuration decoding")
struct ConfigurationDecoderTests {
    struct Settings: Decodable, Equatable {
        enum Mode: String, Decodable { case strict, relaxed }
        struct Server: Decodable, Equatable {
            var host: String
            var port: Int
            var secure: Bool?
        }

        var mode: Mode
        var server: Server
        var retries: UInt8
        var ratio: Double
        var tags: [String]
        var banner: String?
        var homepage: String

        enum CodingKeys: String, CodingKey {
            case mode, server, retries, ratio, tags, banner
            // Intune keys are dotted names; a flat key can be named in full.
            case homepage = "com.microsoft.intune.mam.managedbrowser.homepage"
        }
    }

    static let complete: [String: String] = [
        "mode": "relaxed", "server.host": "api.contoso.com", "server.port": "8443", "server.secure": "TRUE",
        "retries": "3", "ratio": "0.25", "tags.0": "a", "tags.1": "b", "banner": "Hello",
        "com.microsoft.intune.mam.managedbrowser.homepage": "https://contoso.com/",
        "a.newer.key": "ignored by older apps",
    ]

    @Test("nested types, lists, enums and flat dotted keys decode; unknown keys are ignored")
    func decodes() throws {
        let settings = try ConfigurationDecoder().decode(Settings.self, from: Self.complete)
        #expect(
            settings
                == Settings(
                    mode: .relaxed, server: .init(host: "api.contoso.com", port: 8443, secure: true), retries: 3,
                    ratio: 0.25,
                    tags: ["a", "b"], banner: "Hello", homepage: "https://contoso.com/"))
    }

    @Test("missing optional settings are nil")
    func optionals() throws {
        var settings = Self.complete
        settings["server.secure"] = nil
        settings["banner"] = nil
        let decoded = try ConfigurationDecoder().decode(Settings.self, from: settings)
        #expect(decoded.server.secure == nil)
        #expect(decoded.banner == nil)
    }

    struct Failure: Sendable, CustomTestStringConvertible {
        let setting: String
        let value: String?
        let code: ConfigurationDecodingError.Code
        let keyPath: String
        var testDescription: String { "\(setting) = \(value ?? "absent")" }
    }

    @Test(
        "errors name the setting",
        arguments: [
            Failure(setting: "server.port", value: "eighty", code: .typeMismatch, keyPath: "server.port"),
            Failure(setting: "server.port", value: nil, code: .missingKey, keyPath: "server.port"),
            Failure(setting: "retries", value: "300", code: .typeMismatch, keyPath: "retries"),
            Failure(setting: "ratio", value: "nan", code: .typeMismatch, keyPath: "ratio"),
            Failure(setting: "server.secure", value: "yes", code: .typeMismatch, keyPath: "server.secure"),
            Failure(setting: "mode", value: "lenient", code: .invalidValue, keyPath: "mode"),
            Failure(setting: "mode", value: nil, code: .missingKey, keyPath: "mode"),
            // A list with a gap would lose its later items.
            Failure(setting: "tags.0", value: nil, code: .invalidValue, keyPath: "tags.0"),
        ])
    func failures(_ failure: Failure) {
        var settings = Self.complete
        settings[failure.setting] = failure.value
        #expect {
            try ConfigurationDecoder().decode(Settings.self, from: settings)
        } throws: { error in
            guard let error = error as? ConfigurationDecodingError else { return false }
            return error.code == failure.code && error.keyPath == failure.keyPath
        }
    }

    @Test("more than 64 KiB of settings is refused")
    func tooLarge() {
        var settings = Self.complete
        settings["padding"] = String(repeating: "x", count: ConfigurationDecoder.maximumSize)
        #expect(throws: ConfigurationDecodingError.self) {
            try ConfigurationDecoder().decode(Settings.self, from: settings)
        }
        do {
            _ = try ConfigurationDecoder().decode(Settings.self, from: settings)
        } catch {
            #expect(error.code == .tooLarge)
        }
    }
}
