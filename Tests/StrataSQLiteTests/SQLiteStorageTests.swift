import Foundation
import GRDB
import Strata
import StrataSQLite
import StrataTestSupport
import StrataTesting
import Testing

/// SQLiteStorage keeps the storage model: values survive reopening, expire, respect limits by
/// least recent access, and come back in batches.
@Suite(.onTestThreads) struct SQLiteStorageTests {
    let folder: TemporaryFolder
    let clock = ManualClock()

    init() throws {
        folder = try TemporaryFolder()
    }

    func open(_ options: SQLiteStorage.Options = SQLiteStorage.Options()) throws -> SQLiteStorage {
        var options = options
        options.clock = clock
        return try SQLiteStorage(path: folder.path("values.sqlite"), options: options)
    }

    // MARK: Behaviour

    @Test func passesTheBehaviourSuite() async throws {
        let folder = folder
        let values = [Data("a".utf8), Data("bb".utf8), Data("ccc".utf8)]
        let counting = StorageBehaviourSuite<SQLiteStorage>.Counting(
            value: { Data(String($0).utf8) },
            count: { Int(String(decoding: $0, as: UTF8.self)) ?? 0 }
        )
        let suite = StorageBehaviourSuite(keys: ["kharkiv", "kyiv", "lviv", ""], values: values, counting: counting) {
            try SQLiteStorage(path: folder.path("\(UUID().uuidString).sqlite"))
        }

        try await suite.run()
    }

    @Test func passesTheBehaviourSuiteWithLimitsAndExpiry() async throws {
        let folder = folder
        let values = [Data("a".utf8), Data("bb".utf8), Data("ccc".utf8)]
        let counting = StorageBehaviourSuite<SQLiteStorage>.Counting(
            value: { Data(String($0).utf8) },
            count: { Int(String(decoding: $0, as: UTF8.self)) ?? 0 }
        )
        // An update keeps the lifetime of the value it replaces, so the counter of the concurrent
        // update check expires one time to live after its first increment: an hour, not a minute,
        // because its 200 committed transactions took more than a minute on a 2-core machine
        // running every suite at once (and the count restarted at 1 once the counter expired).
        let suite = StorageBehaviourSuite(keys: ["a", "b", "c"], values: values, counting: counting) {
            try SQLiteStorage(
                path: folder.path("\(UUID().uuidString).sqlite"),
                options: SQLiteStorage.Options(timeToLive: .seconds(3_600), maximumByteCount: 1_000, maximumCount: 10)
            )
        }

        try await suite.run()
    }

    @Test func shardedSQLiteStoragesPassTheBehaviourSuite() async throws {
        let folder = folder
        let values = [Data("a".utf8), Data("bb".utf8), Data("ccc".utf8)]
        let counting = StorageBehaviourSuite<ShardedStorage<SQLiteStorage>>.Counting(
            value: { Data(String($0).utf8) },
            count: { Int(String(decoding: $0, as: UTF8.self)) ?? 0 }
        )
        let suite = StorageBehaviourSuite(keys: ["kharkiv", "kyiv", "lviv", ""], values: values, counting: counting) {
            try sharded(
                across: (0..<3).map { _ in try SQLiteStorage(path: folder.path("\(UUID().uuidString).sqlite")) }
            )
        }

        try await suite.run()
    }

    // MARK: Persistence

    @Test func valuesSurviveReopening() throws {
        let storage = try open()
        try storage.set(Data("kharkiv".utf8), forKey: "city")
        try storage.close()

        let reopened = try open()

        #expect(try reopened.value(forKey: "city") == Data("kharkiv".utf8))
    }

    @Test func usesWriteAheadLogging() throws {
        let storage = try open()
        try storage.set(Data([1]), forKey: "k")

        let queue = try DatabaseQueue(path: folder.path("values.sqlite"))
        let mode = try queue.read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") }

        #expect(mode == "wal")
    }

    // MARK: Expiry

    @Test func defaultTimeToLiveExpiresValues() throws {
        let storage = try open(SQLiteStorage.Options(timeToLive: .seconds(60)))
        try storage.set(Data([1]), forKey: "a")

        clock.advance(by: .seconds(59))
        let before = try storage.value(forKey: "a")
        clock.advance(by: .seconds(1))

        #expect(before == Data([1]))
        #expect(try storage.value(forKey: "a") == nil)
        #expect(try storage.keys().isEmpty)
        #expect(try storage.containsValue(forKey: "a") == false)
    }

    @Test func perEntryTimeToLiveOverridesTheDefault() throws {
        let storage = try open(SQLiteStorage.Options(timeToLive: .seconds(60)))
        try storage.set(Data([1]), forKey: "short", timeToLive: .seconds(5))
        try storage.set(Data([2]), forKey: "default")

        clock.advance(by: .seconds(5))

        #expect(try storage.value(forKey: "short") == nil)
        #expect(try storage.value(forKey: "default") == Data([2]))
    }

    @Test func removeExpiredDeletesOnlyExpiredRows() throws {
        let storage = try open()
        try storage.set(Data([1]), forKey: "short", timeToLive: .seconds(5))
        try storage.set(Data([2]), forKey: "forever")
        clock.advance(by: .seconds(10))

        let removed = try storage.removeExpired()

        #expect(removed == 1)
        #expect(try storage.statistics().count == 1)
    }

    // MARK: Limits

    @Test func countLimitEvictsTheLeastRecentlyUsed() throws {
        var options = SQLiteStorage.Options(maximumCount: 3)
        options.recencyResolution = .zero
        let storage = try open(options)
        for key in ["a", "b", "c"] {
            try storage.set(Data(key.utf8), forKey: key)
            clock.advance(by: .seconds(1))
        }
        _ = try storage.value(forKey: "a")
        clock.advance(by: .seconds(1))

        try storage.set(Data("d".utf8), forKey: "d")

        #expect(Set(try storage.keys()) == ["a", "c", "d"])
        #expect(try storage.statistics().evictions == 1)
        #expect(try storage.statistics().countEvictions == 1)
        #expect(try storage.statistics().sizeEvictions == 0)
    }

    @Test func byteLimitEvictsUntilTheValuesFit() throws {
        let storage = try open(SQLiteStorage.Options(maximumByteCount: 100))
        for index in 0..<4 {
            try storage.set(Data(count: 29), forKey: "k\(index)")
            clock.advance(by: .seconds(1))
        }

        let statistics = try storage.statistics()

        #expect(statistics.totalCost <= 100)
        #expect(statistics.sizeEvictions == 1)
        #expect(statistics.countEvictions == 0)
        #expect(Set(try storage.keys()) == ["k1", "k2", "k3"])
    }

    @Test func aValueLargerThanTheByteLimitIsRefused() throws {
        let storage = try open(SQLiteStorage.Options(maximumByteCount: 10))
        try storage.set(Data([1]), forKey: "small")

        #expect {
            try storage.set(Data(count: 11), forKey: "large")
        } throws: { error in
            (error as? StorageError)?.code == .capacityExceeded
        }
        #expect(try storage.value(forKey: "small") == Data([1]))
    }

    @Test func limitsHoldAcrossInstancesSharingAFile() throws {
        let first = try open(SQLiteStorage.Options(maximumCount: 2))
        let second = try open(SQLiteStorage.Options(maximumCount: 2))

        try first.set(Data([1]), forKey: "a")
        clock.advance(by: .seconds(1))
        try second.set(Data([2]), forKey: "b")
        clock.advance(by: .seconds(1))
        try first.set(Data([3]), forKey: "c")

        #expect(Set(try second.keys()) == ["b", "c"])
    }

    /// The stop on a limit that cannot work; its words for every hostile value are
    /// StorageLimitsTests'.
    @Test func aLimitThatCannotWorkStops() async {
        let stopped = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = try SQLiteStorage(
                path: "/nonexistent/limits.sqlite",
                options: SQLiteStorage.Options(maximumByteCount: -1)
            )
        }

        expectStop(stopped?.standardErrorContent, saying: "SQLiteStorage: maximumByteCount must be positive, got -1")
    }

    // MARK: Batches

    @Test func setValuesAndValuesForKeysWorkInBatches() throws {
        let storage = try open()
        let values = Dictionary(uniqueKeysWithValues: (0..<1_000).map { ("key\($0)", Data("\($0)".utf8)) })

        try storage.setValues(values)
        let read = try storage.values(forKeys: ["key1", "key999", "missing"])

        #expect(read == [Data("1".utf8), Data("999".utf8), nil])
        #expect(try storage.statistics().count == 1_000)
        #expect(try storage.statistics().hits == 2)
        #expect(try storage.statistics().misses == 1)
    }

    @Test func removeValuesRemovesABatch() throws {
        let storage = try open()
        try storage.setValues(["a": Data([1]), "b": Data([2]), "c": Data([3])])

        try storage.removeValues(forKeys: ["a", "c", "absent"])

        #expect(try storage.keys() == ["b"])
    }

    // MARK: Statistics

    @Test func statisticsCountValuesBytesAndReads() throws {
        let storage = try open()
        try storage.set(Data(count: 10), forKey: "abc")
        _ = try storage.value(forKey: "abc")
        _ = try storage.value(forKey: "nope")

        let statistics = try storage.statistics()

        #expect(statistics.count == 1)
        #expect(statistics.totalCost == 13)
        #expect(statistics.hits == 1)
        #expect(statistics.misses == 1)
        #expect(statistics.writes == 1)
    }

    // MARK: Keys

    @Test func keysSwiftConsidersEqualShareOneValue() throws {
        let storage = try open()
        try storage.set(Data([1]), forKey: "caf\u{E9}")

        #expect(try storage.value(forKey: "cafe\u{301}") == Data([1]))
        #expect(try storage.keys().count == 1)
    }

    @Test func concurrentUpdatesFromTwoInstancesAreNotLost() async throws {
        let first = try open()
        let second = try open()

        await withTaskGroup(of: Void.self) { group in
            for index in 0..<100 {
                let storage = index.isMultiple(of: 2) ? first : second
                group.addTask {
                    _ = try? storage.update(forKey: "count") { value in
                        let count = value.flatMap { Int(String(decoding: $0, as: UTF8.self)) } ?? 0
                        value = Data(String(count + 1).utf8)
                    }
                }
            }
        }

        await #expect(try first.value(forKey: "count") == Data("100".utf8))
    }

    @Test func anUpdateKeepsTheEntrysOwnLifetime() async throws {
        var options = SQLiteStorage.Options()
        options.timeToLive = .seconds(60)
        let storage = try open(options)
        // The synchronous update, the set before it and the reads, off the async overloads.
        func synchronously() throws {
            try storage.set(Data([1]), forKey: "sync", timeToLive: .seconds(10))
            try storage.set(Data([1]), forKey: "async", timeToLive: .seconds(10))
            try storage.update(forKey: "sync") { $0 = Data([2]) }
            try storage.update(forKey: "new") { $0 = Data([3]) }
        }
        func read(_ key: String) throws -> Data? {
            try storage.value(forKey: key)
        }
        try synchronously()
        try await storage.update(forKey: "async") { $0 = Data([2]) }

        clock.advance(by: .seconds(9))
        #expect(try read("sync") == Data([2]))
        #expect(try read("async") == Data([2]))
        clock.advance(by: .seconds(1))
        #expect(try read("sync") == nil)
        #expect(try read("async") == nil)
        clock.advance(by: .seconds(49))
        #expect(try read("new") == Data([3]))
        clock.advance(by: .seconds(1))
        #expect(try read("new") == nil)
    }
}
