import CustodyPolicy
import Crypto
import CustodyProtection
import CustodyStore
public import Foundation

/// What a bearer token of the decision service lets its holder do.
public enum TokenScope: String, Sendable, Hashable, CaseIterable, Comparable {
    /// Ask for decisions (`/v1/decisions`).
    case decide
    /// Read effective policies, app configuration and the bundle in force.
    case read
    /// Follow changes (`/v1/events`).
    case events
    /// Protect and unprotect data.
    case protect
    /// Everything, and the rest: wipes, key rotation, bundle updates.
    case admin

    public static func < (lhs: TokenScope, rhs: TokenScope) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}

/// A bearer token as the state knows it (never its secret).
public struct ServiceToken: Sendable, Hashable {
    /// The public part: names the token in lists and audits.
    public let id: String
    public let name: String?
    public let scopes: Set<TokenScope>
    public let created: Date
    public let revoked: Date?

    /// Whether the token grants `scope` (`admin` grants every scope).
    public func grants(_ scope: TokenScope) -> Bool {
        revoked == nil && (scopes.contains(scope) || scopes.contains(.admin))
    }
}

extension CustodyEngine {
    /// The prefix every token starts with: `custody_<id>_<secret>`.
    public static let tokenPrefix = "custody_"

    /// Creates a token with `scopes`. The returned text is the bearer token: the only time it
    /// exists outside its holder (the state keeps the SHA-256 of its secret part).
    public func createToken(scopes: Set<TokenScope>, name: String? = nil) throws(CustodyError) -> (token: ServiceToken, bearer: String) {
        guard !scopes.isEmpty else { throw CustodyError(.refused, "a token needs at least one scope (\(TokenScope.allCases.map(\.rawValue).joined(separator: ", ")))") }
        let id = Self.hex(SecureMemory.randomBytes(count: 8))
        var secret = SecureMemory.randomBytes(count: 32)
        defer { SecureMemory.zero(&secret) }
        let bearer = Self.tokenPrefix + id + "_" + Self.hex(secret)
        let record = TokenRecord(
            id: id, name: name, scopes: scopes.sorted().map(\.rawValue), hash: Array(SHA256.hash(data: Array(Self.hex(secret).utf8))),
            created: configuration.now())
        do {
            try database.addToken(record)
        } catch {
            throw CustodyError(.state, "\(error)", underlying: error)
        }
        return (Self.token(record), bearer)
    }

    /// Every token, valid and revoked, oldest first.
    public func tokens() throws(CustodyError) -> [ServiceToken] {
        do {
            return try database.tokens().map(Self.token)
        } catch {
            throw CustodyError(.state, "\(error)", underlying: error)
        }
    }

    /// Revokes a token; false when there is no valid token with that id. Servers sharing this
    /// state stop accepting it within a second.
    @discardableResult
    public func revokeToken(id: String) throws(CustodyError) -> Bool {
        do {
            return try database.revokeToken(id: id, at: configuration.now())
        } catch {
            throw CustodyError(.state, "\(error)", underlying: error)
        }
    }

    /// The valid token a bearer value names, or nil. The secret is compared in constant time;
    /// verified tokens are remembered for up to a second (or until any process creates or
    /// revokes a token).
    public func authenticate(bearer: String) -> ServiceToken? {
        tokenCache.authenticate(bearer, database: database)
    }

    static func token(_ record: TokenRecord) -> ServiceToken {
        ServiceToken(
            id: record.id, name: record.name, scopes: Set(record.scopes.compactMap(TokenScope.init(rawValue:))), created: record.created,
            revoked: record.revoked)
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}

/// Tokens verified recently, by their bearer value: a request costs one dictionary lookup (a
/// keyed hash with a per-process seed, so a caller cannot aim at an entry), not a database read
/// or a SHA-256. A token not in the cache is verified against the state in constant time.
final class TokenCache: Sendable {
    private struct State {
        var verified: [String: (token: ServiceToken, until: ContinuousClock.Instant)] = [:]
        var generation: Int64 = -1
        var nextCheck = ContinuousClock.now
    }

    private let state = Locked(State())
    private let lifetime: Duration = .seconds(1)

    /// Forgets every verified token (a token was created or revoked elsewhere).
    func forget() {
        state.withLock { $0 = State() }
    }

    func authenticate(_ bearer: String, database: any StateStore) -> ServiceToken? {
        guard bearer.hasPrefix(CustodyEngine.tokenPrefix), bearer.utf8.count == CustodyEngine.tokenPrefix.utf8.count + 16 + 1 + 64 else { return nil }
        let now = ContinuousClock.now
        // Forget everything when any process created or revoked a token since the last look.
        let due = state.withLock { $0.nextCheck <= now }
        if due, let generation = try? database.tokenGeneration() {
            state.withLock { state in
                if state.generation != generation { state.verified = [:] }
                state.generation = generation
                state.nextCheck = now + lifetime
            }
        }
        if let cached = state.withLock({ $0.verified[bearer] }), cached.until > now { return cached.token }
        let parts = bearer.dropFirst(CustodyEngine.tokenPrefix.count).split(separator: "_", omittingEmptySubsequences: false)
        guard parts.count == 2, let record = try? database.token(id: String(parts[0])), record.revoked == nil,
            SecureMemory.constantTimeEqual(Array(SHA256.hash(data: Array(parts[1].utf8))), record.hash)
        else { return nil }
        let token = CustodyEngine.token(record)
        state.withLock { state in
            if state.verified.count > 10_000 { state.verified = [:] }
            state.verified[bearer] = (token, now + lifetime)
        }
        return token
    }
}
