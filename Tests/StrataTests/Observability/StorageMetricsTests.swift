import CoreMetrics
import Foundation
import MetricsTestKit
import StrataTestSupport
import Testing

@testable import Strata

/// Each metric a storage reports moves when it should, and only then.
@Suite(.onTestThreads) struct StorageMetricsTests {
    private static func metrics() -> (StorageMetrics, TestMetrics) {
        let factory = TestMetrics()
        return (StorageMetrics(prefix: "app.cache", dimensions: [("tier", "test")], factory: factory), factory)
    }

    private static let tier = [("tier", "test")]

    private static func counter(_ factory: TestMetrics, _ name: String, _ extra: [(String, String)] = []) -> Int64 {
        factory.counters(label: "app.cache.\(name)", dimensions: tier + extra).reduce(0) { $0 + $1.totalValue }
    }

    private static func gauge(_ factory: TestMetrics, _ name: String) throws -> Double? {
        try factory.expectGauge("app.cache.\(name)", tier).lastValue
    }

    @Test func memoryHitsMissesAndWritesAreCounted() throws {
        let (metrics, factory) = Self.metrics()
        let cache = MemoryStorage<String, Int>(metrics: metrics)

        cache.set(1, forKey: "a")
        _ = cache.value(forKey: "a")
        _ = cache.value(forKey: "a")
        _ = cache.value(forKey: "b")

        #expect(Self.counter(factory, "hits") == 2)
        #expect(Self.counter(factory, "misses") == 1)
        #expect(Self.counter(factory, "writes") == 1)
    }

    @Test func memoryEvictionsAreCountedByReason() throws {
        let (metrics, factory) = Self.metrics()
        let clock = ManualClock()
        let cache = MemoryStorage<String, Data>(
            maximumCount: 2,
            maximumCost: 10,
            timeToLive: .seconds(60),
            evictionPolicy: .leastRecentlyUsed,
            clock: clock,
            metrics: metrics
        )

        cache.set(Data(count: 1), forKey: "a")
        cache.set(Data(count: 9), forKey: "b")
        // One entry over the count limit (evicts a), then still over the cost limit (evicts b).
        cache.set(Data(count: 5), forKey: "c")
        clock.advance(by: .seconds(60))
        _ = cache.value(forKey: "c")  // expired

        #expect(Self.counter(factory, "evictions", [("reason", "count")]) == 1)
        #expect(Self.counter(factory, "evictions", [("reason", "size")]) == 1)
        #expect(Self.counter(factory, "evictions", [("reason", "expiry")]) == 1)
        #expect(cache.statistics.countEvictions == 1)
        #expect(cache.statistics.sizeEvictions == 1)
        #expect(cache.statistics.expirations == 1)
    }

    @Test func memoryRejectedOversizeValueIsCounted() throws {
        let (metrics, factory) = Self.metrics()
        let cache = MemoryStorage<String, Data>(maximumCost: 4, metrics: metrics)

        cache.set(Data(count: 5), forKey: "big")
        cache.set(Data(count: 4), forKey: "fits")

        #expect(Self.counter(factory, "rejections") == 1)
        #expect(Self.counter(factory, "writes") == 1)
    }

    @Test func memoryGaugesFollowEntriesAndBytesHeld() throws {
        let (metrics, factory) = Self.metrics()
        let cache = MemoryStorage<String, Data>(metrics: metrics)

        cache.set(Data(count: 10), forKey: "a")
        cache.set(Data(count: 5), forKey: "b")
        #expect(try Self.gauge(factory, "entries") == 2)
        #expect(try Self.gauge(factory, "bytes") == 15)

        cache.removeValue(forKey: "a")
        #expect(try Self.gauge(factory, "entries") == 1)
        #expect(try Self.gauge(factory, "bytes") == 5)

        cache.removeAll()
        #expect(try Self.gauge(factory, "entries") == 0)
        #expect(try Self.gauge(factory, "bytes") == 0)
    }

    @Test func memoryOperationsAreTimed() throws {
        let (metrics, factory) = Self.metrics()
        let cache = MemoryStorage<String, Int>(metrics: metrics)

        cache.set(1, forKey: "a")
        _ = cache.value(forKey: "a")
        _ = cache.value(forKey: "b")
        cache.removeValue(forKey: "a")
        try cache.update(forKey: "n") { $0 = 1 }

        func timings(_ operation: String) throws -> Int {
            try factory.expectTimer("app.cache.duration", Self.tier + [("operation", operation)]).values.count
        }
        #expect(try timings("get") == 2)
        #expect(try timings("set") == 1)
        #expect(try timings("remove") == 1)
        #expect(try timings("update") == 1)
    }

    @Test func countersAreExactUnderConcurrentUse() async throws {
        let (metrics, factory) = Self.metrics()
        let cache = MemoryStorage<Int, Int>(maximumCount: 100, metrics: metrics)

        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for index in 0..<500 {
                        cache.set(index, forKey: task * 1_000 + index)
                        _ = cache.value(forKey: task * 1_000 + index)
                    }
                }
            }
        }

        let statistics = cache.statistics
        #expect(Self.counter(factory, "writes") == 4_000)
        #expect(Self.counter(factory, "hits") + Self.counter(factory, "misses") == 4_000)
        #expect(Self.counter(factory, "hits") == Int64(statistics.hits))
        #expect(Self.counter(factory, "evictions", [("reason", "count")]) == Int64(statistics.countEvictions))
    }

    @Test func storageWithoutMetricsMakesNone() throws {
        let factory = TestMetrics()
        let cache = MemoryStorage<String, Int>(maximumCount: 1)

        cache.set(1, forKey: "a")
        cache.set(2, forKey: "b")
        _ = cache.value(forKey: "b")

        #expect(cache.observer == nil)
        #expect(factory.counters.isEmpty)
        #expect(cache.statistics.hits == 1)
    }

    @Test func diskReportsHitsMissesDamageEvictionsAndGauges() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let (metrics, factory) = Self.metrics()
        var options = DiskStorage.Options(maximumCount: 2)
        options.metrics = metrics
        let storage = try DiskStorage(url: folder.url, options: options)

        try storage.set(Data("one".utf8), forKey: "a")
        try storage.set(Data("two".utf8), forKey: "b")
        _ = try storage.value(forKey: "a")
        _ = try storage.value(forKey: "missing")
        try storage.set(Data("three".utf8), forKey: "c")  // evicts b by count
        try Data("garbage".utf8).write(to: URL(fileURLWithPath: folder.path + "/" + relativePath(forKey: "c")))
        _ = try storage.value(forKey: "c")  // damaged: dropped as a miss

        #expect(Self.counter(factory, "writes") == 3)
        #expect(Self.counter(factory, "hits") == 1)
        #expect(Self.counter(factory, "misses") == 2)
        #expect(Self.counter(factory, "evictions", [("reason", "count")]) == 1)
        #expect(Self.counter(factory, "damaged_files") == 1)
        #expect(try Self.gauge(factory, "entries") == 1)
        #expect(try Self.gauge(factory, "bytes") == Double(storage.totalSize))
        #expect(try factory.expectTimer("app.cache.duration", Self.tier + [("operation", "get")]).values.count == 3)
    }

    @Test func diskGaugesAreSetWhenTheFolderIsOpened() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let first = try DiskStorage(url: folder.url)
        try first.set(Data(count: 10), forKey: "a")
        let (metrics, factory) = Self.metrics()

        let reopened = try DiskStorage(url: folder.url, options: .init(metrics: metrics))

        #expect(try Self.gauge(factory, "entries") == 1)
        #expect(try Self.gauge(factory, "bytes") == Double(reopened.totalSize))
    }

    @Test func coordinatedProviderCountsSourceCallsAndCoalescedWaiters() async throws {
        let (metrics, factory) = Self.metrics()
        let probe = SourceProbe(held: true)
        let provider = AnyProvider { (id: String) in try await probe.fetch(id) }.coordinated(metrics: metrics)

        try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<10 {
                group.addTask { try await provider.value(for: "a") }
            }
            while provider.waitersInFlight < 10 { await Task.yield() }
            probe.open()
            try await group.waitForAll()
        }
        _ = try await provider.value(for: "b")

        #expect(probe.calls == 2)
        #expect(Self.counter(factory, "source_calls") == 2)
        #expect(Self.counter(factory, "coalesced_waiters") == 9)
    }
}
