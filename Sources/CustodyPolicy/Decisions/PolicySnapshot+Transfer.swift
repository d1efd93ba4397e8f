extension PolicySnapshot {
    /// May data owned by `owner` be saved to `location`, which belongs to `locationAccount`?
    ///
    /// 1. When the owner is managed and its `saveAsBlocked` is true: OneDrive for Business,
    ///    SharePoint, Box, iManage and Egnyte need to be in `allowedDataStorageLocations` and to
    ///    belong to the owner; the local drive needs `localStorage` listed and the camera roll
    ///    `photoLibrary`; an account document needs to be the owner's; Dropbox, Google Drive and
    ///    other locations are blocked.
    /// 2. When the location belongs to another managed account, the data enters that account's
    ///    documents: its `blockDataIngestionIntoOrganizationDocuments` must be false.
    ///
    /// - Parameters:
    ///   - owner: the account that owns the data; nil for data without an owner.
    ///   - locationAccount: the account the location belongs to; nil means an unmanaged
    ///     location (Intune semantics since SDK 15.1).
    public func saveTo(owner: AccountID?, location: SaveLocation, locationAccount: AccountID?) -> Decision {
        let ownerParty = resolve(owner)
        let target = resolve(locationAccount)
        if ownerParty.isContradictory { return .refused(.saveTo, .owner) }
        if target.isContradictory { return .refused(.saveTo, .locationAccount) }
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
            let blocked = targetPolicy.blockDataIngestionIntoOrganizationDocuments.value
            return Decision(.saveTo, allowed: !blocked, primary, Finding(.locationAccountIngestion(blocked: blocked), targetPolicy))
        }
        return Decision(.saveTo, allowed: true, primary)
    }

    private func saveLocationRule(_ location: SaveLocation, policy: EffectivePolicy, sameAccount: Bool) -> (code: Finding.Code, allowed: Bool) {
        guard policy.saveAsBlocked.value else { return (.saveAsAllowed, true) }
        switch location {
        case .oneDriveForBusiness, .sharePoint, .box, .iManage, .egnyte:
            guard policy.allowsSaving(to: location.storageLocation!) else {
                return (.saveLocationNotListed(location), false)
            }
            return sameAccount ? (.saveLocationListed(location), true) : (.saveLocationOtherAccount(location), false)
        case .localDrive, .cameraRoll:
            return policy.allowsSaving(to: location.storageLocation!)
                ? (.saveLocationListed(location), true) : (.saveLocationNotListed(location), false)
        case .accountDocument:
            return (.saveAccountDocument(sameAccount: sameAccount), sameAccount)
        case .dropbox, .googleDrive, .other:
            return (.saveLocationNeverAllowed(location), false)
        }
    }

    /// May data from `location`, which belongs to `locationAccount`, be opened into the
    /// documents of `receiver`?
    ///
    /// 1. When the receiver is managed and its `blockDataIngestionIntoOrganizationDocuments` is
    ///    true: OneDrive for Business and SharePoint need to be in `allowedDataIngestionLocations`
    ///    and to belong to the receiver; the camera needs `camera` listed and photos
    ///    `photoLibrary`; local storage and account documents need to be the receiver's own;
    ///    Box, iManage, Egnyte and other sources are blocked.
    /// 2. When the location belongs to another managed account, the data leaves that account:
    ///    its `allowedOutboundDataTransferDestinations` must be `allApps`, or `managedApps` with
    ///    a managed receiver.
    public func openFrom(receiver: AccountID?, location: OpenLocation, locationAccount: AccountID?) -> Decision {
        let receiverParty = resolve(receiver)
        let source = resolve(locationAccount)
        if receiverParty.isContradictory { return .refused(.openFrom, .receiver) }
        if source.isContradictory { return .refused(.openFrom, .locationAccount) }
        let sameAccount = isSame(locationAccount, source, receiver, receiverParty)
        let primary: Finding
        if let policy = receiverParty.policy {
            let code = openLocationRule(location, policy: policy, sameAccount: sameAccount)
            primary = Finding(code.code, policy)
            guard code.allowed else { return Decision(.openFrom, allowed: false, primary) }
        } else {
            primary = Finding(.unmanaged(.receiver), nil)
        }
        if let sourcePolicy = source.policy, !sameAccount {
            let (code, allowed) = sendRule(sourcePolicy, receiverManaged: receiverParty.isManaged, role: .locationAccount)
            return Decision(.openFrom, allowed: allowed, primary, Finding(code, sourcePolicy))
        }
        return Decision(.openFrom, allowed: true, primary)
    }

    private func openLocationRule(_ location: OpenLocation, policy: EffectivePolicy, sameAccount: Bool) -> (code: Finding.Code, allowed: Bool) {
        guard policy.blockDataIngestionIntoOrganizationDocuments.value else { return (.ingestionAllowed, true) }
        switch location {
        case .oneDriveForBusiness, .sharePoint:
            guard policy.allowsOpening(from: location.ingestionLocation!) else {
                return (.openLocationNotListed(location), false)
            }
            return sameAccount ? (.openLocationListed(location), true) : (.openLocationOtherAccount(location), false)
        case .camera, .photos:
            return policy.allowsOpening(from: location.ingestionLocation!)
                ? (.openLocationListed(location), true) : (.openLocationNotListed(location), false)
        case .localStorage, .accountDocument:
            return (.openLocalSource(location, sameAccount: sameAccount), sameAccount)
        case .box, .iManage, .egnyte, .other:
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

    /// May a shared file or item owned by `dataOwner` (read from its protection tag; nil when
    /// untagged) be received into the documents of `receiver`?
    ///
    /// A managed receiver's `allowedInboundDataTransferSources`: `allApps` allows, `managedApps`
    /// allows a managed owner, `none` only the receiver's own data. Then, when the owner is
    /// another managed account, its send rule applies as for open-from.
    public func receive(receiver: AccountID?, dataOwner: AccountID?) -> Decision {
        let receiverParty = resolve(receiver)
        let owner = resolve(dataOwner)
        if receiverParty.isContradictory { return .refused(.receive, .receiver) }
        if owner.isContradictory { return .refused(.receive, .dataOwner) }
        let same = isSame(dataOwner, owner, receiver, receiverParty)
        let primary: Finding
        if let policy = receiverParty.policy {
            let level = policy.allowedInboundDataTransferSources.value
            let allowed: Bool
            switch level {
            case .allApps: allowed = true
            case .managedApps: allowed = owner.isManaged
            case .none: allowed = same
            }
            primary = Finding(.receive(level, sourceManaged: owner.isManaged, sameAccount: same), policy)
            guard allowed else { return Decision(.receive, allowed: false, primary) }
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
    /// target; `managedApps` allows policy-managed apps (in the owner's policies' app lists or
    /// the tenant's `managedApps`) and exempted apps; `none` allows exempted apps only.
    /// Exemptions are `exemptedAppProtocols` (iOS URL schemes) and `exemptedAppPackages`
    /// (Android package ids).
    public func share(owner: AccountID?, targets: [String]) -> ShareDecision {
        let owner = resolve(owner)
        return ShareDecision(targets: targets.map { target in
            ShareDecision.Target(id: target, decision: shareDecision(owner: owner, target: target))
        })
    }

    private func shareDecision(owner: PolicySnapshot.Party, target: String) -> Decision {
        if owner.isContradictory { return .refused(.share, .owner) }
        guard let policy = owner.policy else {
            return Decision(.share, allowed: true, Finding(.unmanaged(.owner), nil))
        }
        let level = policy.allowedOutboundDataTransferDestinations.value
        switch level {
        case .allApps:
            return Decision(.share, allowed: true, Finding(.shareAllApps, policy))
        case .managedApps where policy.isManagedApp(target):
            return Decision(.share, allowed: true, Finding(.shareTargetManaged(target), policy))
        case _ where policy.isExemptedApp(target):
            return Decision(.share, allowed: true, Finding(.shareTargetExempted(target, level), policy))
        case .managedApps:
            return Decision(.share, allowed: false, Finding(.shareTargetNotManaged(target), policy))
        case .none:
            return Decision(.share, allowed: false, Finding(.shareTargetNotExempted(target), policy))
        }
    }
}
