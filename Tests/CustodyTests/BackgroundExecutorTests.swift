@testable import Custody
import CustodyTestSupport
import Foundation
import Testing

/// Background work (a Graph sync, the console's views) yields the cores to decisions, the state
/// calls it makes stay with it, and work past its deadline stops yielding until it ends.
/// An executor of the tests' own, so that the service's background work in other suites
/// (console views, syncs past their deadline) never moves these threads, and serialized so
/// that one test's overdue work never moves another's.
@Suite("Background work", .serialized)
struct BackgroundExecutorTests {
    static let executor = BackgroundExecutor(threads: 2)

    /// The calling thread's scheduling class, from `/proc/thread-self/stat` (field 41): 0 the
    /// normal class, 5 `SCHED_IDLE`.
    static func schedulingClass() throws -> Int {
        let stat = try String(contentsOfFile: "/proc/thread-self/stat", encoding: .utf8)
        // The command name (field 2) may hold spaces: count the fields from its ')' (field 3
        // is then the second).
        let fields = stat[stat.lastIndex(of: ")")!...].split(separator: " ")
        return try #require(Int(fields[41 - 2]))
    }

    static let normal = 0
    static let idle = 5

    enum Place: String, CaseIterable, CustomTestStringConvertible {
        case state, background, stateInsideBackground, backgroundWithDeadline
        var testDescription: String { rawValue }
        var expected: Int { self == .state ? BackgroundExecutorTests.normal : BackgroundExecutorTests.idle }
    }

    @Test("the class each executor runs its work in", arguments: Place.allCases)
    func schedulingClass(_ place: Place) async throws {
        #if os(Linux)
            let measured: Int
            switch place {
            case .state: measured = try await StateExecutor.run { try Self.schedulingClass() }
            case .background: measured = try await Self.executor.run { try Self.schedulingClass() }
            case .stateInsideBackground:
                measured = try await Self.executor.run {
                    try await StateExecutor.run { try Self.schedulingClass() }
                }
            case .backgroundWithDeadline:
                measured = try await Self.executor.run(escalatingAfter: .seconds(3_600)) {
                    try Self.schedulingClass()
                }
            }
            #expect(measured == place.expected)
        #else
            withKnownIssue("threads change class on Linux only") { Issue.record("not Linux") }
        #endif
    }

    @Test("work past its deadline runs in the normal class until it ends; then background work yields again")
    func escalation() async throws {
        #if os(Linux)
            let during = try await Self.executor.run(escalatingAfter: .milliseconds(10)) {
                () async throws -> Int in
                #expect(await eventually { !Self.executor.isYielding }, "the deadline passes")
                return try Self.schedulingClass()
            }
            #expect(during == Self.normal)
            #expect(Self.executor.isYielding)
            #expect(try await Self.executor.run { try Self.schedulingClass() } == Self.idle)
        #else
            withKnownIssue("threads change class on Linux only") { Issue.record("not Linux") }
        #endif
    }

    @Test("a typed error thrown in background work reaches the caller as it was thrown")
    func typedError() async {
        struct Refused: Error, Equatable { let code: Int }
        await #expect(throws: Refused(code: 7)) {
            try await BackgroundExecutor.run { () throws(Refused) in throw Refused(code: 7) }
        }
        await #expect(throws: Refused(code: 8)) {
            try await BackgroundExecutor.run(escalatingAfter: .seconds(60)) { () throws(Refused) in
                throw Refused(code: 8)
            }
        }
    }
}
