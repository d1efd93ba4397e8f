/// A tenant's policies as loaded from a bundle: `tenant.json` plus Microsoft Graph exports.
///
/// A bundle is plain data. Evaluate it for a platform and app with `PolicySnapshot`.
public struct PolicyBundle: Sendable {
    /// The accounts and tenant-wide settings.
    public var tenant: Tenant
    /// The iOS, Android and default app protection policies, in load order.
    public var protectionPolicies: [ProtectionPolicy]
    /// The targeted app configuration policies, in load order.
    public var appConfigurations: [AppConfigurationPolicy]
    /// Warnings found while loading (unknown properties, unknown enum values, ignored documents).
    public var warnings: [Diagnostic]
    /// The assignment filters the bundle holds, by Graph id.
    public var assignmentFilters: [String: AssignmentFilter]

    /// Creates a bundle from values, as an embedding app or a test builds one.
    public init(
        tenant: Tenant,
        protectionPolicies: [ProtectionPolicy] = [],
        appConfigurations: [AppConfigurationPolicy] = [],
        assignmentFilters: [AssignmentFilter] = [],
        warnings: [Diagnostic] = []
    ) {
        self.tenant = tenant
        self.protectionPolicies = protectionPolicies
        self.appConfigurations = appConfigurations
        self.assignmentFilters = Dictionary(
            assignmentFilters.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        self.warnings = warnings
    }

    /// One file of a bundle: a name for diagnostics and its bytes as stored.
    public struct File: Sendable {
        public var name: String
        public var bytes: [UInt8]

        /// Creates a file.
        public init(name: String, bytes: [UInt8]) {
            self.name = name
            self.bytes = bytes
        }
    }

    /// Loads a bundle from files already in memory.
    ///
    /// - Parameters:
    ///   - tenant: the `tenant.json` file, or nil for a bundle without accounts.
    ///   - documents: Graph JSON files, in the order their policies should be numbered.
    /// - Returns: the bundle, with any warnings.
    /// - Throws: `BundleError` with every diagnostic when any file has an error. A bundle with
    ///   an error is never partly loaded.
    public static func load(tenant: File?, documents: [File]) throws(BundleError) -> PolicyBundle {
        var diagnostics: [Diagnostic] = []
        var bundle = PolicyBundle(tenant: Tenant())

        if let tenant, let reader = parse(tenant, into: &diagnostics) {
            var reader = reader
            bundle.tenant = reader.decodeTenant()
            diagnostics += reader.diagnostics
        }
        var seenIDs: [String: DocumentLocation] = [:]
        for file in documents {
            guard var reader = parse(file, into: &diagnostics) else { continue }
            let decoded = reader.decodeGraphFile()
            diagnostics += reader.diagnostics
            for document in decoded {
                bundle.append(document, seenIDs: &seenIDs, diagnostics: &diagnostics)
            }
        }

        bundle.checkFilterReferences(into: &diagnostics)
        if diagnostics.contains(where: { $0.severity == .error }) {
            throw BundleError(diagnostics: diagnostics)
        }
        bundle.warnings = diagnostics
        return bundle
    }

    /// Decodes and parses one file, or records why it cannot be.
    private static func parse(_ file: File, into diagnostics: inout [Diagnostic]) -> DocumentReader? {
        switch DocumentReader.open(file.bytes, file: file.name) {
        case .success(let reader): return reader
        case .failure(let diagnostic):
            diagnostics.append(diagnostic)
            return nil
        }
    }

    private mutating func append(
        _ document: DecodedDocument, seenIDs: inout [String: DocumentLocation], diagnostics: inout [Diagnostic]
    ) {
        let metadata: DocumentMetadata
        switch document {
        case .protection(_, let documentMetadata, _, _), .configuration(let documentMetadata, _, _):
            metadata = documentMetadata
        case .filter(let filter):
            if let first = assignmentFilters[filter.id] {
                diagnostics.append(
                    Diagnostic(
                        severity: .error, code: .duplicatePolicy,
                        message: "assignment filter id '\(filter.id)' was already loaded from \(first.location)",
                        location: filter.location))
            } else {
                assignmentFilters[filter.id] = filter
            }
            return
        }
        if let id = metadata.id {
            if let first = seenIDs[id] {
                diagnostics.append(
                    Diagnostic(
                        severity: .warning, code: .duplicatePolicy,
                        message: "policy id '\(id)' was already loaded from \(first); both copies are applied",
                        location: metadata.location))
            } else {
                seenIDs[id] = metadata.location
            }
        }
        switch document {
        case let .protection(kind, metadata, settings, targeting):
            let reference = PolicyReference(
                index: protectionPolicies.count, id: metadata.id, displayName: metadata.displayName, kind: kind,
                location: metadata.location)
            protectionPolicies.append(ProtectionPolicy(reference: reference, settings: settings, targeting: targeting))
        case .filter: break
        case let .configuration(metadata, settings, targeting):
            let reference = PolicyReference(
                index: appConfigurations.count, id: metadata.id, displayName: metadata.displayName,
                kind: .targetedManagedAppConfiguration, location: metadata.location)
            appConfigurations.append(
                AppConfigurationPolicy(reference: reference, settings: settings, targeting: targeting))
        }
    }
}

extension PolicyBundle {
    /// A filtered assignment whose filter the bundle does not hold is read the restrictive way
    /// (an inclusion includes, an exclusion does not exclude); each is named once per policy.
    fileprivate func checkFilterReferences(into diagnostics: inout [Diagnostic]) {
        let policies: [(PolicyReference, PolicyTargeting)] =
            protectionPolicies.map { ($0.reference, $0.targeting) }
            + appConfigurations.map { ($0.reference, $0.targeting) }
        for (reference, targeting) in policies {
            let missing = targeting.filterIDs.filter { assignmentFilters[$0] == nil }.sorted()
            guard !missing.isEmpty else { continue }
            diagnostics.append(
                Diagnostic(
                    severity: .warning, code: .targeting,
                    message:
                        "policy '\(reference.name)' names assignment filter\(missing.count == 1 ? "" : "s") \(missing.joined(separator: ", ")), which the bundle does not hold: each is read as undecided (an inclusion includes, an exclusion does not exclude)",
                    location: reference.location))
        }
    }

    /// The platforms the bundle's protection policies are written for: an iOS, Android or
    /// Windows policy's own, iOS and Android for a `defaultManagedAppProtection` (which
    /// carries the settings of both).
    public var policyPlatforms: Set<Platform> {
        var platforms: Set<Platform> = []
        for policy in protectionPolicies {
            if let platform = policy.kind.platform {
                platforms.insert(platform)
            } else {
                platforms.formUnion([.ios, .android])
            }
        }
        return platforms
    }

    /// The platform decisions are made for in `context`: the context's own; else the one
    /// platform all the bundle's protection policies are written for; nil when the bundle has
    /// no protection policy (no account is managed, whatever the platform).
    ///
    /// A decision is always for one platform: iOS and Android settings are never merged.
    /// - Throws: `PlatformError` when the context names no platform and the bundle holds
    ///   policies of both (or a default policy, which is for both).
    public func platform(for context: EvaluationContext) throws(PlatformError) -> Platform? {
        if let platform = context.platform { return platform }
        let platforms = policyPlatforms
        guard platforms.count > 1 else { return platforms.first }
        throw PlatformError(platforms: platforms.sorted { $0.rawValue < $1.rawValue })
    }
}

/// A decision asked without a platform of a bundle whose policies are for several.
public struct PlatformError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The platforms the bundle's policies are for.
    public let platforms: [Platform]

    public var description: String {
        "the bundle holds policies for \(platforms.map(\.rawValue).joined(separator: " and ")) (a defaultManagedAppProtection is for ios and android): name the platform the decision is for (\(platforms.map(\.rawValue).joined(separator: " or ")))"
    }
}
