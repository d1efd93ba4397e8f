extension DocumentReader {
    /// Decodes `tenant.json`:
    /// `{"accounts": [{"oid", "upn", "groups", "displayName", "licensed"}], "allowedAccounts": null | [...], "managedApps": [...],
    /// "mdmManagedApps": [...]}`.
    ///
    /// Every account needs an OID or a UPN, and no OID or UPN may belong to two accounts: an
    /// identity that resolves two ways would make every decision about it ambiguous.
    mutating func decodeTenant() -> Tenant {
        var tenant = Tenant()
        let root = document.root
        guard root.kind == .object else {
            error(.invalidValue, "tenant.json must hold an object, found \(root.kind.article)", at: root, path: "$")
            return tenant
        }
        for member in uniqueMembers(of: root, path: "$") {
            let path = "$.\(member.key)"
            switch member.key {
            case "accounts":
                tenant.accounts = decodeAccounts(member.value, path: path)
            case "allowedAccounts":
                tenant.allowedAccounts = stringList(member.value, path: path)?.map(\.0)
            case "managedApps":
                tenant.managedApps = stringList(member.value, path: path)?.map(\.0) ?? []
            case "mdmManagedApps":
                tenant.mdmManagedApps = stringList(member.value, path: path)?.map(\.0) ?? []
            case let key where key.hasPrefix("$") || isAnnotation(key):
                continue
            default:
                warning(
                    .unknownProperty,
                    "unknown property '\(member.key)' of tenant.json is ignored (known: accounts, allowedAccounts, managedApps, mdmManagedApps)",
                    at: member.name, path: path)
            }
        }
        return tenant
    }

    private mutating func decodeAccounts(_ value: JSONValue, path: String) -> [TenantAccount] {
        if value.isNull { return [] }
        guard value.kind == .array else {
            error(.invalidValue, "\"accounts\" must be an array, found \(value.kind.article)", at: value, path: path)
            return []
        }
        var accounts: [TenantAccount] = []
        var seenOIDs: [AccountKey: Int] = [:]
        var seenUPNs: [AccountKey: Int] = [:]
        for (index, element) in value.elements.enumerated() {
            guard element.kind == .object else {
                error(
                    .invalidValue, "an account must be an object, found \(element.kind.article)", at: element,
                    path: "\(path)[\(index)]")
                continue
            }
            var oid: String?
            var upn: String?
            var groups: [String] = []
            var displayName: String?
            var licensed: Bool?
            var enabled: Bool?
            for member in uniqueMembers(of: element, path: "\(path)[\(index)]") {
                switch member.key {
                case "oid": oid = string(member.value, path: "\(path)[\(index)].oid")
                case "upn": upn = string(member.value, path: "\(path)[\(index)].upn")
                case "groups": groups = stringList(member.value, path: "\(path)[\(index)].groups")?.map(\.0) ?? []
                case "displayName":
                    displayName = string(member.value, path: "\(path)[\(index)].displayName")
                    if let name = displayName,
                        name.utf8.count > 256
                            || name.unicodeScalars.contains(where: {
                                $0.properties.generalCategory == .control
                            })
                    {
                        warning(
                            .invalidValue,
                            "displayName of an account is over 256 bytes or holds a control character; it is ignored",
                            at: member.value, path: "\(path)[\(index)].displayName")
                        displayName = nil
                    }
                case "licensed": licensed = optionalFlag(member, path: "\(path)[\(index)]")
                case "accountEnabled": enabled = optionalFlag(member, path: "\(path)[\(index)]")
                case let key where isAnnotation(key):
                    continue
                default:
                    warning(
                        .unknownProperty,
                        "unknown property '\(member.key)' of an account is ignored (known: oid, upn, groups, displayName, licensed, accountEnabled)",
                        at: member.name, path: "\(path)[\(index)]")
                }
            }
            let id: AccountID
            do {
                id = try AccountID(validatingOID: oid, upn: upn)
            } catch {
                let message = error.reason == .blank ? "an account needs an \"oid\" or a \"upn\"" : error.description
                self.error(.tenant, message, at: element, path: "\(path)[\(index)]")
                continue
            }
            if let key = id.oidKey {
                if let first = seenOIDs[key] {
                    error(
                        .tenant,
                        "OID '\(id.oid!)' is also the OID of accounts[\(first)]; an identity must name one account",
                        at: element, path: "\(path)[\(index)].oid")
                    continue
                }
                seenOIDs[key] = index
            }
            if let key = id.upnKey {
                if let first = seenUPNs[key] {
                    error(
                        .tenant,
                        "UPN '\(id.upn!)' is also the UPN of accounts[\(first)] (UPNs compare case-insensitively); an identity must name one account",
                        at: element, path: "\(path)[\(index)].upn")
                    continue
                }
                seenUPNs[key] = index
            }
            accounts.append(
                TenantAccount(id: id, groups: groups, displayName: displayName, licensed: licensed, enabled: enabled))
        }
        return accounts
    }

    /// An account's `true`, `false` or `null` member (nil for null); anything else is an error
    /// naming the member.
    private mutating func optionalFlag(_ member: JSONMembers.Member, path: String) -> Bool? {
        if member.value.isNull { return nil }
        guard let value = member.value.bool else {
            error(
                .invalidValue, "\(member.key) must be true, false or null, found \(member.value.kind.article)",
                at: member.value, path: "\(path).\(member.key)")
            return nil
        }
        return value
    }
}
