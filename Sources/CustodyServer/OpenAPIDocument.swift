/// The OpenAPI 3.1 description of every endpoint, served at `GET /openapi.json`: the file
/// `Sources/CustodyServer/Resources/openapi.json` (also reached as `docs/openapi.json`), edited
/// by hand and compiled into the binary byte for byte (a SwiftPM resource embedded in code).
/// `make test` validates it with openapi-spec-validator, and a test checks that it describes
/// every route and only routes.
enum OpenAPIDocument {
    static var bytes: [UInt8] { PackageResources.openapi_json }
}

extension CustodyServerConfiguration {
    /// The OpenAPI document the service serves at `GET /openapi.json`.
    public static var openAPIDocument: [UInt8] { OpenAPIDocument.bytes }
}
