import ArgumentParser
import Hummingbird

/// Answers `POST /constant` with a fixed body of `--bytes` bytes after reading the request body,
/// as the decision service's single-decision route does with its work: the HTTP stack's cost
/// alone, to compare with (`scripts/bench-service.sh`).
@main
struct Baseline: AsyncParsableCommand {
    @Option(help: "Port to listen on (loopback).")
    var port = 18_081

    @Option(help: "Size of the constant response body, in bytes.")
    var bytes = 313

    func run() async throws {
        let body = ByteBuffer(repeating: UInt8(ascii: "x"), count: bytes)
        let router = Router()
        router.post("constant") { request, _ -> Response in
            _ = try await request.body.collect(upTo: 1 << 20)
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: body))
        }
        let application = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)))
        try await application.runService()
    }
}
