extension PolicySnapshot {
    /// May `length` characters of data owned by `owner` be cut or copied to another app?
    ///
    /// `allowedOutboundClipboardSharingLevel`: `allApps` allows; `managedAppsWithPasteIn` and
    /// `managedApps` allow a policy-managed destination; `blocked` blocks. A copy of at most
    /// `allowedOutboundClipboardSharingExceptionLength` characters is always allowed.
    /// - Parameter length: characters copied; nil when unknown (the exception cannot apply).
    public func copyOut(owner: AccountID?, destinationManaged: Bool, length: Int?) -> Decision {
        let party = resolve(owner)
        if let refusal = party.refusal(.owner) { return .refused(.copyOut, refusal) }
        guard let policy = party.policy else {
            return Decision(.copyOut, allowed: true, Finding(.unmanaged(.owner), nil))
        }
        let level = policy.allowedOutboundClipboardSharingLevel.value
        let allowed: Bool
        switch level {
        case .allApps: allowed = true
        case .managedAppsWithPasteIn, .managedApps: allowed = destinationManaged
        case .blocked: allowed = false
        }
        let limit = policy.allowedOutboundClipboardSharingExceptionLength.value
        let rule = Finding(.clipboardCopy(level, destinationManaged: destinationManaged), policy)
        guard !allowed, let length else { return Decision(.copyOut, allowed: allowed, rule) }
        if length <= limit {
            return Decision(
                .copyOut, allowed: true, Finding(.clipboardException(level, length: length, limit: limit), policy))
        }
        let exceeded = Finding(.clipboardExceptionExceeded(length: length, limit: limit), policy)
        return Decision(.copyOut, allowed: false, rule, exceeded, secondaryDecides: false)
    }

    /// May clipboard content from another app be pasted into data owned by `owner`?
    ///
    /// `allowedOutboundClipboardSharingLevel`: `allApps` and `managedAppsWithPasteIn` allow any
    /// source; `managedApps` allows a policy-managed source; `blocked` blocks.
    public func pasteIn(owner: AccountID?, sourceManaged: Bool) -> Decision {
        let party = resolve(owner)
        if let refusal = party.refusal(.owner) { return .refused(.pasteIn, refusal) }
        guard let policy = party.policy else {
            return Decision(.pasteIn, allowed: true, Finding(.unmanaged(.owner), nil))
        }
        let level = policy.allowedOutboundClipboardSharingLevel.value
        let allowed: Bool
        switch level {
        case .allApps, .managedAppsWithPasteIn: allowed = true
        case .managedApps: allowed = sourceManaged
        case .blocked: allowed = false
        }
        return Decision(
            .pasteIn, allowed: allowed, Finding(.clipboardPaste(level, sourceManaged: sourceManaged), policy))
    }
}
