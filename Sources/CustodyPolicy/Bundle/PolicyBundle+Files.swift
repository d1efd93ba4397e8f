import Foundation

extension PolicyBundle {
    /// Loads a path: a bundle directory, a lone `tenant.json`, or a lone Graph JSON file.
    ///
    /// A directory's `tenant.json` is its tenant; every other `*.json` file in it (not in
    /// subdirectories, hidden files skipped) is read as Graph JSON, in name order. Other files,
    /// such as a README, are left alone. A directory without `tenant.json` loads with a warning:
    /// it knows no accounts, so every account is unmanaged.
    ///
    /// - Throws: `BundleError` with every problem found in every file.
    public static func load(path: String) throws(BundleError) -> PolicyBundle {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw BundleError(diagnostics: [unreadable(path, "no such file or directory")])
        }
        if isDirectory.boolValue {
            return try load(directory: path)
        }
        let file = try readFile(path)
        if (path as NSString).lastPathComponent == "tenant.json" {
            return try load(tenant: file, documents: [])
        }
        return try load(tenant: nil, documents: [file])
    }

    /// Loads a bundle directory (see `load(path:)`).
    public static func load(directory: String) throws(BundleError) -> PolicyBundle {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            throw BundleError(diagnostics: [unreadable(directory, "cannot list the directory: \(error.localizedDescription)")])
        }
        let jsonNames = documentNames(among: names)
        let tenantPath = (directory as NSString).appendingPathComponent("tenant.json")

        var tenant: File?
        var documents: [File] = []
        var readErrors: [Diagnostic] = []
        for name in jsonNames {
            let filePath = (directory as NSString).appendingPathComponent(name)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: filePath, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
            do {
                let file = try readFile(filePath)
                if name == "tenant.json" { tenant = file } else { documents.append(file) }
            } catch {
                readErrors += error.diagnostics
            }
        }

        // Files that could not be read fail the bundle, but the readable ones are still checked
        // so that one run reports every problem.
        if !readErrors.isEmpty {
            let others: [Diagnostic]
            do {
                others = try load(tenant: tenant, documents: documents).warnings
            } catch {
                others = error.diagnostics
            }
            throw BundleError(diagnostics: readErrors + others)
        }
        var leading: [Diagnostic] = []
        if tenant == nil {
            leading.append(Diagnostic(
                severity: .warning, code: .noTenant,
                message: "the bundle has no tenant.json, so it knows no accounts and treats every account as unmanaged",
                location: DocumentLocation(file: tenantPath, line: 1, column: 1)))
        }
        do {
            var bundle = try load(tenant: tenant, documents: documents)
            bundle.warnings = leading + bundle.warnings
            return bundle
        } catch {
            throw BundleError(diagnostics: leading + error.diagnostics)
        }
    }

    /// The names a bundle directory's loader reads, in the order it reads them: `*.json`, not
    /// hidden, by UTF-8 order (subdirectories are skipped when read).
    public static func documentNames(among names: [String]) -> [String] {
        names.filter { !$0.hasPrefix(".") && $0.lowercased().hasSuffix(".json") }.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    private static func readFile(_ path: String) throws(BundleError) -> File {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw BundleError(diagnostics: [unreadable(path, "cannot read the file (missing or not readable)")])
        }
        return File(name: path, bytes: [UInt8](data))
    }

    private static func unreadable(_ path: String, _ message: String) -> Diagnostic {
        Diagnostic(severity: .error, code: .unreadable, message: message, location: DocumentLocation(file: path, line: 1, column: 1))
    }
}
