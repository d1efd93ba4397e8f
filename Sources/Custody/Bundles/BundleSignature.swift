import Crypto
import X509
import _CryptoExtras
public import CustodyPolicy
public import CustodyProtection
public import CustodyStore
public import Foundation

/// Why a bundle's signature does not make it trusted: the reason as a stable code, a message
/// that names the file or key at fault.
public struct BundleTrustError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Reason: String, Sendable, Hashable, CaseIterable {
        /// No signature file, or one with no signature.
        case unsigned
        /// The signature file is not what `custody bundle sign` writes.
        case malformedSignature = "malformed-signature"
        /// No signature is by a key the verifier trusts.
        case unknownKey = "unknown-key"
        /// A signature is by a revoked key (whatever else signed it).
        case revokedKey = "revoked-key"
        /// A trusted key's signature is not over this manifest.
        case badSignature = "bad-signature"
        /// A file's size or SHA-256 is not the manifest's.
        case changedFile = "changed-file"
        /// A file the manifest does not list.
        case extraFile = "extra-file"
        /// A file the manifest lists is not in the bundle.
        case missingFile = "missing-file"
        /// The manifest's `expires` has passed.
        case expired
        /// A key or key file that cannot be used.
        case badKey = "bad-key"
        /// A sequence more than a day above the time in milliseconds: taken, it would lock out
        /// every later bundle (none could be newer).
        case sequenceTooHigh = "sequence-too-high"
        /// Signed only by keys this installation trusts for another audience (or signed for
        /// none): a bundle signed for staging is not production's.
        case wrongAudience = "wrong-audience"
    }

    public let reason: Reason
    public let message: String

    public init(_ reason: Reason, _ message: String) {
        self.reason = reason
        self.message = message
    }

    public var description: String { "\(reason.rawValue): \(message)" }
}

/// An Ed25519 public key that signs bundles, written `ed25519:` and the base64 of its 32 bytes.
public struct BundleSigningPublicKey: Sendable, Hashable, CustomStringConvertible {
    public let bytes: [UInt8]

    public init(bytes: [UInt8]) throws(BundleTrustError) {
        guard bytes.count == Ed25519.publicKeyCount else {
            throw BundleTrustError(.badKey, "an Ed25519 public key is 32 bytes, not \(bytes.count)")
        }
        guard Ed25519.isValidPublicKey(bytes) else {
            throw BundleTrustError(
                .badKey,
                "not an Ed25519 public key: not a point of the curve's main subgroup (no signature can hold for it)")
        }
        self.bytes = bytes
    }

    /// Reads `ed25519:<base64>`.
    public init(text: String) throws(BundleTrustError) {
        guard text.hasPrefix("ed25519:"), let data = Data(base64Encoded: String(text.dropFirst(8))) else {
            throw BundleTrustError(
                .badKey,
                "'\(text.escapingControlCharacters)' is not a public key: ed25519:<base64 of 32 bytes> expected")
        }
        try self.init(bytes: Array(data))
    }

    public var text: String { "ed25519:" + Data(bytes).base64EncodedString() }
    public var description: String { text }

    /// The key's id: the first 16 hex digits of the SHA-256 of its 32 bytes.
    public var keyID: String { String(SHA256.hash(data: bytes).hexDigits.prefix(16)) }
}

/// A private key that signs bundles, kept in a PKCS#8 PEM file (`PRIVATE KEY`, as
/// `openssl genpkey -algorithm ed25519` writes) that its owner alone may read.
public struct BundleSigningKey: Sendable {
    let key: Ed25519SigningKey

    /// A new random key.
    public init() { key = Ed25519SigningKey() }

    init(seed: [UInt8]) throws(BundleTrustError) {
        do {
            key = try Ed25519SigningKey(seed: seed)
        } catch {
            throw BundleTrustError(.badKey, error.message)
        }
    }

    public var publicKey: BundleSigningPublicKey { try! BundleSigningPublicKey(bytes: key.publicKey) }

    /// The key as PKCS#8 PEM.
    public var pem: String {
        // swift-crypto's encoder; the seed is the whole private key.
        (try? Curve25519.Signing.PrivateKey(rawRepresentation: key.seed))?.pemRepresentation ?? ""
    }

    /// Reads a key file.
    /// - Throws: `badKey` when it cannot be read, may be read by others, or is not an Ed25519
    ///   private key in PEM.
    public static func load(file path: String) throws(BundleTrustError) -> BundleSigningKey {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
            let data = FileManager.default.contents(atPath: path)
        else {
            throw BundleTrustError(.badKey, "cannot read the signing key \(path)")
        }
        if let permissions = attributes[.posixPermissions] as? Int, permissions & 0o077 != 0 {
            throw BundleTrustError(
                .badKey,
                "the signing key \(path) may be read by others (mode \(String(permissions, radix: 8))): chmod 600 it")
        }
        let text = String(decoding: data, as: UTF8.self)
        // swift-certificates reads the PKCS#8 algorithm identifier (an X25519 key's 32 bytes
        // would otherwise pass for an Ed25519 seed); swift-crypto gives the seed.
        guard let parsed = try? Certificate.PrivateKey(pemEncoded: text),
            parsed.supportedSignatureAlgorithms.contains(.ed25519),
            let key = try? Curve25519.Signing.PrivateKey(pemRepresentation: text)
        else {
            throw BundleTrustError(.badKey, "\(path) is not an Ed25519 private key in PEM (PKCS#8, \"PRIVATE KEY\")")
        }
        return try BundleSigningKey(seed: Array(key.rawRepresentation))
    }

    /// Writes the key to a new file, mode 600.
    /// - Throws: `badKey` when the file exists or cannot be written.
    public func write(to path: String) throws(BundleTrustError) {
        do {
            try FileSystem.writeNew(Array(pem.utf8), to: path, mode: 0o600)
        } catch {
            throw BundleTrustError(.badKey, "cannot write the signing key: \(error.message)")
        }
    }

    /// The signature of `message`.
    func signature(of message: [UInt8]) -> [UInt8] { key.signature(of: message) }
}

/// What a signature covers: every file of the bundle (name, size, SHA-256), a sequence number
/// that only grows, when it was made and until when it holds.
///
/// Its canonical bytes, which the signatures are over, are its JSON with the keys sorted, no
/// whitespace, strings as UTF-8 with only `"` and `\` escaped (no name or date holds a control
/// character), integers in decimal (RFC 8785 for the values a manifest can hold):
/// `{"audience":"…","created":"…","expires":"…","files":[{"name":"…","sha256":"…","size":…}],"sequence":…}`,
/// `audience` and `expires` left out when there is none and files in UTF-8 order of their names.
public struct BundleManifest: Sendable, Hashable, Encodable {
    public struct File: Sendable, Hashable, Encodable {
        public var name: String
        public var sha256: String
        public var size: Int
    }

    public var files: [File]
    /// Greater than every sequence applied before, so an older signed bundle is not new.
    public var sequence: Int64
    /// When it was signed, RFC 3339 in UTC to the second.
    public var created: String
    /// Until when it may be applied; nil: no end.
    public var expires: String?
    /// The installation it is signed for (`custody bundle sign --audience`); nil: any. A key
    /// trusted for an audience (`custody trust add --audience`) counts only on a manifest
    /// that names it.
    public var audience: String?

    /// The manifest of `files`.
    public init(describing files: BundleFiles, sequence: Int64, created: Date, expires: Date?, audience: String? = nil)
    {
        self.files = files.entries.map { entry in
            File(name: entry.name, sha256: SHA256.hash(data: entry.bytes).hexDigits, size: entry.bytes.count)
        }
        self.sequence = sequence
        self.created = Self.timestamp(created)
        self.expires = expires.map(Self.timestamp)
        self.audience = audience
    }

    init(files: [File], sequence: Int64, created: String, expires: String?, audience: String?) {
        self.files = files
        self.sequence = sequence
        self.created = created
        self.expires = expires
        self.audience = audience
    }

    /// Whether `text` can name an audience: 1 to 64 letters, digits, `.`, `-` and `_`.
    public static func isAudience(_ text: String) -> Bool {
        (1...64).contains(text.utf8.count)
            && text.unicodeScalars.allSatisfy { scalar in
                scalar.isASCII
                    && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar)
                        || ".-_".unicodeScalars.contains(scalar))
            }
    }

    /// The bytes the signatures are over.
    public var canonicalBytes: [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array((try? encoder.encode(self)) ?? Data())
    }

    public var expiresAt: Date? { expires.flatMap(Self.date) }
    public var createdAt: Date? { Self.date(created) }

    /// The SHA-256 of `bytes`, lower-case hex, as a manifest lists it.
    public static func sha256(_ bytes: [UInt8]) -> String { SHA256.hash(data: bytes).hexDigits }

    static func timestamp(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(timeZone: TimeZone(identifier: "UTC")!))
    }

    static func date(_ text: String) -> Date? { try? Date(text, strategy: Date.ISO8601FormatStyle()) }

    /// RFC 3339 in UTC to the second, as manifests write times: `2026-11-26T01:12:42Z`.
    static func isUTCTime(_ text: String) -> Bool {
        text.utf8.count == 20 && text.hasSuffix("Z") && date(text) != nil
    }

    /// The highest sequence a manifest may have at `now`: a day above the time in milliseconds.
    public static func highestSequence(at now: Date) -> Int64 {
        Int64(now.timeIntervalSince1970 * 1_000) + 86_400_000
    }
}

/// `.custody-signature.json`: the manifest and one or more signatures over its canonical bytes.
///
/// ```json
/// {"manifest": {...}, "signatures": [{"algorithm": "ed25519", "keyId": "…", "signature": "<base64>"}]}
/// ```
public struct BundleSignatureFile: Sendable, Hashable, Encodable {
    public struct Signature: Sendable, Hashable, Encodable {
        public var algorithm = "ed25519"
        public var keyId: String
        /// Base64 of the 64-byte Ed25519 signature.
        public var signature: String
    }

    public var manifest: BundleManifest
    public var signatures: [Signature]

    public init(manifest: BundleManifest, signatures: [Signature] = []) {
        self.manifest = manifest
        self.signatures = signatures
    }

    /// Adds `key`'s signature over the manifest, replacing one it made before.
    public mutating func sign(with key: BundleSigningKey) {
        let id = key.publicKey.keyID
        signatures.removeAll { $0.keyId == id }
        signatures.append(
            Signature(keyId: id, signature: Data(key.signature(of: manifest.canonicalBytes)).base64EncodedString()))
        signatures.sort { $0.keyId < $1.keyId }
    }

    /// The file's bytes: indented JSON, keys sorted, a final newline.
    public var encoded: [UInt8] { (try? JSONLine.encode(self, pretty: true)) ?? [] }

    /// Writes the file at `path`, replacing it atomically (mode 644: it holds nothing secret).
    public func write(to path: String) throws(ProtectionError) {
        try FileSystem.replace(path, with: encoded, mode: 0o644)
    }

    /// Reads a signature file, strictly: an unknown or repeated key, a null, a value of the
    /// wrong type, a fraction where an integer goes, a date that is not RFC 3339, each is
    /// `malformedSignature` naming where.
    public static func parse(_ bytes: [UInt8]) throws(BundleTrustError) -> BundleSignatureFile {
        let document: JSONDocument
        do {
            document = try JSONDocument(parsing: bytes)
        } catch {
            throw malformed("not JSON at byte \(error.offset): \(error.message)")
        }
        let root = try object(document.root, "the file", keys: ["manifest", "signatures"], required: ["manifest"])
        let manifestValue = try object(
            root["manifest"]!, "manifest", keys: ["files", "sequence", "created", "expires", "audience"],
            required: ["files", "sequence", "created"])
        guard manifestValue["files"]!.kind == .array else { throw malformed("manifest.files is not an array") }
        var files: [BundleManifest.File] = []
        for (index, value) in manifestValue["files"]!.elements.enumerated() {
            let place = "manifest.files[\(index)]"
            let file = try object(
                value, place, keys: ["name", "sha256", "size"], required: ["name", "sha256", "size"])
            guard let name = file["name"]!.string, !name.isEmpty else { throw malformed("\(place).name is not a name") }
            guard let hash = file["sha256"]!.string, hash.utf8.count == 64,
                hash.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) })
            else { throw malformed("\(place).sha256 is not 64 lower-case hex digits") }
            guard let size = file["size"]!.int, size >= 0 else {
                throw malformed("\(place).size is not a whole number of bytes")
            }
            files.append(BundleManifest.File(name: name, sha256: hash, size: size))
        }
        guard let sequence = manifestValue["sequence"]!.int, sequence > 0 else {
            throw malformed("manifest.sequence is not a whole number above 0")
        }
        guard let created = manifestValue["created"]!.string, BundleManifest.isUTCTime(created) else {
            throw malformed("manifest.created is not an RFC 3339 time in UTC (…Z)")
        }
        var expires: String?
        if let value = manifestValue["expires"] {
            guard let text = value.string, BundleManifest.isUTCTime(text) else {
                throw malformed("manifest.expires is not an RFC 3339 time in UTC (…Z)")
            }
            expires = text
        }
        var audience: String?
        if let value = manifestValue["audience"] {
            guard let text = value.string, BundleManifest.isAudience(text) else {
                throw malformed("manifest.audience is not a name (1 to 64 letters, digits, '.', '-', '_')")
            }
            audience = text
        }
        var signatures: [Signature] = []
        if let list = root["signatures"] {
            guard list.kind == .array else { throw malformed("signatures is not an array") }
            for (index, value) in list.elements.enumerated() {
                let place = "signatures[\(index)]"
                let signature = try object(
                    value, place, keys: ["algorithm", "keyId", "signature"],
                    required: ["algorithm", "keyId", "signature"])
                guard signature["algorithm"]!.string == "ed25519" else {
                    throw malformed("\(place).algorithm is not \"ed25519\"")
                }
                guard let keyID = signature["keyId"]!.string, !keyID.isEmpty else {
                    throw malformed("\(place).keyId is not a key id")
                }
                guard let text = signature["signature"]!.string, let bytes = Data(base64Encoded: text),
                    bytes.count == Ed25519.signatureCount
                else { throw malformed("\(place).signature is not the base64 of 64 bytes") }
                guard !signatures.contains(where: { $0.keyId == keyID }) else {
                    throw malformed("\(place): key \(keyID) signs twice")
                }
                signatures.append(Signature(keyId: keyID, signature: text))
            }
        }
        let names = files.map(\.name)
        guard Set(names).count == names.count else { throw malformed("manifest.files names a file twice") }
        guard zip(names, names.dropFirst()).allSatisfy({ $0.utf8.lexicographicallyPrecedes($1.utf8) }) else {
            throw malformed("manifest.files is not in UTF-8 order of the names")
        }
        return BundleSignatureFile(
            manifest: BundleManifest(
                files: files, sequence: Int64(sequence), created: created, expires: expires, audience: audience),
            signatures: signatures)
    }

    private static func object(
        _ value: JSONValue, _ place: String, keys: Set<String>, required: Set<String>
    ) throws(BundleTrustError) -> [String: JSONValue] {
        guard value.kind == .object else { throw malformed("\(place) is not an object") }
        var members: [String: JSONValue] = [:]
        for member in value.members {
            guard keys.contains(member.key) else {
                throw malformed("\(place) has the unknown key \"\(member.key.escapingControlCharacters)\"")
            }
            guard members[member.key] == nil else { throw malformed("\(place) gives \"\(member.key)\" twice") }
            guard !member.value.isNull else { throw malformed("\(place).\(member.key) is null") }
            members[member.key] = member.value
        }
        if let missing = required.subtracting(members.keys).sorted().first {
            throw malformed("\(place) has no \"\(missing)\"")
        }
        return members
    }

    private static func malformed(_ message: String) -> BundleTrustError {
        BundleTrustError(.malformedSignature, "\(BundleFiles.signatureName): \(message)")
    }
}

/// A signature file that holds for a bundle: its manifest and the trusted keys that signed it.
public struct VerifiedSignature: Sendable, Hashable {
    public let manifest: BundleManifest
    /// The trusted keys whose signatures were verified, sorted.
    public let signers: [String]
    /// Keys that signed too but are not known to the verifier (a rotation under way).
    public let unknownSigners: [String]
}

/// Checks a bundle's signature against the keys a state knows.
public enum BundleVerifier {
    /// Verifies `files`' signature file with `keys` (trusted and revoked): at least one
    /// trusted key's signature over the manifest, none by a revoked key, no trusted key's
    /// signature that does not hold, the bundle's files exactly the manifest's, not expired.
    public static func verify(_ files: BundleFiles, keys: [TrustedKeyRecord], at now: Date) throws(BundleTrustError)
        -> VerifiedSignature
    {
        guard let bytes = files.signature else {
            throw BundleTrustError(.unsigned, "the bundle has no \(BundleFiles.signatureName)")
        }
        let file = try BundleSignatureFile.parse(bytes)
        guard !file.signatures.isEmpty else {
            throw BundleTrustError(.unsigned, "\(BundleFiles.signatureName) holds no signature")
        }
        let known = Dictionary(keys.map { ($0.keyID, $0) }, uniquingKeysWith: { first, _ in first })
        let message = file.manifest.canonicalBytes
        var signers: [String] = []
        var unknown: [String] = []
        var elsewhere: [TrustedKeyRecord] = []
        for signature in file.signatures {
            guard let key = known[signature.keyId] else {
                unknown.append(signature.keyId)
                continue
            }
            if key.revokedAt != nil {
                throw BundleTrustError(
                    .revokedKey, "signed by \(signature.keyId)\(key.name.map { " (\($0))" } ?? ""), a revoked key")
            }
            guard let publicKey = try? BundleSigningPublicKey(text: key.publicKey),
                Ed25519.isValid(
                    signature: Array(Data(base64Encoded: signature.signature) ?? Data()), of: message,
                    publicKey: publicKey.bytes)
            else {
                throw BundleTrustError(
                    .badSignature,
                    "the signature by \(signature.keyId) is not over this manifest (the manifest was changed, or the signature was made for another)"
                )
            }
            // A key trusted for an audience speaks only for bundles signed for it.
            if let audience = key.audience, audience != file.manifest.audience {
                elsewhere.append(key)
                continue
            }
            signers.append(signature.keyId)
        }
        if signers.isEmpty, let key = elsewhere.first {
            throw BundleTrustError(
                .wrongAudience,
                "signed \(file.manifest.audience.map { "for the audience '\($0)'" } ?? "for no audience"), and this installation trusts \(key.keyID)\(key.name.map { " (\($0))" } ?? "") only for bundles signed for '\(key.audience!)' (custody bundle sign --audience)"
            )
        }
        guard !signers.isEmpty else {
            throw BundleTrustError(
                .unknownKey, "signed only by keys not trusted here: \(unknown.sorted().joined(separator: ", "))")
        }
        try check(files, against: file.manifest)
        guard file.manifest.sequence <= BundleManifest.highestSequence(at: now) else {
            throw BundleTrustError(
                .sequenceTooHigh,
                "sequence \(file.manifest.sequence) is more than a day above the time in milliseconds (\(Int64(now.timeIntervalSince1970 * 1_000))): taken, no later bundle could be newer"
            )
        }
        if let expires = file.manifest.expiresAt, expires <= now {
            throw BundleTrustError(.expired, "the manifest expired at \(file.manifest.expires!)")
        }
        return VerifiedSignature(manifest: file.manifest, signers: signers.sorted(), unknownSigners: unknown.sorted())
    }

    /// Whether the bundle's files are exactly the manifest's: none missing, none extra, each
    /// of the size and SHA-256 the manifest gives.
    public static func check(_ files: BundleFiles, against manifest: BundleManifest) throws(BundleTrustError) {
        let listed = Dictionary(manifest.files.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let present = Set(files.entries.map(\.name))
        for entry in files.entries {
            guard let expected = listed[entry.name] else {
                throw BundleTrustError(.extraFile, "\(entry.name) is not in the signed manifest")
            }
            guard expected.size == entry.bytes.count, expected.sha256 == SHA256.hash(data: entry.bytes).hexDigits
            else {
                throw BundleTrustError(.changedFile, "\(entry.name) is not the file that was signed")
            }
        }
        if let missing = manifest.files.map(\.name).first(where: { !present.contains($0) }) {
            throw BundleTrustError(.missingFile, "\(missing) is in the signed manifest but not in the bundle")
        }
    }
}

extension Digest {
    var hexDigits: String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for byte in self {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
