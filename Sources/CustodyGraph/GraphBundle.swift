import CSystemCalls
public import CustodyPolicy
import Crypto
import CustodyProtection
import Foundation

/// The bundle a tenant snapshot gives: `tenant.json` (the users of the assigned groups, with
/// their OID, UPN and groups; and what an overlay adds) and one file per policy, in Graph's
/// own JSON. The same tenant gives the same bytes: sorted keys, sorted lists, no time of the
/// sync inside.
public enum GraphBundle {
    /// What a tenant overlay may hold: what `tenant.json` has that Graph does not.
    static let overlayKeys = ["allowedAccounts", "managedApps", "mdmManagedApps"]

    /// Checks a tenant overlay read from `path`: a JSON object of `allowedAccounts` (a list of
    /// accounts, or null: every account), `managedApps` and `mdmManagedApps` (lists of app ids).
    /// - Throws: `configuration`, naming `path` and the member at fault.
    public static func checkOverlay(_ bytes: [UInt8], path: String) throws(GraphError) {
        _ = try overlayMembers(bytes, path: path)
    }

    static func overlayMembers(_ bytes: [UInt8], path: String) throws(GraphError) -> [String: GraphJSON] {
        guard let parsed = try? JSONDecoder().decode(GraphJSON.self, from: Data(bytes)),
            case .object(let members) = parsed
        else {
            throw GraphError(.configuration, "\(path): not a JSON object")
        }
        for (key, value) in members.sorted(by: { $0.key < $1.key }) {
            if key == "accounts" {
                throw GraphError(
                    .configuration,
                    "\(path): \"accounts\": accounts come from Graph; the overlay adds \(overlayKeys.joined(separator: ", "))"
                )
            }
            guard overlayKeys.contains(key) else {
                throw GraphError(
                    .configuration, "\(path): unknown member \"\(key)\" (known: \(overlayKeys.joined(separator: ", ")))"
                )
            }
            if key == "allowedAccounts", case .null = value { continue }
            guard let list = value.array, list.allSatisfy({ $0.string.map { !$0.isEmpty } == true }) else {
                throw GraphError(
                    .configuration,
                    "\(path): \"\(key)\" must be a list of non-empty strings\(key == "allowedAccounts" ? " (or null: every account)" : "")"
                )
            }
        }
        return members
    }

    /// The bundle's files, checked to load.
    /// - Parameter overlay: a JSON object whose members other than `accounts` are added to
    ///   `tenant.json` (`allowedAccounts`, `managedApps`, `mdmManagedApps`): what Graph does
    ///   not hold.
    /// - Returns: the files, and the loader's warnings and notices about them (a draft that
    ///   reaches no one, a filter the bundle lacks), for the sync to print.
    static func files(of snapshot: TenantSnapshot, overlay: [UInt8]?) throws(GraphError) -> (
        files: BundleFiles, diagnostics: [String]
    ) {
        var tenant: [String: GraphJSON] = [:]
        if let overlay { tenant = try overlayMembers(overlay, path: "the tenant overlay") }
        tenant["accounts"] = .array(
            snapshot.users.keys.sorted().map { oid in
                let user = snapshot.users[oid]!
                var account: [String: GraphJSON] = [
                    "oid": .string(oid), "groups": .array(user.groups.sorted().map(GraphJSON.string)),
                ]
                if let upn = user.upn, !upn.isEmpty { account["upn"] = .string(upn) }
                if let licensed = user.licensed { account["licensed"] = .bool(licensed) }
                // Disabled accounts only: the record conditional launch's "Disabled account" acts on.
                if user.enabled == false { account["accountEnabled"] = .bool(false) }
                return .object(account)
            })
        var entries: [BundleFiles.Entry] = []
        do {
            entries.append(
                BundleFiles.Entry(name: BundleFiles.tenantName, bytes: try GraphJSON.object(tenant).canonicalBytes()))
            for name in snapshot.policies.keys.sorted() {
                entries.append(BundleFiles.Entry(name: name, bytes: try snapshot.policies[name]!.canonicalBytes()))
            }
        } catch {
            throw GraphError(.bundle, "cannot write the bundle's JSON: \(error)")
        }
        let files: BundleFiles
        let loaded: PolicyBundle
        do {
            files = try BundleFiles(entries: entries)
            loaded = try files.load(allowingEmpty: true)
        } catch {
            throw GraphError(.bundle, "the tenant's policies do not load as a bundle: \(error)")
        }
        // Every warning of the loader, and the notices that say who a policy reaches: what a
        // sync must not keep to itself (not the per-policy "not enforced" lists, which
        // `policy validate` gives).
        let diagnostics = loaded.warnings.filter { $0.severity != .notice || $0.code == .targeting }.map(
            \.description)
        return (files, diagnostics)
    }

    /// Writes `files` as the directory `path`: into a new directory beside it, each file
    /// synced, then exchanged with `path` in one step (renameat2), so that `path` holds the old
    /// bundle or the whole new one, never a mix and never nothing; the old one is then removed.
    public static func write(_ files: BundleFiles, to path: String) throws(GraphError) {
        let target = URL(fileURLWithPath: path).standardizedFileURL
        let parent = target.deletingLastPathComponent().path
        let staging = parent + "/.\(target.lastPathComponent).custody-sync-\(UInt64.random(in: 0..<UInt64.max))"
        let manager = FileManager.default
        // What is replaced must be a bundle (or nothing): a mistyped --out never takes a
        // directory of other things with it.
        if let names = try? manager.contentsOfDirectory(atPath: target.path) {
            for name in names.sorted() {
                var isDirectory: ObjCBool = false
                _ = manager.fileExists(atPath: target.path + "/" + name, isDirectory: &isDirectory)
                guard BundleFiles.isEntryName(name) || name == BundleFiles.signatureName, !isDirectory.boolValue else {
                    throw GraphError(
                        .bundle,
                        "\(target.path) holds \(name), which is not a bundle file: give an empty directory, a new path, or a bundle directory (only *.json files) to replace"
                    )
                }
            }
        }
        do {
            try manager.createDirectory(
                atPath: staging, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o755])
            for entry in files.entries {
                try FileSystem.writeNew(entry.bytes, to: staging + "/" + entry.name, mode: 0o644)
            }
            if let signature = files.signature {
                try FileSystem.writeNew(signature, to: staging + "/" + BundleFiles.signatureName, mode: 0o644)
            }
            try FileSystem.syncDirectory(containing: staging + "/" + BundleFiles.tenantName)
        } catch {
            try? manager.removeItem(atPath: staging)
            throw GraphError(.bundle, "cannot write the new bundle beside \(target.path): \(Self.describe(error))")
        }
        var isDirectory: ObjCBool = false
        if manager.fileExists(atPath: target.path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                try? manager.removeItem(atPath: staging)
                throw GraphError(.bundle, "\(target.path) exists and is not a directory")
            }
            guard custody_exchange_paths(staging, target.path) == 0 else {
                let reason = String(cString: strerror(errno))
                try? manager.removeItem(atPath: staging)
                throw GraphError(.bundle, "cannot put the new bundle in place of \(target.path) in one step: \(reason)")
            }
            // The old bundle is at the staging name now.
            try? manager.removeItem(atPath: staging)
        } else {
            guard rename(staging, target.path) == 0 else {
                let reason = String(cString: strerror(errno))
                try? manager.removeItem(atPath: staging)
                throw GraphError(.bundle, "cannot move the new bundle to \(target.path): \(reason)")
            }
        }
        try? FileSystem.syncDirectory(containing: target.path)
    }

    /// A file error as a sentence.
    private static func describe(_ error: any Error) -> String {
        if let error = error as? ProtectionError { return error.message }
        let underlying = (error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError
        return underlying.map { String(cString: strerror(Int32($0.code))) } ?? (error as NSError).localizedDescription
    }

    static func digest(_ bytes: [UInt8]) -> String {
        SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
    }
}
