import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOSSL

/// A request that failed below the service: its framing was not valid HTTP/1.1, its body did
/// not arrive in time, or its client went away. None of these is the service's fault, so none
/// is a 500: each has its own status, code and metric.
enum TransportFailure: Equatable {
    /// The request's framing is not valid HTTP/1.1 (a bad chunk size, an unknown transfer
    /// coding): 400.
    case malformed(String)
    /// Trailers over the header limit: 431.
    case headersTooLarge
    /// The body did not arrive within the body deadline: 408.
    case timedOut
    /// The client closed or reset the connection before its request was read: nobody reads
    /// an answer.
    case clientGone

    init?(_ error: any Error) {
        switch error {
        case let error as HTTPParserError:
            switch error {
            case .invalidEOFState, .closedConnection: self = .clientGone
            case .headerOverflow: self = .headersTooLarge
            default: self = .malformed(Self.describe(error))
            }
        case is RequestBodyTimeout: self = .timedOut
        case let error as IOError where [ECONNRESET, EPIPE, ETIMEDOUT].contains(error.errnoCode): self = .clientGone
        case let error as ChannelError
        where [.ioOnClosedChannel, .eof, .inputClosed, .outputClosed, .alreadyClosed].contains(error):
            self = .clientGone
        case let error as NIOSSLError where error == .uncleanShutdown: self = .clientGone
        default: return nil
        }
    }

    /// The answer: JSON, and the connection is closed after it (what follows on it cannot be
    /// read as a request).
    var serviceError: ServiceError {
        let close: HTTPFields = [.connection: "close"]
        return switch self {
        case .malformed(let what):
            ServiceError(.badRequest, .malformedRequest, "the request is not valid HTTP/1.1: \(what)", headers: close)
        case .headersTooLarge:
            ServiceError(
                .requestHeaderFieldsTooLarge, .headersTooLarge,
                "the request's header fields are larger than this service accepts", headers: close)
        case .timedOut:
            ServiceError(.requestTimeout, .bodyTimeout, "the request body did not arrive in time", headers: close)
        case .clientGone:
            ServiceError(
                .badRequest, .aborted, "the client closed the connection before its request was read", headers: close)
        }
    }

    /// What NIO's parser says, in words.
    static func describe(_ error: HTTPParserError) -> String {
        switch error {
        case .invalidChunkSize: "a chunk size is not a hexadecimal number of a size this service reads"
        case .unknown: "the request's framing (Transfer-Encoding or Content-Length) cannot be read"
        case .invalidContentLength: "Content-Length is not a valid length"
        case .unexpectedContentLength: "Content-Length is given where none may be"
        case .invalidHeaderToken: "a header field holds a character it may not"
        case .invalidMethod: "the request method cannot be read"
        case .invalidURL: "the request target cannot be read"
        case .invalidVersion: "the HTTP version cannot be read"
        case .invalidConstant, .lfExpected, .invalidCharactersUsed: "the request line or a header cannot be read"
        case .strictModeAssertion, .invalidInternalState, .trailingGarbage:
            "the request's framing cannot be read (a chunk, its size or its end is not where it must be)"
        default: "\(error)"
        }
    }
}
