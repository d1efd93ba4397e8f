import CustodyPolicy
import Testing

/// Loads a bundle from JSON texts, failing the test with every diagnostic when it does not load.
func loadBundle(tenant: String?, documents: [String], sourceLocation: Testing.SourceLocation = #_sourceLocation) throws
    -> PolicyBundle
{
    let files = documents.enumerated().map {
        PolicyBundle.File(name: "doc\($0.offset).json", bytes: Array($0.element.utf8))
    }
    do {
        return try PolicyBundle.load(
            tenant: tenant.map { PolicyBundle.File(name: "tenant.json", bytes: Array($0.utf8)) }, documents: files)
    } catch {
        Issue.record("bundle failed to load:\n\(error)", sourceLocation: sourceLocation)
        throw error
    }
}

/// The diagnostics of a bundle that must not load.
func loadFailure(tenant: String?, documents: [String]) -> [Diagnostic] {
    let files = documents.enumerated().map {
        PolicyBundle.File(name: "doc\($0.offset).json", bytes: Array($0.element.utf8))
    }
    do {
        _ = try PolicyBundle.load(
            tenant: tenant.map { PolicyBundle.File(name: "tenant.json", bytes: Array($0.utf8)) }, documents: files)
        return []
    } catch {
        return error.diagnostics
    }
}

/// An account id from a literal; the literal is never blank in tests.
func id(_ text: String) -> AccountID {
    AccountID(text)!
}

/// A small tenant for decision tables:
/// - owner and peer: managed by their own policies (groups g-owner and g-peer);
/// - bystander: in the tenant, reached by no policy (unmanaged);
/// - outsider: not in the tenant (unmanaged).
enum World {
    static let ownerOID = "0a000000-0000-4000-8000-000000000001"
    static let owner = id("owner@contoso.com")
    static let ownerByOID = id(ownerOID)
    static let peer = id("peer@contoso.com")
    static let bystander = id("bystander@contoso.com")
    static let outsider = id("outsider@fabrikam.com")

    static let tenant = Tenant(
        accounts: [
            TenantAccount(id: AccountID(oid: ownerOID, upn: "owner@contoso.com")!, groups: ["g-owner"]),
            TenantAccount(
                id: AccountID(oid: "0a000000-0000-4000-8000-000000000002", upn: "peer@contoso.com")!, groups: ["g-peer"]
            ),
            TenantAccount(
                id: AccountID(oid: "0a000000-0000-4000-8000-000000000003", upn: "bystander@contoso.com")!, groups: []),
        ],
        managedApps: ["com.contoso.expenses"], mdmManagedApps: ["com.contoso.mdm-only"])

    /// A snapshot where the owner's policy has `owner` settings and the peer's `peer` settings.
    static func snapshot(
        owner: ProtectionSettings, peer: ProtectionSettings = ProtectionSettings(),
        kind: PolicyKind = .iosManagedAppProtection, ownerApps: [String]? = nil,
        context: EvaluationContext = EvaluationContext(platform: .ios)
    ) -> PolicySnapshot {
        func policy(_ index: Int, _ name: String, _ group: String, _ settings: ProtectionSettings, apps: [String]?)
            -> ProtectionPolicy
        {
            var targeting = PolicyTargeting()
            targeting.included = [.group(group)]
            targeting.apps = apps?.map { ManagedAppIdentifier(id: nil, appID: $0) }
            return ProtectionPolicy(
                reference: PolicyReference(
                    index: index, id: nil, displayName: name, kind: kind,
                    location: DocumentLocation(file: "test", line: index + 1, column: 1)),
                settings: settings, targeting: targeting)
        }
        let bundle = PolicyBundle(
            tenant: tenant,
            protectionPolicies: [
                policy(0, "Owner policy", "g-owner", owner, apps: ownerApps),
                policy(1, "Peer policy", "g-peer", peer, apps: nil),
            ])
        return PolicySnapshot(bundle: bundle, context: context)
    }
}

extension ProtectionSettings {
    /// Settings built in one expression.
    static func with(_ configure: (inout ProtectionSettings) -> Void) -> ProtectionSettings {
        var settings = ProtectionSettings()
        configure(&settings)
        return settings
    }
}

extension Platform {
    /// The protection policy kind written for this platform.
    var protectionKind: PolicyKind {
        switch self {
        case .ios: .iosManagedAppProtection
        case .android: .androidManagedAppProtection
        case .windows: .windowsManagedAppProtection
        }
    }
}
