/// A Graph document decoded, before the bundle numbers it.
enum DecodedDocument {
    case protection(
        kind: PolicyKind, metadata: DocumentMetadata, settings: ProtectionSettings, targeting: PolicyTargeting)
    case configuration(
        metadata: DocumentMetadata, settings: [(name: String, value: String)], targeting: PolicyTargeting)
    case filter(AssignmentFilter)
}

/// What identifies a document: its Graph id, display name and where it starts.
struct DocumentMetadata {
    var id: String?
    var displayName: String?
    var location: DocumentLocation
}

extension DocumentReader {
    /// Decodes the documents of a file: one Graph object, a collection `{"value": [...]}` as Graph
    /// returns lists, or a bare array of objects.
    mutating func decodeGraphFile() -> [DecodedDocument] {
        let root = document.root
        switch root.kind {
        case .array:
            return root.elements.enumerated().compactMap { index, element in
                decodeDocument(element, path: "$[\(index)]")
            }
        case .object where root["@odata.type"] == nil && root["value"] == nil && !looksLikeGraph(root):
            // A scenario matrix, an app spec, an editor's settings: not a policy document.
            notice(
                .ignoredFile,
                "not a Graph policy document (no @odata.type and no Graph property): the file is ignored", at: root,
                path: "$")
            return []
        case .object where root["@odata.type"] == nil && root["value"] != nil:
            if let next = root["@odata.nextLink"], !next.isNull {
                warning(
                    .unsupportedType,
                    "the export is paged (@odata.nextLink): policies on later pages are not in this file", at: next,
                    path: "$.@odata.nextLink")
            }
            let collection = root["value"]!
            guard collection.kind == .array else {
                error(
                    .invalidValue, "\"value\" must be an array of Graph objects, found \(collection.kind.article)",
                    at: collection, path: "$.value")
                return []
            }
            return collection.elements.enumerated().compactMap { index, element in
                decodeDocument(element, path: "$.value[\(index)]")
            }
        case .object:
            return decodeDocument(root, path: "$").map { [$0] } ?? []
        default:
            error(
                .invalidValue,
                "a policy file must hold a Graph object, a {\"value\": [...]} collection or an array, found \(root.kind.article)",
                at: root, path: "$")
            return []
        }
    }

    /// Decodes one Graph object. Returns nil when it is not a kind Custody evaluates (reported)
    /// or is too broken to use (errors recorded).
    mutating func decodeDocument(_ object: JSONValue, path: String) -> DecodedDocument? {
        guard object.kind == .object else {
            error(.invalidValue, "expected a Graph policy object, found \(object.kind.article)", at: object, path: path)
            return nil
        }
        guard let typeValue = object["@odata.type"] else {
            error(
                .missingType,
                "the object has no \"@odata.type\", so nothing says what kind of policy it is; add one such as \"#microsoft.graph.iosManagedAppProtection\"",
                at: object, path: path)
            return nil
        }
        guard let typeName = typeValue.string else {
            error(
                .invalidValue, "\"@odata.type\" must be a string, found \(typeValue.kind.article)", at: typeValue,
                path: path + ".@odata.type")
            return nil
        }
        if typeName.graphTypeName.lowercased() == AssignmentFilter.graphTypeName.lowercased() {
            return decodeFilter(object, path: path).map(DecodedDocument.filter)
        }
        guard let kind = PolicyKind.matching(odataType: typeName) else {
            if PolicyKind.windowsInformationProtectionTypes.contains(typeName.graphTypeName.lowercased()) {
                let name = object["displayName"]?.string.map { " '\($0)'" } ?? ""
                warning(
                    .notEnforced,
                    "Windows Information Protection policy\(name) (\(typeName.graphTypeName)) is kept but not enforced: Microsoft has retired WIP (Windows MAM's windowsManagedAppProtection replaces it)",
                    at: typeValue, path: path + ".@odata.type")
                return nil
            }
            let known = PolicyKind.allCases.map(\.odataType).joined(separator: ", ")
            warning(
                .unsupportedType,
                "'\(typeName)' is not a policy type Custody evaluates (\(known)); the document is ignored",
                at: typeValue, path: path + ".@odata.type")
            return nil
        }

        var metadata = DocumentMetadata(location: location(of: object))
        var settings = ProtectionSettings()
        var targeting = PolicyTargeting()
        var customSettings: [(name: String, value: String)] = []
        let known = GraphSchema.knownProperties(of: kind)
        var notEnforced: [(key: String, value: JSONValue)] = []
        var launchMembers = LaunchMembers()

        for member in uniqueMembers(of: object, path: path) {
            let key = member.key
            let value = member.value
            if isAnnotation(key) { continue }
            let memberPath = "\(path).\(key)"
            guard known.contains(key) else {
                if let meant = known.first(where: { $0.lowercased() == key.lowercased() }) {
                    // A setting spelt with other capitals is a setting lost: Graph's names are
                    // case-sensitive.
                    warning(
                        .unknownProperty,
                        "unknown property '\(key)' of \(kind.rawValue) is ignored: Graph property names are case-sensitive; did you mean '\(meant)'?",
                        at: member.name, path: memberPath)
                    continue
                }
                notice(
                    .unknownProperty,
                    "unknown property '\(key)' of \(kind.rawValue) is ignored (newer than Custody's list of Graph beta properties, or misspelt)",
                    at: member.name, path: memberPath)
                continue
            }
            if kind != .targetedManagedAppConfiguration, !GraphSchema.isDecided(key), !GraphSchema.isNeutral(value) {
                notEnforced.append((key, value))
            }
            launchMembers.collect(key, value, path: memberPath)
            switch key {
            case "id": metadata.id = string(value, path: memberPath)
            case "displayName": metadata.displayName = string(value, path: memberPath)
            case "assignments": readAssignments(value, into: &targeting, path: memberPath)
            case "apps": targeting.apps = readApps(value, path: memberPath)
            case "appGroupType":
                targeting.appGroupType = enumValue(
                    value, as: AppGroupType.self, unknownReadsAs: .allApps, path: memberPath)
            case "targetedAppManagementLevels":
                targeting.managementLevels = enumSet(value, as: AppManagementLevel.self, path: memberPath) ?? []
            case "customSettings": customSettings = keyValuePairs(value, path: memberPath) ?? []
            case "allowedOutboundClipboardSharingLevel" where kind == .windowsManagedAppProtection:
                // Windows names its two levels apart: any destination and any source, or none.
                settings.allowedOutboundClipboardSharingLevel =
                    enumValue(
                        value, as: WindowsClipboardLevel.self, unknownReadsAs: .mostRestrictive, path: memberPath)?
                    .level
            default: readSetting(key, value, into: &settings, path: memberPath)
            }
        }

        if kind != .defaultManagedAppProtection, !targeting.assignmentsListed {
            warning(
                .assignmentsMissing,
                "the policy has no \"assignments\" (exported without $expand=assignments?): it is applied to every account of tenant.json; list its assignments, or [] for a policy assigned to no one",
                at: object, path: path)
        }
        if kind != .defaultManagedAppProtection, targeting.assignmentsListed, !targeting.hasInclusions {
            notice(
                .targeting,
                targeting.excludedGroups.isEmpty && targeting.filteredExclusions.isEmpty
                    ? "the policy is assigned to no group (Intune's unassigned policy): it reaches no account"
                    : "the policy's only assignments are exclusions: it reaches no account",
                at: object, path: path)
        }
        if targeting.appGroupType == .selectedPublicApps, targeting.apps == nil, kind != .defaultManagedAppProtection {
            warning(
                .targeting,
                "appGroupType is selectedPublicApps but the document lists no apps (export it with $expand=apps); the policy is applied to every app",
                at: object, path: path)
        }
        if kind == .targetedManagedAppConfiguration {
            checkConfiguration(customSettings, of: object, path: path + ".customSettings")
            return .configuration(metadata: metadata, settings: customSettings, targeting: targeting)
        }
        settings.launchConditions = launchConditions(launchMembers, kind: kind)
        // The app PIN may be on although the export leaves it out: the portal's default is
        // Require, so its settings are listed as not enforced all the same.
        let pinByDefault =
            launchMembers["pinRequired"] == nil && GraphSchema.knownProperties(of: kind).contains("pinRequired")
        reportNotEnforced(notEnforced, pinByDefault: pinByDefault, of: object, path: path)
        checkDependencies(settings, kind: kind, of: object, path: path)
        return .protection(kind: kind, metadata: metadata, settings: settings, targeting: targeting)
    }

    /// Whether an object without `@odata.type` carries any property a Graph policy has: then it
    /// is a policy that lost its type (an error), not some other file.
    private func looksLikeGraph(_ object: JSONValue) -> Bool {
        let known = PolicyKind.allCases.reduce(into: Set<String>()) {
            $0.formUnion(GraphSchema.knownProperties(of: $1))
        }
        .subtracting(["id", "description", "version", "settings"])
        return object.members.contains { known.contains($0.key) }
    }

    /// One notice per policy naming every setting it configures that Custody does not enforce
    /// (left to the apps and the Intune SDK): PIN, biometrics, device conditions, versions,
    /// keyboards, browsers. A companion setting (a PIN's length) is named only beside its
    /// parent (the PIN), which counts as on when configured or, for the PIN, when the export
    /// leaves it out (`pinByDefault`: the settings pages give Require as the default).
    private mutating func reportNotEnforced(
        _ settings: [(key: String, value: JSONValue)], pinByDefault: Bool, of object: JSONValue, path: String
    ) {
        var configured = Set(settings.map(\.key))
        if pinByDefault { configured.insert("pinRequired") }
        var shown = settings.filter { setting in
            guard let parent = GraphSchema.companions[setting.key] else { return true }
            return configured.contains(parent) || GraphSchema.isDecided(parent)
        }.map { (key: $0.key, brief: GraphSchema.brief($0.value)) }
        if pinByDefault, shown.contains(where: { GraphSchema.companions[$0.key] == "pinRequired" }) {
            shown.insert(
                (
                    key: "pinRequired",
                    brief:
                        "not in the export, so not configured: no PIN-attempts check, though the portal's default is Require"
                ), at: 0)
        }
        guard !shown.isEmpty else { return }
        // Grouped by why, in the order the reasons first appear.
        var groups: [(reason: String, settings: [String])] = []
        for setting in shown {
            let reason = GraphSchema.notEnforcedReasons[setting.key] ?? "left to the apps and the Intune SDK"
            let text = "\(setting.key) (\(setting.brief))"
            if let index = groups.firstIndex(where: { $0.reason == reason }) {
                groups[index].settings.append(text)
            } else {
                groups.append((reason, [text]))
            }
        }
        let list = groups.map { "\($0.settings.joined(separator: ", ")): \($0.reason)" }.joined(separator: "; ")
        notice(
            .notEnforced,
            "Custody does not enforce \(shown.count == 1 ? "this setting" : "these \(shown.count) settings") of the policy (they are left to the apps and the Intune SDK): \(list)",
            at: object, path: path)
    }

    /// Settings whose value is not in effect given the transfer level they depend on, as
    /// Microsoft's settings reference describes the portal (docs/decisions.md).
    private mutating func checkDependencies(
        _ settings: ProtectionSettings, kind: PolicyKind, of object: JSONValue, path: String
    ) {
        let send = settings.allowedOutboundDataTransferDestinations ?? PolicyDefaults.dataTransfer
        let receive = settings.allowedInboundDataTransferSources ?? PolicyDefaults.dataTransfer
        if settings.saveAsBlocked == true, send == .allApps, kind != .androidManagedAppProtection {
            warning(
                .notInEffect,
                "saveAsBlocked is true but allowedOutboundDataTransferDestinations is allApps: Microsoft documents Save copies as Allow then on iOS, so Custody does not apply it there (Android clients were seen enforcing it: it applies on Android)",
                at: object, path: path + ".saveAsBlocked")
        }
        if settings.blockDataIngestionIntoOrganizationDocuments == true, receive == .allApps,
            kind != .androidManagedAppProtection
        {
            warning(
                .notInEffect,
                "blockDataIngestionIntoOrganizationDocuments is true but allowedInboundDataTransferSources is allApps: Microsoft documents Open data into Org documents as Allow then on iOS, so Custody does not apply it there (it applies on Android)",
                at: object, path: path + ".blockDataIngestionIntoOrganizationDocuments")
        }
        let exemptions =
            (settings.exemptedAppProtocols ?? []).count + (settings.exemptedAppPackages ?? []).count
            + (settings.exemptedUniversalLinks ?? []).count
        if send == .none, exemptions > 0 {
            notice(
                .notInEffect,
                "allowedOutboundDataTransferDestinations is none: its \(exemptions) exempted app\(exemptions == 1 ? "" : "s") and link\(exemptions == 1 ? "" : "s") are not in effect (exemptions apply only to transfer to policy-managed apps)",
                at: object, path: path + ".allowedOutboundDataTransferDestinations")
        }
    }

    /// Reads one evaluated setting; other known properties are accepted and not evaluated.
    private mutating func readSetting(
        _ key: String, _ value: JSONValue, into settings: inout ProtectionSettings, path: String
    ) {
        switch key {
        case "allowedInboundDataTransferSources":
            settings.allowedInboundDataTransferSources = enumValue(
                value, as: DataTransferLevel.self, unknownReadsAs: .mostRestrictive, path: path)
        case "allowedOutboundDataTransferDestinations":
            settings.allowedOutboundDataTransferDestinations = enumValue(
                value, as: DataTransferLevel.self, unknownReadsAs: .mostRestrictive, path: path)
        case "allowedOutboundClipboardSharingLevel":
            settings.allowedOutboundClipboardSharingLevel = enumValue(
                value, as: ClipboardSharingLevel.self, unknownReadsAs: .mostRestrictive, path: path)
        case "allowedOutboundClipboardSharingExceptionLength":
            // Graph: "Valid values 0 to 65535".
            settings.allowedOutboundClipboardSharingExceptionLength = int(value, in: 0...65_535, path: path)
        case "saveAsBlocked": settings.saveAsBlocked = bool(value, path: path)
        case "allowedDataStorageLocations":
            settings.allowedDataStorageLocations = enumSet(value, as: StorageLocation.self, path: path)
        case "blockDataIngestionIntoOrganizationDocuments":
            settings.blockDataIngestionIntoOrganizationDocuments = bool(value, path: path)
        case "allowedDataIngestionLocations":
            settings.allowedDataIngestionLocations = enumSet(value, as: IngestionLocation.self, path: path)
        case "printBlocked": settings.printBlocked = bool(value, path: path)
        case "dataBackupBlocked": settings.dataBackupBlocked = bool(value, path: path)
        case "screenCaptureBlocked": settings.screenCaptureBlocked = bool(value, path: path)
        case "screenCaptureConfigurationState":
            settings.screenCaptureConfigurationState = enumValue(
                value, as: ScreenCaptureState.self, unknownReadsAs: .mostRestrictive, path: path)
        case "notificationRestriction":
            settings.notificationRestriction = enumValue(
                value, as: NotificationRestriction.self, unknownReadsAs: .mostRestrictive, path: path)
        case "appDataEncryptionType":
            settings.appDataEncryptionType = enumValue(
                value, as: DataEncryptionType.self, unknownReadsAs: .mostRestrictive, path: path)
        case "encryptAppData": settings.encryptAppData = bool(value, path: path)
        case "periodOfflineBeforeAccessCheck": settings.periodOfflineBeforeAccessCheck = duration(value, path: path)
        case "periodOfflineBeforeWipeIsEnforced":
            settings.periodOfflineBeforeWipeIsEnforced = duration(value, path: path)
        case "exemptedAppProtocols": settings.exemptedAppProtocols = exemptions(value, path: path)
        case "exemptedAppPackages": settings.exemptedAppPackages = exemptions(value, path: path)
        case "filterOpenInToOnlyManagedApps": settings.filterOpenInToOnlyManagedApps = bool(value, path: path)
        case "disableProtectionOfManagedOutboundOpenInData":
            settings.disableProtectionOfManagedOutboundOpenInData = bool(value, path: path)
        case "protectInboundDataFromUnknownSources":
            settings.protectInboundDataFromUnknownSources = bool(value, path: path)
        case "disableAppEncryptionIfDeviceEncryptionIsEnabled":
            settings.disableAppEncryptionIfDeviceEncryptionIsEnabled = bool(value, path: path)
        case "exemptedUniversalLinks": settings.exemptedUniversalLinks = linkPatterns(value, path: path)
        case "managedUniversalLinks": settings.managedUniversalLinks = linkPatterns(value, path: path)
        case "contactSyncBlocked": settings.contactSyncBlocked = bool(value, path: path)
        case "writingToolsConfigurationState":
            settings.writingToolsConfigurationState = enumValue(
                value, as: ScreenCaptureState.self, unknownReadsAs: .mostRestrictive, path: path)
        case "genmojiConfigurationState":
            settings.genmojiConfigurationState = enumValue(
                value, as: ScreenCaptureState.self, unknownReadsAs: .mostRestrictive, path: path)
        case "thirdPartyKeyboardsBlocked": settings.thirdPartyKeyboardsBlocked = bool(value, path: path)
        case "keyboardsRestricted": settings.keyboardsRestricted = bool(value, path: path)
        case "approvedKeyboards":
            settings.approvedKeyboards = keyValuePairs(value, path: path).map { pairs in
                Set(pairs.map { $0.name.trimmingSpaces.lowercased() }.filter { !$0.isEmpty })
            }
        case "allowWidgetContentSync": settings.allowWidgetContentSync = bool(value, path: path)
        case "dialerRestrictionLevel":
            settings.dialerRestrictionLevel = enumValue(
                value, as: DialerRedirectLevel.self, unknownReadsAs: .mostRestrictive, path: path)
        case "customDialerAppProtocol": settings.customDialerAppProtocol = appReference(value, path: path)
        case "customDialerAppPackageId": settings.customDialerAppPackageId = appReference(value, path: path)
        case "protectedMessagingRedirectAppType":
            settings.protectedMessagingRedirectAppType = enumValue(
                value, as: MessagingRedirectType.self, unknownReadsAs: .mostRestrictive, path: path)
        case "messagingRedirectAppUrlScheme":
            settings.messagingRedirectAppUrlScheme = appReference(value, path: path)
        case "messagingRedirectAppPackageId":
            settings.messagingRedirectAppPackageId = appReference(value, path: path)
        case "managedBrowserToOpenLinksRequired":
            settings.managedBrowserToOpenLinksRequired = bool(value, path: path)
        case "managedBrowser":
            settings.managedBrowser = enumValue(
                value, as: ManagedBrowser.self, unknownReadsAs: .mostRestrictive, path: path)
        case "customBrowserProtocol": settings.customBrowserProtocol = appReference(value, path: path)
        case "customBrowserPackageId": settings.customBrowserPackageId = appReference(value, path: path)
        default: break
        }
    }

    /// A custom app's URL scheme or package id. Templates carry placeholders
    /// (`replace_with_dialer_app_url_scheme`): those read as not configured, with a warning, so
    /// that a redirect never names an app that does not exist.
    private mutating func appReference(_ value: JSONValue, path: String) -> String? {
        guard let text = string(value, path: path)?.trimmingSpaces, !text.isEmpty else { return nil }
        if text.lowercased().hasPrefix("replace_with") {
            notice(
                .placeholder, "'\(text)' is a template's placeholder, not an app: read as not configured", at: value,
                path: path)
            return nil
        }
        return text
    }

    /// Exempted apps: key/value pairs whose values are `;`-separated URL schemes or package ids,
    /// kept lower-cased for case-insensitive matching.
    private mutating func exemptions(_ value: JSONValue, path: String) -> Set<String>? {
        guard let pairs = keyValuePairs(value, path: path) else { return nil }
        var result: Set<String> = []
        for pair in pairs {
            for part in pair.value.split(separator: ";") {
                let id = String(part).trimmingSpaces.lowercased()
                if !id.isEmpty { result.insert(id) }
            }
        }
        return result
    }

    /// Universal link patterns: a list of strings, each possibly `;`-separated, lower-cased.
    private mutating func linkPatterns(_ value: JSONValue, path: String) -> Set<String>? {
        guard let list = stringList(value, path: path) else { return nil }
        var result: Set<String> = []
        for (text, _) in list {
            for part in text.split(separator: ";") {
                let pattern = String(part).trimmingSpaces.lowercased()
                if !pattern.isEmpty { result.insert(pattern) }
            }
        }
        return result
    }

    private mutating func readApps(_ value: JSONValue, path: String) -> [ManagedAppIdentifier]? {
        if value.isNull { return nil }
        guard value.kind == .array else {
            error(.invalidValue, "expected an array of apps, found \(value.kind.article)", at: value, path: path)
            return nil
        }
        var apps: [ManagedAppIdentifier] = []
        for (index, element) in value.elements.enumerated() {
            let elementPath = "\(path)[\(index)]"
            if let plain = element.string {
                // Hand-written bundles may list bare bundle or package ids.
                if !plain.isEmpty { apps.append(ManagedAppIdentifier(id: nil, appID: plain)) }
                continue
            }
            guard element.kind == .object else {
                error(
                    .invalidValue, "expected an app object or id, found \(element.kind.article)", at: element,
                    path: elementPath)
                continue
            }
            let id = element["id"].flatMap { string($0, path: elementPath + ".id") }
            var appID: String?
            if let identifier = element["mobileAppIdentifier"], identifier.kind == .object {
                appID = (identifier["bundleId"] ?? identifier["packageId"] ?? identifier["windowsAppId"]).flatMap {
                    string($0, path: elementPath + ".mobileAppIdentifier")
                }
            }
            guard id != nil || appID != nil else {
                error(
                    .invalidValue, "an app needs an \"id\" or a mobileAppIdentifier with a bundleId or packageId",
                    at: element, path: elementPath)
                continue
            }
            apps.append(ManagedAppIdentifier(id: id, appID: appID))
        }
        return apps
    }

    private mutating func readAssignments(_ value: JSONValue, into targeting: inout PolicyTargeting, path: String) {
        if value.isNull { return }
        guard value.kind == .array else {
            error(.invalidValue, "expected an array of assignments, found \(value.kind.article)", at: value, path: path)
            return
        }
        targeting.assignmentsListed = true
        for (index, assignment) in value.elements.enumerated() {
            let assignmentPath = "\(path)[\(index)]"
            guard assignment.kind == .object, let target = assignment["target"], target.kind == .object else {
                error(
                    .invalidValue, "an assignment must be an object with a \"target\" object", at: assignment,
                    path: assignmentPath)
                continue
            }
            let targetPath = assignmentPath + ".target"
            let typeName = target["@odata.type"]?.string ?? ""
            guard let filter = assignmentFilter(of: target, path: targetPath) else { continue }
            let read: PolicyTargeting.Target
            var excluded = false
            switch typeName.graphTypeName {
            case "groupAssignmentTarget", "exclusionGroupAssignmentTarget":
                guard let groupID = target["groupId"].flatMap({ string($0, path: targetPath + ".groupId") }) else {
                    error(.invalidValue, "a group assignment target needs a \"groupId\"", at: target, path: targetPath)
                    continue
                }
                read = .group(groupID)
                excluded = typeName.graphTypeName == "exclusionGroupAssignmentTarget"
            case "allLicensedUsersAssignmentTarget":
                read = .allLicensedUsers
            default:
                warning(
                    .targeting,
                    "assignment target '\(typeName)' is not evaluated by Custody; it is counted as every user of the tenant",
                    at: target, path: targetPath)
                read = .unsupported(typeName)
            }
            switch (filter, excluded) {
            case (nil, false): targeting.included.append(read)
            case (nil, true):
                if case .group(let group) = read { targeting.excludedGroups.insert(group) }
            case (let filter?, false):
                targeting.filteredInclusions.append(
                    PolicyTargeting.FilteredTarget(target: read, filterID: filter.id, mode: filter.mode))
            case (let filter?, true):
                targeting.filteredExclusions.append(
                    PolicyTargeting.FilteredTarget(target: read, filterID: filter.id, mode: filter.mode))
            }
        }
    }

    /// The filter an assignment target names: `.some(nil)` when it names none (type `none`,
    /// missing or empty), nil when the target is in error (recorded).
    private mutating func assignmentFilter(of target: JSONValue, path: String) -> (
        id: String, mode: PolicyTargeting.FilterMode
    )?? {
        let typeValue = target["deviceAndAppManagementAssignmentFilterType"]
        let idValue = target["deviceAndAppManagementAssignmentFilterId"]
        let type = typeValue.flatMap {
            $0.isNull ? nil : string($0, path: path + ".deviceAndAppManagementAssignmentFilterType")
        }
        let id = idValue.flatMap {
            $0.isNull ? nil : string($0, path: path + ".deviceAndAppManagementAssignmentFilterId")
        }
        let mode: PolicyTargeting.FilterMode
        switch type?.lowercased() {
        case nil, "", "none": return .some(nil)
        case "include": mode = .include
        case "exclude": mode = .exclude
        case let other?:
            error(
                .invalidValue,
                "deviceAndAppManagementAssignmentFilterType '\(other)' is not none, include or exclude",
                at: typeValue!, path: path + ".deviceAndAppManagementAssignmentFilterType")
            return nil
        }
        guard let id, !id.isEmpty, id != "00000000-0000-0000-0000-000000000000" else {
            error(
                .invalidValue,
                "the assignment's filter type is \(mode.rawValue) but it names no deviceAndAppManagementAssignmentFilterId",
                at: target, path: path)
            return nil
        }
        return .some((id, mode))
    }

    /// Decodes an assignment filter: its id and rule are required, the rule must parse.
    private mutating func decodeFilter(_ object: JSONValue, path: String) -> AssignmentFilter? {
        var id: String?
        var displayName: String?
        var platform: String?
        var managementType: String?
        var ruleText: String?
        var ruleValue: JSONValue?
        for member in uniqueMembers(of: object, path: path) where !isAnnotation(member.key) {
            let memberPath = "\(path).\(member.key)"
            switch member.key {
            case "id": id = string(member.value, path: memberPath)
            case "displayName": displayName = string(member.value, path: memberPath)
            case "platform": platform = string(member.value, path: memberPath)
            case "assignmentFilterManagementType": managementType = string(member.value, path: memberPath)
            case "rule":
                ruleText = string(member.value, path: memberPath)
                ruleValue = member.value
            default: continue
            }
        }
        guard let id, !id.isEmpty else {
            error(.invalidValue, "an assignment filter needs an \"id\"", at: object, path: path)
            return nil
        }
        guard let ruleValue else {
            error(.invalidValue, "assignment filter \(id) has no \"rule\"", at: object, path: path)
            return nil
        }
        let rule: FilterRule
        do {
            rule = try FilterRuleParser.parse(ruleText ?? "")
        } catch {
            self.error(
                .invalidValue, "the rule of assignment filter '\(displayName ?? id)' cannot be read: \(error)",
                at: ruleValue, path: path + ".rule")
            return nil
        }
        if managementType?.lowercased() == "devices" {
            warning(
                .targeting,
                "assignment filter '\(displayName ?? id)' is for managed devices, not managed apps: app protection does not evaluate it, and Custody reads it as undecided",
                at: object, path: path)
        }
        let unknown = Set(rule.properties.filter { $0.known == nil }.map(\.description)).sorted()
        if !unknown.isEmpty {
            warning(
                .targeting,
                "assignment filter '\(displayName ?? id)' reads \(unknown.joined(separator: ", ")), which Custody does not evaluate: those comparisons are undecided, so an include filter includes and an exclude filter does not exclude",
                at: ruleValue, path: path + ".rule")
        }
        return AssignmentFilter(
            id: id, displayName: displayName, platform: platform, managementType: managementType,
            ruleText: ruleText ?? "",
            rule: rule, location: location(of: object))
    }

    /// App configuration is for settings, not payloads: one policy's settings are capped at
    /// `AppConfigurationPolicy.maximumSize` bytes. A name listed twice keeps its last value.
    private mutating func checkConfiguration(
        _ settings: [(name: String, value: String)], of object: JSONValue, path: String
    ) {
        let size = settings.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count }
        if size > AppConfigurationPolicy.maximumSize {
            error(
                .configurationTooLarge,
                "the configuration's settings take \(size) bytes; at most \(AppConfigurationPolicy.maximumSize) are allowed (app configuration is for settings, not data)",
                at: object, path: path)
        }
        var seen: Set<String> = []
        for (name, _) in settings where !seen.insert(name).inserted {
            warning(
                .duplicateMember, "the setting '\(name)' is listed more than once; its last value is used", at: object,
                path: path)
        }
    }
}

extension PolicyKind {
    /// Windows Information Protection's Graph types (lower-cased): read, kept and listed as
    /// not enforced, because Microsoft retired WIP.
    static let windowsInformationProtectionTypes: Set<String> = [
        "windowsinformationprotectionpolicy", "mdmwindowsinformationprotectionpolicy",
    ]

    /// The kind an `@odata.type` names (`#microsoft.graph.X`, `microsoft.graph.X` or `X`,
    /// case-insensitive), or nil.
    static func matching(odataType: String) -> PolicyKind? {
        let name = odataType.graphTypeName.lowercased()
        return allCases.first { $0.rawValue.lowercased() == name }
    }
}

extension String {
    /// `#microsoft.graph.X` → `X`.
    var graphTypeName: String {
        var name = Substring(self)
        if name.hasPrefix("#") { name = name.dropFirst() }
        if name.lowercased().hasPrefix("microsoft.graph.") { name = name.dropFirst("microsoft.graph.".count) }
        return String(name)
    }
}
