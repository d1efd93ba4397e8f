public import CustodyPolicy

/// A deterministic synthetic tenant: accounts in groups, protection policies assigned to those
/// groups with a spread of settings, and query streams over them. The same seed always gives
/// the same bytes, so runs compare.
public struct SyntheticTenant: Sendable {
    public let accountCount: Int
    public let policyCount: Int
    public let groupCount: Int
    private let seed: UInt64

    /// - Parameters:
    ///   - accounts: tenant accounts (UPN `user<i>@contoso.com`, a GUID OID, one to three groups).
    ///   - policies: protection policies; about a tenth Android, one default, the rest iOS.
    public init(accounts: Int, policies: Int, groups: Int = 200, seed: UInt64 = 0x5EED) {
        self.accountCount = accounts
        self.policyCount = policies
        self.groupCount = groups
        self.seed = seed
    }

    public static func upn(_ index: Int) -> String { "user\(index)@contoso.com" }

    public static func oid(_ index: Int) -> String {
        let hex = String(index, radix: 16)
        return "5a1e0000-0000-4000-8000-" + String(repeating: "0", count: 12 - hex.count) + hex
    }

    /// `tenant.json`.
    public func tenantJSON() -> [UInt8] {
        var random = SplitMix(seed: seed)
        var text = #"{"allowedAccounts": null, "managedApps": ["com.contoso.expenses"], "accounts": ["#
        text.reserveCapacity(accountCount * 110)
        for index in 0..<accountCount {
            if index > 0 { text += "," }
            let groups = (0..<(1 + random.next(3))).map { _ in "\"g\(random.next(groupCount))\"" }
            text += "\n  {\"oid\": \"\(Self.oid(index))\", \"upn\": \"\(Self.upn(index))\", \"groups\": [\(groups.joined(separator: ", "))]}"
        }
        text += "\n]}\n"
        return Array(text.utf8)
    }

    /// The policies as one Graph collection response.
    public func policiesJSON() -> [UInt8] {
        var random = SplitMix(seed: seed &+ 1)
        let transfer = ["allApps", "managedApps", "none"]
        let clipboard = ["allApps", "managedAppsWithPasteIn", "managedApps", "blocked"]
        let storage = ["oneDriveForBusiness", "sharePoint", "box", "localStorage", "photoLibrary", "iManage", "egnyte"]
        let ingestion = ["oneDriveForBusiness", "sharePoint", "camera", "photoLibrary"]
        var documents: [String] = []
        for index in 0..<policyCount {
            let type: String
            if index == policyCount - 1 {
                type = "defaultManagedAppProtection"
            } else if index % 10 == 9 {
                type = "androidManagedAppProtection"
            } else {
                type = "iosManagedAppProtection"
            }
            func pick(_ values: [String]) -> String { values[random.next(values.count)] }
            func subset(_ values: [String]) -> String { values.filter { _ in random.next(2) == 0 }.map { "\"\($0)\"" }.joined(separator: ", ") }
            var members = [
                ##""@odata.type": "#microsoft.graph.\##(type)""##,
                #""id": "T_\#(index)""#,
                #""displayName": "Synthetic policy \#(index)""#,
                #""allowedInboundDataTransferSources": "\#(pick(transfer))""#,
                #""allowedOutboundDataTransferDestinations": "\#(pick(transfer))""#,
                #""allowedOutboundClipboardSharingLevel": "\#(pick(clipboard))""#,
                #""allowedOutboundClipboardSharingExceptionLength": \#(random.next(3) * 10)"#,
                #""saveAsBlocked": \#(random.next(2) == 0)"#,
                #""allowedDataStorageLocations": [\#(subset(storage))]"#,
                #""blockDataIngestionIntoOrganizationDocuments": \#(random.next(2) == 0)"#,
                #""allowedDataIngestionLocations": [\#(subset(ingestion))]"#,
                #""printBlocked": \#(random.next(2) == 0)"#,
                #""dataBackupBlocked": \#(random.next(2) == 0)"#,
                #""notificationRestriction": "\#(pick(["allow", "blockOrganizationalData", "block"]))""#,
                #""periodOfflineBeforeAccessCheck": "PT12H""#,
                #""periodOfflineBeforeWipeIsEnforced": "P90D""#,
            ]
            switch type {
            case "iosManagedAppProtection":
                members.append(#""appDataEncryptionType": "\#(pick(["useDeviceSettings", "afterDeviceRestart", "whenDeviceLocked"]))""#)
                members.append(#""exemptedAppProtocols": [{"name": "Default", "value": "tel;skype"}]"#)
            case "androidManagedAppProtection":
                members.append(#""encryptAppData": \#(random.next(2) == 0)"#)
                members.append(#""screenCaptureBlocked": \#(random.next(2) == 0)"#)
            default:
                break
            }
            if type != "defaultManagedAppProtection" {
                var assignments = (0..<(1 + random.next(3))).map { _ in
                    ##"{"target": {"@odata.type": "#microsoft.graph.groupAssignmentTarget", "groupId": "g\##(random.next(groupCount))"}}"##
                }
                if random.next(3) == 0 {
                    assignments.append(##"{"target": {"@odata.type": "#microsoft.graph.exclusionGroupAssignmentTarget", "groupId": "g\##(random.next(groupCount))"}}"##)
                }
                members.append(#""assignments": [\#(assignments.joined(separator: ", "))]"#)
                members.append(#""apps": [{"id": "com.microsoft.office.word.ios", "mobileAppIdentifier": {"bundleId": "com.microsoft.office.word"}}, {"id": "com.microsoft.office.outlook.ios", "mobileAppIdentifier": {"bundleId": "com.microsoft.office.outlook"}}]"#)
            }
            documents.append("  {" + members.joined(separator: ", ") + "}")
        }
        return Array(("{\"value\": [\n" + documents.joined(separator: ",\n") + "\n]}\n").utf8)
    }

    /// The bundle, loaded from memory.
    public func bundle() throws -> PolicyBundle {
        try PolicyBundle.load(
            tenant: PolicyBundle.File(name: "tenant.json", bytes: tenantJSON()),
            documents: [PolicyBundle.File(name: "policies.json", bytes: policiesJSON())])
    }

    /// A scenario matrix of `owners × 10 × 4` save-to cases (owners × every save location but
    /// `other` × no account, the last account, a stranger and the first account) as one grid with a
    /// table, its expectations computed by `snapshot` so every case passes. `bundle` is the
    /// matrix's bundle path (relative to the matrix file, or absolute).
    public func matrixJSON(owners: Int, bundle: String, snapshot: PolicySnapshot) -> [UInt8] {
        let locations = SaveLocation.allCases.filter { $0 != .other }
        let ownerNames = (0..<owners).map { Self.upn($0 * max(1, accountCount / max(owners, 1)) % accountCount) }
        let holders: [String?] = [nil, Self.upn(accountCount - 1), "stranger@fabrikam.com", Self.upn(0)]
        var text = #"{"bundle": "\#(bundle)", "context": {"platform": "ios"}, "grids": [{"name": "generated",\#n"#
        text += #" "query": {"action": "saveTo"},\#n"#
        text += #" "axes": {"owner": ["# + ownerNames.map { "\"\($0)\"" }.joined(separator: ", ") + "],\n"
        text += #"  "location": ["# + locations.map { "\"\($0.rawValue)\"" }.joined(separator: ", ") + "],\n"
        text += #"  "locationAccount": ["# + holders.map { $0.map { "\"\($0)\"" } ?? "null" }.joined(separator: ", ") + "]},\n"
        text += #" "table": {"#
        var firstOwner = true
        for owner in ownerNames {
            text += (firstOwner ? "\n" : ",\n") + "  \"\(owner)\": {"
            firstOwner = false
            let ownerID = AccountID(upn: owner)!
            for (locationIndex, location) in locations.enumerated() {
                text += (locationIndex == 0 ? "" : ", ") + "\"\(location.rawValue)\": {"
                for (holderIndex, holder) in holders.enumerated() {
                    let allowed = snapshot.saveTo(owner: ownerID, location: location, locationAccount: holder.map { AccountID(upn: $0)! }).isAllowed
                    let key = holder ?? "null"
                    text += (holderIndex == 0 ? "" : ", ") + "\"\(key)\": \"\(allowed ? "allow" : "block")\""
                }
                text += "}"
            }
            text += "}"
        }
        text += "\n }}]}\n"
        return Array(text.utf8)
    }

    /// `count` queries as JSON Lines, a mix of every action, about 2% naming accounts outside
    /// the tenant.
    public func queries(_ count: Int) -> [UInt8] {
        var random = SplitMix(seed: seed &+ 2)
        let save = SaveLocation.allCases.map(\.rawValue)
        let open = OpenLocation.allCases.map(\.rawValue)
        var output: [UInt8] = []
        output.reserveCapacity(count * 120)
        func account() -> String {
            if random.next(50) == 0 { return "\"stranger\(random.next(1_000))@fabrikam.com\"" }
            let index = random.next(accountCount)
            return random.next(4) == 0 ? "\"\(Self.oid(index))\"" : "\"\(Self.upn(index))\""
        }
        for _ in 0..<count {
            let line: String
            switch random.next(10) {
            case 0, 1, 2:
                line = #"{"action":"saveTo","owner":\#(account()),"location":"\#(save[random.next(save.count)])","locationAccount":\#(random.next(3) == 0 ? "null" : account())}"#
            case 3, 4, 5:
                line = #"{"action":"openFrom","receiver":\#(account()),"location":"\#(open[random.next(open.count)])","locationAccount":\#(random.next(3) == 0 ? "null" : account())}"#
            case 6:
                line = #"{"action":"share","owner":\#(account()),"targets":["com.microsoft.office.word","com.getdropbox.Dropbox"]}"#
            case 7:
                line = #"{"action":"receive","receiver":\#(account()),"dataOwner":\#(random.next(2) == 0 ? "null" : account())}"#
            case 8:
                line = #"{"action":"copyOut","owner":\#(account()),"destinationManaged":\#(random.next(2) == 0),"length":\#(random.next(40))}"#
            default:
                let action = ["print", "backup", "notifications", "encryptionRequired", "screenCapture", "accountAllowed"][random.next(6)]
                line = #"{"action":"\#(action)","account":\#(account())}"#
            }
            output.append(contentsOf: line.utf8)
            output.append(UInt8(ascii: "\n"))
        }
        return output
    }
}

/// SplitMix64: small, fast, deterministic.
public struct SplitMix: Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next(_ bound: Int) -> Int {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        return Int(z % UInt64(bound))
    }
}
