import CustodyPolicy
import Testing

@Suite("Resolving an account through the tenant")
struct AccountResolutionTests {
    static let ownerOID = World.ownerOID
    static let peerOID = "0a000000-0000-4000-8000-000000000002"
    static let unknownOID = "00000000-0000-0000-0000-000000000000"
    /// A tenant account listed by UPN only, and one listed by OID only.
    static let upnOnly = TenantAccount(id: AccountID(upn: "legacy@contoso.com")!, groups: ["g-owner"])
    static let oidOnly = TenantAccount(id: AccountID(oid: "0a000000-0000-4000-8000-000000000009")!, groups: ["g-owner"])

    enum Expected: Sendable, CustomStringConvertible {
        case tenant(String)
        case unknown
        case contradictory(String)

        var description: String {
            switch self {
            case .tenant(let name): "tenant \(name)"
            case .unknown: "unknown"
            case .contradictory(let part): "contradictory (\(part))"
            }
        }
    }

    static let cases: [(id: AccountID, expected: Expected)] = [
        (AccountID("owner@contoso.com")!, .tenant("owner@contoso.com")),
        (AccountID("OWNER@Contoso.com")!, .tenant("owner@contoso.com")),
        (AccountID(ownerOID)!, .tenant("owner@contoso.com")),
        (AccountID(ownerOID.uppercased())!, .tenant("owner@contoso.com")),
        (AccountID(oid: ownerOID, upn: "owner@contoso.com")!, .tenant("owner@contoso.com")),
        (AccountID(oid: ownerOID, upn: "Owner@CONTOSO.com")!, .tenant("owner@contoso.com")),
        (AccountID("outsider@fabrikam.com")!, .unknown),
        (AccountID(unknownOID)!, .unknown),
        (AccountID(oid: unknownOID, upn: "outsider@fabrikam.com")!, .unknown),
        // Both forms known, but of different accounts.
        (
            AccountID(oid: ownerOID, upn: "peer@contoso.com")!,
            .contradictory("is owner@contoso.com's but the UPN peer@contoso.com is peer@contoso.com's")
        ),
        // An OID the tenant does not know beside a UPN it knows for an account with an OID.
        (
            AccountID(oid: unknownOID, upn: "owner@contoso.com")!,
            .contradictory("not \(unknownOID), which the tenant does not know")
        ),
        // A known OID beside a UPN the tenant records otherwise for it.
        (
            AccountID(oid: ownerOID, upn: "owner@fabrikam.com")!,
            .contradictory("whose UPN the tenant records as owner@contoso.com")
        ),
        // The tenant records no OID (or no UPN) for the account: the other form cannot contradict it.
        (AccountID(oid: unknownOID, upn: "legacy@contoso.com")!, .tenant("legacy@contoso.com")),
        (
            AccountID(oid: "0a000000-0000-4000-8000-000000000009", upn: "whoever@contoso.com")!,
            .tenant("0a000000-0000-4000-8000-000000000009")
        ),
    ]

    static let snapshot: PolicySnapshot = {
        var tenant = World.tenant
        tenant.accounts += [upnOnly, oidOnly]
        var targeting = PolicyTargeting()
        targeting.included = [.group("g-owner"), .group("g-peer")]
        let policy = ProtectionPolicy(
            reference: PolicyReference(
                index: 0, id: nil, displayName: "P", kind: .iosManagedAppProtection,
                location: DocumentLocation(file: "t", line: 1, column: 1)),
            settings: .with {
                $0.saveAsBlocked = true; $0.allowedDataStorageLocations = [];
                $0.allowedOutboundDataTransferDestinations = .managedApps
            },
            targeting: targeting)
        return PolicySnapshot(
            bundle: PolicyBundle(tenant: tenant, protectionPolicies: [policy]),
            context: EvaluationContext(platform: .ios))
    }()

    @Test("UPN, OID, case, both forms, unknown and contradictory ids", arguments: cases)
    func resolution(id: AccountID, expected: Expected) {
        let resolution = Self.snapshot.resolveAccount(id)
        switch (resolution, expected) {
        case (.tenant(let account), .tenant(let name)): #expect(account.id.description == name)
        case (.unknown, .unknown): break
        case (.contradictory(let why), .contradictory(let part)): #expect(why.contains(part), "\(why)")
        default: Issue.record("\(id.oid ?? "-") / \(id.upn ?? "-"): got \(resolution), expected \(expected)")
        }
    }

    static let contradictory = AccountID(oid: unknownOID, upn: "owner@contoso.com")!

    /// Every decision about a contradictory account gets the most restrictive answer.
    static let refusals: [(query: DecisionQuery, allowed: Bool)] = [
        (.saveTo(owner: contradictory, location: .dropbox, locationAccount: nil), false),
        (.saveTo(owner: World.outsider, location: .oneDriveForBusiness, locationAccount: contradictory), false),
        (.openFrom(receiver: contradictory, location: .other, locationAccount: nil), false),
        (.openFrom(receiver: nil, location: .other, locationAccount: contradictory), false),
        (.receive(receiver: contradictory, dataOwner: nil), false),
        (.receive(receiver: nil, dataOwner: contradictory), false),
        (.share(owner: contradictory, targets: ["com.getdropbox.Dropbox"]), false),
        (.copyOut(owner: contradictory, destinationManaged: false, length: 1), false),
        (.pasteIn(owner: contradictory, sourceManaged: false), false),
        (.print(account: contradictory), false),
        (.backup(account: contradictory), false),
        (.screenCapture(account: contradictory), false),
        (.notifications(account: contradictory), false),
        (.accountAllowed(account: contradictory), false),
        (.offlineAccess(account: contradictory, offlineFor: .zero), false),
        (.encryptionRequired(account: contradictory), true),
    ]

    @Test(
        "decisions about a contradictory account are refused (encryption is required), never decided as for an unmanaged one",
        arguments: refusals)
    func refused(query: DecisionQuery, allowed: Bool) {
        let answer = Self.snapshot.answer(query)
        #expect(answer.isAllowed == allowed)
        #expect(
            answer.reason.contains("carries an OID and a UPN that the tenant records for different accounts"),
            "\(answer.reason)")
        #expect(throws: QueryError.self) { try Self.snapshot.checkAccounts(of: query, strict: false) }
        if case .single(let decision) = answer, query.action == .notifications {
            #expect(decision.notificationRestriction == .block)
        }
        if case .single(let decision) = answer, query.action == .offlineAccess {
            #expect(decision.offlineState == .accessBlocked)
        }
    }

    @Test("the same owner with consistent forms is decided normally")
    func consistent() {
        let both = AccountID(oid: Self.ownerOID, upn: "owner@contoso.com")!
        #expect(!Self.snapshot.saveTo(owner: both, location: .dropbox, locationAccount: nil).isAllowed)
        #expect(
            Self.snapshot.saveTo(owner: both, location: .dropbox, locationAccount: nil).settingName == "saveAsBlocked")
        #expect(throws: Never.self) { try Self.snapshot.checkAccounts(of: .print(account: both), strict: true) }
    }
}
