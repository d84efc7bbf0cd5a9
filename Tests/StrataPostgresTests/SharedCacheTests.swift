#if Postgres
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

        /// Waits until each of `keys` has been invalidated, skipping any other invalidation.
        func awaitKeys(_ keys: Set<String>) async {
            var left = keys
            for await invalidation in stream {
                if case .key(let key) = invalidation { left.remove(key) }
                if left.isEmpty { return }
            }
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

    @Test func aStorageWithOneConnectionIsRefusedSayingWhyInsteadOfTimingOut() async throws {
        let storage = try await PostgresTestServer.storage { $0.maximumConnectionCount = 1 }
        let started = ContinuousClock.now

        let error = await #expect(throws: StorageError.self) { try await storage.sharedCache() }

        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains("maximumConnectionCount of at least 2") == true, "\(String(describing: error))")
        #expect(ContinuousClock.now - started < storage.options.operationTimeout, "refused, not timed out")
        await PostgresTestServer.dispose(storage)
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

    @Test func bulkReadsAndWritesKeepMemoryWarmAndOtherProcessesFresh() async throws {
        let storage = try await PostgresTestServer.storage()
        let other = try await PostgresTestServer.storage(table: storage.options.table)
        let invalidations = Invalidations()
        let cache = try await storage.sharedCache()
        let elsewhere = try await other.sharedCache(onInvalidation: { invalidations.continuation.yield($0) })
        try await storage.setValues(["a": Data([1]), "b": Data([2])])
        await invalidations.awaitKeys(["a", "b"])  // before the other process reads them
        #expect(try await elsewhere.values(forKeys: ["a", "b"]) == [Data([1]), Data([2])])
        #expect(elsewhere.memory.value(forKey: "b") == Data([2]))

        let read = try await cache.values(forKeys: ["a", "missing", "b"])
        try await cache.setValues([("b", Data([20])), ("c", Data([3])), ("b", Data([21]))])
        await invalidations.awaitKeys(["b", "c"])

        #expect(read == [Data([1]), nil, Data([2])])
        #expect(try await cache.memory.values(forKeys: ["a", "b", "c"]) == [Data([1]), Data([21]), Data([3])])
        #expect(elsewhere.memory.value(forKey: "b") == nil, "the other process dropped the key it held")
        #expect(try await elsewhere.values(forKeys: ["b", "c"]) == [Data([21]), Data([3])])
        await cache.close()
        await elsewhere.close()
        await PostgresTestServer.dispose(storage)
        await PostgresTestServer.dispose(other)
    }

    /// The writer is held between its PostgreSQL commit and its memory write while another
    /// process's newer change arrives: memory must not keep the older value.
    @Test(arguments: ["set", "update"])
    func aChangeArrivingBetweenCommitAndMemoryWriteIsNeverUndone(operation: String) async throws {
        let storage = try await PostgresTestServer.storage()
        let other = try await PostgresTestServer.storage(table: storage.options.table)
        let invalidations = Invalidations()
        let cache = try await storage.sharedCache(onInvalidation: { invalidations.continuation.yield($0) })
        cache.setAfterCommit { key in
            // Another process writes a newer value, and this cache is told, before the memory write.
            try? await other.set(Data("theirs".utf8), forKey: key)
            _ = await invalidations.next(.key(key))
        }

        if operation == "set" {
            try await cache.set(Data("mine".utf8), forKey: "config")
        } else {
            try await cache.update(forKey: "config") { $0 = Data("mine".utf8) }
        }
        cache.setAfterCommit(nil)

        #expect(cache.memory.value(forKey: "config") == nil, "memory dropped the value the change overtook")
        #expect(try await cache.value(forKey: "config") == Data("theirs".utf8))
        #expect(try await cache.value(forKey: "config") == Data("theirs".utf8), "and the refill is the newer value")
        await cache.close()
        await PostgresTestServer.dispose(other)
        await PostgresTestServer.dispose(storage)
    }

    /// A read that fetched from PostgreSQL before another process's change was announced must not
    /// put its older value in memory after the announcement.
    @Test func aReadThatRacedAChangeDoesNotRefillMemoryWithTheOldValue() async throws {
        let storage = try await PostgresTestServer.storage()
        let other = try await PostgresTestServer.storage(table: storage.options.table)
        let invalidations = Invalidations()
        let cache = try await storage.sharedCache(onInvalidation: { invalidations.continuation.yield($0) })
        try await other.set(Data("old".utf8), forKey: "config")
        _ = await invalidations.next(.key("config"))
        let before = cache.generationForTesting

        try await other.set(Data("new".utf8), forKey: "config")
        _ = await invalidations.next(.key("config"))
        let filled = cache.fillForTesting(Data("old".utf8), forKey: "config", ifUnchangedSince: before)

        #expect(!filled)
        #expect(cache.memory.value(forKey: "config") == nil)
        #expect(try await cache.value(forKey: "config") == Data("new".utf8))
        await cache.close()
        await PostgresTestServer.dispose(other)
        await PostgresTestServer.dispose(storage)
    }
}
#endif
