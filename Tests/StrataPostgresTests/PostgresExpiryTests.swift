#if Postgres
import Foundation
import PostgresNIO
import Strata
import StrataPostgres
import StrataTestSupport
import Testing

/// `Options.expiry` on PostgresStorage and SharedCache: lifetimes worked out from the value on
/// every kind of write, and rules the database cannot keep refused.
@Suite struct PostgresExpiryTests {
    /// A lifetime of as many seconds as the value's first byte; an empty value never expires, and
    /// a first byte of 0 has no time left.
    static let byFirstByte = Expiry<String, Data> { _, value in
        value.first.map { .remaining(.seconds(Int($0))) } ?? .unlimited
    }

    @Test func eachValueLivesAsLongAsItsRuleSaysOnSetsBulkSetsAndUpdates() async throws {
        let clock = ManualClock()
        let storage = try await PostgresTestServer.storage {
            $0.clock = clock
            $0.expiry = Self.byFirstByte
        }
        try await storage.set(Data([5]), forKey: "short")
        try await storage.set(Data(), forKey: "forever")
        try await storage.setValues(["long": Data([50]), "bulk-forever": Data()])
        try await storage.update(forKey: "updated") { $0 = Data([20]) }

        #expect(try await storage.lifetime(forKey: "short") == .remaining(.seconds(5)))
        #expect(try await storage.lifetime(forKey: "forever") == .unlimited)
        #expect(try await storage.lifetime(forKey: "long") == .remaining(.seconds(50)))
        #expect(try await storage.lifetime(forKey: "bulk-forever") == .unlimited)
        #expect(try await storage.lifetime(forKey: "updated") == .remaining(.seconds(20)))
        clock.advance(by: .seconds(10))
        #expect(try await storage.value(forKey: "short") == nil)
        #expect(try await storage.value(forKey: "long") == Data([50]))
        await PostgresTestServer.dispose(storage)
    }

    @Test func aLifetimeThatHasRunOutStoresNothingAndRemovesTheOlderValue() async throws {
        let storage = try await PostgresTestServer.storage { $0.expiry = Self.byFirstByte }
        try await storage.setValues(["a": Data([60]), "b": Data([60]), "c": Data([60])])

        try await storage.set(Data([0]), forKey: "a")
        try await storage.setValues(["b": Data([0]), "d": Data([30])])
        try await storage.update(forKey: "c") { $0 = Data([0]) }

        #expect(try await storage.values(forKeys: ["a", "b", "c", "d"]) == [nil, nil, nil, Data([30])])
        #expect(try await storage.statistics().count == 1)
        await PostgresTestServer.dispose(storage)
    }

    @Test func theUpdateRuleSeesTheOldLifetimeOnSetsBulkSetsAndUpdates() async throws {
        let clock = ManualClock()
        let seen = LockedBox<[Lifetime]>([])
        let storage = try await PostgresTestServer.storage {
            $0.clock = clock
            $0.expiry = Expiry(
                afterCreate: { _, _ in .remaining(.seconds(60)) },
                afterUpdate: { _, _, current in
                    seen.mutate { $0.append(current) }
                    return current
                }
            )
        }
        try await storage.set(Data([1]), forKey: "a")
        clock.advance(by: .seconds(10))
        try await storage.set(Data([2]), forKey: "a")
        clock.advance(by: .seconds(10))
        try await storage.setValues(["a": Data([3]), "b": Data([1])])
        clock.advance(by: .seconds(10))
        try await storage.update(forKey: "a") { $0 = Data([4]) }

        #expect(seen.value == [.remaining(.seconds(50)), .remaining(.seconds(40)), .remaining(.seconds(30))])
        #expect(try await storage.lifetime(forKey: "a") == .remaining(.seconds(30)))
        #expect(try await storage.lifetime(forKey: "b") == .remaining(.seconds(50)))
        #expect(try await storage.value(forKey: "a") == Data([4]))
        await PostgresTestServer.dispose(storage)
    }

    @Test func aSharedCacheKeepsAValueInMemoryNoLongerThanItsRuleSays() async throws {
        let clock = ManualClock()
        let storage = try await PostgresTestServer.storage {
            $0.clock = clock
            $0.expiry = Self.byFirstByte
        }
        let memory = MemoryStorage<String, Data>(timeToLive: .seconds(60), clock: clock)
        let cache = try await storage.sharedCache(in: memory)
        try await cache.set(Data([5]), forKey: "set")
        try await cache.setValues([("bulk", Data([7]))])
        try await cache.update(forKey: "updated") { $0 = Data([9]) }
        try await cache.set(Data([0]), forKey: "ran-out")

        #expect(memory.lifetime(forKey: "set") == .remaining(.seconds(5)))
        #expect(memory.lifetime(forKey: "bulk") == .remaining(.seconds(7)))
        #expect(memory.lifetime(forKey: "updated") == .remaining(.seconds(9)))
        #expect(memory.value(forKey: "ran-out") == nil)
        #expect(try await cache.value(forKey: "ran-out") == nil)
        clock.advance(by: .seconds(8))
        #expect(try await cache.values(forKeys: ["set", "bulk", "updated"]) == [nil, nil, Data([9])])
        await cache.close()
        await PostgresTestServer.dispose(storage)
    }

    @Test func aValueReadFromPostgreSQLLeavesMemoryWhenItsRowExpires() async throws {
        let clock = ManualClock()
        let storage = try await PostgresTestServer.storage { $0.clock = clock }
        let writer = try await PostgresTestServer.storage(table: storage.options.table) { $0.clock = clock }
        // No lifetime of its own: before, a row read into it stayed for ever.
        let memory = MemoryStorage<String, Data>(clock: clock)
        let invalidations = SharedCacheTests.Invalidations()
        let cache = try await storage.sharedCache(in: memory, onInvalidation: { invalidations.continuation.yield($0) })
        try await writer.set(Data("token".utf8), forKey: "session", timeToLive: .seconds(1))
        try await writer.set(Data("other".utf8), forKey: "bulk", timeToLive: .seconds(1))
        try await writer.set(Data("kept".utf8), forKey: "kept")
        await invalidations.awaitKeys(["session", "bulk", "kept"])

        #expect(try await cache.value(forKey: "session") == Data("token".utf8))
        #expect(try await cache.values(forKeys: ["bulk", "kept"]) == [Data("other".utf8), Data("kept".utf8)])
        #expect(memory.lifetime(forKey: "session") == .remaining(.seconds(1)))
        #expect(memory.lifetime(forKey: "bulk") == .remaining(.seconds(1)))
        #expect(memory.lifetime(forKey: "kept") == .unlimited)
        clock.advance(by: .seconds(2))

        #expect(try await cache.value(forKey: "session") == nil)
        #expect(try await cache.values(forKeys: ["bulk", "kept"]) == [nil, Data("kept".utf8)])
        #expect(try await cache.lifetime(forKey: "session") == nil)
        await cache.close()
        await writer.close()
        await PostgresTestServer.dispose(storage)
    }

    /// The child makes its storage over a client that never runs: the options stop it before any
    /// connection. The words of the other rules are StorageLimitsTests'.
    @Test func aRuleForReadsStops() async {
        let stopped = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let client = PostgresClient(
                configuration: try PostgresStorage.configuration(from: "postgres://a@127.0.0.1:1/b")
            )
            var options = PostgresStorage.Options(table: "sessions")
            options.expiry = .afterAccess(.seconds(60))
            _ = try PostgresStorage(client: client, options: options)
        }

        expectStop(
            stopped?.standardErrorContent,
            saying: "PostgresStorage: PostgresStorage cannot renew lifetimes on reads"
        )
    }
}
#endif
