extension Finding {
    /// The finding in words: the rule, the setting's value, and where the value came from.
    public var explanation: String {
        let statement = self.statement
        guard let setting, let policy else { return statement }
        let summary = policy.setting(setting)
        switch summary.resolution {
        case .configured:
            return statement + " (from " + quotedNames(summary.sources) + ")"
        case .notConfigured:
            return statement + " (Intune default: no applicable policy configures \(setting))"
        case .conflictDefault:
            return statement + " (recommended value; policies disagree: \(summary.disagreement ?? ""))"
        }
    }

    private func value(_ setting: PolicySetting) -> String {
        policy.map { $0.setting(setting).value.description } ?? "?"
    }

    private var statement: String {
        switch code {
        case .contradictoryAccount(let role):
            return
                "\(role.phrase) carries an OID and a UPN that the tenant records for different accounts: it is ambiguous, so the action is refused"
        case .platformRequired:
            return
                "the bundle holds policies for more than one platform and the decision names none: iOS and Android settings are never merged, so the action is refused (name the platform)"
        case .unmanaged(let role):
            return "\(role.phrase) is not managed: no protection policy applies to it"

        case .saveAsAllowed:
            return "saveAsBlocked is false: copies of org data may be saved"
        case .saveOpenBySend:
            return
                "allowedOutboundDataTransferDestinations is allApps: saving copies is not restricted (saveAsBlocked is in effect only when org data may go to policy-managed apps)"
        case .saveLocationListed(let location):
            let listed =
                "saveAsBlocked is true, but \(location.storageLocation!) is in allowedDataStorageLocations \(value(.allowedDataStorageLocations))"
            switch location {
            case .cameraRoll: return listed
            case .localDrive: return listed + " and the local storage is the owner's"
            default: return listed + " and the location belongs to the owner's account"
            }
        case .saveLocationNotListed(let location):
            return
                "saveAsBlocked is true and \(location.storageLocation!) is not in allowedDataStorageLocations \(value(.allowedDataStorageLocations))"
        case .saveLocationOtherAccount(let location):
            return location == .localDrive
                ? "saveAsBlocked is true: localStorage is in allowedDataStorageLocations, but only for the owner's own local storage, and this one belongs to another account or to none"
                : "saveAsBlocked is true: \(location.storageLocation!) is in allowedDataStorageLocations, but only in the owner's own account, and the location belongs to another account or to none"
        case .saveLocationNeverAllowed(let location):
            return "saveAsBlocked is true and \(location) is never an allowed save location while it is"
        case .saveAccountDocument(let same):
            let restricted =
                policy?.saveGate == .closedBySend
                ? "allowedOutboundDataTransferDestinations is none" : "saveAsBlocked is true"
            return same
                ? "\(restricted), but the document belongs to the owner's own account"
                : "\(restricted) and the document belongs to another account or to none"
        case .saveClosedBySend(let location):
            return
                "allowedOutboundDataTransferDestinations is none: saving copies of org data is blocked, to \(location) as to every location"
        case .locationAccountIngestion(let blocked):
            let base = "the location belongs to another managed account, "
            switch policy?.ingestionGate {
            case .closedByReceive?:
                return base + "whose allowedInboundDataTransferSources is none: no data may enter its documents"
            case .openByLevel?:
                return base + "whose allowedInboundDataTransferSources is allApps: data may enter its documents"
            default: return base + "whose blockDataIngestionIntoOrganizationDocuments is \(blocked)"
            }

        case .ingestionAllowed:
            return "blockDataIngestionIntoOrganizationDocuments is false: data may be opened into org documents"
        case .ingestionOpenByReceive:
            return
                "allowedInboundDataTransferSources is allApps: opening data into org documents is not restricted (blockDataIngestionIntoOrganizationDocuments is in effect only when data may come from policy-managed apps)"
        case .openLocationListed(let location):
            let listed =
                "blockDataIngestionIntoOrganizationDocuments is true, but \(location.ingestionLocation!) is in allowedDataIngestionLocations \(value(.allowedDataIngestionLocations))"
            return location == .camera || location == .photos
                ? listed : listed + " and the location belongs to the receiving account"
        case .openLocationNotListed(let location):
            return
                "blockDataIngestionIntoOrganizationDocuments is true and \(location.ingestionLocation!) is not in allowedDataIngestionLocations \(value(.allowedDataIngestionLocations))"
        case .openLocationOtherAccount(let location):
            return
                "blockDataIngestionIntoOrganizationDocuments is true: \(location.ingestionLocation!) is in allowedDataIngestionLocations, but only in the receiving account's own location, and it belongs to another account or to none"
        case .openLocationNeverAllowed(let location):
            return
                "blockDataIngestionIntoOrganizationDocuments is true and \(location) is never an allowed source while it is"
        case .openLocalStorage:
            return
                "blockDataIngestionIntoOrganizationDocuments is true and localStorage is not a location allowedDataIngestionLocations can list: opening from local storage is blocked, whoever it belongs to"
        case .openAccountDocument(let same):
            let restricted =
                policy?.ingestionGate == .closedByReceive
                ? "allowedInboundDataTransferSources is none" : "blockDataIngestionIntoOrganizationDocuments is true"
            return same
                ? "\(restricted), but the document belongs to the receiving account"
                : "\(restricted) and the document belongs to another account or to none"
        case .ingestionClosedByReceive(let location):
            return
                "allowedInboundDataTransferSources is none: opening data into org documents is blocked, from \(location) as from every location"

        case .send(let level, let receiverManaged, let role):
            let base =
                "\(role.phrase) is another managed account, whose allowedOutboundDataTransferDestinations is \(level)"
            guard level == .managedApps else { return base }
            return base
                + (receiverManaged ? " and the receiving side is managed" : " and the receiving side is not managed")

        case .shareAllApps:
            return "allowedOutboundDataTransferDestinations is allApps: any app may receive the data"
        case .shareTargetManaged(let target):
            return "allowedOutboundDataTransferDestinations is managedApps and \(target) is a policy-managed app"
        case .shareTargetExempted(let target, let list):
            return "allowedOutboundDataTransferDestinations is managedApps and \(target) is exempted in \(list)"
        case .shareTargetManagedLink(let target):
            return
                "allowedOutboundDataTransferDestinations is managedApps and \(target) is in managedUniversalLinks: it opens in a managed app"
        case .shareTargetMDMManaged(let target):
            return
                "allowedOutboundDataTransferDestinations is managedApps with disableProtectionOfManagedOutboundOpenInData (Policy managed apps with OS sharing), the device is MDM-enrolled and \(target) is an app its MDM manages"
        case .shareTargetNotManaged(let target):
            var text =
                "allowedOutboundDataTransferDestinations is managedApps and \(target) is neither a policy-managed app nor exempted"
            if let policy, policy.platform == .ios, policy.filterOpenInToOnlyManagedApps.value {
                text += " (Open-In/Share filtering: the share sheet does not offer it)"
            }
            return text
        case .shareBlocked(let target):
            return
                "allowedOutboundDataTransferDestinations is none: no app may receive the data, \(target) included (exemptions apply only to transfer to policy-managed apps)"

        case .receive(let level, let sourceManaged, let same):
            switch level {
            case .allApps:
                return "allowedInboundDataTransferSources is allApps: data from any app may be received"
            case .managedApps:
                return
                    "allowedInboundDataTransferSources is managedApps and the shared item's owner is \(sourceManaged ? "" : "not ")managed"
            case .none:
                return
                    "allowedInboundDataTransferSources is none and the shared item's owner is \(same ? "" : "not ")the receiving account"
            }
        case .unknownSourceAdopted:
            return
                "protectInboundDataFromUnknownSources is true (All apps with incoming Org data): the data, which has no owner, becomes the receiving account's org data"

        case .clipboardCopy(let level, let destinationManaged):
            let target = destinationManaged ? "a policy-managed app" : "an unmanaged app"
            switch level {
            case .allApps: return "allowedOutboundClipboardSharingLevel is allApps: copying to \(target) is allowed"
            case .managedAppsWithPasteIn, .managedApps:
                return
                    "allowedOutboundClipboardSharingLevel is \(level): copying to \(target) is \(destinationManaged ? "allowed" : "blocked")"
            case .blocked: return "allowedOutboundClipboardSharingLevel is blocked: copying to other apps is blocked"
            }
        case .clipboardException(let level, let length, let limit):
            return
                "allowedOutboundClipboardSharingLevel is \(level), but \(length) characters is within allowedOutboundClipboardSharingExceptionLength \(limit)"
        case .clipboardExceptionExceeded(let length, let limit):
            return "\(length) characters is more than allowedOutboundClipboardSharingExceptionLength \(limit)"
        case .clipboardPaste(let level, let sourceManaged):
            let source = sourceManaged ? "a policy-managed app" : "an unmanaged app"
            switch level {
            case .allApps, .managedAppsWithPasteIn:
                return "allowedOutboundClipboardSharingLevel is \(level): pasting from \(source) is allowed"
            case .managedApps:
                return
                    "allowedOutboundClipboardSharingLevel is managedApps: pasting from \(source) is \(sourceManaged ? "allowed" : "blocked")"
            case .blocked: return "allowedOutboundClipboardSharingLevel is blocked: pasting from other apps is blocked"
            }

        case .print(let blocked):
            return "printBlocked is \(blocked)"
        case .backup(let blocked):
            return "dataBackupBlocked is \(blocked)"
        case .screenCapture(let setting, let blocked):
            return "\(setting) is \(value(setting)): screen capture is \(blocked ? "blocked" : "allowed")"
        case .notifications(let restriction):
            switch restriction {
            case .allow: return "notificationRestriction is allow: notifications may show org data"
            case .blockOrganizationalData:
                return "notificationRestriction is blockOrganizationalData: notifications may show no org data"
            case .block: return "notificationRestriction is block: no notifications"
            }
        case .encryption(let setting, let required):
            return
                "\(setting) is \(value(setting)): encryption of the account's data is \(required ? "required" : "not required")"
        case .encryptionWaivedOnEnrolledDevice:
            return
                "encryptAppData is true, but disableAppEncryptionIfDeviceEncryptionIsEnabled is true and the device is enrolled (its storage is encrypted): app-level encryption is not required"
        case .appSharing(let level):
            return level == .none
                ? "allowedOutboundDataTransferDestinations is none: sharing through the system share sheet is blocked"
                : "allowedOutboundDataTransferDestinations is \(level): sharing through the system share sheet is allowed\(level == .managedApps ? ", to the targets a share decision allows" : "")"
        case .appIntents(let level):
            return level == .allApps
                ? "allowedOutboundDataTransferDestinations is allApps: Siri, App Intents and Spotlight may use org data"
                : "allowedOutboundDataTransferDestinations is \(level): Siri, App Intents and Spotlight are blocked unless it is allApps"
        case .contactSync(let blocked):
            return
                "contactSyncBlocked is \(blocked): syncing org data to native contacts, calendars and widgets is \(blocked ? "blocked" : "allowed")"

        case .configurationState(let setting, let blocked):
            let feature = setting == .genmojiConfigurationState ? "Genmoji" : "Writing Tools"
            return
                "\(setting) is \(value(setting)): Apple Intelligence \(feature) \(blocked ? "is blocked" : "may be used") with org data"
        case .noSettingOnPlatform(let setting, let platform):
            return "\(setting) is an iOS setting: \(platform) policies have none, so nothing restricts it there"
        case .thirdPartyKeyboards(let blocked):
            return
                "thirdPartyKeyboardsBlocked is \(blocked): third-party keyboards \(blocked ? "are blocked" : "may be used")"
        case .keyboardApproved(let keyboard):
            return "keyboardsRestricted is true and '\(keyboard)' is in approvedKeyboards \(value(.approvedKeyboards))"
        case .keyboardNotApproved(let keyboard):
            guard let keyboard else {
                return
                    "keyboardsRestricted is true and no keyboard was named: only the keyboards of approvedKeyboards \(value(.approvedKeyboards)) may be used"
            }
            return
                "keyboardsRestricted is true and '\(keyboard)' is not in approvedKeyboards \(value(.approvedKeyboards))"
        case .keyboardNotRestricted:
            return "keyboardsRestricted is false: any keyboard may be used"
        case .widgetContentSync(let allowed, let setting):
            return setting == .allowWidgetContentSync
                ? "allowWidgetContentSync is \(allowed): widgets \(allowed ? "may" : "may not") show org data"
                : "allowWidgetContentSync is not configured, and contactSyncBlocked is \(!allowed): widgets \(allowed ? "may" : "may not") show org data"
        case .urlDialer(let level, let redirect):
            switch level {
            case .allApps: return "dialerRestrictionLevel is allApps: a phone number may open in any dialer"
            case .managedApps:
                return "dialerRestrictionLevel is managedApps: a phone number may open only in a policy-managed dialer"
            case .blocked: return "dialerRestrictionLevel is blocked: phone numbers may not be opened"
            case .customApp:
                guard let redirect else {
                    return
                        "dialerRestrictionLevel is customApp but no custom dialer is named (none configured, a template's placeholder, or policies that disagree): blocked"
                }
                return "dialerRestrictionLevel is customApp: the phone number opens in '\(redirect)'"
            }
        case .urlMessaging(let type, let redirect):
            switch type {
            case .anyApp: return "protectedMessagingRedirectAppType is anyApp: a messaging link may open in any app"
            case .anyManagedApp:
                return
                    "protectedMessagingRedirectAppType is anyManagedApp: a messaging link may open only in a policy-managed app"
            case .blocked: return "protectedMessagingRedirectAppType is blocked: messaging links may not be opened"
            case .specificApps:
                guard let redirect else {
                    return
                        "protectedMessagingRedirectAppType is specificApps but no messaging app is named (none configured, a template's placeholder, or policies that disagree): blocked"
                }
                return "protectedMessagingRedirectAppType is specificApps: the messaging link opens in '\(redirect)'"
            }
        case .urlBrowser(let redirect):
            guard let redirect else {
                return "managedBrowserToOpenLinksRequired is false: a web link may open in any browser"
            }
            return "managedBrowserToOpenLinksRequired is true: the web link opens in '\(redirect)'"
        case .urlLinkExempted(let list):
            return
                "managedBrowserToOpenLinksRequired is true, but the link matches \(list) \(value(list)): it opens in its app"

        case .allowedAccountsUnrestricted:
            return "allowedAccounts is null: every account is allowed"
        case .allowedAccountListed(let entry):
            return "the account matches '\(entry)' in allowedAccounts"
        case .allowedAccountNotListed:
            return "the account is not in allowedAccounts"
        case .checkInInFuture(let ahead):
            return
                "the last check-in is \(PolicyDuration(ahead)) after the time decided at, more than the 5 minutes clocks may differ: it is not believed, and access is blocked until the account checks in"
        case .offline(let state, let offlineFor):
            let period = PolicyDuration(offlineFor)
            switch state {
            case .online:
                return
                    "offline for \(period), less than periodOfflineBeforeAccessCheck \(value(.periodOfflineBeforeAccessCheck))"
            case .accessBlocked:
                return
                    "offline for \(period), at least periodOfflineBeforeAccessCheck \(value(.periodOfflineBeforeAccessCheck)): access is blocked until the account checks in"
            case .wipeRequired:
                return
                    "offline for \(period), at least periodOfflineBeforeWipeIsEnforced \(value(.periodOfflineBeforeWipeIsEnforced)): the account's data is to be wiped"
            }
        }
    }
}

/// `"A", "B"`: policy names for a reason.
func quotedNames(_ references: [PolicyReference]) -> String {
    references.map { "\"\($0.name)\"" }.joined(separator: ", ")
}
