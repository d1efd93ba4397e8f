extension PolicySnapshot {
    /// May data owned by `owner` be saved to `location`, which belongs to `locationAccount`?
    ///
    /// 1. When the owner is managed, its "Save copies of org data" as it stands under its send
    ///    level (`EffectivePolicy.Gate`): not restricted → allowed. Restricted (`saveAsBlocked`,
    ///    or send None, which allows no location): OneDrive for Business, SharePoint, Box,
    ///    iManage and Egnyte need to be in `allowedDataStorageLocations` and to belong to the
    ///    owner; the local drive needs `localStorage` listed and to be the owner's container;
    ///    the camera roll needs `photoLibrary` listed; an account document needs to be the
    ///    owner's; Dropbox, Google Drive and other locations are blocked.
    /// 2. When the location belongs to another managed account, the data enters that account's
    ///    documents: its "Open data into Org documents", as it stands under its receive level,
    ///    must not be restricted.
    ///
    /// - Parameters:
    ///   - owner: the account that owns the data; nil for data without an owner.
    ///   - locationAccount: the account the location belongs to; nil means an unmanaged
    ///     location (Intune semantics since SDK 15.1, for the local drive too).
    public func saveTo(owner: AccountID?, location: SaveLocation, locationAccount: AccountID?) -> Decision {
        let ownerParty = resolve(owner)
        let target = resolve(locationAccount)
        if let refusal = ownerParty.refusal(.owner) { return .refused(.saveTo, refusal) }
        if let refusal = target.refusal(.locationAccount) { return .refused(.saveTo, refusal) }
        let sameAccount = isSame(locationAccount, target, owner, ownerParty)
        let primary: Finding
        if let policy = ownerParty.policy {
            let code = saveLocationRule(location, policy: policy, sameAccount: sameAccount)
            primary = Finding(code.code, policy)
            guard code.allowed else { return Decision(.saveTo, allowed: false, primary) }
        } else {
            primary = Finding(.unmanaged(.owner), nil)
        }
        if let targetPolicy = target.policy, !sameAccount {
            let blocked = targetPolicy.ingestionGate.restricts
            return Decision(
                .saveTo, allowed: !blocked, primary, Finding(.locationAccountIngestion(blocked: blocked), targetPolicy))
        }
        return Decision(.saveTo, allowed: true, primary)
    }

    private func saveLocationRule(_ location: SaveLocation, policy: EffectivePolicy, sameAccount: Bool) -> (
        code: Finding.Code, allowed: Bool
    ) {
        let gate = policy.saveGate
        switch gate {
        case .open: return (.saveAsAllowed, true)
        case .openByLevel: return (.saveOpenBySend, true)
        case .listed, .closedBySend, .closedByReceive: break
        }
        if location == .accountDocument { return (.saveAccountDocument(sameAccount: sameAccount), sameAccount) }
        if gate == .closedBySend { return (.saveClosedBySend(location), false) }
        switch location {
        case .oneDriveForBusiness, .sharePoint, .box, .iManage, .egnyte, .localDrive:
            guard policy.allowsSaving(to: location.storageLocation!) else {
                return (.saveLocationNotListed(location), false)
            }
            return sameAccount ? (.saveLocationListed(location), true) : (.saveLocationOtherAccount(location), false)
        case .cameraRoll:
            return policy.allowsSaving(to: .photoLibrary)
                ? (.saveLocationListed(location), true) : (.saveLocationNotListed(location), false)
        case .dropbox, .googleDrive, .other, .accountDocument:
            return (.saveLocationNeverAllowed(location), false)
        }
    }

    /// May data from `location`, which belongs to `locationAccount`, be opened into the
    /// documents of `receiver`?
    ///
    /// 1. When the receiver is managed, its "Open data into Org documents" as it stands under
    ///    its receive level (`EffectivePolicy.Gate`): not restricted → allowed. Restricted
    ///    (`blockDataIngestionIntoOrganizationDocuments`, or receive None, which allows no
    ///    location): OneDrive for Business and SharePoint need to be in
    ///    `allowedDataIngestionLocations` and to belong to the receiver; the camera needs
    ///    `camera` listed and photos `photoLibrary`; an account document needs to be the
    ///    receiver's own; local storage, Box, iManage, Egnyte and other sources are blocked.
    /// 2. When the location belongs to another managed account, the data leaves that account:
    ///    its `allowedOutboundDataTransferDestinations` must be `allApps`, or `managedApps` with
    ///    a managed receiver.
    ///
    /// Data from a location without an account into a receiver with "All apps with incoming
    /// Org data" on an MDM-enrolled device becomes the receiver's (`Decision.protectsAsReceiver`).
    public func openFrom(receiver: AccountID?, location: OpenLocation, locationAccount: AccountID?) -> Decision {
        let receiverParty = resolve(receiver)
        let source = resolve(locationAccount)
        if let refusal = receiverParty.refusal(.receiver) { return .refused(.openFrom, refusal) }
        if let refusal = source.refusal(.locationAccount) { return .refused(.openFrom, refusal) }
        let sameAccount = isSame(locationAccount, source, receiver, receiverParty)
        let primary: Finding
        if let policy = receiverParty.policy {
            let code = openLocationRule(location, policy: policy, sameAccount: sameAccount)
            primary = Finding(code.code, policy)
            guard code.allowed else { return Decision(.openFrom, allowed: false, primary) }
            if locationAccount == nil, adoptsUnknownSources(policy) {
                return Decision(
                    .openFrom, allowed: true, primary, Finding(.unknownSourceAdopted, policy), secondaryDecides: false)
            }
        } else {
            primary = Finding(.unmanaged(.receiver), nil)
        }
        if let sourcePolicy = source.policy, !sameAccount {
            let (code, allowed) = sendRule(
                sourcePolicy, receiverManaged: receiverParty.isManaged, role: .locationAccount)
            return Decision(.openFrom, allowed: allowed, primary, Finding(code, sourcePolicy))
        }
        return Decision(.openFrom, allowed: true, primary)
    }

    private func openLocationRule(_ location: OpenLocation, policy: EffectivePolicy, sameAccount: Bool) -> (
        code: Finding.Code, allowed: Bool
    ) {
        let gate = policy.ingestionGate
        switch gate {
        case .open: return (.ingestionAllowed, true)
        case .openByLevel: return (.ingestionOpenByReceive, true)
        case .listed, .closedBySend, .closedByReceive: break
        }
        if location == .accountDocument { return (.openAccountDocument(sameAccount: sameAccount), sameAccount) }
        if gate == .closedByReceive { return (.ingestionClosedByReceive(location), false) }
        switch location {
        case .oneDriveForBusiness, .sharePoint:
            guard policy.allowsOpening(from: location.ingestionLocation!) else {
                return (.openLocationNotListed(location), false)
            }
            return sameAccount ? (.openLocationListed(location), true) : (.openLocationOtherAccount(location), false)
        case .camera, .photos:
            return policy.allowsOpening(from: location.ingestionLocation!)
                ? (.openLocationListed(location), true) : (.openLocationNotListed(location), false)
        case .localStorage:
            return (.openLocalStorage, false)
        case .box, .iManage, .egnyte, .other, .accountDocument:
            return (.openLocationNeverAllowed(location), false)
        }
    }

    /// The send rule of data leaving a managed account: `allApps`, or `managedApps` to a
    /// managed receiver.
    private func sendRule(_ policy: EffectivePolicy, receiverManaged: Bool, role: AccountRole) -> (Finding.Code, Bool) {
        let level = policy.allowedOutboundDataTransferDestinations.value
        let allowed = level == .allApps || (level == .managedApps && receiverManaged)
        return (.send(level, receiverManaged: receiverManaged, role: role), allowed)
    }

    /// "All apps with incoming Org data" (iOS `protectInboundDataFromUnknownSources` with
    /// receive All apps) applies on MDM-enrolled devices; elsewhere All apps applies as is.
    /// With no management level in the context, the more protective reading: it applies.
    private func adoptsUnknownSources(_ policy: EffectivePolicy) -> Bool {
        guard policy.platform != .android, policy.protectInboundDataFromUnknownSources.value,
            policy.allowedInboundDataTransferSources.value == .allApps
        else { return false }
        return context.managementLevel == nil || context.managementLevel == .mdm
    }

    /// May a shared file or item owned by `dataOwner` (read from its protection tag; nil when
    /// untagged) be received into the documents of `receiver`?
    ///
    /// A managed receiver's `allowedInboundDataTransferSources`: `allApps` allows, `managedApps`
    /// allows a managed owner, `none` only the receiver's own data. Then, when the owner is
    /// another managed account, its send rule applies as for open-from. Untagged data received
    /// under "All apps with incoming Org data" on an MDM-enrolled device becomes the
    /// receiver's (`Decision.protectsAsReceiver`).
    public func receive(receiver: AccountID?, dataOwner: AccountID?) -> Decision {
        let receiverParty = resolve(receiver)
        let owner = resolve(dataOwner)
        if let refusal = receiverParty.refusal(.receiver) { return .refused(.receive, refusal) }
        if let refusal = owner.refusal(.dataOwner) { return .refused(.receive, refusal) }
        let same = isSame(dataOwner, owner, receiver, receiverParty)
        let primary: Finding
        if let policy = receiverParty.policy {
            let level = policy.allowedInboundDataTransferSources.value
            let allowed: Bool
            switch level {
            case .allApps: allowed = true
            case .managedApps: allowed = owner.isManaged || same
            case .none: allowed = same
            }
            primary = Finding(.receive(level, sourceManaged: owner.isManaged, sameAccount: same), policy)
            guard allowed else { return Decision(.receive, allowed: false, primary) }
            if dataOwner == nil, adoptsUnknownSources(policy) {
                return Decision(
                    .receive, allowed: true, primary, Finding(.unknownSourceAdopted, policy), secondaryDecides: false)
            }
        } else {
            primary = Finding(.unmanaged(.receiver), nil)
        }
        if let ownerPolicy = owner.policy, !same {
            let (code, allowed) = sendRule(ownerPolicy, receiverManaged: receiverParty.isManaged, role: .dataOwner)
            return Decision(.receive, allowed: allowed, primary, Finding(code, ownerPolicy))
        }
        return Decision(.receive, allowed: true, primary)
    }

    /// Which of `targets` may receive data owned by `owner` (Open in / Copy to)?
    ///
    /// An unmanaged owner, or `allowedOutboundDataTransferDestinations` = `allApps`, allows every
    /// target; `none` allows none. `managedApps` allows policy-managed apps (in the owner's
    /// policies' app lists or the tenant's `managedApps`) and exempted ones: a URL scheme in
    /// `exemptedAppProtocols` (iOS), a package id in `exemptedAppPackages` (Android), a universal
    /// link (an `http(s)://` target) in `exemptedUniversalLinks` or `managedUniversalLinks`
    /// (iOS). Under "Policy managed apps with OS sharing" on an MDM-enrolled device, apps in the
    /// tenant's `mdmManagedApps` too. With "Open-In/Share filtering", the share sheet shows only
    /// the allowed targets (`ShareDecision.filtersShareSheet`).
    public func share(owner: AccountID?, targets: [String]) -> ShareDecision {
        let owner = resolve(owner)
        let filters = owner.refusal(.owner) == nil && (owner.policy.map(filtersShareSheet) ?? false)
        return ShareDecision(
            targets: targets.map { target in
                ShareDecision.Target(id: target, decision: shareDecision(owner: owner, target: target))
            }, filtersShareSheet: filters)
    }

    private func filtersShareSheet(_ policy: EffectivePolicy) -> Bool {
        policy.platform == .ios && policy.allowedOutboundDataTransferDestinations.value == .managedApps
            && policy.filterOpenInToOnlyManagedApps.value
    }

    func shareDecision(owner: PolicySnapshot.Party, target: String) -> Decision {
        if let refusal = owner.refusal(.owner) { return .refused(.share, refusal) }
        guard let policy = owner.policy else {
            return Decision(.share, allowed: true, Finding(.unmanaged(.owner), nil))
        }
        switch policy.allowedOutboundDataTransferDestinations.value {
        case .allApps:
            return Decision(.share, allowed: true, Finding(.shareAllApps, policy))
        case .none:
            return Decision(.share, allowed: false, Finding(.shareBlocked(target), policy))
        case .managedApps:
            if policy.isManagedApp(target) {
                return Decision(.share, allowed: true, Finding(.shareTargetManaged(target), policy))
            }
            if let list = policy.exemption(of: target) {
                return Decision(.share, allowed: true, Finding(.shareTargetExempted(target, list: list), policy))
            }
            if policy.isManagedUniversalLink(target) {
                return Decision(.share, allowed: true, Finding(.shareTargetManagedLink(target), policy))
            }
            if sharesWithMDMManagedApps(policy), bundle.tenant.isMDMManagedApp(target) {
                return Decision(.share, allowed: true, Finding(.shareTargetMDMManaged(target), policy))
            }
            return Decision(.share, allowed: false, Finding(.shareTargetNotManaged(target), policy))
        }
    }

    /// "Policy managed apps with OS sharing" applies on MDM-enrolled devices only (elsewhere,
    /// Policy managed apps applies); an unknown management level cannot be assumed enrolled.
    func sharesWithMDMManagedApps(_ policy: EffectivePolicy) -> Bool {
        policy.platform == .ios && policy.disableProtectionOfManagedOutboundOpenInData.value
            && context.managementLevel == .mdm
    }
}

extension Tenant {
    /// Whether the devices' MDM manages `appID` (case-insensitive).
    func isMDMManagedApp(_ appID: String) -> Bool {
        mdmManagedApps.contains { $0.caseInsensitiveCompare(appID) }
    }
}

extension String {
    /// ASCII case-insensitive equality, without allocating.
    func caseInsensitiveCompare(_ other: String) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        return zip(utf8, other.utf8).allSatisfy { a, b in
            a == b || (a | 0x20 == b | 0x20 && (a | 0x20) >= UInt8(ascii: "a") && (a | 0x20) <= UInt8(ascii: "z"))
        }
    }
}
