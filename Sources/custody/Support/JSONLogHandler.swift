import Foundation
import Logging
import Synchronization

/// A log handler that writes each event as one JSON object on a line of standard error
/// (`--log-format json`), for a collector that reads JSON lines (journald's `JSON=`-less
/// stdout, Vector, Fluent Bit, Loki's promtail):
///
///     {"time":"2026-11-30T13:30:00.123Z","level":"info","label":"custody","message":"…",
///      "source":"CustodyServer","trace_id":"…","span_id":"…","metadata":{"request":"…"}}
///
/// `trace_id` and `span_id` (OpenTelemetry's names for them in its log data model) come from
/// the metadata provider, when a traced request or call is under way, and are left out when not;
/// the rest of the metadata (the logger's, the provider's, the event's, later ones winning) is
/// the `metadata` object. JSON's escaping is what keeps a logged path or header from forging a
/// line: a control character is written as `\u00XX`.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    init(label: String, metadataProvider: Logger.MetadataProvider?) {
        self.label = label
        self.metadataProvider = metadataProvider
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let own = event.metadata { merged.merge(own) { $1 } }
        let traceID = merged.removeValue(forKey: "trace_id")
        let spanID = merged.removeValue(forKey: "span_id")
        merged.removeValue(forKey: "trace_flags")
        let line = Line(
            time: Date(), level: event.level.rawValue, label: label, message: event.message.description,
            source: event.source, traceID: traceID?.description, spanID: spanID?.description,
            metadata: merged.isEmpty ? nil : merged.mapValues(Value.init))
        guard var bytes = try? Self.encoder.encode(line) else { return }
        bytes.append(UInt8(ascii: "\n"))
        Self.writing.withLock { _ in
            bytes.withUnsafeBytes { StandardOutput.writeAll($0.bindMemory(to: UInt8.self), to: 2) }
        }
    }

    /// One line: a line is written whole, never interleaved with another thread's.
    private static let writing = Mutex(())

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(
                date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt)))
        }
        return encoder
    }()

    private struct Line: Encodable {
        let time: Date
        let level: String
        let label: String
        let message: String
        let source: String
        let traceID: String?
        let spanID: String?
        let metadata: [String: Value]?

        enum CodingKeys: String, CodingKey {
            case time, level, label, message, source, metadata
            case traceID = "trace_id"
            case spanID = "span_id"
        }
    }

    /// A metadata value as JSON: text, a list, or an object.
    private enum Value: Encodable {
        case text(String)
        case list([Value])
        case object([String: Value])

        init(_ value: Logger.Metadata.Value) {
            switch value {
            case .string(let text): self = .text(text)
            case .stringConvertible(let convertible): self = .text(convertible.description)
            case .array(let values): self = .list(values.map(Value.init))
            case .dictionary(let values): self = .object(values.mapValues(Value.init))
            }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .text(let text): try container.encode(text)
            case .list(let values): try container.encode(values)
            case .object(let values): try container.encode(values)
            }
        }
    }
}
