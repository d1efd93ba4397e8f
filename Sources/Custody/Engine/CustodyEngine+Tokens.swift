import CustodyPolicy
import Crypto
import CustodyProtection
import CustodyStore
import Logging
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
    /// When it stops being valid; nil: never.
    public let expires: Date?
    /// When it last authenticated a request, to within a minute; nil: never.
    public let lastUsed: Date?

    public init(
        id: String, name: String?, scopes: Set<TokenScope>, created: Date, revoked: Date? = nil, expires: Date? = nil,
        lastUsed: Date? = nil
    ) {
        self.id = id
        self.name = name
        self.scopes = scopes
        self.created = created
        self.revoked = revoked
        self.expires = expires
        self.lastUsed = lastUsed
    }

    /// Whether it has expired at `date`.
    public func isExpired(at date: Date) -> Bool { expires.map { $0 <= date } ?? false }

    /// The token as histories and audits name whoever used it: `token ID (NAME)`.
    public var operatorName: String { "token \(id)" + (name.map { " (\($0))" } ?? "") }

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
    /// - Parameter expires: when it stops being valid (nil: never); it must be later than now.
    public func createToken(scopes: Set<TokenScope>, name: String? = nil, expires: Date? = nil)
        async throws(CustodyError) -> CreatedToken
    {
        guard !scopes.isEmpty else {
            throw CustodyError(
                .refused,
                "a token needs at least one scope (\(TokenScope.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        let (record, created) = try newToken(scopes: scopes.sorted().map(\.rawValue), name: name, expires: expires)
        try await CustodyError.fromState { try await database.addToken(record) }
        return created
    }

    /// Issues a successor to the valid token `id`, with its scopes and name, and keeps `id`
    /// valid for `overlap` more (or until it expires, when that is sooner), so that its holders
    /// can move to the successor; audited. The successor lives as long as `id` was made to
    /// live (from now), unless `expires` says otherwise.
    /// - Returns: the successor, and when `id` stops being valid.
    /// - Throws: `CustodyError` `.notFound` when no valid token has that id, or it was rotated
    ///   already: a token has one successor, and rotating it twice would give its holders two.
    public func rotateToken(id: String, overlap: Duration, expires: Date? = nil) async throws(CustodyError)
        -> (successor: CreatedToken, predecessorExpires: Date)
    {
        let now = configuration.now()
        guard let old = try await CustodyError.fromState({ try await database.token(id: id) }), old.revoked == nil,
            !(old.expires.map { $0 <= now } ?? false)
        else { throw CustodyError(.notFound, "no valid token \(id)") }
        let lifetime = old.expires.map { $0.timeIntervalSince(old.created) }
        let (record, created) = try newToken(
            scopes: old.scopes, name: old.name, expires: expires ?? lifetime.map { now.addingTimeInterval($0) })
        guard overlap >= .zero, Double(overlap.components.seconds) <= Self.longestTokenLifetime else {
            throw CustodyError(.refused, "a rotation's overlap must be between 0 and ten years")
        }
        let until = min(
            now.addingTimeInterval(Double(overlap.components.seconds)), old.expires ?? .distantFuture)
        guard
            try await CustodyError.fromState({
                try await database.rotateToken(id: id, successor: record, expires: until)
            })
        else {
            throw CustodyError(
                .notFound, "no valid token \(id) that was not rotated already (rotate its successor instead)")
        }
        tokenCache.forget(ids: [id])
        return (created, until)
    }

    /// The longest a token may be made to live, and a rotation's overlap: ten years. A time
    /// further off is no expiry an operator means, and past year 9999 no state could store it.
    public static let longestTokenLifetime: TimeInterval = 10 * 366 * 86_400

    /// A new token's record (what the state keeps) and the token itself (shown once).
    private func newToken(scopes: [String], name: String?, expires: Date?) throws(CustodyError)
        -> (TokenRecord, CreatedToken)
    {
        let now = configuration.now()
        if let expires, expires <= now {
            throw CustodyError(
                .refused, "a token's expiry must be later than now (\(expires.formatted(.iso8601)) has passed)")
        }
        if let expires, expires.timeIntervalSince(now) > Self.longestTokenLifetime {
            throw CustodyError(
                .refused,
                "a token's expiry must be within ten years (\(expires.formatted(.iso8601)) is further); give none for a token that does not expire"
            )
        }
        let id = Self.hex(SecureMemory.randomBytes(count: 8))
        var secret = SecureMemory.randomBytes(count: 32)
        defer { SecureMemory.zero(&secret) }
        let bearer = Self.tokenPrefix + id + "_" + Self.hex(secret)
        let record = TokenRecord(
            id: id, name: name, scopes: scopes,
            hash: Array(SHA256.hash(data: Array(Self.hex(secret).utf8))),
            created: now, expires: expires)
        return (record, CreatedToken(token: Self.token(record), bearer: bearer))
    }

    /// Every token, valid and revoked, oldest first.
    public func tokens() async throws(CustodyError) -> [ServiceToken] {
        return try await CustodyError.fromState { try await database.tokens().map(Self.token) }
    }

    /// Revokes a token; false when there is no valid token with that id. This engine stops
    /// accepting it at once; others sharing the state as soon as the change reaches them (see
    /// `authenticate(bearer:)`).
    @discardableResult
    public func revokeToken(id: String) async throws(CustodyError) -> Bool {
        return try await CustodyError.fromState {
            defer { tokenCache.forget(ids: [id]) }
            return try await database.revokeToken(id: id, at: configuration.now())
        }
    }

    /// The valid token a bearer value names, or nil. The secret is compared in constant time.
    /// Verified tokens are remembered: while this engine follows the state's change log
    /// (`follow`), until a token is created or revoked anywhere (the log says so); otherwise
    /// for up to a second.
    /// - Throws: `CustodyError` `.state` when the token is not remembered and the state cannot
    ///   be read to verify it: it is neither accepted nor called invalid.
    public func authenticate(bearer: String) async throws(CustodyError) -> ServiceToken? {
        let following = isFollowing
        let found: ServiceToken?
        if following, let token = tokenCache.remembered(bearer) {
            found = token
        } else {
            // Not remembered: read from the state, on its threads.
            found = try await StateExecutor.run { () throws(CustodyError) in
                do {
                    return try await tokenCache.authenticate(bearer, database: database, following: following)
                } catch {
                    throw CustodyError(.state, "the token cannot be verified now: \(error)", underlying: error)
                }
            }
        }
        guard let found else { return nil }
        let now = configuration.now()
        // An expired token is refused from the instant it expires, remembered or not.
        guard !found.isExpired(at: now) else { return nil }
        if tokenUses.isDue(found.id, at: now) {
            let (database, logger) = (database, manager.logger)
            Task(executorPreference: StateExecutor.shared) {
                do {
                    try await database.recordTokenUse(id: found.id, at: now)
                } catch {
                    logger.debug(
                        "cannot record a token's use", metadata: ["token": "\(found.id)", "error": "\(error)"])
                }
            }
        }
        return found
    }

    /// Why the token `bearer` names is refused, for a bearer whose secret is right (so that
    /// nobody learns which tokens exist, and which were revoked or have expired, without
    /// holding one); nil otherwise. What a refusal tells the holder of such a token, instead of
    /// "no token".
    public func refusal(ofBearer bearer: String) async -> TokenRefusal? {
        guard bearer.hasPrefix(Self.tokenPrefix) else { return nil }
        let parts = bearer.dropFirst(Self.tokenPrefix.count).split(separator: "_", omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        let now = configuration.now()
        return await StateExecutor.run { () -> TokenRefusal? in
            let found = try? await database.token(id: String(parts[0]))
            let matches = SecureMemory.constantTimeEqual(
                Array(SHA256.hash(data: Array(parts[1].utf8))), found?.hash ?? CustodyEngine.noTokenHash)
            guard let record = found, matches else { return nil }
            if let revoked = record.revoked { return .revoked(at: revoked) }
            if let expires = record.expires, expires <= now { return .expired(at: expires) }
            return nil
        }
    }

    /// What a secret is compared with when no token has the id: 32 bytes no SHA-256 of a
    /// token's secret is known to give.
    static let noTokenHash = [UInt8](repeating: 0, count: 32)

    static func token(_ record: TokenRecord) -> ServiceToken {
        ServiceToken(
            id: record.id, name: record.name, scopes: Set(record.scopes.compactMap(TokenScope.init(rawValue:))),
            created: record.created, revoked: record.revoked, expires: record.expires, lastUsed: record.lastUsed)
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

/// Why a token whose secret is right is refused.
public enum TokenRefusal: Sendable, Hashable {
    case revoked(at: Date)
    case expired(at: Date)
}

/// When each token's use was last recorded in the state: at most once a minute per token, so
/// that `tokens list` can say when a token was last used without a write per request.
final class TokenUses: Sendable {
    static let interval: TimeInterval = 60
    private let recorded = Locked([String: Date]())

    /// Whether `id`'s use at `date` is to be recorded (and, if so, it is taken as recorded).
    func isDue(_ id: String, at date: Date) -> Bool {
        recorded.withLock { recorded in
            if let last = recorded[id], date.timeIntervalSince(last) < Self.interval { return false }
            if recorded.count > 10_000 { recorded = [:] }
            recorded[id] = date
            return true
        }
    }
}

/// Tokens verified recently, by their bearer value: a request costs one dictionary lookup (a
/// keyed hash with a per-process seed, so a caller cannot aim at an entry), not a database read
/// or a SHA-256. A token not in the cache is verified against the state in constant time.
///
/// While the engine follows the change log, a verified token stays verified until `forget()`
/// (a token change in the log), so requests never wait for the state. Otherwise entries live a
/// second, and the state's token generation is compared once a second.
final class TokenCache: Sendable {
    private struct State {
        var verified: [String: (token: ServiceToken, until: ContinuousClock.Instant?)] = [:]
        var generation: Int64 = -1
        var nextCheck = ContinuousClock.now
        /// Moves at every forgetting. A verification that read the state before its token (or
        /// every token) was forgotten must not be remembered after: it may have read a token
        /// since revoked.
        var epoch: UInt64 = 0
        var everythingForgottenAt: UInt64 = 0
        var forgottenAt: [String: UInt64] = [:]

        /// Whether a verification of `id` that began at `epoch` may be remembered.
        func mayRemember(_ id: String, readAt epoch: UInt64) -> Bool {
            everythingForgottenAt <= epoch && (forgottenAt[id] ?? 0) <= epoch
        }
    }

    private let state = Locked(State())
    private let lifetime: Duration = .seconds(1)

    /// Forgets every verified token.
    func forget() {
        state.withLock { state in
            let epoch = state.epoch &+ 1
            state = State(epoch: epoch, everythingForgottenAt: epoch)
        }
    }

    /// Forgets the tokens with these ids (one was revoked or created, here or elsewhere: a new
    /// token invalidates nothing, a revoked one only itself).
    func forget(ids: [String]) {
        let ids = Set(ids)
        state.withLock { state in
            state.epoch &+= 1
            state.verified = state.verified.filter { !ids.contains($0.value.token.id) }
            for id in ids { state.forgottenAt[id] = state.epoch }
            if state.forgottenAt.count > 10_000 {
                state.forgottenAt = [:]
                state.everythingForgottenAt = state.epoch
            }
        }
    }

    /// The token `bearer` names if it was verified and is kept without a time limit (while the
    /// engine follows the change log); nil otherwise. Never reads the state.
    func remembered(_ bearer: String) -> ServiceToken? {
        state.withLock { state in
            guard let cached = state.verified[bearer], cached.until == nil else { return nil }
            return cached.token
        }
    }

    /// The token `bearer` names if it is valid, else nil.
    /// - Throws: `StoreError` when it must be read from the state and cannot be.
    func authenticate(_ bearer: String, database: any StateStore, following: Bool) async throws(StoreError)
        -> ServiceToken?
    {
        guard bearer.hasPrefix(CustodyEngine.tokenPrefix),
            bearer.utf8.count == CustodyEngine.tokenPrefix.utf8.count + 16 + 1 + 64
        else { return nil }
        let now = ContinuousClock.now
        if !following {
            // Forget everything when any process created or revoked a token since the last look
            // (entries expire within a second anyway, so a generation that cannot be read waits).
            let due = state.withLock { $0.nextCheck <= now }
            if due, let generation = try? await database.tokenGeneration() {
                state.withLock { state in
                    if state.generation != generation {
                        let epoch = state.epoch &+ 1
                        state = State(generation: generation, epoch: epoch, everythingForgottenAt: epoch)
                    }
                    state.nextCheck = now + lifetime
                }
            }
        }
        let (cached, epoch) = state.withLock { ($0.verified[bearer], $0.epoch) }
        if let cached, cached.until.map({ $0 > now }) ?? true { return cached.token }
        let parts = bearer.dropFirst(CustodyEngine.tokenPrefix.count).split(
            separator: "_", omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        // The same work whether the id exists or not (the secret hashed and compared, against
        // a hash no secret has when there is no such token), so that the time an answer takes
        // does not tell which token ids exist.
        let found = try await database.token(id: String(parts[0]))
        let matches = SecureMemory.constantTimeEqual(
            Array(SHA256.hash(data: Array(parts[1].utf8))), found?.hash ?? CustodyEngine.noTokenHash)
        guard let record = found, matches, record.revoked == nil else { return nil }
        let token = CustodyEngine.token(record)
        state.withLock { state in
            guard state.mayRemember(token.id, readAt: epoch) else { return }
            if state.verified.count > 10_000 { state.verified = [:] }
            state.verified[bearer] = (token, following ? nil : now + lifetime)
        }
        return token
    }
}
