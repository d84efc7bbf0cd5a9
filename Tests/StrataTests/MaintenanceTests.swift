import Foundation
import StrataTestSupport
import Testing
import _StrataInternals

@testable import Strata

/// Expired values leave without being read: a cache written once per request and never read stays
/// near the size of what is alive, and `runMaintenance(every:)` sweeps on a schedule.
@Suite(.onTestThreads) struct MaintenanceTests {
    /// Ten simulated minutes of one new key every 10 ms, each living one second: about 100 alive
    /// at any moment.
    @Test func aWriteOnlyMemoryCacheStaysBoundedWithoutReads() throws {
        let clock = ManualClock()
        let cache = MemoryStorage<String, Int>(timeToLive: .seconds(1), clock: clock)
        var largest = 0

        for request in 0..<60_000 {
            cache.set(request, forKey: "request-\(request)")
            clock.advance(by: .milliseconds(10))
            largest = max(largest, cache.count)
        }

        let statistics = cache.statistics
        #expect(largest <= 2 * 100 + 2, "the cache held \(largest) entries, about 100 alive")
        #expect(Int(statistics.expirations) == 60_000 - cache.count)
        #expect(statistics.evictions == 0)
        #expect(cache.value(forKey: "request-59999") == 59_999, "the newest entry is alive")
    }

    @Test func aCountLimitedCacheDropsExpiredEntriesBeforeEvictingLiveOnes() throws {
        let clock = ManualClock()
        let cache = MemoryStorage<String, Int>(maximumCount: 100, clock: clock)
        // Entries that die in a second, then long-lived ones: the dead make room for the living.
        for index in 0..<50 { cache.set(index, forKey: "short-\(index)", timeToLive: .seconds(1)) }
        clock.advance(by: .seconds(2))
        for index in 0..<75 { cache.set(index, forKey: "long-\(index)") }

        var kept = 0
        for index in 0..<75 where cache.value(forKey: "long-" + String(index)) == index { kept += 1 }
        #expect(kept == 75, "live entries were evicted while expired ones stayed")
        #expect(cache.statistics.expirations >= 25)
    }

    @Test func entriesWithoutALifetimeNeverPayForASweep() throws {
        let cache = MemoryStorage<String, Int>()
        for index in 0..<1_000 { cache.set(index, forKey: "k\(index)") }

        #expect(cache.count == 1_000)
        #expect(cache.statistics.expirations == 0)
    }

    @Test func aWriteOnlyDiskCacheRemovesExpiredFilesWithoutReads() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let clock = ManualClock()
        var options = DiskStorage.Options(timeToLive: .seconds(1))
        options.clock = clock
        let disk = try DiskStorage(url: folder.url, options: options)
        var largest = 0

        for request in 0..<2_000 {
            try disk.set(Data("response \(request)".utf8), forKey: "request-\(request)")
            clock.advance(by: .milliseconds(10))
            largest = max(largest, disk.count)
        }

        #expect(largest <= 2 * 100 + 2, "the folder held \(largest) values, about 100 alive")
        #expect(StoreFiles(of: folder.url).records.count == disk.count, "the expired values' files are gone")
        #expect(try disk.value(forKey: "request-1999") == Data("response 1999".utf8))
    }

    @Test func aDiskStoreLeavesExpiredFilesToReadsAndRemoveExpired() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let clock = ManualClock()
        var options = DiskStorage.Options(mode: .store, timeToLive: .seconds(1))
        options.clock = clock
        let disk = try DiskStorage(url: folder.url, options: options)

        for request in 0..<300 {
            try disk.set(Data("value \(request)".utf8), forKey: "k\(request)")
            clock.advance(by: .milliseconds(10))
        }
        let before = disk.count
        let removed = try disk.removeExpired()

        #expect(before == 300, "a store sweeps only when asked: another process may own a file")
        // Written every 10 ms from 0 to 2.99 s and read at 3 s: those written by 2 s are expired.
        #expect(removed == 201)
        #expect(StoreFiles(of: folder.url).records.count == 99)
    }

    @Test func runMaintenanceSweepsOnScheduleUntilCancelled() async throws {
        let clock = ManualClock()
        let cache = MemoryStorage<String, Int>(timeToLive: .seconds(1), clock: clock)
        for index in 0..<10 { cache.set(index, forKey: "k\(index)") }
        clock.advance(by: .seconds(2))

        let maintenance = Task { await cache.runMaintenance(every: .milliseconds(10)) }
        let deadline = ContinuousClock.now + .seconds(10)
        while cache.count > 0, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        maintenance.cancel()
        await maintenance.value

        #expect(cache.count == 0)
        #expect(cache.statistics.expirations == 10)
    }

    @Test func aMaintenanceIntervalThatIsNotPositiveStops() async {
        let stopped = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            await MemoryStorage<String, Int>().runMaintenance(every: .zero)
        }

        expectStop(
            stopped?.standardErrorContent,
            saying: "runMaintenance(every:) needs a positive interval, got 0.0 seconds"
        )
    }

    @Test func aFailingRoundIsReportedAndTheNextOneRuns() async throws {
        let storage = FailingOnce()
        let errors = LockedState([StorageError]())

        let maintenance = Task {
            await storage.runMaintenance(every: .milliseconds(5)) { error in errors.withLock { $0.append(error) } }
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while storage.rounds < 3, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        maintenance.cancel()
        await maintenance.value

        #expect(storage.rounds >= 3, "rounds went on after the failure")
        #expect(errors.withLock { $0.map(\.code) } == [.io])
    }
}

/// A storage whose first sweep fails, as a database that is down would.
private final class FailingOnce: ExpiringStorage {
    private let count = LockedState(0)

    var rounds: Int { count.withLock { $0 } }

    func removeExpired() async throws(StorageError) -> Int {
        let round = count.withLock { count in
            count += 1
            return count
        }
        if round == 1 { throw StorageError(.io, storage: "FailingOnce", message: "the server is down") }
        return 0
    }
}
