import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// `removals()` tells every value that leaves a MemoryStorage, with its key and why, and never
/// holds the storage back.
@Suite struct RemovalTests {
    /// The first `count` removals of `stream`, or fewer if none comes for ten seconds.
    static func first(
        _ count: Int,
        of stream: AsyncStream<Removal<String, Int>>
    ) async -> [Removal<String, Int>] {
        await firstElements(count, of: stream)
    }

    static func summary(_ removals: [Removal<String, Int>]) -> [String] {
        removals.map { "\($0.key)=\($0.value) \($0.cause)" }
    }

    @Test func replacedRemovedAndClearedValuesAreTold() async throws {
        let cache = MemoryStorage<String, Int>()
        let stream = cache.removals()
        func act() throws {
            cache.set(1, forKey: "a")
            cache.set(2, forKey: "a")
            cache.set(3, forKey: "b")
            cache.removeValue(forKey: "b")
            try cache.update(forKey: "a") { $0 = 4 }
            cache.set(5, forKey: "c")
            try cache.update(forKey: "c") { $0 = nil }
            cache.set(6, forKey: "d")
            cache.set(7, forKey: "d", timeToLive: .zero)
            cache.set(8, forKey: "e")
            cache.removeAll()
        }
        try act()

        let removals = await Self.first(7, of: stream)

        #expect(
            Self.summary(removals) == [
                "a=1 replaced", "b=3 removed", "a=2 replaced", "c=5 removed", "d=6 removed", "a=4 cleared",
                "e=8 cleared",
            ]
                || Self.summary(removals) == [
                    "a=1 replaced", "b=3 removed", "a=2 replaced", "c=5 removed", "d=6 removed", "e=8 cleared",
                    "a=4 cleared",
                ],
            "\(Self.summary(removals))"
        )
    }

    @Test func evictionsSayWhetherForCountOrForSize() async throws {
        let byCount = MemoryStorage<String, Int>(maximumCount: 2, evictionPolicy: .leastRecentlyUsed)
        let bySize = MemoryStorage<String, Int>(
            maximumCost: 10,
            evictionPolicy: .leastRecentlyUsed,
            cost: { $0 }
        )
        let countStream = byCount.removals()
        let sizeStream = bySize.removals()
        func act() {
            byCount.set(1, forKey: "a")
            byCount.set(2, forKey: "b")
            byCount.set(3, forKey: "c")
            bySize.set(6, forKey: "a")
            bySize.set(6, forKey: "b")
            bySize.set(11, forKey: "b")
        }
        act()

        let countRemovals = await Self.first(1, of: countStream)
        let sizeRemovals = await Self.first(2, of: sizeStream)

        #expect(Self.summary(countRemovals) == ["a=1 evictedForCount"])
        #expect(
            Self.summary(sizeRemovals) == ["a=6 evictedForSize", "b=6 evictedForSize"],
            "a value costlier than the limit removes the older one, for size"
        )
    }

    @Test func expiredValuesAreToldWhetherReadSweptOrRemoved() async throws {
        let clock = ManualClock()
        let cache = MemoryStorage<String, Int>(timeToLive: .seconds(1), clock: clock)
        let stream = cache.removals()
        func act() {
            cache.set(1, forKey: "read")
            cache.set(2, forKey: "removed")
            clock.advance(by: .seconds(2))
            _ = cache.value(forKey: "read")
            cache.removeExpired()
        }
        act()

        let removals = await Self.first(2, of: stream)

        #expect(Self.summary(removals) == ["read=1 expired", "removed=2 expired"])
    }

    @Test func aListenerThatNeverReadsHoldsNothingBackAndKeepsTheNewest() async throws {
        // Least recently used: set i evicts the value set ten sets before it.
        let cache = MemoryStorage<String, Int>(maximumCount: 10, evictionPolicy: .leastRecentlyUsed)
        let stream = cache.removals(bufferingNewest: 100)
        func act() {
            for index in 0..<10_000 { cache.set(index, forKey: "k\(index)") }
        }
        act()

        #expect(cache.count == 10)
        let oldest = await Self.first(1, of: stream).first
        let value = try #require(oldest?.value)
        #expect(value >= 10_000 - 10 - 100, "the buffer kept the newest removals; the first left was \(value)")
    }

    @Test func nothingIsCollectedWhileNobodyListens() async throws {
        let cache = MemoryStorage<String, Int>()
        #expect(cache.cache.makeRemoved().removals == nil)

        let listening = Task {
            for await _ in cache.removals() {}
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while !cache.cache.removals.isActive, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(cache.cache.makeRemoved().removals != nil)
        listening.cancel()
        while cache.cache.removals.isActive, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(cache.cache.makeRemoved().removals == nil, "the last listener gone, nothing is collected")
    }
}
