import Foundation

extension PolicyBundle {
    /// Loads a path: a bundle directory, a lone `tenant.json`, or a lone Graph JSON file.
    ///
    /// A directory's `tenant.json` is its tenant; every other `*.json` entry in it (not in
    /// subdirectories, hidden ones skipped) is read as Graph JSON, in name order; each must be a
    /// regular file (see `BundleFiles`). Other files, such as a README, are left alone. A
    /// directory without `tenant.json` loads with a warning: it knows no accounts, so every
    /// account is unmanaged.
    ///
    /// - Throws: `BundleError` with every problem found in every file.
    public static func load(path: String) throws(BundleError) -> PolicyBundle {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw BundleError(diagnostics: [BundleFiles.problem(path, "no such file or directory")])
        }
        if isDirectory.boolValue {
            return try load(directory: path)
        }
        let file: File
        switch BundleFiles.readRegularFile(path, maximumBytes: BundleFiles.maximumBytes) {
        case .success(let bytes): file = File(name: path, bytes: bytes)
        case .failure(let failure):
            let message =
                failure.isTooLarge
                ? "the file is larger than \(BundleFiles.maximumBytes) bytes; raise CUSTODY_MAX_BUNDLE_BYTES if it is meant to be"
                : failure.message
            throw BundleError(diagnostics: [BundleFiles.problem(path, message)])
        }
        if (path as NSString).lastPathComponent == BundleFiles.tenantName {
            return try load(tenant: file, documents: [])
        }
        return try load(tenant: nil, documents: [file])
    }

    /// Loads a bundle directory (see `load(path:)` and `BundleFiles.read(directory:)`).
    public static func load(directory: String) throws(BundleError) -> PolicyBundle {
        try BundleFiles.read(directory: directory).load()
    }
}
