import CustodyPolicy
import Testing

/// Windows MAM (`windowsManagedAppProtection`, beta), read from Graph JSON and decided on
/// Windows. Every expected answer is taken from Microsoft's "App protection policy settings for
/// Windows" page (intune-service/apps/app-protection-policy-settings-windows.md), quoted per row.
@Suite("Windows MAM policies")
struct WindowsPolicyTests {
    static let tenant =
        #"{"accounts": [{"upn": "owner@contoso.com", "groups": ["g-owner"]}, {"upn": "other@contoso.com", "groups": []}]}"#
    static let owner = id("owner@contoso.com")

    static func snapshot(_ members: String, platform: Platform = .windows) throws -> PolicySnapshot {
        let document = ##"""
            {"@odata.type": "#microsoft.graph.windowsManagedAppProtection", "displayName": "Edge",
             "assignments": [{"target": {"@odata.type": "#microsoft.graph.groupAssignmentTarget", "groupId": "g-owner"}}]
             \##(members.isEmpty ? "" : ", " + members)}
            """##
        let bundle = try loadBundle(tenant: tenant, documents: [document])
        #expect(bundle.warnings.filter { $0.severity == .warning }.isEmpty, "\(bundle.warnings)")
        return PolicySnapshot(bundle: bundle, context: EvaluationContext(platform: platform))
    }

    struct Row: Sendable, CustomTestStringConvertible {
        let members: String
        let action: String
        let allowed: Bool
        /// The sentence of Microsoft's page that decides the row.
        let source: String
        var testDescription: String { "\(members.isEmpty ? "defaults" : members): \(action) → \(allowed)" }
    }

    static let rows: [Row] = [
        Row(members: "", action: "print", allowed: true, source: "Printing Org data … Default value: Allow"),
        Row(
            members: #""printBlocked": true"#, action: "print", allowed: false,
            source: "Select Block to prevent printing of org data"),
        Row(members: "", action: "share", allowed: true, source: "Send org data to … Default value: All destinations"),
        Row(
            members: #""allowedOutboundDataTransferDestinations": "none""#, action: "share", allowed: false,
            source:
                "No destinations: Org users can't send org data to external accounts, documents, locations, or applications"
        ),
        Row(
            members: #""allowedOutboundDataTransferDestinations": "none""#, action: "save", allowed: false,
            source: "No destinations: … can't send org data to … locations"),
        Row(
            members: #""allowedInboundDataTransferSources": "none""#, action: "open", allowed: false,
            source:
                "No sources: Org users can't open data from external accounts, documents, locations, or applications into the org context"
        ),
        Row(members: "", action: "open", allowed: true, source: "Receive data from … Default value: All sources"),
        Row(
            members: "", action: "copy", allowed: true,
            source: "Allow cut, copy, and paste for … Default value: Any destination and any source"),
        Row(
            members: #""allowedOutboundClipboardSharingLevel": "none""#, action: "copy", allowed: false,
            source: "No destination or source: Org users can't cut, copy, or paste data to or from external accounts"),
        Row(
            members: #""allowedOutboundClipboardSharingLevel": "none""#, action: "paste", allowed: false,
            source: "No destination or source: … can't … paste data … from or into the org context"),
        Row(
            members: #""allowedOutboundClipboardSharingLevel": "anyDestinationAnySource""#, action: "paste",
            allowed: true,
            source: "Any destination and any source: Org users can paste data from and cut/copy data to any account"),
    ]

    @Test("each Windows setting decides as Microsoft's Windows settings page says", arguments: rows)
    func decides(row: Row) throws {
        let snapshot = try Self.snapshot(row.members)
        let decision: Decision =
            switch row.action {
            case "print": snapshot.print(account: Self.owner)
            case "share": snapshot.appSharing(account: Self.owner)
            case "save": snapshot.saveTo(owner: Self.owner, location: .localDrive, locationAccount: nil)
            case "open": snapshot.openFrom(receiver: Self.owner, location: .localStorage, locationAccount: nil)
            case "copy": snapshot.copyOut(owner: Self.owner, destinationManaged: false, length: 10)
            default: snapshot.pasteIn(owner: Self.owner, sourceManaged: false)
            }
        #expect(decision.isAllowed == row.allowed, "\(row.source): \(decision.reason)")
        #expect(decision.decidingFinding.policy?.policies.map(\.kind) == [.windowsManagedAppProtection])
    }

    /// Graph defines two org-only levels between the admin center's two: each is read into the
    /// level of the other platforms, never dropped.
    @Test(
        "Windows clipboard levels read into the shared levels",
        arguments: [
            ("anyDestinationAnySource", ClipboardSharingLevel.allApps),
            ("orgDestinationAnySource", .managedAppsWithPasteIn), ("orgDestinationOrgSource", .managedApps),
            ("none", .blocked), ("NONE", .blocked),
        ])
    func clipboardLevels(value: String, level: ClipboardSharingLevel) throws {
        let snapshot = try Self.snapshot(#""allowedOutboundClipboardSharingLevel": "\#(value)""#)
        #expect(snapshot.effectivePolicy(for: Self.owner)?.allowedOutboundClipboardSharingLevel.value == level)
    }

    @Test("a Windows policy decides on Windows only; an iOS or Android question finds the account unmanaged")
    func platformBound() throws {
        for platform in [Platform.ios, .android] {
            let snapshot = try Self.snapshot(#""printBlocked": true"#, platform: platform)
            #expect(snapshot.print(account: Self.owner).isAllowed)
            #expect(snapshot.effectivePolicy(for: Self.owner) == nil)
        }
    }

    @Test("the default policy (iOS and Android settings only) does not reach Windows")
    func defaultPolicy() throws {
        let document = ##"{"@odata.type": "#microsoft.graph.defaultManagedAppProtection", "printBlocked": true}"##
        let bundle = try loadBundle(tenant: Self.tenant, documents: [document])
        #expect(bundle.policyPlatforms == [.ios, .android])
        let windows = PolicySnapshot(bundle: bundle, context: EvaluationContext(platform: .windows))
        #expect(windows.print(account: Self.owner).isAllowed)
        let ios = PolicySnapshot(bundle: bundle, context: EvaluationContext(platform: .ios))
        #expect(!ios.print(account: Self.owner).isAllowed)
    }

    @Test("properties of iOS and Android are unknown on Windows, and a Windows enum value out of range is restrictive")
    func unknowns() throws {
        let document = ##"""
            {"@odata.type": "#microsoft.graph.windowsManagedAppProtection", "assignments": [],
             "saveAsBlocked": true, "allowedOutboundClipboardSharingLevel": "friendsOnly"}
            """##
        let bundle = try loadBundle(tenant: Self.tenant, documents: [document])
        #expect(bundle.warnings.contains { $0.code == .unknownProperty && $0.path == "$.saveAsBlocked" })
        #expect(bundle.warnings.contains { $0.code == .unknownEnumValue && $0.message.contains("'none'") })
        #expect(bundle.protectionPolicies.first?.settings.allowedOutboundClipboardSharingLevel == .blocked)
    }

    /// Health checks of a Windows policy are made on Windows as on the other platforms.
    @Test(
        "Windows health checks: min OS version (block, wipe) and the offline grace period",
        arguments: [
            // "Min OS version … Block access - The user will be blocked from access if the Windows
            // version on the device doesn't meet this requirement."
            (#""minimumRequiredOsVersion": "10.0.22631""#, "10.0.19045", 60, LaunchOutcome.block),
            (#""minimumRequiredOsVersion": "10.0.22631""#, "10.0.22631.3155", 60, .allow),
            // "Wipe data - The user account that is associated with the application is wiped".
            (#""minimumWipeOsVersion": "10.0.19000""#, "10.0.18363", 60, .wipe),
            // Graph's Windows page: "Versions less than the specified version will wipe": the
            // version itself does not.
            (#""minimumWipeOsVersion": "10.0.19000""#, "10.0.19000", 60, .allow),
            // "Offline grace period … Block access (minutes) … 720 minutes (12 hours)" by default.
            ("", "10.0.22631", 13 * 3_600, .block),
            ("", "10.0.22631", 11 * 3_600, .allow),
        ])
    func health(members: String, os: String, offline: Int, outcome: LaunchOutcome) throws {
        let snapshot = try Self.snapshot(members)
        var facts = LaunchFacts()
        facts.osVersion = SoftwareVersion(os)
        facts.appVersion = SoftwareVersion("130.0")
        facts.sdkVersion = SoftwareVersion("1.0")
        facts.lastCheckIn = .seconds(1_000_000 - offline)
        facts.accountState = .active
        facts.threatLevel = .secured
        let decision = snapshot.launch(account: Self.owner, facts: facts, now: .seconds(1_000_000))
        #expect(decision.outcome == outcome, "\(decision)")
    }

    /// The settings a Windows answer and `policy show` list: those the Windows page has.
    @Test("a Windows effective policy lists the Windows settings only")
    func applicableSettings() throws {
        let policy = try #require(try Self.snapshot(#""printBlocked": true"#).effectivePolicy(for: Self.owner))
        #expect(
            Set(policy.applicableSettings) == [
                .allowedInboundDataTransferSources, .allowedOutboundDataTransferDestinations,
                .allowedOutboundClipboardSharingLevel, .printBlocked, .periodOfflineBeforeAccessCheck,
                .periodOfflineBeforeWipeIsEnforced,
            ])
    }
}
