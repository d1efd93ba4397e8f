public import CustodyPolicy
public import CustodyStore

/// Something that changed under a `PolicyManager`, as its subscribers hear it.
public enum PolicyEvent: Sendable, Hashable {
    /// The tenant's allowed accounts changed (nil: every account is allowed).
    case allowedAccountsChanged(old: [String]?, new: [String]?)
    /// These accounts' effective policies now decide something differently (sorted by how the
    /// tenant lists them; accounts that became managed or unmanaged included). `platform` is
    /// the one the change is on when the manager decides for no platform over a bundle of
    /// several (one event per platform); nil when the manager has its platform.
    case policyChanged(accounts: [AccountID], platform: Platform? = nil)
    /// Whether this account's data must be encrypted flipped: re-protect its data.
    case dataProtectionChanged(account: AccountID, encryptionRequired: Bool)
    /// The app configuration that reaches this account changed.
    case appConfigurationChanged(account: AccountID)
    /// A typed configuration stream (`configurations(_:)`) could not decode this account's
    /// configuration as `type` (the Swift type's name); it yielded nil.
    case configurationDecodingFailed(account: AccountID, type: String, error: ConfigurationDecodingError)
    /// The secrets stored for this account (nil: the app-wide ones) changed; `identifiers`
    /// are the ones stored now.
    case secretsChanged(account: AccountID?, identifiers: [String])
    /// This account's data must be wiped (offline too long, or removed from the tenant).
    case wipeRequired(account: AccountID, reason: String)
    /// This account's keys (and the files registered for it) are gone.
    case wipeCompleted(account: AccountID)
    /// This account has a new key version: new envelopes use it, older ones still open.
    case keyRotated(account: AccountID, version: UInt32)
    /// A bundle was offered and refused; the policy in force did not change.
    case bundleRejected(error: BundleRejection)
    /// A bundle with this revision (content hash) is now the policy in force, put there from
    /// `source`. Sent for every bundle put in force, after the events saying what changed for
    /// which accounts (there may be none: a bundle that decides alike, or a context that names
    /// no platform for a bundle of both, where only a decision naming one can tell). Not sent
    /// for a `PolicyBundle` applied in memory without a content hash: it has no revision.
    case bundleApplied(revision: String, source: String)
    /// A sync from the policy's source (Microsoft Graph) ended: applied, unchanged or failed.
    /// Sent after the events of the bundle it put in force, if any.
    case policySynced(PolicySync)
    /// A replica of the fleet still runs another revision than the newest applied, `seconds`
    /// after it was applied (see `CustodyEngine.announceReplicasBehind`).
    case replicaBehind(replica: String, host: String, revision: String?, newest: String, seconds: Int)
}

/// Why a bundle was refused, and where it came from.
public struct BundleRejection: Error, Sendable, Hashable, CustomStringConvertible {
    /// The bundle's directory, or another description of where it came from.
    public let source: String
    /// The located problems (`file:line:column: error: ...`), one per line, or why the bundle
    /// could not be recorded.
    public let message: String
    /// The bundle's diagnostics, when it did not load.
    public let diagnostics: [Diagnostic]
    /// Why the state could not record a bundle that loads: then the bundle itself was not
    /// refused, the state failed (and with `outcomeUnknown`, it may be in force after all).
    public let stateFailure: StoreError?
    /// The bundle's revision, when its files were read.
    public let revision: String?

    public init(
        source: String, message: String, diagnostics: [Diagnostic] = [], stateFailure: StoreError? = nil,
        revision: String? = nil
    ) {
        self.source = source
        self.message = message
        self.diagnostics = diagnostics
        self.stateFailure = stateFailure
        self.revision = revision
    }

    public var description: String { "\(source): bundle rejected, the policy in force is unchanged:\n\(message)" }
}
