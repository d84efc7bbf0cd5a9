import CoreMetrics
import Foundation
import Logging
import MetricsTestKit
import Strata
import StrataSQLite
import StrataTestSupport
import Testing

/// A SQLite storage keeps the statistics every storage keeps and reports them through the same
/// metrics, under the same names as the memory and disk storages.
@Suite(.onTestThreads) struct SQLiteMetricsTests {
    let folder: TemporaryFolder
    let clock = ManualClock()

    init() throws {
        folder = try TemporaryFolder()
    }

    private func open(_ configure: (inout SQLiteStorage.Options) -> Void) throws -> (SQLiteStorage, TestMetrics) {
        let factory = TestMetrics()
        var options = SQLiteStorage.Options()
        options.clock = clock
        options.metrics = StorageMetrics(prefix: "db", factory: factory)
        configure(&options)
        return (try SQLiteStorage(path: folder.path("values.sqlite"), options: options), factory)
    }

    private func counter(_ factory: TestMetrics, _ name: String, _ dimensions: [(String, String)] = []) -> Int64 {
        factory.counters(label: "db.\(name)", dimensions: dimensions).reduce(0) { $0 + $1.totalValue }
    }

    @Test func readsWritesAndEvictionsAreReportedByReason() throws {
        let (storage, factory) = try open { $0.maximumCount = 2 }

        for key in ["a", "b", "c"] {
            try storage.set(Data(key.utf8), forKey: key)
            clock.advance(by: .seconds(1))
        }
        _ = try storage.value(forKey: "c")
        _ = try storage.value(forKey: "a")  // evicted for the count limit
        _ = try storage.values(forKeys: ["b", "c", "missing"])

        #expect(counter(factory, "writes") == 3)
        #expect(counter(factory, "hits") == 3)
        #expect(counter(factory, "misses") == 2)
        #expect(counter(factory, "evictions", [("reason", "count")]) == 1)
        #expect(counter(factory, "evictions", [("reason", "size")]) == 0)
        let statistics = try storage.statistics()
        #expect(statistics.hits == 3)
        #expect(statistics.misses == 2)
        #expect(statistics.countEvictions == 1)
        #expect(statistics.hitRatio == 0.6)
    }

    /// The logger of `Options.logger` hears of an eviction storm as memory and disk tell it: once
    /// per window, at `.warning`, naming the storage and never a key.
    @Test func anEvictionStormIsLoggedOnceWithoutKeys() throws {
        let (logger, handler) = RecordingLogHandler.logger(level: .info)
        var options = SQLiteStorage.Options()
        options.clock = clock
        options.maximumCount = 1
        options.logger = logger
        let storage = try SQLiteStorage(path: folder.path("storm.sqlite"), options: options)
        var entries: [String: Data] = [:]
        for index in 0..<1_100 { entries["user-\(index)"] = Data("\(index)".utf8) }

        try storage.setValues(entries)

        #expect(try storage.statistics().countEvictions == 1_099)
        #expect(handler.entries.count == 1)
        let entry = try #require(handler.entries.first)
        #expect(entry.level == .warning)
        #expect(entry.metadata["storage"] == "SQLiteStorage")
        #expect(entry.metadata["reason"]?.contains("eviction storm") == true)
        #expect(entry.metadata["key"] == nil)
        #expect(!entry.fullText.contains("user-"))
    }

    @Test func readingTheStatisticsSetsTheEntriesAndBytesGauges() throws {
        let (storage, factory) = try open { _ in }
        try storage.set(Data(count: 10), forKey: "abc")

        let statistics = try storage.statistics()

        #expect(statistics.count == 1)
        #expect(statistics.totalCost == 13)
        #expect(try factory.expectGauge("db.entries").lastValue == 1)
        #expect(try factory.expectGauge("db.bytes").lastValue == 13)
    }

    @Test func anUpdateIsCountedAsAWrite() throws {
        let (storage, factory) = try open { _ in }

        try storage.update(forKey: "visits") { $0 = Data([1]) }

        #expect(counter(factory, "writes") == 1)
        #expect(try storage.statistics().writes == 1)
    }

    @Test func anUpdateThroughTheAsyncAPIIsCountedAsAWrite() async throws {
        let (storage, factory) = try open { _ in }

        try await storage.update(forKey: "visits") { $0 = Data([1]) }

        #expect(counter(factory, "writes") == 1)
        #expect(try await storage.statistics().writes == 1)
    }

    @Test func expiredValuesRemovedAreCountedAsExpirations() throws {
        let (storage, factory) = try open { $0.timeToLive = .seconds(10) }
        try storage.set(Data([1]), forKey: "short")
        clock.advance(by: .seconds(11))

        #expect(try storage.removeExpired() == 1)

        #expect(counter(factory, "evictions", [("reason", "expiry")]) == 1)
        #expect(try storage.statistics().expirations == 1)
    }
}
