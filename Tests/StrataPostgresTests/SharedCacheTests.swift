import Foundation
import Strata
import StrataPostgres
import StrataTesting
import Synchronization
import Testing

/// SharedCache keeps memory layers fresh: a change made through one PostgresStorage drops the key
/// from every other storage's memory layer. Two storages in one process stand for two processes
/// here (each has its own connections and name); PostgresProcessTests uses real processes.
@Suite struct SharedCacheTests {
    /// Invalidations a cache reported, to wait for one without sleeping.
    final class Invalidations: Sendable {
        let stream: AsyncStream<SharedCache.Invalidation>
        let continuation: AsyncStream<SharedCache.Invalidation>.Continuation

        init() {
            (stream, continuation) = AsyncStream.makeStream()
        }

        /// Waits for `expected`, skipping any other invalidation.
        func next(_ expected: SharedCache.Invalidation) async -> SharedCache.Invalidation? {
            for await invalidation in stream where invalidation == expected {
                return invalidation
            }
            return nil
        }
    }

    @Test func passesTheBehaviourSuite() async throws {
        _ = try PostgresTestServer.url()
        let opened = OpenedStorages()
        let values = [Data("a".utf8), Data("bb".utf8), Data("ccc".utf8)]
        let suite = StorageBehaviourSuite(keys: ["kharkiv", "kyiv", "lviv", ""], values: values) {
            let storage = try await PostgresTestServer.storage()
            opened.append(storage)
            return try await storage.sharedCache()
        }

        try await suite.run()

        for storage in opened.all { await PostgresTestServer.dispose(storage) }
    }

    @Test func aSetElsewhereDropsTheKeyFromMemory() async throws {
        let reader = try await PostgresTestServer.storage()
        let writer = try await PostgresTestServer.storage(table: reader.options.table)
        let invalidations = Invalidations()
        let cache = try await reader.sharedCache(onInvalidation: { invalidations.continuation.yield($0) })
        try await writer.set(Data("v1".utf8), forKey: "config")
        _ = await invalidations.next(.key("config"))
        #expect(try await cache.value(forKey: "config") == Data("v1".utf8))
        #expect(cache.memory.value(forKey: "config") == Data("v1".utf8))

        try await writer.set(Data("v2".utf8), forKey: "config")
        _ = await invalidations.next(.key("config"))

        #expect(cache.memory.value(forKey: "config") == nil)
        #expect(try await cache.value(forKey: "config") == Data("v2".utf8))
        await cache.close()
        await writer.close()
        await PostgresTestServer.dispose(reader)
    }

    @Test func aRemovalOrClearElsewhereDropsKeysFromMemory() async throws {
        let reader = try await PostgresTestServer.storage()
        let writer = try await PostgresTestServer.storage(table: reader.options.table)
        let invalidations = Invalidations()
        let cache = try await reader.sharedCache(onInvalidation: { invalidations.continuation.yield($0) })
        try await cache.set(Data([1]), forKey: "a")
        try await cache.set(Data([2]), forKey: "b")

        try await writer.removeValue(forKey: "a")
        _ = await invalidations.next(.key("a"))
        let afterRemoval = (cache.memory.value(forKey: "a"), cache.memory.value(forKey: "b"))
        try await writer.removeAll()
        let cleared = await invalidations.next(.all)

        #expect(afterRemoval.0 == nil)
        #expect(afterRemoval.1 == Data([2]))
        #expect(cleared == .all)
        #expect(cache.memory.count == 0)
        await cache.close()
        await writer.close()
        await PostgresTestServer.dispose(reader)
    }

    @Test func aHostileOrLongKeyIsInvalidatedToo() async throws {
        let reader = try await PostgresTestServer.storage()
        let writer = try await PostgresTestServer.storage(table: reader.options.table)
        let invalidations = Invalidations()
        let cache = try await reader.sharedCache(onInvalidation: { invalidations.continuation.yield($0) })
        let keys = ["'); DROP TABLE x; --", "a\u{0}b", String(repeating: "long", count: 3_000)]
        for key in keys {
            try await cache.set(Data([1]), forKey: key)

            try await writer.set(Data([2]), forKey: key)
            _ = await invalidations.next(key.utf8.count > 5_000 ? .all : .key(key))

            #expect(cache.memory.value(forKey: key) == nil)
            #expect(try await cache.value(forKey: key) == Data([2]))
        }
        await cache.close()
        await writer.close()
        await PostgresTestServer.dispose(reader)
    }

    @Test func ownWritesKeepMemoryWarm() async throws {
        let storage = try await PostgresTestServer.storage()
        let cache = try await storage.sharedCache()

        try await cache.set(Data([7]), forKey: "mine")

        // Its own change comes back as a notification that this cache ignores.
        try await cache.storage.set(Data([8]), forKey: "other")
        try await cache.set(Data([9]), forKey: "last")

        #expect(cache.memory.value(forKey: "mine") == Data([7]))
        #expect(cache.memory.value(forKey: "last") == Data([9]))
        #expect(try await cache.value(forKey: "mine") == Data([7]))
        await cache.close()
        await PostgresTestServer.dispose(storage)
    }
}
