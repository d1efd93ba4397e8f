import Foundation

/// A bundle whose tenant has `accounts` (UPNs before `@contoso.com`) in one group, `g`, reached
/// by the named iOS policies: "Second" blocks printing, any other allows it. Applied in turn,
/// such bundles make policies reach the accounts one after another, as `incumbent` precedence
/// needs (PrecedenceTests, and the console's account view of a policy set aside).
public func writePrecedenceBundle(_ policies: [String], accounts: [String], to path: String) throws {
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    let tenant = accounts.map { #"{"upn": "\#($0)@contoso.com", "groups": ["g"]}"# }.joined(separator: ", ")
    try #"{"accounts": [\#(tenant)]}"#.write(toFile: path + "/tenant.json", atomically: true, encoding: .utf8)
    let documents = policies.map { name in
        #"""
        {"@odata.type": "#microsoft.graph.iosManagedAppProtection", "id": "T_\#(name)", "displayName": "\#(name)",
         "printBlocked": \#(name == "Second"),
         "assignments": [{"target": {"@odata.type": "#microsoft.graph.groupAssignmentTarget", "groupId": "g"}}]}
        """#
    }
    try #"{"value": [\#(documents.joined(separator: ", "))]}"#.write(
        toFile: path + "/policies.json", atomically: true, encoding: .utf8)
}
