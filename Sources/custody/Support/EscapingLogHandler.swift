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

    /// The logger's own metadata (a request's id, say), kept here and handed to the wrapped
    /// handler with each event that is written: setting it costs a dictionary store, where
    /// `StreamLogHandler` renders its whole metadata text at every change, which the service
    /// paid on every request for lines its log level never wrote.
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var event = event
        event.message = "\(event.message.description.escapingControlCharacters)"
        let merged = metadata.isEmpty ? event.metadata : metadata.merging(event.metadata ?? [:]) { $1 }
        event.metadata = merged.map(Self.escaped)
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
