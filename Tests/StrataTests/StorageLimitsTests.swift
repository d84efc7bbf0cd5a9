import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// Every storage stops on limits and lifetimes it cannot use in the same words, naming the option,
/// before it stores anything: a number written in the code that can never work is a programmer
/// error (CONTRIBUTING.md, "Invalid configuration"). The words are checked here for every hostile
/// value; that each storage stops on them is checked once per storage in a child process (an exit
/// test), since each child starts the whole test binary again.
@Suite(.onTestThreads) struct StorageLimitsTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var maximumCount: Int? = nil
        var maximumCost: Int? = nil
        var timeToLive: Duration? = nil
        var expiry: Expiry<String, Data>? = nil
        var problem: String
        var testDescription: String { problem }
    }

    static let cases: [Case] = [
        Case(maximumCount: 0, problem: "maximumCount must be positive, got 0"),
        Case(maximumCount: -1, problem: "maximumCount must be positive, got -1"),
        Case(maximumCount: .min, problem: "maximumCount must be positive, got \(Int.min)"),
        Case(maximumCost: 0, problem: "maximumByteCount must be positive, got 0"),
        Case(maximumCost: -5, problem: "maximumByteCount must be positive, got -5"),
        Case(maximumCost: .min, problem: "maximumByteCount must be positive, got \(Int.min)"),
        Case(timeToLive: .zero, problem: "timeToLive must be positive, got 0.0 seconds"),
        Case(timeToLive: .seconds(-1), problem: "timeToLive must be positive, got -1.0 seconds"),
        Case(timeToLive: .nanoseconds(-1), problem: "timeToLive must be positive, got \(Duration.nanoseconds(-1))"),
        Case(
            timeToLive: .seconds(60),
            expiry: .afterAccess(.seconds(10)),
            problem: "give timeToLive (60.0 seconds) or expiry, not both"
        ),
        Case(
            expiry: .afterAccess(.zero),
            problem: "the idle time of Expiry.afterAccess must be positive, got 0.0 seconds"
        ),
        Case(
            expiry: .afterAccess(.seconds(-1)),
            problem: "the idle time of Expiry.afterAccess must be positive, got -1.0 seconds"
        ),
    ]

    @Test(arguments: cases)
    func aLimitOrLifetimeThatCannotWorkIsNamedWithItsValue(_ refused: Case) {
        let problem = ConfigurationRule.limitsProblem(
            maximumCount: refused.maximumCount,
            maximumCost: refused.maximumCost,
            timeToLive: refused.timeToLive,
            expiry: refused.expiry
        )

        #expect(problem == refused.problem)
    }

    @Test func usableLimitsAndLifetimesPass() {
        #expect(
            ConfigurationRule.limitsProblem(
                maximumCount: 1,
                maximumCost: 1,
                timeToLive: .nanoseconds(1),
                expiry: Expiry<String, Data>?.none
            ) == nil
        )
        #expect(
            ConfigurationRule.limitsProblem(
                maximumCount: nil,
                maximumCost: nil,
                timeToLive: nil,
                expiry: Expiry<String, Data>.afterAccess(.seconds(1))
            ) == nil
        )
    }

    @Test func aMemoryStorageStopsOnALimitThatCannotWork() async {
        let stopped = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = MemoryStorage<String, Data>(maximumCount: 0)
        }

        expectStop(stopped?.standardErrorContent, saying: "MemoryStorage: maximumCount must be positive, got 0")
    }

    /// The child opens a folder named after its parent process, which checks it was never made:
    /// the options stop the storage before it touches the disk.
    @Test func aDiskStorageStopsOnItsOptionsAndMakesNoFolder() async throws {
        let target = FileManager.default.temporaryDirectory.appendingPathComponent("strata-limits-\(getpid())")

        let stopped = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("strata-limits-\(getppid())")
            _ = try DiskStorage(url: folder, options: DiskStorage.Options(timeToLive: .zero))
        }

        expectStop(stopped?.standardErrorContent, saying: "DiskStorage: timeToLive must be positive, got 0.0 seconds")
        #expect(!FileManager.default.fileExists(atPath: target.path))
    }
}
