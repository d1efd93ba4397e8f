import Crypto
import CustodyPolicy
import Foundation

/// The content hash of a bundle directory: SHA-256 over the name, length and bytes of every
/// file the loader reads (`*.json`, not hidden, not in subdirectories), in name order. The same
/// files give the same hash wherever the directory is.
enum BundleDigest {
    /// Lower-case hex; nil when the directory cannot be listed.
    static func contentHash(ofDirectory directory: String) -> String? {
        read(directory)?.hash
    }

    /// The files the loader reads (name and bytes) and their content hash; nil when the
    /// directory cannot be listed.
    static func read(_ directory: String) -> (hash: String, files: [(name: String, bytes: [UInt8])])? {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return nil }
        var hasher = SHA256()
        var files: [(name: String, bytes: [UInt8])] = []
        for name in PolicyBundle.documentNames(among: names) {
            let path = (directory as NSString).appendingPathComponent(name)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
            let bytes = [UInt8](FileManager.default.contents(atPath: path) ?? Data())
            hasher.update(data: Data(name.utf8) + [0])
            withUnsafeBytes(of: UInt64(bytes.count).bigEndian) { hasher.update(bufferPointer: $0) }
            hasher.update(data: bytes)
            files.append((name, bytes))
        }
        return (hasher.finalize().map { String(format: "%02x", $0) }.joined(), files)
    }
}
