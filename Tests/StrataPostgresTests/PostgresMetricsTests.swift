#if Postgres
import CoreMetrics
import Foundation
import MetricsTestKit
import Strata
import StrataPostgres
import StrataTestSupport
import Testing

/// A PostgreSQL storage keeps the statistics every storage keeps and reports them through the
/// same metrics, under the same names as the memory and disk storages.
@Suite struct PostgresMetricsTests {
    private func counter(_ factory: TestMetrics, _ name: String, _ dimensions: [(String, String)] = []) -> Int64 {
        factory.counters(label: "db.\(name)", dimensions: dimensions).reduce(0) { $0 + $1.totalValue }
    }

    @Test func readsWritesAndExpirationsAreReportedAndTheStatisticsSetTheGauges() async throws {
        let factory = TestMetrics()
        let clock = ManualClock()
        let storage = try await PostgresTestServer.storage {
            $0.metrics = StorageMetrics(prefix: "db", factory: factory)
            $0.clock = clock
        }
        try await storage.set(Data(count: 10), forKey: "abc")
        try await storage.set(Data([1]), forKey: "short", timeToLive: .seconds(10))
        _ = try await storage.value(forKey: "abc")
        _ = try await storage.values(forKeys: ["abc", "missing"])
        clock.advance(by: .seconds(11))

        #expect(try await storage.removeExpired() == 1)
        let statistics = try await storage.statistics()

        #expect(counter(factory, "writes") == 2)
        #expect(counter(factory, "hits") == 2)
        #expect(counter(factory, "misses") == 1)
        #expect(counter(factory, "evictions", [("reason", "expiry")]) == 1)
        #expect(statistics.hits == 2)
        #expect(statistics.misses == 1)
        #expect(statistics.expirations == 1)
        #expect(statistics.count == 1)
        #expect(statistics.totalCost == 13)
        #expect(try factory.expectGauge("db.entries").lastValue == 1)
        #expect(try factory.expectGauge("db.bytes").lastValue == 13)
        await PostgresTestServer.dispose(storage)
    }
}
#endif
