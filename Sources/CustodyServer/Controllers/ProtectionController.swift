import Custody
import CustodyPolicy
import CustodyProtection
import HTTPTypes
import Hummingbird

/// Protection as a service: buffers protected and unprotected, account keys rotated, accounts
/// wiped. The engine decides exactly as the command line does; the service never returns
/// partial plaintext (a buffer opens whole or not at all).
struct ProtectionController {
    let engine: CustodyEngine
    let limits: CustodyServerConfiguration.Limits

    func addProtectRoutes(to group: RouterGroup<CustodyRequestContext>) {
        group.post("protect", use: protect)
        group.post("unprotect", use: unprotect)
    }

    func addAdminRoutes(to group: RouterGroup<CustodyRequestContext>) {
        group.post("accounts/:account/wipe", use: wipe)
        group.post("accounts/:account/keys/rotate", use: rotate)
    }

    /// Raw bytes in, the envelope out: encrypted unless the owner's policy says it need not be;
    /// `encrypt=true` forces it; `unmanaged=true` tags data of an account the policy does not
    /// manage.
    @Sendable func protect(_ request: Request, context: CustodyRequestContext) async throws -> Response {
        let parameters = try QueryParameters(
            request.uri, accepting: ["owner", "encrypt", "unmanaged"] + QueryParameters.context)
        let owner = try ServiceError.account(parameters["owner"], parameter: "owner", naming: "the data's owner")
        let encrypt = try parameters.flag("encrypt") ?? false
        let unmanaged = try parameters.flag("unmanaged") ?? false
        let evaluation = try parameters.evaluationContext(over: engine.context)
        guard !(encrypt && unmanaged) else {
            throw ServiceError.badParameter("unmanaged", "encrypt and unmanaged exclude each other")
        }
        let body = try await request.body.collect(upTo: limits.bodyBytes)
        let data = Array(buffer: body)
        guard !data.isEmpty else {
            throw ServiceError(.badRequest, .emptyData, "there is no data to protect: the body is empty")
        }
        let protected = try await StateExecutor.request {
            try await engine.protect(
                data, owner: owner, mode: encrypt ? .forceEncryption : unmanaged ? .unmanaged : .policy,
                context: evaluation)
        }
        return Response(
            status: .ok,
            headers: [
                .contentType: "application/octet-stream", .custodyOwner: protected.plan.owner.rawValue,
                .custodyEncrypted: protected.plan.encrypted ? "true" : "false",
            ],
            body: .init(byteBuffer: ByteBuffer(bytes: protected.envelope)))
    }

    /// An envelope in, its plaintext out; anything else (not an envelope, changed, truncated, a
    /// wiped owner) is a 422 naming why, with no plaintext.
    @Sendable func unprotect(_ request: Request, context: CustodyRequestContext) async throws -> Response {
        _ = try QueryParameters(request.uri, accepting: [])
        let body = try await request.body.collect(upTo: limits.bodyBytes + (1 << 16))
        let envelope = Array(buffer: body)
        let plaintext = try await StateExecutor.request { try await engine.unprotect(envelope, requireEnvelope: true) }
        let owner = (try? DataProtector.protectionInfo(envelope))??.owner.rawValue ?? ""
        return Response(
            status: .ok, headers: [.contentType: "application/octet-stream", .custodyOwner: owner],
            body: .init(byteBuffer: ByteBuffer(bytes: plaintext)))
    }

    /// Selective wipe, as `custody wipe`: the account's keys under every identifier it has or
    /// had, its secrets and check-ins. The body, when there is one, is `{"reason": "…"}`: why,
    /// audited with the token's name (the console asks for it).
    @Sendable func wipe(_ request: Request, context: CustodyRequestContext) async throws -> WipeAnswer {
        _ = try QueryParameters(request.uri, accepting: [])
        let body = Array(buffer: try await request.body.collect(upTo: limits.bodyBytes))
        let given = body.isEmpty ? nil : try BundleController.object(body, keys: ["reason"])["reason"]
        let account = try PolicyController.account(context)
        let via = "POST /v1/accounts/…/wipe (\(context.identity?.operatorName ?? "no token"))"
        let reason = given.map { "\($0.escapingControlCharacters) — \(via)" } ?? via
        let report = try await StateExecutor.run { try await engine.wipe(account: account, reason: reason) }
        return WipeAnswer(report, eventID: engine.lastEventID)
    }

    /// A new version of the account's key.
    @Sendable func rotate(_ request: Request, context: CustodyRequestContext) async throws -> KeyRotation {
        _ = try QueryParameters(request.uri, accepting: [])
        try await request.requireNoBody()
        let account = try PolicyController.account(context)
        return try await StateExecutor.run {
            try await engine.rotateKey(account: account, by: context.identity?.operatorName)
        }
    }
}

extension HTTPField.Name {
    static let custodyOwner = Self("Custody-Owner")!
    static let custodyEncrypted = Self("Custody-Encrypted")!
}
