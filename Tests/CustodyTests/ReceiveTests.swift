@testable import Custody
import CustodyPolicy
import CustodyProtection
import CustodyTestSupport
import Foundation
import Testing

/// Receiving a shared item by its own protection tag (Intune's `canReceiveSharedFile:`): the
/// engine reads the owner from the envelope, verifies it when it can, and never lets a tag
/// anyone can write open a door that untagged data would find shut.
@Suite("Receiving shared items by their protection tag", .timeLimit(.minutes(2)))
struct ReceiveTests {
    static let receiver = AccountID(oid: "11000000-0000-4000-8000-000000000001", upn: "rita@contoso.com")!
    static let managed = AccountID(oid: "22000000-0000-4000-8000-000000000002", upn: "mark@contoso.com")!
    static let unmanaged = AccountID(oid: "33000000-0000-4000-8000-000000000003", upn: "una@contoso.com")!

    /// Rita receives from policy-managed apps only (`inbound`); Mark's data is encrypted and may
    /// go to managed apps (`send`); Una has no policy. `markManaged: false` leaves Mark
    /// unmanaged too (his data is then only tagged).
    static func writeBundle(
        to path: String, inbound: String = "managedApps", send: String = "managedApps", markManaged: Bool = true
    ) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let accounts = [(receiver, "r"), (managed, markManaged ? "m" : "none"), (unmanaged, "none")].map {
            account, group in
            #"{"oid": "\#(account.oid!)", "upn": "\#(account.upn!)", "groups": ["\#(group)"]}"#
        }
        try #"{"accounts": [\#(accounts.joined(separator: ", "))]}"#.write(
            toFile: path + "/tenant.json", atomically: true, encoding: .utf8)
        let policies = #"""
            {"value": [
              {"@odata.type": "#microsoft.graph.iosManagedAppProtection", "id": "T_r", "displayName": "Receiver", "allowedInboundDataTransferSources": "\#(inbound)",
               "assignments": [{"target": {"@odata.type": "#microsoft.graph.groupAssignmentTarget", "groupId": "r"}}]},
              {"@odata.type": "#microsoft.graph.iosManagedAppProtection", "id": "T_m", "displayName": "Managed", "appDataEncryptionType": "whenDeviceLocked",
               "allowedOutboundDataTransferDestinations": "\#(send)",
               "assignments": [{"target": {"@odata.type": "#microsoft.graph.groupAssignmentTarget", "groupId": "m"}}]}
            ]}
            """#
        try policies.write(toFile: path + "/policies.json", atomically: true, encoding: .utf8)
    }

    /// An installation with the bundle in force, and items: Mark's encrypted envelope, Una's
    /// tag-only envelope, plain data, and a tag-only envelope naming Mark that another
    /// installation (where Mark is unmanaged) wrote: a claim nothing proves.
    struct Fixture {
        let installation: Installation
        let engine: CustodyEngine
        let items: [String: [UInt8]]

        static func make(inbound: String = "managedApps", send: String = "managedApps") async throws -> Fixture {
            let installation = try Installation()
            let path = installation.directory.file("bundle")
            try ReceiveTests.writeBundle(to: path, inbound: inbound, send: send)
            let engine = try await installation.open()
            try await engine.apply(bundleDirectory: path)
            let data = Array("quarterly figures".utf8)
            let encrypted = try await engine.protect(data, owner: ReceiveTests.managed).envelope
            let tagged = try await engine.protect(data, owner: ReceiveTests.unmanaged, mode: .unmanaged).envelope

            let elsewhere = try Installation()
            let otherPath = elsewhere.directory.file("bundle")
            try ReceiveTests.writeBundle(to: otherPath, markManaged: false)
            let other = try await elsewhere.open()
            try await other.apply(bundleDirectory: otherPath)
            let forged = try await other.protect(data, owner: ReceiveTests.managed, mode: .unmanaged).envelope
            return Fixture(
                installation: installation, engine: engine,
                items: ["encrypted": encrypted, "tagged": tagged, "plain": data, "forged": forged])
        }
    }

    struct Row: CustomTestStringConvertible, Sendable {
        let item: String
        var inbound = "managedApps"
        var send = "managedApps"
        let allowed: Bool
        let owner: AccountID?
        let verified: Bool
        let reason: String
        var testDescription: String {
            "\(item), receiver takes \(inbound), owner sends to \(send) → \(allowed ? "allow" : "block")"
        }
    }

    static let rows: [Row] = [
        Row(
            item: "encrypted", allowed: true, owner: managed, verified: true,
            reason: "allowedInboundDataTransferSources is managedApps and the shared item's owner is managed"),
        Row(
            item: "encrypted", send: "none", allowed: false, owner: managed, verified: true,
            reason:
                "the shared item's owner is another managed account, whose allowedOutboundDataTransferDestinations is none"
        ),
        Row(
            item: "tagged", allowed: false, owner: unmanaged, verified: false,
            reason: "the shared item's owner is not managed"),
        Row(item: "tagged", inbound: "allApps", allowed: true, owner: unmanaged, verified: false, reason: "is allApps"),
        Row(
            item: "plain", allowed: false, owner: nil, verified: false, reason: "the shared item's owner is not managed"
        ),
        Row(item: "plain", inbound: "allApps", allowed: true, owner: nil, verified: false, reason: "is allApps"),
        // A tag naming a managed owner that nothing proves: received only if untagged data would be.
        Row(
            item: "forged", allowed: false, owner: managed, verified: false,
            reason: "the shared item's owner is not managed"),
        Row(
            item: "forged", inbound: "allApps", allowed: true, owner: managed, verified: false,
            reason: "whose allowedOutboundDataTransferDestinations is managedApps"),
        Row(
            item: "forged", inbound: "allApps", send: "none", allowed: false, owner: managed, verified: false,
            reason: "is none"),
    ]

    @Test("the owner comes from the item's envelope, verified when it can be", arguments: rows)
    func receive(row: Row) async throws {
        let fixture = try await Fixture.make(inbound: row.inbound, send: row.send)
        let item = try #require(fixture.items[row.item])
        let result = try await fixture.engine.receive(receiver: Self.receiver, item: item)
        #expect(result.decision.action == .receive)
        #expect(result.decision.isAllowed == row.allowed)
        #expect(result.decision.reason.contains(row.reason), "\(result.decision.reason)")
        #expect(result.dataOwner == row.owner)
        #expect(result.ownerVerified == row.verified)
        // The header is enough: its first bytes decide as the whole item does.
        let head = try await fixture.engine.receive(receiver: Self.receiver, item: Array(item.prefix(300)))
        #expect(head.decision.isAllowed == row.allowed)
        // And a file, read by its header.
        let file = fixture.installation.directory.file("item-\(row.item)")
        try Data(item).write(to: URL(fileURLWithPath: file))
        #expect(try await fixture.engine.receive(receiver: Self.receiver, file: file).decision.isAllowed == row.allowed)
    }

    @Test("a changed header, a wiped owner and a missing file are errors, never a decision")
    func failures() async throws {
        let fixture = try await Fixture.make(inbound: "allApps")
        // Mark's envelope re-labelled as another owner's, and with its wrapped key changed.
        let original = try #require(fixture.items["encrypted"])
        let markOwner = Array(("oid:" + Self.managed.oid!.lowercased()).utf8)
        var relabelled = original
        let start = try #require(original.firstRange(of: Array(markOwner))).lowerBound
        relabelled.replaceSubrange(
            start..<start + markOwner.count, with: Array(("oid:" + Self.receiver.oid!.lowercased()).utf8))
        var rewrapped = original
        let info = try #require(try DataProtector.protectionInfo(original))
        rewrapped[info.headerLength - 30] ^= 0x01
        for changed in [relabelled, rewrapped] {
            let tampered = await custodyError {
                _ = try await fixture.engine.receive(receiver: Self.receiver, item: changed)
            }
            #expect(tampered?.code == .protection, "\(tampered?.message ?? "no error")")
        }

        _ = try await fixture.engine.wipe(account: Self.managed)
        let wiped = await custodyError {
            _ = try await fixture.engine.receive(receiver: Self.receiver, item: fixture.items["encrypted"]!)
        }
        #expect(wiped?.code == .protection)
        #expect(wiped?.message.contains("whose keys were wiped") == true, "\(wiped?.message ?? "")")

        let missing = await custodyError {
            _ = try await fixture.engine.receive(receiver: Self.receiver, file: "/nonexistent/item")
        }
        #expect(missing?.message.contains("/nonexistent/item") == true)
    }
}
