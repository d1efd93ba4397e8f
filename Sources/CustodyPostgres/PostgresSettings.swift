public import CustodyStore
import Foundation
import NIOSSL
public import PostgresNIO

/// Where a PostgreSQL state lives, parsed from a `postgres://` URL.
///
/// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?schema=NAME&sslmode=MODE&host=SOCKETDIR]`
/// - `schema` (default `custody`): the schema Custody's tables live in, created on first use.
///   Several installations can share one database under different schemas; each has its own
///   change channel.
/// - `sslmode`: `disable`, `prefer` (the default, as libpq's) or `require` (TLS with the
///   server's certificate verified against the system's trust roots; stricter than libpq's
///   `require`, which does not verify).
/// - `host` as a query parameter: a directory holding the server's Unix socket, as libpq reads
///   it (the URL's host is then empty: `postgres://custody@/custody?host=/run/postgresql`).
public struct PostgresSettings: Sendable {
    public var configuration: PostgresConnection.Configuration
    /// The schema Custody's tables live in.
    public var schema: String
    /// The URL without its password: what messages name.
    public var redacted: String
    /// How long one statement may take, on the server and as the client waits for it.
    public var statementTimeout: Duration = .seconds(30)
    /// How long a write transaction may take from its first statement to its commit, as the
    /// replica itself enforces it: past it, no further statement and no `COMMIT` is sent, the
    /// connection is closed (the server rolls the transaction back) and the write fails
    /// `unavailable` saying that nothing was changed; a `COMMIT` sent in time whose answer does
    /// not come within it fails `outcomeUnknown`. A replica on a slow link thus holds the
    /// change counter's lock no longer than this, and a write that outlives it never commits.
    /// `?transaction_timeout=SECONDS` in the URL (1 to 300) sets it.
    public var transactionTimeout: Duration = .seconds(30)
    /// How long a request may wait for the state, from asking for a connection to its last
    /// answer: an account key or the key generation (protect, unprotect), an account's first
    /// registration and first key, an audited decision's entry. Past it the call gives up with
    /// `unavailable` (a write rolled back, or `outcomeUnknown` for a `COMMIT` sent in time), so a
    /// replica on a slow link answers its own callers `503 state` within this, rather than each
    /// waiting for the statement deadline. Not an outage: the state may answer, only too slowly.
    /// `?request_timeout=SECONDS` in the URL (1 to 300) sets it.
    public var requestTimeout: Duration = .seconds(3)
    /// How long a statement may wait for a lock (the change counter's, say) before it fails:
    /// shorter than the statement timeout, so that a writer held up by another is told so
    /// (`unavailable`) rather than stalling.
    public static let lockTimeout: Duration = .seconds(10)
    /// How long the server keeps a session that sits in a transaction without sending its next
    /// statement before it ends it and rolls back: a replica cut off in the middle of a write
    /// holds its locks (every other replica's writes wait on them) for at most this long.
    /// Custody's transactions never pause between statements.
    public static let idleInTransactionTimeout: Duration = .seconds(5)
    /// TCP keepalives on the server's side of each session (idle seconds, interval, count):
    /// a peer that vanished without closing is found within about 25 s even outside a
    /// transaction.
    public static let serverKeepalives = (idle: 10, interval: 5, count: 3)
    /// The `application_name` its connections carry (`pg_stat_activity`); the listener's is
    /// this name followed by " listener".
    public var applicationName: String
    /// Connections kept for queries (the listener has its own).
    public var maximumConnections = 8
    /// How often the listening connection is asked for the newest revision: its heartbeat,
    /// which finds a connection that went silent (a network that drops packets never closes
    /// it) and tells that the state answers.
    public var heartbeatInterval: Duration = .seconds(1)
    /// How long the listening connection may take to answer a heartbeat before it counts as
    /// lost (and is closed and made again).
    public var heartbeatTimeout: Duration = .seconds(2)
    /// Once the state is found unreachable (a connection cannot be made, a call or heartbeat
    /// times out), calls fail at once with `unavailable` instead of each waiting for its own
    /// deadline, and the first answer ends the outage. Where no listener tries again (see
    /// `PostgresState.changeNotifications`), one call is let through this long after the last
    /// attempt failed.
    public var retryInterval: Duration = .seconds(1)

    /// The whole number of seconds from 1 to 300 the URL's parameter `name` gives, if any.
    private static func seconds(_ query: [String: String], _ name: String) throws(StoreError) -> Duration? {
        guard let text = query[name] else { return nil }
        guard let seconds = Int(text), (1...300).contains(seconds) else {
            throw StoreError(.open, "\(name) in the state URL must be a whole number of seconds from 1 to 300")
        }
        return .seconds(seconds)
    }

    /// Parses `url`.
    /// - Throws: `StoreError` `.open` naming what is wrong with it.
    public init(url: String) throws(StoreError) {
        guard let components = URLComponents(string: url), let scheme = components.scheme,
            ["postgres", "postgresql"].contains(scheme)
        else {
            throw StoreError(.open, "not a PostgreSQL URL (postgres://USER@HOST:PORT/DATABASE): \(Self.redact(url))")
        }
        let items = (components.queryItems ?? []).map { ($0.name, $0.value ?? "") }
        // A parameter given twice would leave which value applies to a guess.
        if let repeated = Dictionary(grouping: items.map(\.0), by: { $0 }).first(where: { $0.value.count > 1 })?.key {
            throw StoreError(.open, "the parameter \"\(repeated)\" is given more than once in the state URL")
        }
        let query = Dictionary(items, uniquingKeysWith: { $1 })
        let known: Set<String> = [
            "schema", "sslmode", "host", "application_name", "transaction_timeout", "request_timeout",
        ]
        // (application_name: what its connections are called in pg_stat_activity.)
        if let unknown = query.keys.filter({ !known.contains($0) }).sorted().first {
            throw StoreError(
                .open,
                "unknown parameter \"\(unknown)\" in the state URL (known: \(known.sorted().joined(separator: ", ")))")
        }
        // Percent-decoded once, here, from the text as written (`user`, `password` and `path`
        // would be decoded already: decoding those again turned a password's "%2541" into "A").
        guard let user = components.percentEncodedUser.flatMap({ $0.removingPercentEncoding }), !user.isEmpty
        else {
            throw StoreError(.open, "the state URL names no user (postgres://USER@HOST/DATABASE): \(Self.redact(url))")
        }
        let password = components.percentEncodedPassword.flatMap { $0.removingPercentEncoding }
        let encodedPath = components.percentEncodedPath
        let path = encodedPath.hasPrefix("/") ? String(encodedPath.dropFirst()) : encodedPath
        guard !path.isEmpty, !path.contains("/"), let database = path.removingPercentEncoding, !database.isEmpty
        else {
            throw StoreError(
                .open, "the state URL names no database (postgres://USER@HOST/DATABASE): \(Self.redact(url))")
        }
        if let seconds = try Self.seconds(query, "transaction_timeout") { transactionTimeout = seconds }
        if let seconds = try Self.seconds(query, "request_timeout") { requestTimeout = seconds }
        schema = query["schema"] ?? "custody"
        guard Self.isIdentifier(schema) else {
            throw StoreError(
                .open,
                "the schema \"\(schema)\" is not a plain identifier (lower-case letters, digits and _, at most 48)")
        }
        // PostgreSQL's own: "Schema names beginning with pg_ are reserved for system purposes",
        // and information_schema is the standard's views.
        guard !schema.hasPrefix("pg_"), schema != "information_schema" else {
            throw StoreError(.open, "the schema \"\(schema)\" is PostgreSQL's own: name a schema of Custody's")
        }
        let port = components.port ?? 5432
        guard (1...65535).contains(port) else {
            throw StoreError(.open, "the port \(port) in the state URL is not a TCP port (1 to 65535)")
        }
        if let socketDirectory = query["host"], !socketDirectory.isEmpty {
            configuration = PostgresConnection.Configuration(
                unixSocketPath: socketDirectory + "/.s.PGSQL.\(port)", username: user, password: password,
                database: database)
        } else {
            // An IPv6 address is written in brackets ("[::1]"); the address is what is inside.
            guard let written = components.host, !written.isEmpty,
                case let host = written.hasPrefix("[") && written.hasSuffix("]")
                    ? String(written.dropFirst().dropLast()) : written,
                !host.isEmpty
            else {
                throw StoreError(.open, "the state URL names no host: \(Self.redact(url))")
            }
            let tls: PostgresConnection.Configuration.TLS
            switch query["sslmode"] ?? "prefer" {
            case "disable": tls = .disable
            case "prefer", "require":
                let context: NIOSSLContext
                do {
                    context = try NIOSSLContext(configuration: .makeClientConfiguration())
                } catch {
                    throw StoreError(.open, "cannot set up TLS for the state: \(error)")
                }
                tls = query["sslmode"] == "require" ? .require(context) : .prefer(context)
            case let mode:
                throw StoreError(.open, "sslmode \"\(mode)\" is not one of disable, prefer, require")
            }
            configuration = PostgresConnection.Configuration(
                host: host, port: port, username: user, password: password, database: database, tls: tls)
        }
        applicationName = query["application_name"] ?? "custody"
        configuration.options.connectTimeout = .seconds(10)
        configuration.options.additionalStartupParameters = [
            ("search_path", schema), ("application_name", applicationName),
            ("statement_timeout", "30s"), ("lock_timeout", "\(Self.lockTimeout.components.seconds)s"),
            ("idle_in_transaction_session_timeout", "\(Self.idleInTransactionTimeout.components.seconds)s"),
            ("tcp_keepalives_idle", "\(Self.serverKeepalives.idle)"),
            ("tcp_keepalives_interval", "\(Self.serverKeepalives.interval)"),
            ("tcp_keepalives_count", "\(Self.serverKeepalives.count)"), ("TimeZone", "UTC"),
        ]
        redacted = Self.redact(url)
    }

    /// The channel change notices are sent on: one per schema.
    public var channel: String { "custody_changes_" + schema }

    static func isIdentifier(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 48
            && name.utf8.first.map { !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) } == true
            && name.utf8.allSatisfy {
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: "_")
            }
    }

    /// `url` with its password replaced by `***`.
    public static func redact(_ url: String) -> String {
        guard var components = URLComponents(string: url), components.password != nil else { return url }
        components.password = "***"
        return components.string ?? "postgres://(unprintable URL)"
    }

    /// Whether `state` (a `--state` argument) names a PostgreSQL state.
    public static func isURL(_ state: String) -> Bool {
        state.hasPrefix("postgres://") || state.hasPrefix("postgresql://")
    }
}
