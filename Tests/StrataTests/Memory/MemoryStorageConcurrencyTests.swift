import Foundation
import Strata
import StrataTestSupport
import Testing
import _StrataInternals

/// How ``MemoryStorage``'s shards and its one eviction policy behave together: reads reach the
/// policy before it chooses a victim, and many threads at once lose nothing.
@Suite struct MemoryStorageConcurrencyTests {
    @Test func readsOfEveryShardReachThePolicyBeforeTheNextEviction() throws {
        // 100 keys spread over every shard; each of the first half read once, fewer reads per
        // shard than a shard buffers before it offers to drain.
        let cache = MemoryStorage<Int, Int>(maximumCount: 100, evictionPolicy: .leastRecentlyUsed)
        for key in 0..<100 {
            cache.set(key, forKey: key)
        }
        for key in 0..<50 {
            #expect(cache.value(forKey: key) == key)
        }

        cache.set(100, forKey: 100)

        // Least recently used is now key 50, the oldest write nobody read since.
        #expect(cache.containsValue(forKey: 50) == false)
        #expect((0..<50).allSatisfy { cache.containsValue(forKey: $0) })
        #expect((51...100).allSatisfy { cache.containsValue(forKey: $0) })
        #expect(cache.count == 100)
    }

    @Test func aReplacementOfTheSameCostCountsAsAWriteAndAUse() throws {
        let cache = MemoryStorage<Int, Int>(maximumCount: 3, evictionPolicy: .leastRecentlyUsed)
        cache.set(1, forKey: 1)
        cache.set(2, forKey: 2)
        cache.set(3, forKey: 3)

        cache.set(10, forKey: 1)
        cache.set(4, forKey: 4)

        #expect(cache.value(forKey: 1) == 10)
        #expect(cache.containsValue(forKey: 2) == false)
        #expect(cache.statistics.writes == 5)
        #expect(cache.statistics.countEvictions == 1)
    }

    @Test func aReplacementOfAnotherCostMovesTheTotal() throws {
        let cache = MemoryStorage<String, Data>(maximumCost: 10)
        cache.set(Data(count: 4), forKey: "a")
        cache.set(Data(count: 4), forKey: "b")

        cache.set(Data(count: 6), forKey: "a")

        #expect(cache.totalCost == 10)
        cache.set(Data(count: 5), forKey: "b")
        #expect(cache.totalCost <= 10)
        #expect(cache.statistics.sizeEvictions == 1)
    }

    @Test func threadsReadingAndWritingAtOnceLoseNothingAndCountEveryRead() async throws {
        let cache = MemoryStorage<Int, Int>()
        let threads = 4
        let rounds = 20_000
        // Each thread writes its own keys (new ones and replacements), and reads everyone's.
        let reads = try await withThrowingTaskGroup(of: Int.self) { group in
            for thread in 0..<threads {
                group.addTask {
                    await TestThreads.run {
                        var reads = 0
                        for round in 0..<rounds {
                            let key = thread * 1_000 + round % 1_000
                            cache.set(round, forKey: key)
                            _ = cache.value(forKey: (key + 7 * round) % (threads * 1_000))
                            reads += 1
                        }
                        return reads
                    }
                }
            }
            return try await group.reduce(0, +)
        }

        #expect(cache.count == threads * 1_000)
        for thread in 0..<threads {
            for offset in 0..<1_000 {
                // The last round that wrote this key.
                let last = (rounds - 1) - ((rounds - 1 - offset) % 1_000)
                #expect(cache.value(forKey: thread * 1_000 + offset) == last)
            }
        }
        let statistics = cache.statistics
        #expect(statistics.hits + statistics.misses == UInt64(reads + threads * 1_000))
        #expect(statistics.writes == UInt64(threads * rounds))
    }

    /// Reads take no lock: a writer waits for the reads in its shard instead. Values with reference
    /// counts, replaced and removed while the shards' dictionaries grow and shrink, must always read
    /// whole and as written, and every read must be counted once.
    @Test func readsWithoutALockNeverSeeAnEntryChangingUnderThem() async throws {
        let cache = MemoryStorage<Int, [Int]>()
        let rounds = 40_000
        let (reads, wrong) = try await withThrowingTaskGroup(of: (reads: Int, wrong: Int).self) { group in
            for writer in 0..<2 {
                group.addTask {
                    await TestThreads.run {
                        var generator = SeededRandomNumberGenerator(seed: UInt64(writer))
                        for round in 0..<rounds {
                            // Keys come and go in waves, so the dictionaries rehash as they grow and
                            // shrink; half the time among a few, so reads and writes meet on entries.
                            let range = round % 2 == 0 ? 16 : 500 + round % 4_000
                            let key = Int.random(in: 0..<range, using: &generator)
                            if round % 3 == 2 {
                                cache.removeValue(forKey: key)
                            } else {
                                cache.set([key, round, key], forKey: key)
                            }
                        }
                        return (0, 0)
                    }
                }
            }
            for reader in 0..<2 {
                group.addTask {
                    await TestThreads.run {
                        var generator = SeededRandomNumberGenerator(seed: UInt64(100 + reader))
                        var wrong = 0
                        for _ in 0..<(rounds * 2) {
                            let key = Int.random(in: 0..<(reader == 0 ? 16 : 4_500), using: &generator)
                            if let value = cache.value(forKey: key),
                                value.count != 3 || value[0] != key || value[2] != key
                            {
                                wrong += 1
                            }
                        }
                        return (rounds * 2, wrong)
                    }
                }
            }
            return try await group.reduce((0, 0)) { ($0.0 + $1.reads, $0.1 + $1.wrong) }
        }

        #expect(wrong == 0)
        let statistics = cache.statistics
        #expect(statistics.hits + statistics.misses == UInt64(reads))
    }

    @Test func boundedStorageUnderManyThreadsKeepsItsLimitsAndItsBooks() async throws {
        let cache = MemoryStorage<Int, Data>(maximumCount: 500, maximumCost: 20_000)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for thread in 0..<4 {
                group.addTask {
                    await TestThreads.run {
                        var generator = SeededRandomNumberGenerator(seed: UInt64(thread))
                        for _ in 0..<30_000 {
                            let key = Int.random(in: 0..<2_000, using: &generator)
                            if Int.random(in: 0..<10, using: &generator) < 8 {
                                _ = cache.value(forKey: key)
                            } else {
                                cache.set(Data(count: Int.random(in: 1...60, using: &generator)), forKey: key)
                            }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }

        #expect(cache.count <= 500)
        #expect(cache.totalCost <= 20_000)
        let keys = cache.keys()
        #expect(keys.count == cache.count)
        #expect(keys.reduce(0) { $0 + (cache.value(forKey: $1)?.count ?? 0) } == cache.totalCost)
        #expect(cache.statistics.evictions > 0)
    }
}
