import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// One HTTP client for the process (async-http-client), with the connect timeout of the
/// settings; shut down by its owner.
final class GraphTransport: Sendable {
    struct Response: Sendable {
        let status: Int
        let headers: HTTPHeaders
        let body: [UInt8]
    }

    let client: HTTPClient
    let requestTimeout: Duration
    let maximumBytes: Int

    init(settings: GraphSettings) {
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(
            connect: TimeAmount(settings.connectTimeout), read: TimeAmount(settings.requestTimeout))
        // A nextLink is followed as Graph gives it, but never to another host, and a redirect
        // would carry the token elsewhere: none is followed.
        configuration.redirectConfiguration = .disallow
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        requestTimeout = settings.requestTimeout
        maximumBytes = settings.maximumResponseBytes
    }

    func shutdown() async {
        try? await client.shutdown()
    }

    /// Sends one request and reads its whole answer, head and body, within `requestTimeout`
    /// (a server that sends a byte now and then does not hold it longer).
    /// - Throws: `GraphError` `.timeout` (connecting or answering took too long) or `.request`
    ///   (no answer: refused, reset, TLS), naming the request.
    func send(_ method: HTTPMethod, _ url: String, headers: [(String, String)] = [], body: [UInt8]? = nil)
        async throws(GraphError) -> Response
    {
        let name = "\(method.rawValue) \(url)"
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (field, value) in headers { request.headers.add(name: field, value: value) }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        let (client, timeout, maximumBytes, prepared) = (self.client, requestTimeout, self.maximumBytes, request)
        do {
            return try await withThrowingTaskGroup(of: Response?.self) { tasks in
                tasks.addTask {
                    let response = try await client.execute(prepared, timeout: TimeAmount(timeout))
                    var buffer = try await response.body.collect(upTo: maximumBytes)
                    return Response(
                        status: Int(response.status.code), headers: response.headers,
                        body: buffer.readBytes(length: buffer.readableBytes) ?? [])
                }
                tasks.addTask {
                    try await Task.sleep(for: timeout)
                    return nil
                }
                defer { tasks.cancelAll() }
                guard let first = try await tasks.next(), let answered = first else {
                    throw HTTPClientError.deadlineExceeded
                }
                return answered
            }
        } catch let error as HTTPClientError where [.deadlineExceeded, .connectTimeout, .readTimeout].contains(error) {
            throw GraphError(.timeout, "no answer within the time allowed (\(error))", request: name)
        } catch let error as NIOTooManyBytesError {
            throw GraphError(
                .invalidResponse, "the answer is larger than \(maximumBytes) bytes (\(error))", request: name)
        } catch {
            throw GraphError(.request, "the request failed: \(error)", request: name)
        }
    }
}
