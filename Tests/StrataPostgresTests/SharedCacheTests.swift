#if Postgres
import Foundation
import PostgresNIO
import Strata
import StrataPostgres
import StrataTestSupport
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

    /// Waits for `expected` at most `limit`; whether it came.
    private static func heard(
        _ expected: SharedCache.Invalidation,
        in invalidations: Invalidations,
        within limit: Duration = .seconds(15)
    ) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { await invalidations.next(expected) != nil }
            group.addTask {
                try? await Task.sleep(for: limit)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    /// Yields until `condition` holds, at most `limit`; whether it held.
    /// Reads `key` until memory keeps `value`; returns whether it did within about two seconds.
    ///
    /// One read is not always enough, by design: a read that a notice of the key overtakes leaves
    /// memory alone (a late notice of the write the test just made can be the one heard after the
    /// read began), and a heartbeat that comes back late has the cache bypass memory until the
    /// next one is on time. A later read fills it.
    private static func readUntilMemoryKeeps(
        _ value: Data,
        forKey key: String,
        in cache: SharedCache
    ) async throws -> Bool {
        for _ in 0..<100 {
            #expect(try await cache.value(forKey: key) == value)
            if cache.immediateValue(forKey: key) == .found(value) { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    private static func eventually(within limit: Duration, _ condition: () -> Bool) async -> Bool {
        let end = ContinuousClock.now + limit
        while ContinuousClock.now < end {
            if condition() { return true }
            await Task.yield()
        }
        return condition()
    }

    @Test(arguments: ["my app", "billing worker 2", "ready", "a k"])
    func aWriterWhoseApplicationNameHasSpacesIsHeard(applicationName: String) async throws {
        let reader = try await PostgresTestServer.storage()
        let invalidations = Invalidations()
        let cache = try await reader.sharedCache(onInvalidation: { invalidations.continuation.yield($0) })
        var configuration = try PostgresStorage.configuration(from: PostgresTestServer.url())
        configuration.options.additionalStartupParameters.append(("application_name", applicationName))
        let client = PostgresClient(configuration: configuration)

        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            // The client runs until the test is done with it, whatever the test throws.
            defer { group.cancelAll() }
            let writer = try PostgresStorage(client: client, options: .init(table: reader.options.table))
            try await writer.set(Data("v1".utf8), forKey: "config")
            let heardFirst = await Self.heard(.key("config"), in: invalidations)
            #expect(try await cache.value(forKey: "config") == Data("v1".utf8))
            #expect(try await Self.readUntilMemoryKeeps(Data("v1".utf8), forKey: "config", in: cache))

            try await writer.set(Data("v2".utf8), forKey: "config")
            let heardSecond = await Self.heard(.key("config"), in: invalidations)

            #expect(heardFirst && heardSecond, "a change from '\(applicationName)' must reach the cache")
            #expect(cache.memory.value(forKey: "config") == nil)
            #expect(try await cache.value(forKey: "config") == Data("v2".utf8))
        }
        await cache.close()
        await PostgresTestServer.dispose(reader)
    }

    /// The child's storage is over a client that never runs: the interval stops it before any
    /// connection.
    @Test func aHeartbeatIntervalThatIsNotPositiveStops() async {
        let stopped = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let client = PostgresClient(
                configuration: try PostgresStorage.configuration(from: "postgres://a@127.0.0.1:1/b")
            )
            let storage = try PostgresStorage(client: client, options: .init(table: "sessions"))
            _ = try await storage.sharedCache(heartbeatInterval: .milliseconds(-1))
        }

        expectStop(stopped?.standardErrorContent, saying: "SharedCache: the heartbeat interval must be positive, got ")
    }

    /// On a healthy connection the beats come back, and the cache keeps using memory: the
    /// heartbeat never empties it while notifications flow.
    @Test func heartbeatsComeBackAndKeepAHealthyCacheUsingMemory() async throws {
        let storage = try await PostgresTestServer.storage()
        let invalidations = Invalidations()
        // One second, so each beat may take the whole second the default interval gives it to
        // come back (the wait is the shorter of the interval and one second). With 500 ms, a full
        // run on a 2-core machine once had three beats come back late, and a late beat rightly
        // empties memory.
        let cache = try await storage.sharedCache(
            heartbeatInterval: .seconds(1),
            onInvalidation: { invalidations.continuation.yield($0) }
        )
        try await cache.set(Data("v1".utf8), forKey: "config")

        let beating = await Self.eventually(within: .seconds(30)) { cache.heartbeatsHeardForTesting >= 4 }
        invalidations.continuation.finish()
        var emptied = 0
        for await invalidation in invalidations.stream where invalidation == .all { emptied += 1 }

        #expect(beating, "heard \(cache.heartbeatsHeardForTesting) beats")
        #expect(emptied == 1, "only becoming ready empties memory, not a beat")
        #expect(cache.isUsingMemory)
        #expect(cache.immediateValue(forKey: "config") == .found(Data("v1".utf8)))
        await cache.close()
        await PostgresTestServer.dispose(storage)
    }

    /// A partition the test makes: the cache reaches PostgreSQL through a relay that stops
    /// forwarding without closing anything, so its listening connection stays open and silent.
    /// Staleness stays bounded by the heartbeat, and invalidation resumes after the fault.
    @Test func aSilentListeningConnectionBoundsStalenessAndInvalidationResumesAfterIt() async throws {
        let writer = try await PostgresTestServer.storage()
        var components = try #require(URLComponents(string: try PostgresTestServer.url()))
        let relay = try TCPRelay(toPort: UInt16(try #require(components.port)))
        defer { relay.stop() }
        components.port = Int(relay.port)
        var options = PostgresStorage.Options(table: writer.options.table)
        options.operationTimeout = .seconds(20)
        options.maximumConnectionCount = 4
        let reader = try await PostgresStorage(url: try #require(components.string), options: options)
        let interval = Duration.milliseconds(500)
        let invalidations = Invalidations()
        let cache = try await reader.sharedCache(
            heartbeatInterval: interval,
            onInvalidation: { invalidations.continuation.yield($0) }
        )
        try await writer.set(Data("v1".utf8), forKey: "config")
        #expect(await Self.heard(.key("config"), in: invalidations))
        #expect(try await cache.value(forKey: "config") == Data("v1".utf8))
        #expect(try await Self.readUntilMemoryKeeps(Data("v1".utf8), forKey: "config", in: cache))

        relay.freeze()
        try await writer.set(Data("v2".utf8), forKey: "config")
        let committed = ContinuousClock.now
        // Memory itself, not the next `.all` heard: on two cores shared with three busy loops, a
        // beat came back late just before the freeze, and its `.all` (memory rightly emptied,
        // then used again once the next beat was on time) was taken for the fault's.
        let bypassed = await Self.eventually(within: .seconds(15)) { !cache.isUsingMemory }
        let stale = ContinuousClock.now - committed

        #expect(bypassed, "a silent listening connection must be noticed")
        // The promise is the interval and one second; a second more for a machine running every
        // suite at once.
        #expect(stale < interval + .seconds(2), "v1 was served from memory for \(stale) after v2 committed")
        #expect(await Self.heard(.all, in: invalidations), "bypassing memory empties it")
        #expect(cache.immediateValue(forKey: "config") == .unavailable)
        #expect(!cache.isUsingMemory)

        relay.resume()
        // Listening again empties memory (an `.all`) and then uses it.
        #expect(await Self.eventually(within: .seconds(30)) { cache.isUsingMemory }, "the cache listens again")
        #expect(try await cache.value(forKey: "config") == Data("v2".utf8))
        try await writer.set(Data("v3".utf8), forKey: "config")
        // The frozen connection's notice of v2 may still come in first, after memory took v2 again:
        // what must hold is that v3's commit empties memory, whichever notice is heard first.
        #expect(
            await Self.eventually(within: .seconds(15)) { cache.memory.value(forKey: "config") == nil },
            "v3's commit invalidates memory"
        )
        #expect(try await cache.value(forKey: "config") == Data("v3".utf8))
        #expect(relay.connectionCount > options.maximumConnectionCount - 2, "the cache reconnected through the relay")
        await cache.close()
        await reader.close()
        await PostgresTestServer.dispose(writer)
    }

    /// A read of this process that fetched the old row before one of its own writes committed
    /// fills memory afterwards: before, own writes never moved the invalidation generation, so the
    /// old value came back and stayed.
    @Test(arguments: ["set", "update", "remove", "removeAll", "setValues"])
    func aReadThatRacedAnOwnWriteDoesNotRefillMemoryWithTheOldValue(write: String) async throws {
        let storage = try await PostgresTestServer.storage()
        let cache = try await storage.sharedCache()
        try await cache.set(Data("old".utf8), forKey: "k")
        let before = cache.generationForTesting  // the read takes it, then fetches "old"

        switch write {
        case "set": try await cache.set(Data("new".utf8), forKey: "k")
        case "update": try await cache.update(forKey: "k") { $0 = Data("new".utf8) }
        case "remove": try await cache.removeValue(forKey: "k")
        case "removeAll": try await cache.removeAll()
        default: try await cache.setValues([("k", Data("new".utf8))])
        }
        let refilled = cache.fillForTesting(Data("old".utf8), forKey: "k", ifUnchangedSince: before)

        #expect(!refilled)
        #expect(cache.memory.value(forKey: "k") != Data("old".utf8))
        let expected: Data? = write.hasPrefix("remove") ? nil : Data("new".utf8)
        #expect(try await cache.value(forKey: "k") == expected)
        await cache.close()
        await PostgresTestServer.dispose(storage)
    }

    /// Two writes of this process whose memory writes come in the opposite order of their
    /// commits leave memory without the older value.
    @Test func twoOwnSetsFillingOutOfOrderLeaveNoOlderValueInMemory() async throws {
        let storage = try await PostgresTestServer.storage()
        let cache = try await storage.sharedCache()
        let nested = LockedFlag()
        cache.setAfterCommit { key in
            // The first set has committed "first"; the second commits "second" and fills memory
            // before the first one's memory write.
            guard key == "k", nested.setOnce() else { return }
            try? await cache.set(Data("second".utf8), forKey: "k")
        }

        try await cache.set(Data("first".utf8), forKey: "k")
        cache.setAfterCommit(nil)

        #expect(cache.memory.value(forKey: "k") != Data("first".utf8))
        #expect(try await cache.value(forKey: "k") == Data("second".utf8))
        #expect(try await storage.value(forKey: "k") == Data("second".utf8))
        await cache.close()
        await PostgresTestServer.dispose(storage)
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

    @Test func aStorageWithOneConnectionStopsSayingWhyInsteadOfTimingOut() async {
        let stopped = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let client = PostgresClient(
                configuration: try PostgresStorage.configuration(from: "postgres://a@127.0.0.1:1/b")
            )
            var options = PostgresStorage.Options(table: "sessions")
            options.maximumConnectionCount = 1
            _ = try await PostgresStorage(client: client, options: options).sharedCache()
        }

        expectStop(
            stopped?.standardErrorContent,
            saying: "SharedCache: a SharedCache needs a storage with maximumConnectionCount of at least 2"
        )
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
/// A flag that one caller can set. Any task may use it.
final class LockedFlag: Sendable {
    private let flag = Atomic(false)

    /// Sets the flag; whether this call was the one that set it.
    func setOnce() -> Bool {
        !flag.exchange(true, ordering: .acquiringAndReleasing)
    }
}
#endif
