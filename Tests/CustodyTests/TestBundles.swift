import CustodyPolicy
import Foundation

/// Small bundles written from code: a tenant of two groups (A and B) of `perGroup` accounts,
/// and one iOS policy per group whose settings the test picks.
struct TestBundle {
    static let groupA = "9a000000-0000-4000-8000-00000000000a"
    static let groupB = "9b000000-0000-4000-8000-00000000000b"

    var perGroup = 3
    var printBlockedA = false
    var printBlockedB = false
    var encryptionA = "whenDeviceLocked"
    var encryptionB = "whenDeviceLocked"
    var allowedAccounts: [String]?
    /// Renames policy A without changing what it decides.
    var nameSuffix = ""
    /// Settings of an app configuration policy for group A; nil: none.
    var configurationA: [(name: String, value: String)]?

    static func account(_ group: Character, _ index: Int) -> AccountID {
        AccountID(
            oid: String(format: "%c0000000-0000-4000-8000-%012d", group.asciiValue! == 65 ? 0x61 : 0x62, index),
            upn: "\(group.lowercased())\(index)@contoso.com")!
    }

    var tenantJSON: String {
        var accounts: [String] = []
        for (letter, group) in [("A", Self.groupA), ("B", Self.groupB)] {
            for index in 0..<perGroup {
                let id = Self.account(Character(letter), index)
                accounts.append(#"{"oid": "\#(id.oid!)", "upn": "\#(id.upn!)", "groups": ["\#(group)"]}"#)
            }
        }
        let allowed = allowedAccounts.map { "[" + $0.map { "\"\($0)\"" }.joined(separator: ", ") + "]" } ?? "null"
        return #"{"accounts": [\#(accounts.joined(separator: ", "))], "allowedAccounts": \#(allowed)}"#
    }

    private func policy(id: String, name: String, group: String, printBlocked: Bool, encryption: String) -> String {
        #"""
        {"@odata.type": "#microsoft.graph.iosManagedAppProtection", "id": "\#(id)", "displayName": "\#(name)",
         "printBlocked": \#(printBlocked), "appDataEncryptionType": "\#(encryption)",
         "assignments": [{"target": {"@odata.type": "#microsoft.graph.groupAssignmentTarget", "groupId": "\#(group)"}}]}
        """#
    }

    var policiesJSON: String {
        let a = policy(
            id: "T_a", name: "Policy A" + nameSuffix, group: Self.groupA, printBlocked: printBlockedA,
            encryption: encryptionA)
        let b = policy(
            id: "T_b", name: "Policy B", group: Self.groupB, printBlocked: printBlockedB, encryption: encryptionB)
        var documents = [a, b]
        if let configurationA {
            let pairs = configurationA.map { #"{"name": "\#($0.name)", "value": "\#($0.value)"}"# }.joined(
                separator: ", ")
            documents.append(
                #"""
                {"@odata.type": "#microsoft.graph.targetedManagedAppConfiguration", "id": "A_a", "displayName": "Configuration A",
                 "customSettings": [\#(pairs)],
                 "assignments": [{"target": {"@odata.type": "#microsoft.graph.groupAssignmentTarget", "groupId": "\#(Self.groupA)"}}]}
                """#)
        }
        return #"{"value": [\#(documents.joined(separator: ", "))]}"#
    }

    func bundle() throws -> PolicyBundle {
        try PolicyBundle.load(
            tenant: PolicyBundle.File(name: "tenant.json", bytes: Array(tenantJSON.utf8)),
            documents: [PolicyBundle.File(name: "policies.json", bytes: Array(policiesJSON.utf8))])
    }

    /// Writes the bundle's files into `directory`, each replaced whole (`.atomic`: written to a
    /// hidden file there, which is no bundle entry, then renamed over it), as a deploy tool or
    /// an editor's save does. A plain write truncates first, and a watcher probing a loaded
    /// machine between the truncation and the write (its debounce apart) reads an empty file
    /// and rightly rejects it: the watch tests then saw a rejection they did not cause.
    func write(to directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Data(tenantJSON.utf8).write(to: URL(fileURLWithPath: directory + "/tenant.json"), options: .atomic)
        try Data(policiesJSON.utf8).write(to: URL(fileURLWithPath: directory + "/policies.json"), options: .atomic)
    }
}
