/// One account of a tenant, as `tenant.json` lists it.
public struct TenantAccount: Sendable, Hashable {
    /// The account's id, carrying both forms when the tenant lists both (that is what links them).
    public let id: AccountID
    /// The Entra groups the account is a member of (group object ids).
    public let groups: [String]
    /// The person's name as the directory shows it ("Alice Smith"), when the tenant lists it:
    /// for people to find the account by; it never identifies one (decisions ignore it).
    public let displayName: String?
    /// Whether the account holds an Intune license: false when the tenant records that it does
    /// not (the Graph connector reads it from the user's service plans), nil when unknown (read
    /// as licensed). Microsoft requires one for app protection, so an unlicensed account is
    /// reached by no protection policy.
    public let licensed: Bool?
    /// Whether the account is enabled in Microsoft Entra ID (Graph's `accountEnabled`): false
    /// when the tenant records it disabled, nil when unknown. Entra's record is the
    /// confirmation conditional launch's "Disabled account" check acts on ("When we have
    /// confirmed the user has been disabled in Microsoft Entra ID"): a launch query that leaves
    /// out `accountState` is decided with `disabled` for such an account.
    public let enabled: Bool?

    /// Creates an account.
    public init(
        id: AccountID, groups: [String], displayName: String? = nil, licensed: Bool? = nil, enabled: Bool? = nil
    ) {
        self.id = id
        self.groups = groups
        self.displayName = displayName
        self.licensed = licensed
        self.enabled = enabled
    }
}

/// The accounts a bundle knows and the tenant-wide settings that are not Graph policies.
public struct Tenant: Sendable, Hashable {
    /// Every account of the tenant. Accounts not listed are unknown, and unknown is unmanaged.
    public var accounts: [TenantAccount]
    /// The accounts allowed to sign in to managed apps, as UPNs or OIDs; nil allows every
    /// account (Intune: `allowedAccounts` returns nil).
    public var allowedAccounts: [String]?
    /// App ids (bundle ids, package ids) the tenant manages beyond those named in policies.
    public var managedApps: [String]
    /// App ids the devices' MDM manages (iOS managed apps, deployed through device management):
    /// under "Policy managed apps with OS sharing", an MDM-enrolled device may send files to them.
    public var mdmManagedApps: [String]

    /// Creates a tenant.
    public init(
        accounts: [TenantAccount] = [], allowedAccounts: [String]? = nil, managedApps: [String] = [],
        mdmManagedApps: [String] = []
    ) {
        self.accounts = accounts
        self.allowedAccounts = allowedAccounts
        self.managedApps = managedApps
        self.mdmManagedApps = mdmManagedApps
    }
}
