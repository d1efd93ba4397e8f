import CustodyPolicy
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A progress bar on standard error, drawn only when standard error is a terminal and the work
/// is big enough to wait for.
final class ProgressBar {
    private let total: Int64
    private let label: String
    private let enabled: Bool
    private let started = ContinuousClock.now
    private var lastDrawn = ContinuousClock.now - .seconds(1)

    /// Bars are drawn for more than this many bytes.
    static let threshold: Int64 = 4 << 20

    init(label: String, total: Int64?) {
        self.label = label
        self.total = total ?? 0
        self.enabled = isatty(2) == 1 && (total ?? 0) > Self.threshold
    }

    /// Draws the bar for `done` bytes (at most ten times a second).
    func update(_ done: Int64) {
        guard enabled else { return }
        let now = ContinuousClock.now
        guard now - lastDrawn >= .milliseconds(100) || done >= total else { return }
        lastDrawn = now
        let fraction = total > 0 ? min(1, Double(done) / Double(total)) : 0
        let width = 30
        let filled = Int(fraction * Double(width))
        let seconds = max((now - started).inSeconds, 0.001)
        let rate = Double(done) / seconds / Double(1 << 20)
        let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
        StandardError.write("\r\(label) \(bar) \(Int(fraction * 100))% \(Int(rate)) MiB/s ")
    }

    /// Ends the bar's line.
    func finish() {
        guard enabled else { return }
        StandardError.write("\n")
    }
}

/// A progress bar for a directory tree, whose total is known once the tree is listed.
final class TreeProgressBar {
    private let label: String
    private var bar: ProgressBar?

    init(label: String) {
        self.label = label
    }

    /// Draws the bar for `done` of `total` bytes.
    func update(_ done: Int64, _ total: Int64) {
        if bar == nil { bar = ProgressBar(label: label, total: total) }
        bar?.update(done)
    }

    func finish() {
        bar?.finish()
    }
}

/// The size of a regular file, or nil.
func fileSize(_ path: String) -> Int64? {
    guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
        attributes[.type] as? FileAttributeType == .typeRegular,
        let size = attributes[.size] as? NSNumber
    else { return nil }
    return size.int64Value
}
