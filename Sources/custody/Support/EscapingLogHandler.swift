import CustodyPolicy
import Logging

/// A log handler that escapes control characters in messages and metadata before the wrapped
/// handler writes them: a logged path, app id or header that came from input cannot forge a
/// log line or rewrite the terminal.
struct EscapingLogHandler: LogHandler {
    var wrapped: any LogHandler

    var logLevel: Logger.Level {
        get { wrapped.logLevel }
        set { wrapped.logLevel = newValue }
    }

    var metadata: Logger.Metadata {
        get { wrapped.metadata }
        set { wrapped.metadata = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { wrapped[metadataKey: key] }
        set { wrapped[metadataKey: key] = newValue }
    }

    func log(event: LogEvent) {
        var event = event
        event.message = "\(event.message.description.escapingControlCharacters)"
        event.metadata = event.metadata.map(Self.escaped)
        wrapped.log(event: event)
    }

    static func escaped(_ metadata: Logger.Metadata) -> Logger.Metadata {
        metadata.mapValues(escaped)
    }

    static func escaped(_ value: Logger.Metadata.Value) -> Logger.Metadata.Value {
        switch value {
        case .string(let text): .string(text.escapingControlCharacters)
        case .stringConvertible(let convertible): .string(convertible.description.escapingControlCharacters)
        case .array(let values): .array(values.map(escaped))
        case .dictionary(let values): .dictionary(escaped(values))
        }
    }
}
