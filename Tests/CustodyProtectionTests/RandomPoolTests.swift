import Foundation
import Testing

@testable import CustodyProtection

@Suite("Random pool")
struct RandomPoolTests {
    @Test("draws never repeat, across refills and sizes")
    func distinct() {
        var seen = Set<[UInt8]>()
        // 20,000 draws of 24 bytes are about sixty refills of the pool.
        for index in 0..<20_000 {
            let count = [24, 32, 7, 19, 1, 256][index % 6]
            var bytes = [UInt8](repeating: 0, count: count)
            bytes.withUnsafeMutableBytes { Sodium.randomBytes($0) }
            if count >= 16 { #expect(seen.insert(bytes).inserted, "draw \(index) repeated an earlier one") }
        }
        var large = [UInt8](repeating: 0, count: 4_096)
        large.withUnsafeMutableBytes { Sodium.randomBytes($0) }
        #expect(Set(large).count > 200, "a large draw is random too")
    }

    @Test("the pool is wiped in forked children and kept out of core dumps")
    func kernelFlags() throws {
        let pool = RandomPool.shared
        try #require(pool.isBuffered, "this kernel supports MADV_WIPEONFORK (Linux 4.14 and later)")
        let range = try #require(pool.addressRange)
        // /proc/self/smaps: an address range line, then fields, VmFlags last.
        // Read to the end: /proc files report a size of zero.
        let handle = try #require(FileHandle(forReadingAtPath: "/proc/self/smaps"))
        defer { try? handle.close() }
        let smaps = String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
        var inPool = false
        var flags: [Substring]?
        for line in smaps.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if let first = fields.first, first.contains("-"), !first.hasSuffix(":") {
                let bounds = first.split(separator: "-").compactMap { UInt($0, radix: 16) }
                inPool = bounds.count == 2 && bounds[0] <= range.lowerBound && range.upperBound <= bounds[1]
            } else if inPool, fields.first == "VmFlags:" {
                flags = Array(fields.dropFirst())
                break
            }
        }
        let vmFlags = try #require(flags, "the pool's mapping is in /proc/self/smaps")
        #expect(vmFlags.contains("wf"), "wipe on fork: \(vmFlags)")
        #expect(vmFlags.contains("dd"), "not dumped: \(vmFlags)")
    }
}
