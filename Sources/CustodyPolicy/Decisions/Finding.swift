/// One check a decision made: which rule fired, with whose policy.
public struct Finding: Sendable, Hashable {
    /// The rule that fired, with the facts it used.
    public let code: Code
    /// The effective policy whose setting was read; nil when the account is unmanaged.
    public let policy: EffectivePolicy?

    init(_ code: Code, _ policy: EffectivePolicy?) {
        self.code = code
        self.policy = policy
    }

    public static func == (lhs: Finding, rhs: Finding) -> Bool {
        lhs.code == rhs.code && lhs.policy === rhs.policy
    }

    /// Hashes the rule, the text it carries (an app id comes from the query: hashing only its
    /// length let a share of 40,000 targets of one length collide in the reason caches, 33 s of
    /// CPU for one line), and the policy.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(policy.map(ObjectIdentifier.init))
    }

    /// The rules of the decision contract (docs/decisions.md).
    public enum Code: Sendable, Hashable {
        case unmanaged(AccountRole)
        /// The account in this role carries an OID and a UPN that the tenant does not link
        /// (see `PolicySnapshot.resolveAccount(_:)`): the action is refused.
        case contradictoryAccount(AccountRole)
        /// The bundle holds policies of several platforms and the context names none.
        case platformRequired

        // Save to (the owner's policy).
        case saveAsAllowed
        /// Send is All apps on iOS: "Save copies of org data" is not in effect.
        case saveOpenBySend
        case saveLocationListed(SaveLocation)
        case saveLocationNotListed(SaveLocation)
        case saveLocationOtherAccount(SaveLocation)
        case saveLocationNeverAllowed(SaveLocation)
        case saveAccountDocument(sameAccount: Bool)
        /// Send is None: saving copies is blocked, to every location.
        case saveClosedBySend(SaveLocation)
        /// The location's account is another managed account: may data enter its documents?
        case locationAccountIngestion(blocked: Bool)

        // Open from (the receiver's policy).
        case ingestionAllowed
        /// Receive is All apps on iOS: "Open data into Org documents" is not in effect.
        case ingestionOpenByReceive
        case openLocationListed(OpenLocation)
        case openLocationNotListed(OpenLocation)
        case openLocationOtherAccount(OpenLocation)
        case openLocationNeverAllowed(OpenLocation)
        /// Local storage is not a service an administrator can list: blocked while ingestion is.
        case openLocalStorage
        case openAccountDocument(sameAccount: Bool)
        /// Receive is None: opening data into org documents is blocked, from every location.
        case ingestionClosedByReceive(OpenLocation)

        /// Data leaves another managed account (`role`): its send rule.
        case send(DataTransferLevel, receiverManaged: Bool, role: AccountRole)

        // Share (the owner's send rule, per target).
        case shareAllApps
        case shareTargetManaged(String)
        /// Exempted in `list` (`exemptedAppProtocols`, `exemptedAppPackages`, `exemptedUniversalLinks`).
        case shareTargetExempted(String, list: PolicySetting)
        /// A universal link listed in `managedUniversalLinks`: it opens in a managed app.
        case shareTargetManagedLink(String)
        /// "Policy managed apps with OS sharing" on an MDM-enrolled device: an app the MDM manages.
        case shareTargetMDMManaged(String)
        case shareTargetNotManaged(String)
        /// Send is None: no app may receive the data; exemptions do not apply.
        case shareBlocked(String)

        /// Receive (the receiver's inbound rule).
        case receive(DataTransferLevel, sourceManaged: Bool, sameAccount: Bool)
        /// "All apps with incoming Org data": data without an owner becomes the receiver's.
        case unknownSourceAdopted

        // Clipboard.
        case clipboardCopy(ClipboardSharingLevel, destinationManaged: Bool)
        case clipboardException(ClipboardSharingLevel, length: Int, limit: Int)
        case clipboardExceptionExceeded(length: Int, limit: Int)
        case clipboardPaste(ClipboardSharingLevel, sourceManaged: Bool)

        // Per-account settings.
        case print(blocked: Bool)
        case backup(blocked: Bool)
        case screenCapture(PolicySetting, blocked: Bool)
        case notifications(NotificationRestriction)
        case encryption(PolicySetting, required: Bool)
        /// Android "Encrypt org data on enrolled devices: Not required", on an enrolled device.
        case encryptionWaivedOnEnrolledDevice
        /// The OS share sheet and document interaction (`isAppSharingAllowed`).
        case appSharing(DataTransferLevel)
        /// Siri, App Intents, Spotlight (allowed only when send is All apps).
        case appIntents(DataTransferLevel)
        case contactSync(blocked: Bool)
        /// Writing Tools or Genmoji (iOS `*ConfigurationState`).
        case configurationState(PolicySetting, blocked: Bool)
        /// The setting exists only on another platform: nothing restricts the action here.
        case noSettingOnPlatform(PolicySetting, Platform)
        /// iOS `thirdPartyKeyboardsBlocked`.
        case thirdPartyKeyboards(blocked: Bool)
        /// Android `keyboardsRestricted` with the keyboard in `approvedKeyboards`.
        case keyboardApproved(String)
        /// Android `keyboardsRestricted` and the keyboard (nil: none named) not approved.
        case keyboardNotApproved(String?)
        /// Android `keyboardsRestricted` is false.
        case keyboardNotRestricted
        /// iOS widgets: `allowWidgetContentSync`, or `contactSyncBlocked` when it is not configured.
        case widgetContentSync(allowed: Bool, setting: PolicySetting)
        /// A phone number link: `dialerRestrictionLevel`, and the custom dialer it goes to.
        case urlDialer(DialerRedirectLevel, redirect: String?)
        /// A messaging link: `protectedMessagingRedirectAppType`, and the app it goes to.
        case urlMessaging(MessagingRedirectType, redirect: String?)
        /// A web link: `managedBrowserToOpenLinksRequired`, and the browser it goes to (nil:
        /// any browser).
        case urlBrowser(redirect: String?)
        /// A web link that is an iOS universal link exempted from the managed browser.
        case urlLinkExempted(PolicySetting)

        // Access.
        case allowedAccountsUnrestricted
        case allowedAccountListed(String)
        case allowedAccountNotListed
        case offline(OfflineState, offlineFor: Duration)
        /// The last check-in lies this far after the time decided at, more than `clockSkew`:
        /// not believed, so access is blocked.
        case checkInInFuture(ahead: Duration)
    }

    /// Whether this is the refusal of a contradictory account.
    var isContradiction: Bool {
        if case .contradictoryAccount = code { return true }
        return false
    }

    /// Whether this is a refusal for want of a platform.
    var isPlatformRefusal: Bool {
        if case .platformRequired = code { return true }
        return false
    }

    /// The policy setting the rule read, or nil for the tenant's allowed accounts and for
    /// unmanaged accounts.
    public var setting: PolicySetting? {
        switch code {
        case .unmanaged, .contradictoryAccount, .platformRequired, .allowedAccountsUnrestricted, .allowedAccountListed,
            .allowedAccountNotListed:
            nil
        case .saveAsAllowed, .saveLocationNeverAllowed, .saveAccountDocument: .saveAsBlocked
        case .saveOpenBySend, .saveClosedBySend: .allowedOutboundDataTransferDestinations
        case .saveLocationListed, .saveLocationNotListed, .saveLocationOtherAccount: .allowedDataStorageLocations
        case .locationAccountIngestion:
            policy?.ingestionGate == .closedByReceive
                ? .allowedInboundDataTransferSources : .blockDataIngestionIntoOrganizationDocuments
        case .ingestionAllowed, .openLocationNeverAllowed, .openLocalStorage, .openAccountDocument:
            .blockDataIngestionIntoOrganizationDocuments
        case .ingestionOpenByReceive, .ingestionClosedByReceive: .allowedInboundDataTransferSources
        case .openLocationListed, .openLocationNotListed, .openLocationOtherAccount: .allowedDataIngestionLocations
        case .send, .shareAllApps, .shareTargetManaged, .shareTargetNotManaged, .shareBlocked, .appSharing, .appIntents:
            .allowedOutboundDataTransferDestinations
        case .shareTargetExempted(_, let list): list
        case .shareTargetManagedLink: .managedUniversalLinks
        case .shareTargetMDMManaged: .disableProtectionOfManagedOutboundOpenInData
        case .receive: .allowedInboundDataTransferSources
        case .unknownSourceAdopted: .protectInboundDataFromUnknownSources
        case .clipboardCopy, .clipboardPaste: .allowedOutboundClipboardSharingLevel
        case .clipboardException, .clipboardExceptionExceeded: .allowedOutboundClipboardSharingExceptionLength
        case .print: .printBlocked
        case .backup: .dataBackupBlocked
        case .screenCapture(let setting, _), .encryption(let setting, _): setting
        case .encryptionWaivedOnEnrolledDevice: .disableAppEncryptionIfDeviceEncryptionIsEnabled
        case .notifications: .notificationRestriction
        case .contactSync: .contactSyncBlocked
        case .configurationState(let setting, _), .noSettingOnPlatform(let setting, _): setting
        case .thirdPartyKeyboards: .thirdPartyKeyboardsBlocked
        case .keyboardApproved, .keyboardNotApproved: .approvedKeyboards
        case .keyboardNotRestricted: .keyboardsRestricted
        case .widgetContentSync(_, let setting): setting
        case .urlDialer: .dialerRestrictionLevel
        case .urlMessaging: .protectedMessagingRedirectAppType
        case .urlBrowser: .managedBrowserToOpenLinksRequired
        case .urlLinkExempted(let list): list
        case .offline(let state, _):
            state == .wipeRequired ? .periodOfflineBeforeWipeIsEnforced : .periodOfflineBeforeAccessCheck
        case .checkInInFuture: .periodOfflineBeforeAccessCheck
        }
    }

    /// The setting's name, or `allowedAccounts` for the tenant's list.
    public var settingName: String? {
        switch code {
        case .allowedAccountsUnrestricted, .allowedAccountListed, .allowedAccountNotListed: "allowedAccounts"
        default: setting?.rawValue
        }
    }

    /// The policies the setting's value came from: none when it is Intune's default, or a
    /// number the policies disagree on (the recommended value applies, which no policy set).
    public var sources: [PolicyReference] {
        guard let setting, let policy else { return [] }
        let summary = policy.setting(setting)
        return summary.resolution == .conflictDefault ? [] : summary.sources
    }
}
