import Foundation
import Strata
import StrataTestSupport
import Testing

@Suite(.onTestThreads) struct MemoryStorageTests {
    // MARK: Reading and writing

    @Test func absentKeyReadsAsNil() {
        let cache = MemoryStorage<String, Int>()

        let value = cache.value(forKey: "missing")

        #expect(value == nil)
    }

    @Test func setValueReadsBack() {
        let cache = MemoryStorage<String, City>()

        cache.set(.kharkiv, forKey: "kharkiv")

        #expect(cache.value(forKey: "kharkiv") == .kharkiv)
    }

    @Test func setReplacesTheOlderValue() {
        let cache = MemoryStorage<String, Int>()
        cache.set(1, forKey: "a")

        cache.set(2, forKey: "a")

        #expect(cache.value(forKey: "a") == 2)
        #expect(cache.count == 1)
    }

    @Test func removeValueRemovesOnlyThatKey() {
        let cache = MemoryStorage<String, Int>()
        cache.set(1, forKey: "a")
        cache.set(2, forKey: "b")

        cache.removeValue(forKey: "a")
        cache.removeValue(forKey: "never-stored")

        #expect(cache.value(forKey: "a") == nil)
        #expect(cache.value(forKey: "b") == 2)
    }

    @Test func containsValueDoesNotCountAsAUse() throws {
        let cache = MemoryStorage<String, Int>(maximumCount: 2, evictionPolicy: .leastRecentlyUsed)
        cache.set(1, forKey: "a")
        cache.set(2, forKey: "b")

        let contains = cache.containsValue(forKey: "a")
        cache.set(3, forKey: "c")

        #expect(contains)
        #expect(!cache.containsValue(forKey: "a"))
        #expect(cache.statistics.hits == 0)
    }

    @Test(arguments: ["", "../", "../../etc/passwd", "\0", "a\0b", "🇺🇦", String(repeating: "k", count: 10 * 1024)])
    func hostileKeysWorkAsOrdinaryKeys(key: String) {
        let cache = MemoryStorage<String, Int>()
        cache.set(0, forKey: "ordinary")

        cache.set(1, forKey: key)

        #expect(cache.value(forKey: key) == 1)
        #expect(cache.value(forKey: "ordinary") == 0)
        #expect(Set(cache.keys()) == [key, "ordinary"])
        cache.removeValue(forKey: key)
        #expect(cache.value(forKey: key) == nil)
        #expect(cache.value(forKey: "ordinary") == 0)
    }

    // MARK: Limits

    @Test func countLimitEvictsTheLeastRecentlyUsed() throws {
        let cache = MemoryStorage<String, Int>(maximumCount: 2, evictionPolicy: .leastRecentlyUsed)
        cache.set(1, forKey: "a")
        cache.set(2, forKey: "b")

        cache.set(3, forKey: "c")

        #expect(cache.value(forKey: "a") == nil)
        #expect(cache.value(forKey: "b") == 2)
        #expect(cache.value(forKey: "c") == 3)
        #expect(cache.statistics.evictions == 1)
    }

    @Test func readMakesAnEntryTheMostRecentlyUsed() throws {
        let cache = MemoryStorage<String, Int>(maximumCount: 2, evictionPolicy: .leastRecentlyUsed)
        cache.set(1, forKey: "a")
        cache.set(2, forKey: "b")

        _ = cache.value(forKey: "a")
        cache.set(3, forKey: "c")

        #expect(cache.value(forKey: "a") == 1)
        #expect(cache.value(forKey: "b") == nil)
        #expect(cache.value(forKey: "c") == 3)
    }

    @Test func overwriteMakesAnEntryTheMostRecentlyUsed() throws {
        let cache = MemoryStorage<String, Int>(maximumCount: 2, evictionPolicy: .leastRecentlyUsed)
        cache.set(1, forKey: "a")
        cache.set(2, forKey: "b")

        cache.set(10, forKey: "a")
        cache.set(3, forKey: "c")

        #expect(cache.value(forKey: "a") == 10)
        #expect(cache.value(forKey: "b") == nil)
    }

    @Test func costLimitCountsDataByItsByteCount() throws {
        let cache = MemoryStorage<String, Data>(maximumCost: 100, evictionPolicy: .leastRecentlyUsed)
        cache.set(Data(count: 40), forKey: "a")
        cache.set(Data(count: 40), forKey: "b")

        cache.set(Data(count: 30), forKey: "c")

        #expect(cache.totalCost == 70)
        #expect(cache.value(forKey: "a") == nil)
        #expect(cache.value(forKey: "b")?.count == 40)
        #expect(cache.value(forKey: "c")?.count == 30)
    }

    @Test func costLimitCountsStringsByTheirUTF8Length() throws {
        let cache = MemoryStorage<String, String>(maximumCost: 10)

        cache.set("héllo", forKey: "a")

        #expect(cache.totalCost == 6)
    }

    @Test func customCostReplacesTheDefault() throws {
        let cache = MemoryStorage<String, [Int]>(
            maximumCost: 5,
            evictionPolicy: .leastRecentlyUsed,
            cost: { $0.count }
        )
        cache.set([1, 2, 3], forKey: "a")

        cache.set([4, 5, 6], forKey: "b")

        #expect(cache.value(forKey: "a") == nil)
        #expect(cache.value(forKey: "b") == [4, 5, 6])
        #expect(cache.totalCost == 3)
    }

    @Test func valueCostlierThanTheWholeLimitIsNotKept() throws {
        let cache = MemoryStorage<String, Data>(maximumCost: 100, evictionPolicy: .leastRecentlyUsed)
        cache.set(Data(count: 10), forKey: "small")
        cache.set(Data(count: 20), forKey: "big")

        cache.set(Data(count: 101), forKey: "big")

        #expect(cache.value(forKey: "big") == nil)
        #expect(cache.value(forKey: "small") == Data(count: 10))
        #expect(cache.totalCost == 10)
        #expect(cache.statistics.rejections == 1)
        #expect(cache.statistics.evictions == 0)
    }

    @Test func valueCostingExactlyTheLimitIsKept() throws {
        let cache = MemoryStorage<String, Data>(maximumCost: 100, evictionPolicy: .leastRecentlyUsed)
        cache.set(Data(count: 1), forKey: "small")

        cache.set(Data(count: 100), forKey: "exact")

        #expect(cache.value(forKey: "exact")?.count == 100)
        #expect(cache.value(forKey: "small") == nil)
        #expect(cache.statistics.rejections == 0)
    }

    /// The words MemoryStorage stops with (the stop itself: StorageLimitsTests).
    @Test(arguments: [0, -1, Int.min])
    func nonPositiveLimitsAreNamedWithTheirValue(limit: Int) {
        func problem(count: Int? = nil, cost: Int? = nil) -> String? {
            ConfigurationRule.limitsProblem(
                maximumCount: count,
                maximumCost: cost,
                costName: "maximumCost",
                timeToLive: nil,
                expiry: Expiry<String, Int>?.none
            )
        }

        #expect(problem(count: limit) == "maximumCount must be positive, got \(limit)")
        #expect(problem(cost: limit) == "maximumCost must be positive, got \(limit)")
    }

    // MARK: Every eviction policy

    @Test(arguments: EvictionPolicy.all)
    func everyPolicyKeepsTheCountLimit(policy: EvictionPolicy) throws {
        let cache = MemoryStorage<Int, Int>(maximumCount: 10, evictionPolicy: policy)

        for key in 0..<1_000 {
            cache.set(key, forKey: key)
            _ = cache.value(forKey: key % 7)
        }

        #expect(cache.count <= 10)
        #expect(cache.keys().count == cache.count)
        #expect(cache.statistics.evictions == UInt64(1_000 - cache.count))
    }

    @Test(arguments: EvictionPolicy.all)
    func everyPolicyKeepsTheCostLimit(policy: EvictionPolicy) throws {
        let cache = MemoryStorage<Int, Data>(maximumCost: 1_000, evictionPolicy: policy)

        for key in 0..<500 {
            cache.set(Data(count: key % 97), forKey: key)
        }

        let cost = cache.keys().reduce(0) { $0 + (cache.value(forKey: $1)?.count ?? 0) }
        #expect(cache.totalCost <= 1_000)
        #expect(cost == cache.totalCost)
    }

    @Test(arguments: EvictionPolicy.all)
    func everyPolicyRejectsAValueCostlierThanTheLimitWithoutEvicting(policy: EvictionPolicy) throws {
        let cache = MemoryStorage<String, Data>(maximumCost: 100, evictionPolicy: policy)
        cache.set(Data(count: 50), forKey: "kept")
        cache.set(Data(count: 10), forKey: "big")

        cache.set(Data(count: 101), forKey: "big")

        #expect(cache.value(forKey: "big") == nil)
        #expect(cache.value(forKey: "kept")?.count == 50)
        #expect(cache.statistics.rejections == 1)
        #expect(cache.statistics.evictions == 0)
    }

    @Test(arguments: EvictionPolicy.all)
    func everyPolicyTrimsToCountAndCost(policy: EvictionPolicy) throws {
        let cache = MemoryStorage<Int, Data>(evictionPolicy: policy)
        for key in 0..<100 {
            cache.set(Data(count: 10), forKey: key)
        }

        cache.trim(toCount: 50)
        let countAfterCountTrim = cache.count
        cache.trim(toCost: 205)

        #expect(countAfterCountTrim == 50)
        #expect(cache.count == 20)
        #expect(cache.totalCost == 200)
    }

    @Test(arguments: EvictionPolicy.all)
    func everyPolicyKeepsItsLimitsAfterRemoveAll(policy: EvictionPolicy) throws {
        let cache = MemoryStorage<Int, Int>(maximumCount: 8, evictionPolicy: policy)
        for key in 0..<100 {
            cache.set(key, forKey: key)
        }

        cache.removeAll()
        for key in 100..<200 {
            cache.set(key, forKey: key)
            cache.removeValue(forKey: key - 3)
        }

        #expect(cache.count <= 8)
        #expect(cache.keys().count == cache.count)
    }

    // MARK: Time to live

    @Test func valueExpiresAfterTheDefaultTimeToLive() throws {
        let clock = ManualClock()
        let cache = MemoryStorage<String, Int>(timeToLive: .seconds(60), clock: clock)
        cache.set(1, forKey: "a")

        clock.advance(by: .seconds(59))
        let beforeExpiry = cache.value(forKey: "a")
        clock.advance(by: .seconds(1))
        let atExpiry = cache.value(forKey: "a")

        #expect(beforeExpiry == 1)
        #expect(atExpiry == nil)
    }

    @Test func perEntryTimeToLiveOverridesTheDefault() throws {
        let clock = ManualClock()
        let cache = MemoryStorage<String, Int>(timeToLive: .seconds(60), clock: clock)
        cache.set(1, forKey: "short", timeToLive: .seconds(10))
        cache.set(2, forKey: "long", timeToLive: .seconds(120))
        cache.set(3, forKey: "default")

        clock.advance(by: .seconds(90))

        #expect(cache.value(forKey: "short") == nil)
        #expect(cache.value(forKey: "default") == nil)
        #expect(cache.value(forKey: "long") == 2)
    }

    @Test func perEntryTimeToLiveWorksWithoutADefault() throws {
        let clock = ManualClock()
        let cache = MemoryStorage<String, Int>(clock: clock)
        cache.set(1, forKey: "forever")
        cache.set(2, forKey: "brief", timeToLive: .milliseconds(1))

        clock.advance(by: .seconds(365 * 24 * 60 * 60))

        #expect(cache.value(forKey: "forever") == 1)
        #expect(cache.value(forKey: "brief") == nil)
    }

    @Test func expiredReadCountsAMissAndAnExpiration() throws {
        let clock = ManualClock()
        let cache = MemoryStorage<String, Int>(timeToLive: .seconds(1), clock: clock)
        cache.set(1, forKey: "a")

        clock.advance(by: .seconds(2))
        let value = cache.value(forKey: "a")

        #expect(value == nil)
        let statistics = cache.statistics
        #expect(statistics.misses == 1)
        #expect(statistics.hits == 0)
        #expect(statistics.expirations == 1)
        #expect(statistics.count == 0)
    }

    @Test func expiredValuesAreNotListedOrContained() throws {
        let clock = ManualClock()
        let cache = MemoryStorage<String, Int>(timeToLive: .seconds(10), clock: clock)
        cache.set(1, forKey: "old")
        clock.advance(by: .seconds(5))
        cache.set(2, forKey: "new")

        clock.advance(by: .seconds(5))

        #expect(cache.keys() == ["new"])
        #expect(!cache.containsValue(forKey: "old"))
        #expect(cache.containsValue(forKey: "new"))
        #expect(cache.count == 2)
    }

    @Test func removeExpiredRemovesOnlyExpiredValues() throws {
        let clock = ManualClock()
        let cache = MemoryStorage<String, Int>(timeToLive: .seconds(10), clock: clock)
        cache.set(1, forKey: "a")
        cache.set(2, forKey: "b")
        cache.set(3, forKey: "forever", timeToLive: .seconds(1_000))
        clock.advance(by: .seconds(10))

        let removed = cache.removeExpired()

        #expect(removed == 2)
        #expect(cache.count == 1)
        #expect(cache.value(forKey: "forever") == 3)
        #expect(cache.statistics.expirations == 2)
    }

    @Test func updateOfAnExpiredValueSeesNil() throws {
        let clock = ManualClock()
        let cache = MemoryStorage<String, Int>(timeToLive: .seconds(10), clock: clock)
        cache.set(5, forKey: "a")
        clock.advance(by: .seconds(10))

        let seen = try cache.update(forKey: "a") { value in
            defer { value = 1 }
            return value
        }

        #expect(seen == nil)
        #expect(cache.value(forKey: "a") == 1)
    }

    // MARK: Trimming and clearing

    @Test func trimToCostEvictsLeastRecentlyUsedFirst() throws {
        let cache = MemoryStorage<String, Data>(evictionPolicy: .leastRecentlyUsed)
        cache.set(Data(count: 10), forKey: "a")
        cache.set(Data(count: 10), forKey: "b")
        cache.set(Data(count: 10), forKey: "c")
        _ = cache.value(forKey: "a")

        cache.trim(toCost: 15)

        #expect(cache.keys() == ["a"])
        #expect(cache.totalCost == 10)
        #expect(cache.statistics.evictions == 2)
    }

    @Test func trimToCountEvictsLeastRecentlyUsedFirst() throws {
        let cache = MemoryStorage<String, Int>(evictionPolicy: .leastRecentlyUsed)
        for (index, key) in ["a", "b", "c", "d"].enumerated() {
            cache.set(index, forKey: key)
        }
        _ = cache.value(forKey: "a")

        cache.trim(toCount: 2)

        #expect(Set(cache.keys()) == ["a", "d"])
    }

    @Test func trimToZeroOrLessEmptiesTheStorage() {
        let cache = MemoryStorage<String, Data>()
        cache.set(Data(count: 10), forKey: "a")
        cache.set(Data(count: 10), forKey: "b")

        cache.trim(toCount: -1)

        #expect(cache.count == 0)
        #expect(cache.totalCost == 0)
    }

    @Test func removeAllEmptiesTheStorageAndKeepsStatistics() {
        let cache = MemoryStorage<String, Data>()
        cache.set(Data(count: 10), forKey: "a")
        cache.set(Data(count: 10), forKey: "b")
        _ = cache.value(forKey: "a")

        cache.removeAll()

        #expect(cache.count == 0)
        #expect(cache.totalCost == 0)
        #expect(cache.keys().isEmpty)
        #expect(cache.value(forKey: "a") == nil)
        #expect(cache.statistics.hits == 1)
        #expect(cache.statistics.writes == 2)
    }

    @Test func storageWorksAfterRemoveAll() throws {
        let cache = MemoryStorage<String, Int>(maximumCount: 2, evictionPolicy: .leastRecentlyUsed)
        cache.set(1, forKey: "a")
        cache.set(2, forKey: "b")
        cache.removeAll()

        cache.set(3, forKey: "c")
        cache.set(4, forKey: "d")
        _ = cache.value(forKey: "c")
        cache.set(5, forKey: "e")

        #expect(Set(cache.keys()) == ["c", "e"])
    }

    @Test func keysListsEveryLiveKey() {
        let cache = MemoryStorage<Int, String>()
        for key in 0..<100 {
            cache.set("\(key)", forKey: key)
        }

        cache.removeValue(forKey: 50)

        #expect(cache.keys().sorted() == Array(0..<50) + Array(51..<100))
    }

    // MARK: Statistics

    @Test func statisticsCountHitsMissesAndEvictions() throws {
        let cache = MemoryStorage<String, Int>(maximumCount: 1, evictionPolicy: .leastRecentlyUsed)
        cache.set(1, forKey: "a")
        _ = cache.value(forKey: "a")
        _ = cache.value(forKey: "a")
        _ = cache.value(forKey: "a")

        cache.set(2, forKey: "b")
        _ = cache.value(forKey: "a")

        let statistics = cache.statistics
        #expect(statistics.hits == 3)
        #expect(statistics.misses == 1)
        #expect(statistics.evictions == 1)
        #expect(statistics.writes == 2)
        #expect(statistics.hitRatio == 0.75)
        #expect(statistics.count == 1)
        #expect(statistics.totalCost == 1)
    }

    @Test func hitRatioIsZeroBeforeTheFirstRead() {
        let cache = MemoryStorage<String, Int>()

        let statistics = cache.statistics

        #expect(statistics.hitRatio == 0)
        #expect(statistics.description.contains("hits 0"))
    }

    // MARK: Update

    @Test func updateStartsFromNilAndStoresTheResult() throws {
        let cache = MemoryStorage<String, [Int]>()

        let seen = try cache.update(forKey: "list") { value in
            defer { value = [1] }
            return value
        }
        try cache.update(forKey: "list") { $0?.append(2) }

        #expect(seen == nil)
        #expect(cache.value(forKey: "list") == [1, 2])
    }

    @Test func updateToNilRemovesTheValue() throws {
        let cache = MemoryStorage<String, Int>()
        cache.set(1, forKey: "a")

        try cache.update(forKey: "a") { $0 = nil }

        #expect(cache.value(forKey: "a") == nil)
        #expect(cache.count == 0)
    }

    @Test func throwingUpdateAbortsAndLeavesTheValueUntouched() throws {
        struct Refusal: Error {}
        let cache = MemoryStorage<String, Int>()
        cache.set(1, forKey: "a")

        let error = #expect(throws: StorageError.self) {
            try cache.update(forKey: "a") { value in
                value = 99
                throw Refusal()
            }
        }

        #expect(error?.code == .updateAborted)
        #expect(error?.key == "a")
        #expect(error?.underlying is Refusal)
        #expect(cache.value(forKey: "a") == 1)
    }

    @Test func concurrentUpdatesAreNeverLost() async throws {
        let cache = MemoryStorage<String, Int>()

        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<1_000 {
                group.addTask {
                    try cache.update(forKey: "counter") { $0 = ($0 ?? 0) + 1 }
                }
            }
            try await group.waitForAll()
        }

        #expect(cache.value(forKey: "counter") == 1_000)
    }

    @Test func updateThroughTheProtocolIsAtomicToo() async throws {
        let cache = MemoryStorage<String, Int>()

        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<1_000 {
                group.addTask {
                    try await Self.increment(cache, forKey: "counter")
                }
            }
            try await group.waitForAll()
        }

        #expect(cache.value(forKey: "counter") == 1_000)
    }

    private static func increment(_ storage: some UpdatableStorage<String, Int>, forKey key: String) async throws {
        try await storage.update(forKey: key, default: 0) { $0 += 1 }
    }

    @Test func updateRespectsTheCostLimit() throws {
        let cache = MemoryStorage<String, Data>(maximumCost: 10, evictionPolicy: .leastRecentlyUsed)
        cache.set(Data(count: 5), forKey: "other")

        try cache.update(forKey: "grow") { $0 = Data(count: 8) }

        #expect(cache.value(forKey: "other") == nil)
        #expect(cache.value(forKey: "grow")?.count == 8)
        #expect(cache.totalCost == 8)
    }

    /// Under the default policy the new value must earn its room: with a window of 1% of 10 bytes
    /// it is judged at once against the entry it would displace, and a tie keeps that entry.
    /// Either way the limit holds and what is kept is whole.
    @Test func updateRespectsTheCostLimitUnderTheDefaultPolicy() throws {
        let cache = MemoryStorage<String, Data>(maximumCost: 10)
        cache.set(Data(count: 5), forKey: "other")

        try cache.update(forKey: "grow") { $0 = Data(count: 8) }

        #expect(cache.totalCost <= 10)
        #expect(cache.count == 1)
        let kept = cache.value(forKey: "grow") ?? cache.value(forKey: "other")
        #expect(kept?.count == cache.totalCost)
    }
}
