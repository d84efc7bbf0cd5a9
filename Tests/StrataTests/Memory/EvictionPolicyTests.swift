import Foundation
import Strata
import StrataTestSupport
import Testing
import _StrataInternals

@Suite(.onTestThreads) struct EvictionPolicyTests {
    /// Every policy, each with the name a failure prints.
    private static let policies: [EvictionPolicy] = [.leastRecentlyUsed, .wTinyLFU, .s3FIFO, .adaptive]

    /// Reads each key and, on a miss, stores it (the cache-aside use); returns the hits.
    @discardableResult
    private static func replay(_ keys: some Sequence<Int>, through cache: MemoryStorage<Int, Int>) -> Int {
        var hits = 0
        for key in keys {
            if cache.value(forKey: key) != nil {
                hits += 1
            } else {
                cache.set(key, forKey: key)
            }
        }
        return hits
    }

    /// The hits of `requests` replayed through an LRU cache and an adaptive one of `maximumCount`.
    private static func hitsUnderLRUAndAdaptive(_ requests: [Int], maximumCount: Int) -> (lru: Int, adaptive: Int) {
        let lru = MemoryStorage<Int, Int>(maximumCount: maximumCount, evictionPolicy: .leastRecentlyUsed)
        let adaptive = MemoryStorage<Int, Int>(maximumCount: maximumCount, evictionPolicy: .adaptive)
        return (replay(requests, through: lru), replay(requests, through: adaptive))
    }

    /// 20 hot keys read 50 times each, then a scan of 1,000 keys never read again.
    private static func warmThenScan(_ cache: MemoryStorage<Int, Int>) {
        for _ in 0..<50 {
            replay(0..<20, through: cache)
        }
        replay(1_000..<2_000, through: cache)
    }

    // MARK: Scans

    @Test(arguments: [EvictionPolicy.wTinyLFU, .s3FIFO, .adaptive])
    func aScanDoesNotFlushTheHotKeys(policy: EvictionPolicy) throws {
        let cache = MemoryStorage<Int, Int>(maximumCount: 100, evictionPolicy: policy)

        Self.warmThenScan(cache)

        #expect(Self.replay(0..<20, through: cache) >= 18)
    }

    @Test(arguments: [EvictionPolicy.wTinyLFU, .s3FIFO, .adaptive])
    func aScanDoesNotFlushTheHotKeysUnderACostLimitAlone(policy: EvictionPolicy) throws {
        let cache = MemoryStorage<Int, Int>(maximumCost: 100, evictionPolicy: policy)

        Self.warmThenScan(cache)

        #expect(Self.replay(0..<20, through: cache) >= 18)
    }

    @Test func aScanFlushesTheHotKeysUnderLRU() throws {
        let cache = MemoryStorage<Int, Int>(maximumCount: 100, evictionPolicy: .leastRecentlyUsed)

        Self.warmThenScan(cache)

        #expect(Self.replay(0..<20, through: cache) == 0)
    }

    // MARK: Loops

    @Test(arguments: [EvictionPolicy.wTinyLFU, .adaptive])
    func aLoopOneKeyLargerThanTheCacheKeepsHitting(policy: EvictionPolicy) throws {
        let cache = MemoryStorage<Int, Int>(maximumCount: 100, evictionPolicy: policy)
        for _ in 0..<30 {
            Self.replay(0..<101, through: cache)
        }

        var hits = 0
        for _ in 0..<10 {
            hits += Self.replay(0..<101, through: cache)
        }

        #expect(hits >= 800, "\(hits) hits out of 1,010 requests")
    }

    /// A cost limit alone, with every cost 1, limits as a count limit does, and should evict as
    /// well. The policy sizes its frequency sketch as entries arrive and must keep the history it
    /// has while it grows: it once started each larger sketch empty, and this loop then hit 4,442
    /// times by cost (adaptive) against 4,950 by count.
    @Test(arguments: [EvictionPolicy.wTinyLFU, .adaptive])
    func aCostLimitAloneEvictsAsWellAsACountLimit(policy: EvictionPolicy) throws {
        let byCount = MemoryStorage<Int, Int>(maximumCount: 1_000, evictionPolicy: policy)
        let byCost = MemoryStorage<Int, Int>(maximumCost: 1_000, evictionPolicy: policy, cost: { _ in 1 })
        let loop = (0..<6).flatMap { _ in 0..<1_001 }

        let countHits = Self.replay(loop, through: byCount)
        let costHits = Self.replay(loop, through: byCost)

        #expect(costHits >= countHits - loop.count / 100, "\(costHits) hits by cost, \(countHits) by count")
    }

    @Test func aLoopOneKeyLargerThanTheCacheNeverHitsUnderLRU() throws {
        let cache = MemoryStorage<Int, Int>(maximumCount: 100, evictionPolicy: .leastRecentlyUsed)

        var hits = 0
        for _ in 0..<40 {
            hits += Self.replay(0..<101, through: cache)
        }

        #expect(hits == 0)
    }

    // MARK: A new popular set

    /// A small cache whose 40 popular keys have each been requested 30 times (every estimate
    /// saturated); then 30 of them stay popular and 20 new keys join them, 50 keys for 50 entries.
    /// The default policy's history is long (its sketch halves every 50,000 requests here), and a
    /// new key that reaches an old one's estimate only ties it, which keeps the old key. Without
    /// halving when frequent candidates keep being refused and come back, the 10 keys no longer
    /// requested held their places: 3,241 to 3,307 hits in 4,000 requests over three seeds,
    /// against 3,797 to 3,812 with it.
    @Test func newPopularKeysDisplaceOldOnesWhoseEstimatesAreSaturated() throws {
        let hits = try Self.hitsAfterTheOldKeysFade(oldRounds: 30, seed: 3)

        #expect(hits >= 3_600, "\(hits) hits out of 4,000 requests")
    }

    /// Keys popular long ago keep estimates that a key popular now reaches only slowly: here 40
    /// keys are requested 10 times each, then 30 of them stay popular beside 20 new ones. The
    /// default's long history (halved every 50,000 requests here) still ranks the 10 keys no longer
    /// requested above the newcomers, and their estimates stay below the ceiling, so no rule that
    /// halves the history applies. A victim that refuses a frequent candidate now takes its turn at
    /// the back of probation, and the short history says the newcomers are popular now: 3,899 to
    /// 3,904 hits in 4,000 requests (3,886 to 3,894 with seeds 1-3), against 3,865 (3,861 to 3,863)
    /// without the two rules.
    @Test func newPopularKeysDisplaceOldOnesWhoseEstimatesAreHigh() throws {
        let hits = try Self.hitsAfterTheOldKeysFade(oldRounds: 10, seed: 5)

        #expect(hits >= 3_885, "\(hits) hits out of 4,000 requests")
    }

    /// Requests keys 0..<40 `oldRounds` times each, in shuffled rounds, through the default policy
    /// at 50 entries; then 4,000 requests spread evenly over 30 of those keys and 20 new ones.
    /// Returns the hits among those 4,000.
    private static func hitsAfterTheOldKeysFade(oldRounds: Int, seed: UInt64) throws -> Int {
        let cache = MemoryStorage<Int, Int>(maximumCount: 50, evictionPolicy: .adaptive)
        var random = SeededRandomNumberGenerator(seed: seed)
        for _ in 0..<oldRounds {
            replay((0..<40).shuffled(using: &random), through: cache)
        }

        let requests = (0..<4_000).map { _ in
            let pick = Int.random(in: 0..<50, using: &random)
            return pick < 30 ? pick : 100 + pick
        }
        return replay(requests, through: cache)
    }

    /// A 1,000-entry cache whose 800 popular keys take 80% of 40,000 requests (the rest spread over
    /// 8,400 keys requested about once each); then 800 new keys take their place for 20,000
    /// requests. The old keys' estimates are saturated, and the default's long history would keep
    /// them for the rest of the trace: the drop in the hit ratio, with the new keys refused and
    /// requested again, must halve it. 11,986 to 12,081 hits over four runs, against 9,451 to
    /// 9,625 with shift detection off.
    @Test func aPopularSetReplacedAtOnceIsAdopted() throws {
        let cache = MemoryStorage<Int, Int>(maximumCount: 1_000, evictionPolicy: .adaptive)
        var random = SeededRandomNumberGenerator(seed: 9)
        func requests(popular base: Int, count: Int) -> [Int] {
            (0..<count).map { _ in
                Int.random(in: 0..<10, using: &random) < 8
                    ? base + Int.random(in: 0..<800, using: &random)
                    : 1_000_000 + Int.random(in: 0..<8_400, using: &random)
            }
        }
        Self.replay(requests(popular: 0, count: 40_000), through: cache)

        let hits = Self.replay(requests(popular: 100_000, count: 20_000), through: cache)

        #expect(hits >= 11_500, "\(hits) hits out of 20,000 requests")
    }

    // MARK: Window sizing

    /// Requests where recency pays: 15% are keys never seen before, and the rest repeat the key
    /// requested a number of requests ago drawn from an exponential distribution of mean 300,
    /// three times the cache. An LRU cache keeps what this traffic wants, and the default's
    /// window must grow towards it: 39,574 hits for LRU; for the default 38,732 to 38,820 over six
    /// runs (98% of LRU), against 37,811 to 37,990 (96%) when the window grew only for twice the
    /// hits of a slot of probation.
    @Test func theWindowGrowsWhereRecencyPays() throws {
        var random = SeededRandomNumberGenerator(seed: 7)
        var recent: [Int] = []
        var nextKey = 0
        var requests: [Int] = []
        for _ in 0..<60_000 {
            let key: Int
            if recent.isEmpty || Double.random(in: 0..<1, using: &random) < 0.15 {
                key = nextKey
                nextKey += 1
            } else {
                let distance = Int(-300 * log(1 - Double.random(in: 0..<1, using: &random)))
                key = recent[recent.count - 1 - min(distance, recent.count - 1)]
            }
            requests.append(key)
            recent.append(key)
            if recent.count > 5_000 { recent.removeFirst(2_000) }
        }
        let lru = MemoryStorage<Int, Int>(maximumCount: 100, evictionPolicy: .leastRecentlyUsed)
        let adaptive = MemoryStorage<Int, Int>(maximumCount: 100, evictionPolicy: .adaptive)
        let lruHits = Self.replay(requests, through: lru)
        let adaptiveHits = Self.replay(requests, through: adaptive)

        #expect(adaptiveHits * 100 >= lruHits * 97, "\(adaptiveHits) hits against LRU's \(lruHits)")
    }

    /// One-off keys, a third of the requests repeating the key of 20 to 200 requests before: only
    /// a window of most of the cache catches the repeats, and a slightly larger window catches
    /// none, so the ghost queues alone never grow it. The window trials find it. Without them the
    /// policy hit 1,175 times here against LRU's 5,629; on the same shape of trace drawn by another
    /// generator, 3.7% of requests against LRU's 18.5%, and 18.0% with them.
    @Test func repeatsAfterMostOfACachesWorthOfKeysHitAsUnderLRU() throws {
        var random = SeededRandomNumberGenerator(seed: 11)
        var requests: [Int] = []
        var nextKey = 0
        for _ in 0..<30_000 {
            if !requests.isEmpty, Int.random(in: 0..<3, using: &random) == 0 {
                let distance = Int.random(in: 20...200, using: &random)
                requests.append(requests[max(0, requests.count - distance)])
            } else {
                requests.append(nextKey)
                nextKey += 1
            }
        }
        let (lruHits, adaptiveHits) = Self.hitsUnderLRUAndAdaptive(requests, maximumCount: 90)

        #expect(lruHits > 4_000, "the trace's repeats are within LRU's reach: \(lruHits) hits")
        #expect(adaptiveHits * 100 >= lruHits * 95, "\(adaptiveHits) hits against LRU's \(lruHits)")
    }

    /// A new key every 10 requests, and each request for the key born `r` births ago with `r`
    /// drawn from Zipf(0.8) over 20,000 ages (`strata-bench hitrate`'s recency0.8, shorter): a
    /// key's popularity falls with its age, so LRU's order is the right one, and the trial with the
    /// largest window hits most. The queue's ghosts, which compare a slot of probation with the
    /// window's hits per entry, kept taking the window down from there: 0.75 points below LRU at
    /// 100 entries over 1,000,000 requests. The default must stay within half a point of LRU.
    @Test func keysWhosePopularityFallsWithAgeHitAsUnderLRU() throws {
        var random = SeededRandomNumberGenerator(seed: 13)
        var cumulative: [Double] = []
        var total = 0.0
        for rank in 1...20_000 {
            total += 1 / pow(Double(rank), 0.8)
            cumulative.append(total)
        }
        var requests: [Int] = []
        for request in 0..<300_000 {
            let target = Double.random(in: 0..<total, using: &random)
            var low = 0
            var high = cumulative.count - 1
            while low < high {
                let middle = (low + high) / 2
                if cumulative[middle] < target { low = middle + 1 } else { high = middle }
            }
            requests.append(max(0, request / 10 - low))
        }
        let (lruHits, adaptiveHits) = Self.hitsUnderLRUAndAdaptive(requests, maximumCount: 100)

        #expect(lruHits > 60_000, "the trace's repeats are within LRU's reach: \(lruHits) hits")
        #expect(
            adaptiveHits * 1_000 >= lruHits * 1_000 - requests.count * 5,
            "\(adaptiveHits) hits against LRU's \(lruHits) of \(requests.count) requests"
        )
    }

    /// Sweeps over 2,000 keys, forwards then backwards, 26 times (the LIRS paper's zigzag trace,
    /// request for request): at each turn the last keys swept come back in reverse order, so a
    /// window of the whole cache catches them and a small one catches few. The turns come every
    /// 2,000 requests, about two of the queue's periods, so window trials that judged by the last
    /// periods alone took the window to 99% and back to 1% a period late: 67 to 87% of LRU's hits
    /// in three runs, against about 95.5% now.
    @Test func sweepsBackAndForthHitAsUnderLRU() throws {
        var requests = [0] + Array(1...2_000)
        for sweep in 1..<26 {
            requests += sweep.isMultiple(of: 2) ? Array(1...2_000) : Array((0..<2_000).reversed())
        }
        let (lruHits, adaptiveHits) = Self.hitsUnderLRUAndAdaptive(requests, maximumCount: 200)

        #expect(lruHits > 4_900, "the turns are within LRU's reach: \(lruHits) hits")
        #expect(adaptiveHits * 100 >= lruHits * 93, "\(adaptiveHits) hits against LRU's \(lruHits)")
    }

    /// One sweep over 749 new keys and one back, the first turn of the LIRS paper's backf: the
    /// keys requested last come back first, and no key came back before the turn, so only a cache
    /// that kept its newest keys while it had no evidence catches them. Starting with Caffeine's
    /// 1% window, the default kept the first keys instead and caught 1 of LRU's 75 hits.
    @Test func aTurnBeforeAnyKeyCameBackHitsAsUnderLRU() throws {
        let requests = Array(0..<749) + Array((0..<749).reversed())
        let (lruHits, adaptiveHits) = Self.hitsUnderLRUAndAdaptive(requests, maximumCount: 75)

        #expect(lruHits == 75, "LRU holds the last 75 keys of the sweep: \(lruHits) hits")
        #expect(adaptiveHits * 100 >= lruHits * 95, "\(adaptiveHits) hits against LRU's \(lruHits)")
    }

    /// Keys that came back once before the cache filled, then a sweep over ten times the cache's
    /// worth of new keys, then the first keys again (the shape of the LIRS paper's glimpse, whose
    /// first keys are the ones it returns to): the first recurrence ends the recency guess above,
    /// so the frequency filter keeps the keys seen twice against the sweep. Held for the whole
    /// first period instead, the guess cost glimpse 7.8 to 13.7 points.
    @Test func keysThatCameBackBeforeTheCacheFilledOutlastASweep() throws {
        let requests = Array(0..<50) + Array(0..<50) + Array(1_000..<2_000) + Array(0..<50)
        let (lruHits, adaptiveHits) = Self.hitsUnderLRUAndAdaptive(requests, maximumCount: 100)

        #expect(lruHits == 50, "LRU hits only the second round of the first keys: \(lruHits) hits")
        #expect(adaptiveHits >= 50 + 45, "\(adaptiveHits) hits: the first keys should outlast the sweep")
    }

    // MARK: Admission under a cost limit

    /// Requests keys 0..<100 four times, storing each on a miss with a value, and cost, of 1.
    private static func warmSmallEntries(_ cache: MemoryStorage<Int, Int>) {
        for _ in 0..<4 {
            for key in 0..<100 where cache.value(forKey: key) == nil {
                cache.set(1, forKey: key)
            }
        }
    }

    /// A cache of cost 100 holding keys 0..<100 of cost 1, each requested four times; then key
    /// 1,000, of cost `largeCost`, missed `largeRequests` times and stored, and one more small key
    /// stored, which moves key 1,000 out of the window to be judged.
    private static func offerALargeEntry(
        to cache: MemoryStorage<Int, Int>,
        largeCost: Int = 50,
        largeRequests: Int
    ) {
        warmSmallEntries(cache)
        for _ in 0..<largeRequests {
            _ = cache.value(forKey: 1_000)
        }
        cache.set(largeCost, forKey: 1_000)
        cache.set(1, forKey: 2_000)
    }

    private static func costLimitedCache(_ policy: EvictionPolicy) throws -> MemoryStorage<Int, Int> {
        MemoryStorage<Int, Int>(maximumCost: 100, evictionPolicy: policy, cost: { $0 })
    }

    /// Under a cost limit the window holds 1% of the cost: an entry that costs more leaves it at
    /// once and is judged, instead of evicting main's entries unjudged while it waits there.
    @Test(arguments: [EvictionPolicy.wTinyLFU, .adaptive])
    func aLargeEntryWrittenOnceDoesNotFlushTheWarmEntries(policy: EvictionPolicy) throws {
        let cache = MemoryStorage<Int, Int>(maximumCost: 1_000, evictionPolicy: policy, cost: { $0 })
        for _ in 0..<3 {
            for key in 0..<900 where cache.value(forKey: key) == nil {
                cache.set(1, forKey: key)
            }
        }

        cache.set(300, forKey: 5_000)

        #expect(!cache.containsValue(forKey: 5_000))
        #expect(cache.keys().filter { $0 < 900 }.count >= 890)
    }

    @Test func aLargeEntryDoesNotDisplaceManySmallOnesRequestedAlmostAsOften() throws {
        let cache = try Self.costLimitedCache(.adaptive)

        Self.offerALargeEntry(to: cache, largeRequests: 6)

        // The large entry took its room while new, in the window; judged, it leaves, and the small
        // entries come back as they are requested.
        #expect(!cache.containsValue(forKey: 1_000))
        Self.warmSmallEntries(cache)
        #expect(cache.keys().filter { $0 < 100 }.count >= 98)
        #expect(cache.totalCost <= 100)
    }

    /// The behaviour the default policy weighs against: admission by frequency alone compares the
    /// large entry with one small victim at a time, and lets it displace dozens.
    ///
    /// The large entry is requested twice as often as each small one (8 times against 4). With 6,
    /// a small victim whose four counters all shared sightings with other keys (the sketch is
    /// sized for about a hundred entries, and key hashes are seeded per process) read 6 as well
    /// and stopped it: 2 runs in 30 failed that way.
    @Test func admissionByFrequencyAloneLetsTheLargeEntryDisplaceManySmallOnes() throws {
        let cache = try Self.costLimitedCache(.wTinyLFU)

        Self.offerALargeEntry(to: cache, largeRequests: 8)

        #expect(cache.containsValue(forKey: 1_000))
        #expect(cache.keys().filter { $0 < 100 }.count <= 50)
    }

    @Test func aLargeEntryRequestedFarMoreOftenThanTheSmallOnesIsAdmitted() throws {
        let cache = try Self.costLimitedCache(.adaptive)

        Self.offerALargeEntry(to: cache, largeCost: 20, largeRequests: 14)

        #expect(cache.containsValue(forKey: 1_000))
        #expect(cache.totalCost <= 100)
    }

    @Test func aSmallEntryRequestedMoreOftenThanItsVictimIsAdmitted() throws {
        let cache = try Self.costLimitedCache(.adaptive)
        Self.warmSmallEntries(cache)
        for _ in 0..<8 {
            _ = cache.value(forKey: 1_000)
        }

        cache.set(1, forKey: 1_000)
        cache.set(1, forKey: 2_000)

        #expect(cache.containsValue(forKey: 1_000))
        #expect(cache.count == 100)
    }

    // MARK: Limits

    @Test(arguments: policies, [true, false])
    func theCostLimitHoldsWithMixedCosts(policy: EvictionPolicy, alsoLimitsCount: Bool) throws {
        let cache = MemoryStorage<Int, Int>(
            maximumCount: alsoLimitsCount ? 40 : nil,
            maximumCost: 300,
            evictionPolicy: policy,
            cost: { $0 }
        )
        var random = SeededRandomNumberGenerator(seed: 42)
        var largestCost = 0
        var largestCount = 0

        for _ in 0..<3_000 {
            let key = Int.random(in: 0..<200, using: &random)
            if cache.value(forKey: key) == nil || Int.random(in: 0..<10, using: &random) == 0 {
                cache.set(Int.random(in: 1...60, using: &random), forKey: key)
            }
            largestCost = max(largestCost, cache.totalCost)
            largestCount = max(largestCount, cache.count)
        }

        #expect(largestCost <= 300)
        #expect(!alsoLimitsCount || largestCount <= 40)
        let held = cache.keys().reduce(0) { $0 + (cache.value(forKey: $1) ?? 0) }
        #expect(held == cache.totalCost)
    }

    @Test(arguments: policies)
    func theCountNeverExceedsTheLimit(policy: EvictionPolicy) throws {
        let cache = MemoryStorage<Int, Int>(maximumCount: 16, evictionPolicy: policy)
        var random = SeededRandomNumberGenerator(seed: 7)
        var largestCount = 0

        for _ in 0..<5_000 {
            let key = Int.random(in: 0..<100, using: &random)
            switch Int.random(in: 0..<10, using: &random) {
            case 0: cache.removeValue(forKey: key)
            case 1: cache.set(key, forKey: key)
            case 2: cache.trim(toCount: 8)
            default: Self.replay([key], through: cache)
            }
            largestCount = max(largestCount, cache.count)
        }

        #expect(largestCount <= 16)
        #expect(cache.keys().count == cache.count)
    }

    @Test(arguments: policies)
    func removeAllLeavesAWorkingCache(policy: EvictionPolicy) throws {
        let cache = MemoryStorage<Int, Int>(maximumCount: 10, evictionPolicy: policy)
        Self.replay(0..<100, through: cache)

        cache.removeAll()
        Self.replay(Array(0..<30) + Array(0..<30), through: cache)

        #expect(cache.count == 10)
        #expect(cache.value(forKey: 29) == 29)
    }

    // MARK: The offline optimum

    @Test(arguments: [1, 2, 3, 4, 5, 6] as [UInt64])
    func noPolicyBeatsBeladysOptimum(seed: UInt64) throws {
        var random = SeededRandomNumberGenerator(seed: seed)
        let keys = Self.randomTrace(count: 3_000, using: &random)

        for capacity in [1, 2, 5, 16, 40] {
            let optimum = Self.beladyHits(keys, capacity: capacity)
            for policy in Self.policies {
                let cache = MemoryStorage<Int, Int>(maximumCount: capacity, evictionPolicy: policy)

                let hits = Self.replay(keys, through: cache)

                #expect(hits <= optimum, "\(policy) at \(capacity) entries: \(hits) hits, Belady \(optimum)")
            }
        }
    }

    /// Skewed requests over 200 keys, broken by short scans of new keys and short loops.
    private static func randomTrace(count: Int, using random: inout SeededRandomNumberGenerator) -> [Int] {
        var keys: [Int] = []
        var nextNewKey = 1_000
        while keys.count < count {
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<3:
                let length = Int.random(in: 5...50, using: &random)
                keys += nextNewKey..<nextNewKey + length
                nextNewKey += length
            case 3..<5:
                let length = Int.random(in: 3...30, using: &random)
                for _ in 0..<3 { keys += 500..<500 + length }
            default:
                let uniform = Double.random(in: 0..<1, using: &random)
                keys.append(Int(uniform * uniform * uniform * 200))
            }
        }
        return keys
    }

    /// The most hits a cache of `capacity` entries could score on `keys` knowing the future: on a
    /// miss, keep the key unless every resident is needed sooner, and evict the resident needed
    /// last (Belady's MIN). O(n × capacity), for small traces.
    private static func beladyHits(_ keys: [Int], capacity: Int) -> Int {
        var nextUse = [Int](repeating: .max, count: keys.count)
        var seen: [Int: Int] = [:]
        for index in keys.indices.reversed() {
            nextUse[index] = seen[keys[index]] ?? .max
            seen[keys[index]] = index
        }
        var residents: [Int: Int] = [:]
        var hits = 0
        for (index, key) in keys.enumerated() {
            if residents[key] != nil {
                hits += 1
            } else if residents.count >= capacity {
                guard let farthest = residents.max(by: { $0.value < $1.value }), farthest.value > nextUse[index]
                else { continue }
                residents[farthest.key] = nil
            }
            residents[key] = nextUse[index]
        }
        return hits
    }
}
