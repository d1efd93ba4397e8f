/// The rule of the decision contract a finding applied, and what it rests on: Microsoft's
/// documentation (the page or SDK header, the behaviour in our words) or Custody's inference
/// (and why). `custody decide --explain` shows it; docs/decisions.md lists every rule.
public struct DecisionRule: Sendable, Hashable {
    /// Whether Microsoft documents the behaviour or Custody infers it.
    public enum Basis: String, Sendable, Hashable {
        case documented
        case inferred
    }

    /// A stable name, such as `saveTo.listedLocations`.
    public let id: String
    public let basis: Basis
    /// For a documented rule, the Microsoft source and what it says; for an inferred rule,
    /// why Custody decides so.
    public let source: String
}

extension Finding {
    /// The rule this finding applied.
    public var rule: DecisionRule { code.rule }
}

extension Finding.Code {
    /// The rule behind this code.
    public var rule: DecisionRule {
        switch self {
        case .contradictoryAccount: DecisionRules.contradictoryAccount
        case .platformRequired: DecisionRules.platformRequired
        case .unmanaged: DecisionRules.unmanaged
        case .saveAsAllowed, .saveLocationNeverAllowed: DecisionRules.saveCopies
        case .saveOpenBySend, .saveClosedBySend: DecisionRules.saveSendLevel
        case .saveLocationListed(let location), .saveLocationNotListed(let location),
            .saveLocationOtherAccount(let location):
            location == .localDrive ? DecisionRules.saveLocalDrive : DecisionRules.saveListedLocations
        case .saveAccountDocument: DecisionRules.saveAccountDocument
        case .locationAccountIngestion: DecisionRules.saveIntoOtherAccount
        case .ingestionAllowed, .openLocationListed, .openLocationNotListed, .openLocationOtherAccount,
            .openLocationNeverAllowed,
            .openAccountDocument:
            DecisionRules.openIngestion
        case .ingestionOpenByReceive, .ingestionClosedByReceive: DecisionRules.openReceiveLevel
        case .openLocalStorage: DecisionRules.openLocalStorage
        case .send: DecisionRules.sendLevel
        case .shareAllApps, .shareTargetManaged, .shareTargetNotManaged, .shareBlocked: DecisionRules.shareSendLevel
        case .shareTargetExempted(_, let list):
            list == .exemptedUniversalLinks ? DecisionRules.shareUniversalLinks : DecisionRules.shareExemptions
        case .shareTargetManagedLink: DecisionRules.shareUniversalLinks
        case .shareTargetMDMManaged: DecisionRules.shareOSSharing
        case .receive: DecisionRules.receiveLevel
        case .unknownSourceAdopted: DecisionRules.receiveUnknownSources
        case .clipboardCopy, .clipboardPaste: DecisionRules.clipboardLevel
        case .clipboardException, .clipboardExceptionExceeded: DecisionRules.clipboardException
        case .print: DecisionRules.print
        case .backup: DecisionRules.backup
        case .screenCapture: DecisionRules.screenCapture
        case .notifications: DecisionRules.notifications
        case .encryption: DecisionRules.encryption
        case .encryptionWaivedOnEnrolledDevice: DecisionRules.encryptionEnrolledDevice
        case .appSharing: DecisionRules.appSharing
        case .appIntents: DecisionRules.appIntents
        case .contactSync: DecisionRules.contactSync
        case .configurationState, .noSettingOnPlatform: DecisionRules.appleIntelligence
        case .thirdPartyKeyboards, .keyboardApproved, .keyboardNotApproved, .keyboardNotRestricted:
            DecisionRules.keyboards
        case .widgetContentSync(_, let setting):
            setting == .allowWidgetContentSync ? DecisionRules.widgets : DecisionRules.widgetsFollowContactSync
        case .urlDialer: DecisionRules.dialer
        case .urlMessaging: DecisionRules.messaging
        case .urlBrowser, .urlLinkExempted: DecisionRules.browser
        case .allowedAccountsUnrestricted, .allowedAccountListed, .allowedAccountNotListed:
            DecisionRules.allowedAccounts
        case .offline: DecisionRules.offline
        case .checkInInFuture: DecisionRules.checkInInFuture
        }
    }
}

/// Every rule of the contract. The sources name Microsoft Learn pages ("iOS app protection
/// policy settings", "Android app protection policy settings"), the Intune App SDK's headers
/// (`IntuneMAMPolicy.h`) and guide, and threads of Microsoft's issue trackers.
public enum DecisionRules {
    private static func documented(_ id: String, _ source: String) -> DecisionRule {
        DecisionRule(id: id, basis: .documented, source: source)
    }

    private static func inferred(_ id: String, _ why: String) -> DecisionRule {
        DecisionRule(id: id, basis: .inferred, source: why)
    }

    public static let contradictoryAccount = inferred(
        "account.contradictory",
        "the SDK keys identities by Entra object ID and compares them by OID when known (IntuneMAMPolicyManager.h); no call takes both forms at once, so an OID and a UPN naming different accounts have no Microsoft meaning, and refusing is the only safe answer"
    )
    public static let platformRequired = inferred(
        "platform.required",
        "iOS and Android protection policies are separate Graph types with settings of their own, and the SDK applies one platform's policy; merging both would invent a policy no device receives"
    )
    public static let unmanaged = documented(
        "account.unmanaged",
        "Intune App SDK for iOS guide: accounts other than the managed one \"will be treated as unmanaged with unrestricted policy settings\""
    )
    public static let saveCopies = documented(
        "saveTo.saveCopies",
        "app protection policy settings, \"Save copies of org data\": Block disables Save As; with Block, \"Allow user to save copies to selected services\" lists the services allowed, all others are blocked; the SDK checks the data owner's policy (IntuneMAMPolicy.h, isSaveToAllowedForLocation)"
    )
    public static let saveSendLevel = documented(
        "saveTo.sendLevel",
        "iOS app protection policy settings, \"Save copies of org data\": the setting \"will be Allow\" when Send org data to other apps is All apps, and \"Block with no allowed service locations\" when it is None (Android: None applied the same way, inferred; All apps keeps saveAsBlocked as configured, the stricter reading, since Android clients were seen enforcing settings the portal shows as not applying, MicrosoftDocs/memdocs#1199)"
    )
    public static let saveListedLocations = documented(
        "saveTo.listedLocations",
        "app protection policy settings, \"Allow user to save copies to selected services\"; IntuneMAMPolicy.h: isSaveToAllowedForLocation:withAccountId: allows saving \"to the Entra object ID in the given location\", so a listed service must belong to the data's owner"
    )
    public static let saveLocalDrive = documented(
        "saveTo.localDrive",
        "Intune App SDK for iOS 15.1.0: \"A nil account will no longer be treated as the current account for the LocalDrive/LocalStorage locations … it will be treated as an unmanaged account\"; the local drive is the app's own storage of the account that owns it, and Local Storage must be listed"
    )
    public static let saveAccountDocument = documented(
        "saveTo.accountDocument",
        "IntuneMAMPolicy.h: AccountDocument is for a location \"not listed in this enum but … accessed with a managed account\"; saving into the owner's own account is no transfer, saving into another account's is blocked while saving is restricted"
    )
    public static let saveIntoOtherAccount = documented(
        "saveTo.intoOtherAccount",
        "Intune App SDK for iOS guide: \"The account owning the destination location might still have policies restricting incoming unmanaged data\"; which of its settings restricts (Open data into Org documents, as it stands under Receive data from other apps) is inferred from the settings reference, which describes it as blocking sharing data between accounts in the app"
    )
    public static let openIngestion = documented(
        "openFrom.ingestion",
        "app protection policy settings, \"Open data into Org documents\" and \"Allow users to open data from selected services\" (OneDrive for Business, SharePoint, Camera, Photo Library; all other services are blocked); the SDK checks the receiving account's policy (IntuneMAMPolicy.h, isOpenFromAllowedForLocation)"
    )
    public static let openReceiveLevel = documented(
        "openFrom.receiveLevel",
        "iOS app protection policy settings, \"Open data into Org documents\": the setting \"will be Allow\" when Receive data from other apps is All apps, and Block with no allowed locations when it is None; confirmed by the SDK maintainers in microsoftconnect/ms-intune-app-sdk-ios#251 (Android: None applied the same way; All apps keeps the flag as configured, MicrosoftDocs/memdocs#1199)"
    )
    public static let openLocalStorage = documented(
        "openFrom.localStorage",
        "microsoftconnect/ms-intune-app-sdk-ios#251 (SDK maintainers): local storage may be opened only when Receive data from other apps is All apps, or Policy managed apps with Open data into Org documents allowed; it is not a service the allow-list can name"
    )
    public static let sendLevel = documented(
        "transfer.sendLevel",
        "app protection policy settings, \"Send org data to other apps\": All apps allows any app, Policy managed apps \"only to other policy-managed apps\", None no app"
    )
    public static let shareSendLevel = documented(
        "share.sendLevel",
        "app protection policy settings, \"Send org data to other apps\" (Open in / Copy to), per target app; Open-In/Share filtering hides the targets that are not policy-managed"
    )
    public static let shareExemptions = documented(
        "share.exemptions",
        "app protection policy settings, \"Select apps to exempt\": \"This option is available when you select Policy managed apps\"; iOS exemptions are URL schemes, Android ones package ids"
    )
    public static let shareUniversalLinks = documented(
        "share.universalLinks",
        "iOS app protection policy settings, \"Select universal links to exempt\" (open in an unmanaged app) and \"Select managed universal links\" (open in a managed app), with wildcards; that a link without a wildcard covers every path under it is inferred"
    )
    public static let shareOSSharing = documented(
        "share.osSharing",
        "iOS app protection policy settings, \"Policy managed apps with OS sharing\": file transfers to MDM managed apps, \"applicable to MDM enrolled devices only\"; elsewhere Policy managed apps applies"
    )
    public static let receiveLevel = documented(
        "receive.receiveLevel",
        "app protection policy settings, \"Receive data from other apps\": All apps, Policy managed apps (\"only from other policy-managed apps\"), None (\"from any app, including other policy-managed apps\"); IntuneMAMPolicy.h canReceiveSharedFile: reads the owner from the file"
    )
    public static let receiveUnknownSources = documented(
        "receive.unknownSources",
        "iOS app protection policy settings, \"All apps with incoming Org data\": \"Treat all incoming data without a user identity as data from your organization\", on MDM enrolled devices only (applying it when the management level is unknown is inferred: it is the more protective reading)"
    )
    public static let clipboardLevel = documented(
        "clipboard.level",
        "app protection policy settings, \"Restrict cut, copy, and paste between other apps\": Blocked, Policy managed apps, Policy managed with paste in, Any app"
    )
    public static let clipboardException = documented(
        "clipboard.exception",
        "app protection policy settings, \"Cut and copy character limit for any app\": that many characters may be copied to any app, whatever the restriction"
    )
    public static let print = documented("print", "app protection policy settings, \"Printing Org data\"")
    public static let backup = documented("backup", "app protection policy settings, \"Backup Org data\"")
    public static let screenCapture = documented(
        "screenCapture",
        "Android app protection policy settings, \"Screen capture and Google Assistant\"; Graph iosManagedAppProtection screenCaptureConfigurationState; IntuneMAMPolicy.h isScreenCaptureAllowed"
    )
    public static let notifications = documented(
        "notifications",
        "app protection policy settings, \"Org data notifications\"; IntuneMAMPolicy.h notificationPolicy (Allow, BlockOrgData: \"only static notifications without specific details\", Block)"
    )
    public static let encryption = documented(
        "encryption.required",
        "app protection policy settings, \"Encrypt org data\" (iOS appDataEncryptionType, Android encryptAppData); Intune App SDK guide: data of unmanaged accounts is tagged, not encrypted"
    )
    public static let encryptionEnrolledDevice = documented(
        "encryption.enrolledDevice",
        "Android app protection policy settings, \"Encrypt org data on enrolled devices\": Not required means app-layer encryption is not enforced on enrolled devices (which devices are enrolled comes from the evaluation context's management level; unknown is not enrolled)"
    )
    public static let appSharing = documented(
        "appSharing",
        "IntuneMAMPolicy.h isAppSharingAllowed: FALSE when policy blocks sharing through the system share sheet and document interaction; that it is Send org data = None that blocks it is inferred from the settings reference"
    )
    public static let appIntents = documented(
        "appIntents",
        "iOS app protection policy settings, \"Send org data to other apps\": \"Spotlight search … and Siri shortcuts are blocked unless set to All apps\"; IntuneMAMPolicy.h areSiriIntentsAllowed, areAppIntentsAllowed"
    )
    public static let contactSync = documented(
        "contactSync",
        "app protection policy settings, \"Sync policy managed app data with native apps or add-ins\" (Graph contactSyncBlocked); IntuneMAMPolicy.h isContactSyncAllowed"
    )
    public static let allowedAccounts = documented(
        "accountAllowed",
        "Intune App SDK: allowedAccounts is nil when every account is allowed; matching is case-insensitive, by UPN or OID"
    )
    public static let offline = documented(
        "offlineAccess",
        "app protection policy settings, \"Offline grace period\": block access after periodOfflineBeforeAccessCheck, wipe after periodOfflineBeforeWipeIsEnforced (counting, for an account never seen online, from its first sight is inferred)"
    )
    public static let appleIntelligence = documented(
        "appleIntelligence",
        "Graph iosManagedAppProtection writingToolsConfigurationState and genmojiConfigurationState (notBlocked, blocked); Intune App SDK for iOS 19.7.12 and 20.4.0 release notes (Writing Tools, Genmoji); values Custody does not know read as blocked"
    )
    public static let keyboards = documented(
        "thirdPartyKeyboard",
        "iOS app protection policy settings, \"Third party keyboards\" (Graph thirdPartyKeyboardsBlocked); Android app protection policy settings, \"Approved keyboards\" (Graph keyboardsRestricted, approvedKeyboards: package ids)"
    )
    public static let widgets = documented(
        "widgetContentSync",
        "Graph iosManagedAppProtection allowWidgetContentSync: \"Indicates if content sync for widgets is allowed for iOS\""
    )
    public static let widgetsFollowContactSync = inferred(
        "widgetContentSync.contactSync",
        "with allowWidgetContentSync not configured, widgets follow \"Sync policy managed app data with native apps or add-ins\" (contactSyncBlocked), which Microsoft's settings reference describes as covering widgets"
    )
    public static let dialer = documented(
        "openURL.dialer",
        "app protection policy settings, \"Transfer telecommunication data to\" (Graph dialerRestrictionLevel; customDialerAppProtocol on iOS, customDialerAppPackageId on Android); a custom app the policies do not agree on blocks (inferred)"
    )
    public static let messaging = documented(
        "openURL.messaging",
        "app protection policy settings, \"Transfer messaging data to\" (Graph protectedMessagingRedirectAppType; messagingRedirectAppUrlScheme on iOS, messagingRedirectAppPackageId on Android); Intune App SDK for iOS 19.0.0 release notes"
    )
    public static let browser = documented(
        "openURL.browser",
        "app protection policy settings, \"Restrict web content transfer with other apps\" (Graph managedBrowserToOpenLinksRequired, managedBrowser, customBrowserProtocol, customBrowserPackageId); iOS universal links in exemptedUniversalLinks or managedUniversalLinks open their app"
    )
    public static let launch = documented(
        "launch",
        "app protection policy settings, \"Conditional launch\" (iOS and Android): each condition's action, warn, block access or wipe data; Graph managedAppRemediationAction; version thresholds as Graph describes them (below a required or warning minimum; at or below a wipe minimum; above a maximum)"
    )
    public static let launchMissingFacts = inferred(
        "launch.missingFacts",
        "a check whose fact was not reported cannot be shown to pass: it counts as failing with its action (fail closed) unless the caller asks to ignore missing facts; a wipe is carried out only when a reported fact calls for it"
    )
    public static let versionOrder = inferred(
        "launch.versionOrder",
        "versions are compared component by component as numbers (1.10 is later than 1.9; 16 equals 16.0): Microsoft's settings reference gives the formats major.minor, major.minor.build and major.minor.build.revision, and patch levels as dates"
    )

    public static let checkInInFuture = inferred(
        "offlineAccess.checkInInFuture",
        "a last check-in more than 5 minutes after the time decided at means a clock or the report is wrong: it cannot show the account online, so access is blocked (never wiped on it)"
    )

    /// Not a finding's: how a view of several accounts is decided.
    public static let view = inferred(
        "view.mostRestrictive",
        "the SDK gives a view of several accounts a lock-down policy when any of them is managed (IntuneMAMPolicyManager.h, policyForAccountIds:); Custody decides with the most restrictive of the accounts' own answers, which a caller can explain account by account"
    )
}
