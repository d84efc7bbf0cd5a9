#if Postgres
import Foundation
import Strata
import StrataPostgres
import Testing

/// A table written once per request and never read stays near what is alive: each write with a
/// lifetime removes up to two expired rows in the same statement.
@Suite struct PostgresMaintenanceTests {
    @Test func aWriteOnlyTableStaysBoundedWithoutReads() async throws {
        let clock = ManualClock()
        let storage = try await PostgresTestServer.storage { $0.clock = clock }
        var largest = 0

        // A new key every 10 ms of the clock, each living one second: about 100 alive.
        for request in 0..<1_000 {
            try await storage.set(
                Data("response \(request)".utf8),
                forKey: "request-\(request)",
                timeToLive: .seconds(1)
            )
            clock.advance(by: .milliseconds(10))
            if request % 50 == 0 { largest = max(largest, try await storage.statistics().count) }
        }
        let count = try await storage.statistics().count
        let removed = try await storage.removeExpired()

        #expect(max(largest, count) <= 2 * 100 + 2, "the table held \(max(largest, count)) rows, about 100 alive")
        #expect(count - removed <= 101, "what is left after removeExpired is what is alive")
        #expect(try await storage.value(forKey: "request-999") == Data("response 999".utf8))
        await PostgresTestServer.dispose(storage)
    }

    @Test func runMaintenanceSweepsATable() async throws {
        let clock = ManualClock()
        let storage = try await PostgresTestServer.storage { $0.clock = clock }
        for index in 0..<20 { try await storage.set(Data("v".utf8), forKey: "k\(index)", timeToLive: .seconds(1)) }
        clock.advance(by: .seconds(2))

        let maintenance = Task { await storage.runMaintenance(every: .milliseconds(20)) }
        let deadline = ContinuousClock.now + .seconds(20)
        while try await storage.statistics().count > 0, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        maintenance.cancel()
        await maintenance.value

        #expect(try await storage.statistics().count == 0)
        await PostgresTestServer.dispose(storage)
    }

    @Test func aRowReportsWhatIsLeftUnlimitedOrNothing() async throws {
        let clock = ManualClock()
        let storage = try await PostgresTestServer.storage { $0.clock = clock }
        try await storage.set(Data("token".utf8), forKey: "token", timeToLive: .seconds(10))
        try await storage.set(Data("kept".utf8), forKey: "kept")
        clock.advance(by: .seconds(4))

        #expect(try await storage.lifetime(forKey: "token") == .remaining(.seconds(6)))
        #expect(try await storage.lifetime(forKey: "kept") == .unlimited)
        #expect(try await storage.lifetime(forKey: "missing") == nil)
        clock.advance(by: .seconds(6))
        #expect(try await storage.lifetime(forKey: "token") == nil)
        await PostgresTestServer.dispose(storage)
    }

    @Test(arguments: [Duration.zero, .seconds(-1)])
    func aLifetimeThatHasRunOutStoresNothingAndRemovesTheOldValue(lifetime: Duration) async throws {
        let storage = try await PostgresTestServer.storage()
        try await storage.set(Data("old".utf8), forKey: "k")

        try await storage.set(Data("new".utf8), forKey: "k", timeToLive: lifetime)
        try await storage.setValues(["a": Data("a".utf8)], timeToLive: lifetime)

        #expect(try await storage.value(forKey: "k") == nil)
        #expect(try await storage.statistics().count == 0)
        await PostgresTestServer.dispose(storage)
    }

    /// An update keeps the value's lifetime in PostgreSQL; SharedCache's memory must not keep
    /// the value longer (it used to keep it for its own default, serving it after it expired).
    @Test func aSharedCacheUpdateKeepsTheValueInMemoryNoLongerThanItLives() async throws {
        let clock = ManualClock()
        let storage = try await PostgresTestServer.storage { $0.clock = clock }
        let memory = MemoryStorage<String, Data>(timeToLive: .seconds(60), clock: clock)
        let cache = try await storage.sharedCache(in: memory)
        try await cache.set(Data("v1".utf8), forKey: "token", timeToLive: .seconds(10))
        clock.advance(by: .seconds(4))

        try await cache.update(forKey: "token") { $0?.append(contentsOf: Data("!".utf8)) }

        #expect(memory.lifetime(forKey: "token") == .remaining(.seconds(6)))
        #expect(try await storage.lifetime(forKey: "token") == .remaining(.seconds(6)))
        clock.advance(by: .seconds(6))
        #expect(try await cache.value(forKey: "token") == nil, "expired in memory and in PostgreSQL alike")
        await cache.close()
        await PostgresTestServer.dispose(storage)
    }
}
#endif
