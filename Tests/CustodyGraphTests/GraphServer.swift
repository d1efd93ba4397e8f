import CustodyGraph
import CustodyTestSupport
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JWTKit
import NIOCore
import SwiftASN1
import X509
import Synchronization

/// A tenant as the Graph-shaped server holds it.
struct FakeTenant: Sendable {
    enum Member: Sendable {
        case user(id: String, upn: String)
        case group(String)
        case device(String)
    }

    /// Policies by collection (`iosManagedAppProtections`, ...): Graph objects with their apps
    /// and assignments.
    var policies: [String: [GraphJSON]] = [:]
    /// Direct members of each group.
    var groups: [String: [Member]] = [:]
    var users: [(id: String, upn: String)] = []
    /// Users holding no Intune license (`/users` lists their plans without the `SCO` service);
    /// the others hold one. Nil: `/users` lists no plans (an app with User.ReadBasic.All).
    var unlicensed: Set<String>? = []
    /// Users whose account is disabled in Entra ID (`accountEnabled: false`).
    var disabled: Set<String> = []
    /// Items every later round of `/users/delta` adds, as they are (hostile or odd answers).
    var extraUserDelta: [GraphJSON] = []
    /// Assignment filters (`/deviceManagement/assignmentFilters`).
    var filters: [GraphJSON] = []

    /// Delta queries: every change made through `change(group:_:)` and `rename(user:to:)`,
    /// numbered; a delta link holds the number it was made at. Links older than
    /// `oldestDelta` are answered `410 syncStateNotFound`.
    var version = 0
    var groupChanges: [(version: Int, group: String)] = []
    var userChanges: [(version: Int, id: String)] = []
    var oldestDelta = 0

    /// Changes a group's direct members, as `/groups/delta` reports it.
    mutating func change(group: String, _ body: (inout [Member]) -> Void) {
        version += 1
        body(&groups[group, default: []])
        groupChanges.append((version, group))
    }

    /// Renames a user everywhere, as `/users/delta` reports it.
    mutating func rename(user id: String, to upn: String) {
        version += 1
        for (group, members) in groups {
            groups[group] = members.map { member in
                if case .user(id, _) = member { return .user(id: id, upn: upn) }
                return member
            }
        }
        userChanges.append((version, id))
    }

    /// Takes a user's Intune license away (or gives it back), as `/users/delta` reports it.
    mutating func license(user id: String, _ licensed: Bool) {
        version += 1
        if licensed { unlicensed?.remove(id) } else { unlicensed?.insert(id) }
        userChanges.append((version, id))
    }

    /// Disables a user's account, as `/users/delta` reports it.
    mutating func disable(user id: String) {
        version += 1
        disabled.insert(id)
        userChanges.append((version, id))
    }

    /// A user as `/users` and `/users/delta` list it: its UPN (when it has one), account state
    /// and service plans (when the tenant records licenses).
    func userObject(id: String, upn: String) -> GraphJSON {
        var members: [String: GraphJSON] = ["id": .string(id)]
        if !upn.isEmpty { members["userPrincipalName"] = .string(upn) }
        members["accountEnabled"] = .bool(!disabled.contains(id))
        if let unlicensed {
            let exchange: GraphJSON = .object([
                "service": .string("exchange"), "capabilityStatus": .string("Enabled"),
            ])
            let intune: GraphJSON = .object(["service": .string("SCO"), "capabilityStatus": .string("Enabled")])
            members["assignedPlans"] = .array(unlicensed.contains(id) ? [exchange] : [exchange, intune])
        }
        return .object(members)
    }

    /// Every user `/users` lists: `users` as they are (a test may list one twice), then every
    /// other user member of a group (as the groups hold its UPN), once each.
    var listedUsers: [(id: String, upn: String)] {
        var seen = Set<String>()
        var result: [(id: String, upn: String)] = []
        for user in users {
            seen.insert(user.id)
            result.append((user.id, upn(of: user.id) ?? user.upn))
        }
        for group in groups.keys.sorted() {
            for case .user(let id, let upn) in groups[group]! where seen.insert(id).inserted {
                result.append((id, upn))
            }
        }
        return result
    }

    /// A user's UPN as the groups hold it.
    func upn(of id: String) -> String? {
        for members in groups.values {
            for case .user(id, let upn) in members { return upn }
        }
        return nil
    }

    /// A group's users through nested groups (devices and groups are not listed by the cast).
    func transitiveUsers(of group: String, seen: Set<String> = []) -> [(id: String, upn: String)] {
        var result: [(id: String, upn: String)] = []
        for member in groups[group] ?? [] {
            switch member {
            case .user(let id, let upn): result.append((id, upn))
            case .group(let nested) where !seen.contains(nested):
                result += transitiveUsers(of: nested, seen: seen.union([group]))
            default: break
            }
        }
        var unique = Set<String>()
        return result.filter { unique.insert($0.id).inserted }
    }

    /// Every direct and nested member, of every kind (what a server that ignores the cast lists).
    func transitiveMembers(of group: String, seen: Set<String> = []) -> [GraphJSON] {
        var result: [GraphJSON] = []
        for member in groups[group] ?? [] {
            switch member {
            case .user(let id, let upn):
                var member: [String: GraphJSON] = ["@odata.type": .string("#microsoft.graph.user"), "id": .string(id)]
                if !upn.isEmpty { member["userPrincipalName"] = .string(upn) }
                result.append(.object(member))
            case .device(let id):
                result.append(.object(["@odata.type": .string("#microsoft.graph.device"), "id": .string(id)]))
            case .group(let nested):
                result.append(.object(["@odata.type": .string("#microsoft.graph.group"), "id": .string(nested)]))
                if !seen.contains(nested) { result += transitiveMembers(of: nested, seen: seen.union([group])) }
            }
        }
        return result
    }
}

/// How the server behaves, beyond serving the tenant.
struct ServerBehaviour: Sendable {
    var clientID = "client-1"
    var secret = "s3cret-value"
    /// The certificate whose key may sign client assertions (DER, for its thumbprint; PEM).
    var certificatePEM: String?
    var tokenLifetime = 3_600
    /// Items per page of each listing; paging by `$skiptoken` (opaque) or `$skip` (offset).
    var pageSize = 999
    var skipPaging = false
    /// Listings answer without the `$expand`ed apps and assignments.
    var ignoresExpand = false
    /// Before the last page of each listing, an empty page with a nextLink.
    var emptyPageBeforeLast = false
    /// Delta links to this origin instead of the server's own (a Graph that should not).
    var deltaLinkOrigin: String?
    /// An `$expand`ed navigation holds at most this many items, with `{navigation}@odata.nextLink`.
    var expandPageSize: Int?
}

/// Answers to give instead of the real one: the first request whose path holds `pathContains`
/// takes the next answer of the list (status, headers).
struct Fault: Sendable {
    let pathContains: String
    var answers: [(status: Int, headers: [(String, String)])]
    /// Or: every matching request stalls this long first.
    var stall: Duration? = nil
    /// Or: every matching request is answered 200 with a body of `Content-Length: 64` sent a
    /// byte at a time, this long apart (a server that keeps a request alive without end).
    var drip: Duration? = nil
    /// Or: every matching request waits until the test removes this fault, so what happens
    /// meanwhile does not race a clock.
    var held = false
}

/// A Microsoft Graph-shaped server on loopback: the token endpoint and the listings Custody
/// reads, with paging, throttling and faults on request. Counts the requests it answers.
final class GraphServer: Sendable {
    struct State: Sendable {
        var tenant: FakeTenant
        var behaviour: ServerBehaviour
        var faults: [Fault] = []
        var tokens: [String: ContinuousClock.Instant] = [:]
        var requests: [String] = []
        var tokenRequests = 0
        /// Token requests being answered now, and the most there ever were at once.
        var tokensInFlight = 0
        var mostTokensInFlight = 0
        /// The `client-request-id` of every request, Graph's and the token service's.
        var clientRequestIDs: [String?] = []
        /// The JOSE header of each client assertion received.
        var assertionHeaders: [GraphJSON] = []
        var port = 0
        /// Called with each Graph request's path before it is answered (to change the tenant
        /// between pages, say).
        var onRequest: (@Sendable (String, inout FakeTenant) -> Void)? = nil
    }

    let state: Mutex<State>

    init(tenant: FakeTenant, behaviour: ServerBehaviour = ServerBehaviour()) {
        state = Mutex(State(tenant: tenant, behaviour: behaviour))
    }

    var requests: [String] { state.withLock { $0.requests } }
    var graphRequests: Int { state.withLock { $0.requests.count } }

    /// Runs `body` with the server listening; its base URL is `http://127.0.0.1:PORT`.
    func serving(_ body: @escaping @Sendable (String) async throws -> Void) async throws {
        let router = Router()
        router.post("/:tenant/oauth2/v2.0/token") { request, context in try await self.token(request, context) }
        router.get("/beta/**") { request, context in try await self.graph(request, context) }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in
            let port = client.port!
            self.state.withLock { $0.port = port }
            try await body("http://127.0.0.1:\(port)")
        }
    }

    // MARK: Tokens

    func token(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let body = try await request.body.collect(upTo: 1 << 20)
        let form = Dictionary(
            String(buffer: body).split(separator: "&").map { pair -> (String, String) in
                let parts = pair.split(separator: "=", maxSplits: 1).map {
                    String($0).removingPercentEncoding ?? String($0)
                }
                return (parts[0], parts.count > 1 ? parts[1] : "")
            }, uniquingKeysWith: { $1 })
        let path = request.uri.string
        let (behaviour, fault, stall): (ServerBehaviour, (Int, [(String, String)])?, Duration?) = state.withLock {
            state in
            state.tokenRequests += 1
            state.tokensInFlight += 1
            state.mostTokensInFlight = max(state.mostTokensInFlight, state.tokensInFlight)
            state.clientRequestIDs.append(request.headers[HTTPField.Name("client-request-id")!])
            var answer: (Int, [(String, String)])?
            var stall: Duration?
            if let index = state.faults.firstIndex(where: { path.contains($0.pathContains) }) {
                if let delay = state.faults[index].stall {
                    stall = delay
                } else if !state.faults[index].answers.isEmpty {
                    let next = state.faults[index].answers.removeFirst()
                    answer = (next.status, next.headers)
                }
            }
            return (state.behaviour, answer, stall)
        }
        defer { state.withLock { $0.tokensInFlight -= 1 } }
        if let stall { try await Task.sleep(for: stall) }
        if let (status, headers) = fault {
            var response = Self.json(
                status,
                .object([
                    "error": .string(status == 429 ? "temporarily_unavailable" : "server_error"),
                    "error_description": .string("AADSTS90033: A transient error has occurred. Please try again."),
                ]))
            for (name, value) in headers { response.headers[HTTPField.Name(name)!] = value }
            // The token service names its answers x-ms-request-id.
            response.headers[HTTPField.Name("request-id")!] = nil
            response.headers[HTTPField.Name("x-ms-request-id")!] = "token-request-\(UUID().uuidString)"
            return response
        }
        func refuse(_ error: String, _ description: String) -> Response {
            Self.json(400, .object(["error": .string(error), "error_description": .string(description)]))
        }
        guard form["grant_type"] == "client_credentials", form["client_id"] == behaviour.clientID,
            form["scope"]?.hasSuffix("/.default") == true
        else {
            return refuse(
                "invalid_request", "AADSTS900144: The request body must contain the following parameter: 'grant_type'.")
        }
        if let assertion = form["client_assertion"] {
            guard form["client_assertion_type"] == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
                let pem = behaviour.certificatePEM
            else {
                return refuse("invalid_client", "AADSTS700027: Client assertion failed signature validation.")
            }
            do {
                // The header, as the token service reads it: base64url JSON before the first dot.
                var encoded = String(assertion.prefix { $0 != "." }).replacingOccurrences(of: "-", with: "+")
                    .replacingOccurrences(of: "_", with: "/")
                while encoded.count % 4 != 0 { encoded += "=" }
                let header = try JSONDecoder().decode(GraphJSON.self, from: Data(base64Encoded: encoded) ?? Data())
                state.withLock { $0.assertionHeaders.append(header) }
                // PS256 names the certificate by its SHA-256 thumbprint, RS256 by its SHA-1 one.
                let publicKey = try Insecure.RSA.PublicKey(certificatePEM: pem)
                let pss = header["alg"]?.string == "PS256"
                let keys =
                    pss
                    ? await JWTKeyCollection().add(pss: publicKey, digestAlgorithm: .sha256)
                    : await JWTKeyCollection().add(rsa: publicKey, digestAlgorithm: .sha256)
                let payload = try await keys.verify(assertion, as: Assertion.self)
                let certificate = try Certificate(pemEncoded: pem)
                var serializer = DER.Serializer()
                try serializer.serialize(certificate)
                let digest =
                    pss
                    ? Data(SHA256.hash(data: serializer.serializedBytes))
                    : Data(Insecure.SHA1.hash(data: serializer.serializedBytes))
                let thumbprint = digest.base64EncodedString()
                    .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                    .replacingOccurrences(of: "=", with: "")
                guard payload.iss.value == behaviour.clientID, payload.sub.value == behaviour.clientID,
                    payload.aud.value.contains(where: { $0.hasSuffix("/oauth2/v2.0/token") }),
                    header[pss ? "x5t#S256" : "x5t"]?.string == thumbprint
                else {
                    return refuse("invalid_client", "AADSTS700027: Client assertion contains an invalid claim.")
                }
            } catch {
                return refuse("invalid_client", "AADSTS700027: Client assertion failed signature validation.")
            }
        } else if form["client_secret"] != behaviour.secret {
            return Self.json(
                401,
                .object([
                    "error": .string("invalid_client"),
                    "error_description": .string("AADSTS7000215: Invalid client secret provided."),
                ]))
        }
        let token = "token-\(UUID().uuidString)"
        state.withLock { $0.tokens[token] = .now + .seconds(behaviour.tokenLifetime) }
        return Self.json(
            200,
            .object([
                "token_type": .string("Bearer"), "expires_in": .integer(Int64(behaviour.tokenLifetime)),
                "access_token": .string(token),
            ]))
    }

    struct Assertion: JWTPayload {
        let aud: AudienceClaim
        let iss: IssuerClaim
        let sub: SubjectClaim
        let exp: ExpirationClaim
        func verify(using algorithm: some JWTAlgorithm) async throws { try exp.verifyNotExpired() }
    }

    // MARK: Graph

    func graph(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let path = request.uri.path
        let full = request.uri.string
        let bearer = request.headers[.authorization].flatMap { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil }
        let drip = state.withLock { state in state.faults.first { full.contains($0.pathContains) }?.drip }
        if let drip {
            state.withLock { $0.requests.append(full) }
            return Response(
                status: .ok, headers: [.contentType: "application/json", .contentLength: "64"],
                body: ResponseBody { writer in
                    for _ in 0..<64 {
                        try await writer.write(ByteBuffer(string: " "))
                        try await Task.sleep(for: drip)
                    }
                    try await writer.finish(nil)
                })
        }
        let (valid, fault, stall, held): (Bool, (Int, [(String, String)])?, Duration?, Bool) = state.withLock {
            state in
            state.requests.append(full)
            state.clientRequestIDs.append(request.headers[HTTPField.Name("client-request-id")!])
            let valid = bearer.flatMap { state.tokens[$0] }.map { ContinuousClock.now < $0 } ?? false
            var answer: (Int, [(String, String)])?
            var stall: Duration?
            var held = false
            if let index = state.faults.firstIndex(where: { full.contains($0.pathContains) }) {
                if state.faults[index].held {
                    held = true
                } else if let delay = state.faults[index].stall {
                    stall = delay
                } else if !state.faults[index].answers.isEmpty {
                    let next = state.faults[index].answers.removeFirst()
                    answer = (next.status, next.headers)
                }
            }
            if let onRequest = state.onRequest { onRequest(full, &state.tenant) }
            return (valid, answer, stall, held)
        }
        if let stall { try await Task.sleep(for: stall) }
        while held, state.withLock({ $0.faults.contains { $0.held && full.contains($0.pathContains) } }) {
            try await Task.sleep(for: .milliseconds(10))
        }
        guard valid else {
            return Self.json(
                401,
                .object([
                    "error": .object([
                        "code": .string("InvalidAuthenticationToken"),
                        "message": .string("Access token has expired or is not yet valid."),
                    ])
                ]))
        }
        if let (status, headers) = fault {
            var response = Self.json(
                status,
                .object([
                    "error": .object([
                        "code": .string(status == 429 ? "TooManyRequests" : "ServiceUnavailable"),
                        "message": .string("injected"),
                    ])
                ]))
            for (name, value) in headers { response.headers[HTTPField.Name(name)!] = value }
            return response
        }
        let (tenant, behaviour, port) = state.withLock { ($0.tenant, $0.behaviour, $0.port) }
        let parts = path.split(separator: "/").map(String.init)  // beta, ...
        let query = request.uri.queryParameters
        let items: [GraphJSON]
        switch Array(parts.dropFirst()) {
        case ["deviceAppManagement", "managedAppPolicies"]:
            // Polymorphic: every collection's policies, typed, without navigations; and the
            // policies only this listing holds (retired and future types).
            items =
                tenant.policies.filter { $0.key != "managedAppPolicies" }.sorted { $0.key < $1.key }
                .flatMap { collection, policies in
                    policies.map { policy -> GraphJSON in
                        guard case .object(var members) = policy else { return policy }
                        members["apps"] = nil
                        members["assignments"] = nil
                        if members["@odata.type"] == nil {
                            members["@odata.type"] = .string("#microsoft.graph.\(collection.dropLast())")
                        }
                        return .object(members)
                    }
                } + (tenant.policies["managedAppPolicies"] ?? [])
        case let p where p.count == 2 && p[0] == "deviceAppManagement":
            let expand = (query["$expand"].map(String.init) ?? "").split(separator: ",").map(String.init)
            items = (tenant.policies[p[1]] ?? []).map { policy in
                guard case .object(var members) = policy else { return policy }
                for navigation in ["apps", "assignments"] where behaviour.ignoresExpand || !expand.contains(navigation)
                {
                    members[navigation] = nil
                }
                if let size = behaviour.expandPageSize {
                    for navigation in ["apps", "assignments"] {
                        guard let list = members[navigation]?.array, list.count > size else { continue }
                        members[navigation] = .array(Array(list.prefix(size)))
                        members["\(navigation)@odata.nextLink"] = .string(
                            "http://127.0.0.1:\(port)/beta/deviceAppManagement/\(p[1])/\(members["id"]?.string ?? "")/\(navigation)?$skiptoken=cursor-x"
                        )
                    }
                }
                return .object(members)
            }
        case let p where p.count == 4 && p[0] == "deviceAppManagement":
            guard let policy = tenant.policies[p[1]]?.first(where: { $0["id"]?.string == p[2] }) else {
                return Self.json(
                    404,
                    .object([
                        "error": .object(["code": .string("ResourceNotFound"), "message": .string("no such policy")])
                    ]))
            }
            items = policy[p[3]]?.array ?? []
        case let p
        where p.count == 4 && p[0] == "groups" && p[2] == "transitiveMembers" && p[3] == "microsoft.graph.user":
            guard tenant.groups[p[1]] != nil else {
                return Self.json(
                    404,
                    .object([
                        "error": .object([
                            "code": .string("Request_ResourceNotFound"),
                            "message": .string("Resource '\(p[1])' does not exist"),
                        ])
                    ]))
            }
            items = tenant.transitiveUsers(of: p[1]).map {
                $0.upn.isEmpty
                    ? .object(["id": .string($0.id)])
                    : .object(["id": .string($0.id), "userPrincipalName": .string($0.upn)])
            }
        case let p where p.count == 3 && p[0] == "groups" && p[2] == "transitiveMembers":
            guard tenant.groups[p[1]] != nil else {
                return Self.json(
                    404,
                    .object([
                        "error": .object([
                            "code": .string("Request_ResourceNotFound"),
                            "message": .string("Resource '\(p[1])' does not exist"),
                        ])
                    ]))
            }
            var unique = Set<String>()
            items = tenant.transitiveMembers(of: p[1]).filter { unique.insert($0["id"]?.string ?? "").inserted }
        case let p where p.count == 2 && p[1] == "delta" && ["groups", "users"].contains(p[0]):
            let parameters = Dictionary(
                query.map { (String($0.key), String($0.value)) }, uniquingKeysWith: { first, _ in first })
            return delta(of: p[0], query: parameters, tenant: tenant, port: port)
        case let p where p == ["users"]:
            items = tenant.listedUsers.map { tenant.userObject(id: $0.id, upn: $0.upn) }
        case let p where p == ["deviceManagement", "assignmentFilters"]:
            items = tenant.filters
        default:
            return Self.json(
                400,
                .object([
                    "error": .object([
                        "code": .string("BadRequest"),
                        "message": .string("Resource not found for the segment '\(path)'."),
                    ])
                ]))
        }
        // Paging: which items this page holds, and the link to the next.
        // `$skiptoken` is a cursor, as Graph's is: the id of the last item given, the next
        // page starting after it in id order (an item deleted meanwhile shifts nothing).
        // `$skip` is an offset.
        let ordered =
            behaviour.skipPaging ? items : items.sorted { ($0["id"]?.string ?? "") < ($1["id"]?.string ?? "") }
        let offset: Int
        if let token = query["$skiptoken"] {
            let after = String(token).dropFirst("cursor-".count)
            offset = ordered.firstIndex { ($0["id"]?.string ?? "") > after } ?? ordered.count
        } else {
            offset = query["$skip"].flatMap { Int(String($0)) } ?? 0
        }
        let emptyPage = query["empty"] == "1"
        let size = max(1, min(behaviour.pageSize, query["$top"].flatMap { Int(String($0)) } ?? behaviour.pageSize))
        let page = emptyPage ? [] : Array(ordered.dropFirst(offset).prefix(size))
        var base = URLComponents(string: "http://127.0.0.1:\(port)\(path)")!
        base.queryItems = request.uri.queryParameters.filter {
            !["$skiptoken", "$skip", "empty"].contains(String($0.key))
        }
        .map { URLQueryItem(name: String($0.key), value: String($0.value)) }.sorted { $0.name < $1.name }
        var next: String?
        let end = offset + page.count
        // The position to go on from: an offset, or the cursor after the last item given.
        func position(_ index: Int) -> String {
            behaviour.skipPaging ? "\(index)" : (index == 0 ? "" : ordered[index - 1]["id"]?.string ?? "")
        }
        if emptyPage {
            next = link(base, position: position(offset), behaviour: behaviour, empty: false)
        } else if end < ordered.count {
            let last = end + size >= ordered.count
            next = link(
                base, position: position(end), behaviour: behaviour, empty: behaviour.emptyPageBeforeLast && last)
        }
        var body: [String: GraphJSON] = [
            "@odata.context": .string("https://graph.microsoft.com/beta/$metadata#\(path)"), "value": .array(page),
        ]
        if let next { body["@odata.nextLink"] = .string(next) }
        return Self.json(200, .object(body))
    }

    /// A round of `/groups/delta` or `/users/delta`: `$deltatoken=latest` gives a link and no
    /// data; a link's token gives the groups (among those its filter named) or users changed
    /// since it was made, and a link for now. Not paged.
    private func delta(of collection: String, query: [String: String], tenant: FakeTenant, port: Int) -> Response {
        var ids: [String] = []
        if let listed = query["ids"] {
            ids = listed.split(separator: ",").map(String.init)
        } else if let filter = query["$filter"] {
            // id eq 'a' or id eq 'b' → a, b
            ids = filter.split(separator: "'", omittingEmptySubsequences: false).enumerated().filter {
                $0.offset % 2 == 1
            }.map { String($0.element) }
        }
        var changed: [GraphJSON] = []
        if let token = query["$deltatoken"], token != "latest" {
            guard let since = Int(token), since >= tenant.oldestDelta else {
                return Self.json(
                    410,
                    .object([
                        "error": .object([
                            "code": .string("syncStateNotFound"),
                            "message": .string("The sync state is no longer available."),
                        ])
                    ]))
            }
            if collection == "groups" {
                let groups = Set(
                    tenant.groupChanges.filter { $0.version > since && ids.contains($0.group) }.map(\.group))
                changed = groups.sorted().map { .object(["id": .string($0), "members@delta": .array([])]) }
            } else {
                let users = Set(tenant.userChanges.filter { $0.version > since }.map(\.id))
                changed =
                    users.sorted().map { id in
                        tenant.upn(of: id).map { tenant.userObject(id: id, upn: $0) }
                            ?? .object(["id": .string(id), "@removed": .object(["reason": .string("deleted")])])
                    } + tenant.extraUserDelta
            }
        }
        let origin = state.withLock { $0.behaviour.deltaLinkOrigin } ?? "http://127.0.0.1:\(port)"
        var link = URLComponents(string: "\(origin)/beta/\(collection)/delta")!
        link.queryItems =
            [URLQueryItem(name: "$deltatoken", value: "\(tenant.version)")]
            + (ids.isEmpty ? [] : [URLQueryItem(name: "ids", value: ids.joined(separator: ","))])
        return Self.json(200, .object(["value": .array(changed), "@odata.deltaLink": .string(link.string!)]))
    }

    private func link(_ base: URLComponents, position: String, behaviour: ServerBehaviour, empty: Bool) -> String {
        var components = base
        var items = components.queryItems ?? []
        items.append(
            behaviour.skipPaging
                ? URLQueryItem(name: "$skip", value: position)
                : URLQueryItem(name: "$skiptoken", value: "cursor-\(position)"))
        if empty { items.append(URLQueryItem(name: "empty", value: "1")) }
        components.queryItems = items
        return components.string!
    }

    static func json(_ status: Int, _ value: GraphJSON) -> Response {
        let bytes = (try? JSONEncoder().encode(value)) ?? Data()
        // Graph names every answer (`request-id`), as Microsoft's services do.
        return Response(
            status: HTTPResponse.Status(code: status),
            headers: [.contentType: "application/json", HTTPField.Name("request-id")!: UUID().uuidString.lowercased()],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}
