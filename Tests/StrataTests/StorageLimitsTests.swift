import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// Every storage stops on limits and lifetimes it cannot use in the same words, naming the option,
/// before it stores anything: a number written in the code that can never work is a programmer
/// error (CONTRIBUTING.md, "Invalid configuration"), so each case runs in a child process that
/// must stop with the message on its standard error.
@Suite struct StorageLimitsTests {
    @Test func aMaximumCountThatIsNotPositiveStops() async {
        let memory = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = MemoryStorage<String, Data>(maximumCount: 0)
        }
        let disk = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = try DiskStorage(
                url: FileManager.default.temporaryDirectory,
                options: DiskStorage.Options(maximumCount: -1)
            )
        }

        expectStop(memory?.standardErrorContent, saying: "MemoryStorage: maximumCount must be positive, got 0")
        expectStop(disk?.standardErrorContent, saying: "DiskStorage: maximumCount must be positive, got -1")
    }

    @Test func aCostLimitThatIsNotPositiveStops() async {
        let memory = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = MemoryStorage<String, Data>(maximumCost: -5)
        }
        let disk = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = try DiskStorage(
                url: FileManager.default.temporaryDirectory,
                options: DiskStorage.Options(maximumByteCount: 0)
            )
        }

        expectStop(memory?.standardErrorContent, saying: "MemoryStorage: maximumCost must be positive, got -5")
        expectStop(disk?.standardErrorContent, saying: "DiskStorage: maximumByteCount must be positive, got 0")
    }

    @Test func aTimeToLiveThatIsNotPositiveStops() async {
        let memory = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = MemoryStorage<String, Data>(timeToLive: .seconds(-1))
        }
        let disk = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = try DiskStorage(
                url: FileManager.default.temporaryDirectory,
                options: DiskStorage.Options(timeToLive: .zero)
            )
        }

        expectStop(memory?.standardErrorContent, saying: "MemoryStorage: timeToLive must be positive, got -1.0 seconds")
        expectStop(disk?.standardErrorContent, saying: "DiskStorage: timeToLive must be positive, got 0.0 seconds")
    }

    @Test func aTimeToLiveBesideAnExpiryStopsEveryStorageAlike() async {
        let memory = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = MemoryStorage<String, Data>(timeToLive: .seconds(60), expiry: .afterWrite(.seconds(10)))
        }
        let disk = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            var options = DiskStorage.Options(timeToLive: .seconds(60))
            options.expiry = .afterWrite(.seconds(10))
            _ = try DiskStorage(url: FileManager.default.temporaryDirectory, options: options)
        }

        expectStop(
            memory?.standardErrorContent,
            saying: "MemoryStorage: give timeToLive (60.0 seconds) or expiry, not both"
        )
        expectStop(
            disk?.standardErrorContent,
            saying: "DiskStorage: give timeToLive (60.0 seconds) or expiry, not both"
        )
    }

    /// The child opens a folder named after its parent process, which checks it was never made.
    @Test func aDiskStorageThatStopsOnItsOptionsMakesNoFolder() async throws {
        let target = FileManager.default.temporaryDirectory.appendingPathComponent("strata-limits-\(getpid())")

        let stopped = await #expect(processExitsWith: .failure) {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("strata-limits-\(getppid())")
            _ = try DiskStorage(url: folder, options: DiskStorage.Options(maximumCount: 0))
        }

        #expect(stopped != nil)
        #expect(!FileManager.default.fileExists(atPath: target.path))
    }
}
